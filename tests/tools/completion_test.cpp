// SPDX-License-Identifier: Apache-2.0
// Bash completion (tools/gecko/completion/gecko.bash) run by a real bash
// against a live core; and the connection options before the command.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>
#include <vector>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

namespace {

// What _gecko offers for the command line `words` (the last one being completed).
std::string complete(const Key& k, std::vector<std::string> words) {
    const std::string script = "source '" GECKO_COMPLETION_PATH "' || exit 3\n"
                               "COMP_WORDS=(\"$@\"); COMP_CWORD=$(( $# - 1 ))\n"
                               "_gecko\n"
                               "((${#COMPREPLY[@]} == 0)) || printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    std::vector<std::string> args{"-c", script, "bash", GECKO_CLI_PATH};
    args.insert(args.end(), words.begin(), words.end());
    const auto r = finish(Process::spawn("/bin/bash", args, k.options()), 20s);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    return r.out;
}

}  // namespace

TEST_CASE("bash completion: commands, each command's options, topic, service and type names", "[tools][process][completion]") {
    if (::access("/bin/bash", X_OK) != 0) {
        WARN("no /bin/bash: completion not tested");
        return;
    }
    Key k;
    k.start_pub_imu();
    k.start_background(ADD_SERVER_PATH);
    k.wait_for_list([](const std::string& out) { return imu_listed(out) && contains(out, "adder@"); });

    CHECK(complete(k, {""}) == "list\ninfo\necho\nhz\nbw\npub\ncall\ntype\nnodes\ntop\ndoctor\nrecord\nplay\nbag\nbridge\nkeygen\nhelp\n");
    CHECK(complete(k, {"ec"}) == "echo\n");
    CHECK(complete(k, {"--key", k.key(), "ca"}) == "call\n");
    CHECK(complete(k, {"echo", "--f"}) == "--field\n--full\n");
    CHECK(contains(complete(k, {"pub", "--"}), "--file\n"));
    CHECK(contains(complete(k, {"list", "-"}), "--names\n"));
    CHECK(complete(k, {"echo", ""}) == "imu\n");                  // from the live core
    CHECK(complete(k, {"hz", "--count", "5", "i"}) == "imu\n");   // after an option and its value
    CHECK(complete(k, {"-k", k.key(), "call", ""}) == "add\n");   // services
    CHECK(complete(k, {"info", ""}) == "imu\nadd\n");             // both
    CHECK(complete(k, {"echo", "imu", ""}).empty());              // one topic only
    CHECK(complete(k, {"pub", "cmd", "--type", "gecko.msgs.Tw"}) == "gecko.msgs.Twist\n");
    CHECK(contains(complete(k, {"type", "gecko.msgs.J"}), "gecko.msgs.JointState\n"));
    CHECK(complete(k, {"help", "do"}) == "doctor\n");
}

TEST_CASE("connection options may come before the command, and -k is --key", "[tools][process][completion]") {
    Key k;
    k.start_pub_imu();
    k.wait_for_list(imu_listed);
    auto o = k.options();
    o.unset_env.push_back("GECKO_KEY");
    o.env.erase("GECKO_KEY");
    const auto before = finish(Process::spawn(GECKO_CLI_PATH, {"--key", k.key(), "list", "--names"}, o), 10s);
    INFO(before.err);
    CHECK(before.exit_code == 0);
    CHECK(before.out == "imu\n");
    const auto short_key = finish(Process::spawn(GECKO_CLI_PATH, {"-k", k.key(), "--timeout=10s", "list", "--names"}, o), 30s);
    CHECK(short_key.out == "imu\n");
    const auto after = finish(Process::spawn(GECKO_CLI_PATH, {"list", "--names", "-k", k.key()}, o), 10s);
    CHECK(after.out == "imu\n");
    CHECK(contains(k.gecko({"list", "--help"}).out, "-k, --key KEY"));

    const auto bogus = k.gecko({"--bogus", "list"});
    CHECK(bogus.exit_code == 2);
    CHECK(contains(bogus.err, "'--bogus' is not an option that may come before the command"));
    CHECK(k.gecko({"--key"}).exit_code == 2);
}
