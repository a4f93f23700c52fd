// SPDX-License-Identifier: Apache-2.0
// gecko doctor with multicast: every core of the key that answers is listed,
// two are a failure; and on a loopback-only host (a network namespace), where
// the core answers through its lo fallback, the network lines agree with the
// verdict.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

namespace {

// The environment of a tool that finds the core by multicast only, on `group`.
SpawnOptions multicast_only(const std::string& key, const std::string& group) {
    SpawnOptions o;
    o.env = {{"GECKO_KEY", key}, {"GECKO_MULTICAST", group}};
    o.unset_env = {"GECKO_CORE", "GECKO_NO_MULTICAST", "GECKO_INTERFACE", "GECKO_NODE", "GECKO_DISCOVERY"};
    o.stderr_mode = Stderr::capture;
    o.pipe_stdin = false;
    return o;
}

// A secret file of 64 hex digits (the same digit throughout), mode 0600, in `dir`.
std::string secret_file(const gecko::test::TempDir& dir, const std::string& name, char digit) {
    const std::string path = dir.path() + "/" + name + ".secret";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    const std::string text = std::string(64, digit) + "\n";
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    return path;
}

}  // namespace

TEST_CASE("gecko doctor says whether this machine and the core hold the same secret", "[tools][process][doctor][security]") {
    const std::string key = Key::next_key(), group = private_multicast();
    gecko::test::TempDir dir;
    auto core = Core::start(key, group, secret_file(dir, "core", 'a'));
    auto with = [&](const std::string& secret) {
        auto o = multicast_only(key, group);
        o.env["GECKO_SECRET_FILE"] = secret;
        return finish(Process::spawn(GECKO_CLI_PATH, {"doctor", "--timeout", "1s"}, o), 15s);
    };
    const auto same = with(secret_file(dir, "same", 'a'));
    INFO(same.out << same.err);
    CHECK(same.exit_code == 0);
    CHECK(contains(same.out, "ok    this machine holds the key's secret"));
    CHECK(contains(same.out, "is secured with the same secret"));

    const auto other = with(secret_file(dir, "other", 'b'));
    INFO(other.out << other.err);
    CHECK(other.exit_code == 1);
    CHECK(contains(other.out, "is secured with another secret (fingerprint "));
    CHECK(contains(other.out, "verdict: this machine and the core of key '" + key + "' do not hold the same secret"));
}

TEST_CASE("gecko doctor lists every core that answers by multicast, and two of one key fail", "[tools][process][doctor]") {
    const std::string key = Key::next_key(), group = private_multicast();
    auto first = Core::start(key, group);
    const auto one = finish(Process::spawn(GECKO_CLI_PATH, {"doctor", "--timeout", "1s"}, multicast_only(key, group)), 15s);
    INFO(one.out << one.err);
    CHECK(one.exit_code == 0);
    CHECK(contains(one.out, "ok    answered from " + first.endpoint));
    CHECK(contains(one.out, "verdict: the core of key '" + key + "' is reachable by multicast"));
    CHECK(!contains(one.out, "geckocores of key"));

    auto second = Core::start(key, group);
    const auto two = finish(Process::spawn(GECKO_CLI_PATH, {"doctor", "--timeout", "1s"}, multicast_only(key, group)), 15s);
    INFO(two.out << two.err);
    CHECK(two.exit_code == 1);
    CHECK(contains(two.out, "FAIL  2 geckocores of key '" + key + "' answered:"));
    for (auto* c : {&first, &second}) {
        CHECK(contains(two.out, "geckocore pid " + std::to_string(c->process.pid())));
        CHECK(contains(two.out, c->endpoint));
    }
    CHECK(contains(two.out, "verdict: 2 geckocores serve key '" + key + "'"));
    CHECK(contains(two.out, "What to do:\n  1. stop one of them: "));

    // The second gone, the first still counted its announcements: a failure until it restarts.
    second.process.kill(SIGTERM);
    REQUIRE(second.process.wait(20s));
    const auto after = finish(Process::spawn(GECKO_CLI_PATH, {"doctor", "--timeout", "1s"}, multicast_only(key, group)), 15s);
    INFO(after.out);
    CHECK(after.exit_code == 1);
    CHECK(contains(after.out, "duplicate_cores"));
    CHECK(contains(after.out, "stop one of them"));
    first.process.kill(SIGTERM);
    first.process.wait(20s);
}

TEST_CASE("gecko doctor on a loopback-only host: the core answers through lo, and nothing says otherwise", "[tools][process][doctor][netns]") {
    const char* unshare = "/usr/bin/unshare";
    const char* nsenter = "/usr/bin/nsenter";
    SpawnOptions quiet;
    quiet.stderr_mode = Stderr::capture;
    quiet.pipe_stdin = false;
    if (::access(unshare, X_OK) != 0 || ::access(nsenter, X_OK) != 0 ||
        finish(Process::spawn(unshare, {"-n", "true"}, quiet), 10s).exit_code != 0) {
        WARN("unshare -n does not work here (needs root and util-linux): the loopback-only doctor test is skipped");
        return;
    }
    // A network namespace with only lo, held open by a shell waiting on its stdin.
    SpawnOptions holder_options = quiet;
    holder_options.pipe_stdin = true;
    auto holder = Process::spawn(unshare, {"-n", "sh", "-c", "ip link set lo up && echo ready && exec cat"}, holder_options);
    REQUIRE(holder.wait_for_line("ready", 10s));
    const std::string ns = std::to_string(holder.pid());
    const std::string key = Key::next_key();

    SpawnOptions env = quiet;
    env.env = {{"GECKO_KEY", key}};
    env.unset_env = {"GECKO_CORE", "GECKO_NO_MULTICAST", "GECKO_MULTICAST", "GECKO_INTERFACE", "GECKO_NODE", "GECKO_DISCOVERY"};
    std::vector<std::string> core_args{"-t", ns, "-n", GECKOCORE_PATH, "--key", key, "--listen", "tcp://127.0.0.1:*"};
    if (core_has_door_option()) core_args.insert(core_args.end(), {"--door", "0"});
    auto core = Process::spawn(nsenter, core_args, env);
    REQUIRE(core.wait_for_line("listening on", 10s));

    const auto r = finish(Process::spawn(nsenter, {"-t", ns, "-n", GECKO_CLI_PATH, "doctor", "--timeout", "1s"}, env), 15s);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "ok    answered from tcp://127.0.0.1:"));
    CHECK(contains(r.out, "verdict: the core of key '" + key + "' is reachable by multicast"));
    CHECK(contains(r.out, "informational"));  // the missing MULTICAST interface and route are still shown
    CHECK(!contains(r.out, "FAIL"));
    CHECK(!contains(r.out, "WARN"));
    CHECK(!contains(r.out, "What to do"));
    core.kill(SIGTERM);
    core.wait(20s);
}
