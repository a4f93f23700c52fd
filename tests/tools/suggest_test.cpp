// SPDX-License-Identifier: Apache-2.0
// "Did you mean": the name closest to a mistyped topic, service, type or command.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "suggest.hpp"

using gecko::tools::closest;
using gecko::tools::did_you_mean;
using gecko::tools::edit_distance;

TEST_CASE("edit distance counts insertions, deletions, substitutions and swaps of neighbours", "[suggest]") {
    CHECK(edit_distance("imu", "imu") == 0);
    CHECK(edit_distance("imuu", "imu") == 1);
    CHECK(edit_distance("ium", "imu") == 1);
    CHECK(edit_distance("lsit", "list") == 1);
    CHECK(edit_distance("abc", "ca") == 3);
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("the closest name: a leading '/', letter case, then a small edit distance", "[suggest]") {
    const std::vector<std::string> topics{"imu", "scan", "joint_states", "cmd_vel"};
    CHECK(closest("imuu", topics) == "imu");
    CHECK(closest("/imu", topics) == "imu");
    CHECK(closest("/joint_states", topics) == "joint_states");
    CHECK(closest("IMU", topics) == "imu");
    CHECK(closest("jointstates", topics) == "joint_states");
    CHECK(closest("cmdvel", topics) == "cmd_vel");
    CHECK(closest("camera", topics).empty());  // nothing close: no guess
    CHECK(closest("imu", topics).empty());     // the name itself is not a suggestion
    CHECK(closest("x", {"y"}) == "y");         // one edit is always close enough
    CHECK(closest("ad", {"add"}) == "add");
    CHECK(closest("lsit", {"list", "info"}) == "list");
    CHECK(closest("gecko.msgs.imu", {"gecko.msgs.Imu", "gecko.msgs.Image"}) == "gecko.msgs.Imu");

    CHECK(did_you_mean("imuu", topics) == "; did you mean 'imu'?");
    CHECK(did_you_mean("camera", topics).empty());
}
