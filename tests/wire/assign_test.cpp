// SPDX-License-Identifier: Apache-2.0
// gecko::wire::assign: the result equals the source, and where the shapes
// agree the destination keeps its memory (the point of it).
#include <catch2/catch.hpp>

#include <gecko/msgs/click.hpp>
#include <gecko/wire/assign.hpp>
#include <gecko/wire/codec.hpp>

namespace mc = gecko::msgs::click;

namespace {

mc::Sensor sample_sensor(double t) {
    mc::Sensor s;
    s.simulated_time = t;
    auto& arm = s.objects["arm"];
    arm.angle_sensors = {0.1 * t, 0.2, 0.3};
    arm.sensors["wrist"] = {{mc::ValueType::force_3d, {1.0, 2.0, t}}};
    s.objects["box"].object_sensors = {{mc::ValueType::position, {t, 0.0, 0.5}}};
    return s;
}

std::string bytes_of(const mc::Sensor& s) {
    gecko::Buffer out;
    gecko::wire::encode(out, s);
    return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

}  // namespace

TEST_CASE("wire::assign makes the destination equal to the source, keeping its memory when shapes agree", "[wire][assign]") {
    mc::Sensor dst = sample_sensor(1.0);
    const double* angles = dst.objects["arm"].angle_sensors.data();
    const double* wrist = dst.objects["arm"].sensors["wrist"][0].value.data();
    const auto* arm_node = &dst.objects.find("arm")->second;

    const mc::Sensor src = sample_sensor(2.0);
    gecko::wire::assign(dst, src);
    CHECK(bytes_of(dst) == bytes_of(src));
    CHECK(dst.objects["arm"].angle_sensors.data() == angles);
    CHECK(dst.objects["arm"].sensors["wrist"][0].value.data() == wrist);
    CHECK(&dst.objects.find("arm")->second == arm_node);
}

TEST_CASE("wire::assign copies whole what differs in shape: other keys, other sizes, empty optionals", "[wire][assign]") {
    mc::Sensor dst = sample_sensor(1.0);
    mc::Sensor src = sample_sensor(3.0);
    src.objects.erase("box");
    src.objects["ball"].object_sensors = {{mc::ValueType::rpy, {0.0, 0.1, 0.2}}};
    src.objects["arm"].angle_sensors.push_back(0.4);
    src.objects["arm"].sensors["wrist"].clear();
    gecko::wire::assign(dst, src);
    CHECK(bytes_of(dst) == bytes_of(src));

    std::optional<mc::Sensor> some = sample_sensor(4.0), none;
    gecko::wire::assign(some, none);
    CHECK_FALSE(some.has_value());
    gecko::wire::assign(none, std::optional<mc::Sensor>(sample_sensor(5.0)));
    REQUIRE(none.has_value());
    CHECK(bytes_of(*none) == bytes_of(sample_sensor(5.0)));
    gecko::wire::assign(dst, dst);  // itself: unchanged
    CHECK(bytes_of(dst) == bytes_of(src));
}
