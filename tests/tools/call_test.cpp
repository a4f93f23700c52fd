// SPDX-License-Identifier: Apache-2.0
// gecko call SERVICE 'JSON': the add_server example called from the command
// line, and in-process servers of gecko.msgs types (a request check, a slow
// handler, a handler that fails).
#include <catch2/catch.hpp>

#include <signal.h>

#include <future>
#include <stdexcept>
#include <string>

#include <gecko/msgs/std.hpp>
#include <gecko/node.hpp>

#include <nlohmann/json.hpp>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

namespace {

bool has_service_line(const std::string& list, const std::string& name, const std::string& also) {
    const auto services = list.find("SERVICE");
    return services != std::string::npos && has_topic_line(list.substr(services), name, also);
}


}  // namespace

TEST_CASE("gecko call calls add_server and prints the reply as text or JSON", "[tools][process][call]") {
    Key k;
    k.start_background(ADD_SERVER_PATH);
    k.wait_for_list([](const std::string& out) { return has_service_line(out, "add", "adder@"); });

    const auto text = k.gecko({"call", "add", R"({"a": 1, "b": 2.5})"});
    INFO(text.out << text.err);
    CHECK(text.exit_code == 0);
    CHECK(text.out == "sum: 3.5\n");

    const auto json = k.gecko({"call", "add", R"({"a": 2, "b": 0.25})", "--json"});
    CHECK(json.exit_code == 0);
    REQUIRE(json.lines.size() == 1);
    CHECK(nlohmann::json::parse(json.lines[0]) == nlohmann::json::parse(R"({"sum": 2.25})"));

    const auto defaults = k.gecko({"call", "add"});  // no JSON: {} (every field at its default)
    CHECK(defaults.exit_code == 0);
    CHECK(defaults.out == "sum: 0.0\n");

    // The server declared its request type's fields: a value of the wrong kind is refused before the call.
    const auto wrong = k.gecko({"call", "add", R"({"a": "one"})"});
    INFO(wrong.err);
    CHECK(wrong.exit_code == 2);
    CHECK(contains(wrong.err, "examples.AddRequest: field 'a' has msgpack type str, expected a number"));

    const auto typo = k.gecko({"call", "ad", "{}"});
    CHECK(typo.exit_code == 1);
    CHECK(contains(typo.err, "no service 'ad' under key '" + k.key() + "'; did you mean 'add'?"));

    CHECK(k.gecko({"call", "add", "{not json"}).exit_code == 2);
    CHECK(k.gecko({"call"}).exit_code == 2);
    const auto help = k.gecko({"call", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(contains(help.out, "usage: gecko call SERVICE"));
}

TEST_CASE("gecko call: no server reachable, and a service with clients only, exit 1", "[tools][process][call]") {
    Key k;
    const pid_t server = k.start_background(ADD_SERVER_PATH);
    k.wait_for_list([](const std::string& out) { return has_service_line(out, "add", "adder@"); });
    ::kill(server, SIGSTOP);  // registered, but it cannot accept a connection
    const auto stopped = k.gecko({"call", "add", "{}", "--timeout", "1s"});
    ::kill(server, SIGCONT);
    INFO(stopped.err);
    CHECK(stopped.exit_code == 1);
    CHECK(contains(stopped.err, "no server of 'add' could be reached within 1000 ms"));
    CHECK(contains(stopped.err, "adder@"));

    Key other;
    other.start_background(ADD_CLIENT_PATH);  // waits for a server that never comes
    other.wait_for_list([](const std::string& out) { return has_service_line(out, "add", "add_client@"); });
    const auto orphan = other.gecko({"call", "add", "{}"});
    INFO(orphan.err);
    CHECK(orphan.exit_code == 1);
    CHECK(contains(orphan.err, "service 'add' has no server under key '" + other.key() + "'"));
}

TEST_CASE("gecko call checks a gecko.msgs request, and says when the reply is late or an error", "[tools][process][call]") {
    Key k;
    using gecko::msgs::Int64;
    using gecko::msgs::String;
    gecko::Node node(k.node_options("strings"));
    auto length = node.service<String, Int64>("length", [](const String& s) {
        if (s.data == "fail") throw std::runtime_error("cannot measure 'fail'");
        Int64 r;
        r.data = static_cast<std::int64_t>(s.data.size());
        return r;
    });
    node.spin_in_background();
    std::promise<void> release;
    auto released = release.get_future().share();
    gecko::Node slow_node(k.node_options("slowpoke"));
    auto slow = slow_node.service<String, Int64>("slow", [released](const String&) {
        released.wait_for(std::chrono::seconds(10));  // until the test has seen the timeout
        return Int64{};
    });
    slow_node.spin_in_background();
    k.wait_for_list([](const std::string& out) {
        return has_service_line(out, "length", "gecko.msgs.String->gecko.msgs.Int64") && has_service_line(out, "slow", "slowpoke@");
    });

    const auto ok = k.gecko({"call", "length", R"({"data": "hello"})"});
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);
    CHECK(ok.out == "data: 5\n");

    const auto misspelled = k.gecko({"call", "length", R"({"dat": "hello"})"});
    CHECK(misspelled.exit_code == 2);
    CHECK(contains(misspelled.err, "gecko.msgs.String has no field 'dat'; its fields are: data"));

    const auto failing = k.gecko({"call", "length", R"({"data": "fail"})"});
    CHECK(failing.exit_code == 1);
    CHECK(contains(failing.err, "answered with an error"));
    CHECK(contains(failing.err, "cannot measure 'fail'"));

    const auto late = k.gecko({"call", "slow", "{}", "--timeout", "500ms"});
    release.set_value();
    INFO(late.err);
    CHECK(late.exit_code == 1);
    CHECK(contains(late.err, "the server of 'slow'"));
    CHECK(contains(late.err, "did not reply within 500 ms"));
}
