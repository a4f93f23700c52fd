// SPDX-License-Identifier: Apache-2.0
// gecko play --lockstep: a Click run of gecko-controller against gecko-sim,
// recorded, replays against a fresh gecko-sim to identical answers; against
// a simulation with one parameter changed it names the first differing step.
#include <catch2/catch.hpp>

#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/click/lockstep_msgs.hpp>

#include <gecko/click/controller.hpp>
#include <gecko/node.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "bag_files.hpp"
#include "tools/key_fixture.hpp"

using namespace gecko;
using namespace std::chrono_literals;
using gecko::bag_test::Scratch;
using gecko::tools_test::Key;
using gecko::tools_test::Run;
using gecko::test::Process;

namespace {

// Two arms' worth of one robot; `mass2` is the parameter the changed run alters.
std::string scene(double mass2) {
    return "time_step 0.01\nsubsteps 10\ngravity 9.81\n"
           "robot robot1\nbase 0 0 0.5\ngripper on\n"
           "joint joint1 angle length 0.5 mass 2\n"
           "joint joint2 angle length 0.4 mass " + std::to_string(mass2) + "\n"
           "box box\n";
}

Process start_sim(Key& k, const std::string& scene_file) {
    auto o = k.options(gecko::tools_test::Stderr::merge);
    o.pipe_stdin = true;  // gecko-sim reads commands from stdin: keep it open
    Process sim = Process::spawn(GECKO_SIM_PATH, {"--scene", scene_file, "--watchdog-ms", "0"}, o);
    INFO(sim.output());
    REQUIRE(sim.wait_for_line("ready", 20s));
    return sim;
}

// Whether the recording (still being written) holds a SensorRequest and a Sensor answer to it.
bool has_sensor_exchange(const std::string& file) {
    try {
        bag::Reader r(file);
        std::set<std::uint64_t> asked;
        bool answered = false;
        r.read_messages({}, [&](const bag::Channel& ch, const bag::MessageView& m) {
            if (ch.topic == "sim/click/request") {
                const auto req = bag::decode<click::Request>(m);
                if (req.kind == click::RequestKind::sensor_request) asked.insert(req.request_id);
            } else if (ch.topic == "sim/click/answer") {
                const auto ans = bag::decode<click::Answer>(m);
                answered = answered || (ans.kind == click::AnswerKind::sensor && asked.count(ans.answers));
            }
            return true;
        });
        return answered;
    } catch (const std::exception&) {
        return false;  // not even a header yet
    }
}

// Whether the recording (still being written) holds the simulation's answer to the controller's Error.
bool has_ended(const std::string& file) {
    try {
        bag::Reader r(file);
        bool ended = false;
        bag::MessageFilter f;
        f.topics = {"sim/click/answer"};
        r.read_messages(f, [&](const bag::Channel&, const bag::MessageView& m) {
            ended = ended || bag::decode<click::Answer>(m).kind == click::AnswerKind::ended;
            return true;
        });
        return ended;
    } catch (const std::exception&) {
        return false;  // not even a header yet
    }
}

}  // namespace

TEST_CASE("a recorded lockstep run replays to identical answers, and a changed simulation names the first differing step",
          "[bag][lockstep]") {
    Scratch dir;
    const auto same = dir.path("same.scene"), changed = dir.path("changed.scene");
    std::ofstream(same) << scene(1.0);
    std::ofstream(changed) << scene(1.5);
    const auto file = dir.path("run.mcap");
    {
        Key k;
        Process sim = start_sim(k, same);
        auto o = k.options(gecko::tools_test::Stderr::merge);
        Process rec = Process::spawn(GECKO_CLI_PATH, {"record", "-o", file, "sim/click/*"}, o);
        REQUIRE(rec.wait_for_line("gecko record: recording", 20s));
        // This test's controller. Its request publisher links to the simulation and to the
        // recorder independently: it asks for sensors (which do not step) until the recording
        // holds one of its requests and the answer to it, so that every step after is recorded.
        Node node(k.node_options("controller"));
        click::ControllerOptions co;
        co.timeout = co.connect_timeout = 30s;
        click::Controller ctl(node, "sim", co);
        ctl.handshake();
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        bool linked = false;
        while (!linked && std::chrono::steady_clock::now() < deadline) {
            REQUIRE(ctl.sensors().is_sensor());
            std::this_thread::sleep_for(100ms);  // the recorder writes a chunk every second: bounded by the deadline
            linked = has_sensor_exchange(file);
        }
        REQUIRE(linked);
        for (int step = 0; step < 40; ++step) {
            if (step == 20) ctl.reset();
            auto control = ctl.make_control();
            for (auto& [name, object] : control.objects)
                for (std::size_t j = 0; j < object.values.size(); ++j) object.values[j] = 0.3 * std::sin(0.2 * step + double(j));
            REQUIRE(ctl.step(control).is_sensor());
        }
        ctl.error("done");
        // Wait until the last answer is in the file.
        while (!has_ended(file) && std::chrono::steady_clock::now() < deadline + 30s)
            std::this_thread::sleep_for(100ms);  // polling the growing file, bounded by the deadline
        REQUIRE(has_ended(file));
        rec.kill(SIGINT);
        REQUIRE(rec.wait(20s) == 0);
    }
    {
        Key k;
        Process sim = start_sim(k, same);
        const Run replay = k.gecko({"play", "--lockstep", file}, 60s);
        INFO(replay.out << replay.err);
        CHECK(replay.exit_code == 0);
        CHECK(gecko::tools_test::contains(replay.out, "all identical"));
        CHECK(gecko::tools_test::contains(replay.out, "(40 steps)"));
    }
    {
        Key k;
        Process sim = start_sim(k, changed);
        const Run replay = k.gecko({"play", "--lockstep", file}, 60s);
        INFO(replay.out << replay.err);
        CHECK(replay.exit_code == 1);
        // The handshake is the same (masses are not in it); the first Control's sensors differ.
        CHECK(gecko::tools_test::contains(replay.out, "(Control, step 1): objects.robot1."));
        CHECK(gecko::tools_test::contains(replay.out, "recorded "));
        CHECK(gecko::tools_test::contains(replay.out, ", replayed "));
    }
}
