// SPDX-License-Identifier: Apache-2.0
// gecko pub TOPIC - and --file F: one message per JSON line, in order; a bad
// line is reported with its number and skipped. And the sizes gecko pub and
// gecko echo report for one message: payload and on the wire, the same.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "key_fixture.hpp"

using namespace gecko::tools_test;

namespace {
// An echo of `topic` registered with the core before anything is published.
Process listening_echo(const Key& k, const std::string& topic, const std::string& count) {
    auto echo = k.start_gecko({"echo", topic, "--count", count, "--json"});
    k.wait_for_list([&](const std::string& out) { return has_topic_line(out, topic, "gecko_echo@"); });
    return echo;
}
}  // namespace

TEST_CASE("gecko pub - publishes one message per stdin line, in order, skipping a bad one", "[tools][process][pub]") {
    Key k;
    auto echo = listening_echo(k, "lines", "3");
    // --wait: however loaded the machine, the echo is connected before the first line goes out.
    auto pub = k.start_gecko({"pub", "lines", "--type", "test.Line", "-", "--wait", "10"}, true);
    REQUIRE(pub.write_line(R"({"n": 1})"));
    REQUIRE(pub.write_line(R"({"n": 2,})"));  // line 2: bad JSON
    REQUIRE(pub.write_line(""));                 // blank lines are skipped silently
    REQUIRE(pub.write_line(R"({"n": 3})"));
    REQUIRE(pub.write_line(R"({"n": 4})"));
    pub.close_stdin();
    const auto published = finish(std::move(pub), 15s);
    INFO(published.out << published.err);
    CHECK(published.exit_code == 1);  // a line was bad
    CHECK(contains(published.err, "stdin line 2: invalid JSON"));
    CHECK(contains(published.err, "1 bad line of stdin skipped"));
    CHECK(contains(published.out, "published 3 messages from stdin on 'lines'"));

    const auto got = finish(std::move(echo), 10s);
    INFO(got.out << got.err);
    REQUIRE(got.exit_code == 0);
    REQUIRE(got.lines.size() == 3);
    CHECK(got.lines[0] == R"({"n":1})");
    CHECK(got.lines[1] == R"({"n":3})");
    CHECK(got.lines[2] == R"({"n":4})");
}

TEST_CASE("gecko pub --file checks each line against a gecko.msgs type and respects --rate", "[tools][process][pub]") {
    Key k;
    gecko::test::TempDir dir;
    const std::string path = dir.path() + "/lines.jsonl";
    {
        std::ofstream f(path);
        f << R"({"data": 1.0})" << "\n" << R"({"data": 2.0})" << "\n" << R"({"dta": 9.0})" << "\n"
          << R"({"data": 3.0})" << "\n" << R"({"data": 4.0})";  // no newline at the end
    }
    auto echo = listening_echo(k, "values", "4");
    const auto start = std::chrono::steady_clock::now();
    const auto published = k.gecko({"pub", "values", "--type", "gecko.msgs.Float64", "--file", path, "--rate", "20", "--wait", "10"});
    const auto took = std::chrono::steady_clock::now() - start;
    INFO(published.out << published.err);
    CHECK(published.exit_code == 1);
    CHECK(contains(published.err, path + " line 3: gecko.msgs.Float64 has no field 'dta'; its fields are: data; skipped"));
    CHECK(contains(published.out, "published 4 messages from " + path));
    CHECK(took >= std::chrono::milliseconds(150));  // 4 messages at 20 Hz: at least 3 periods of 50 ms

    const auto got = finish(std::move(echo), 10s);
    INFO(got.out << got.err);
    REQUIRE(got.lines.size() == 4);
    for (int i = 0; i < 4; ++i) CHECK(nlohmann::json::parse(got.lines[static_cast<std::size_t>(i)]).at("data") == i + 1.0);

    const auto missing = k.gecko({"pub", "values", "--type", "gecko.msgs.Float64", "--file", "/nonexistent/x.jsonl"});
    CHECK(missing.exit_code == 2);
    CHECK(contains(missing.err, "cannot read '/nonexistent/x.jsonl'"));
    CHECK(k.gecko({"pub", "values", "--type", "gecko.msgs.Float64", "--file", path, R"({"data": 1})"}).exit_code == 2);
}

TEST_CASE("gecko pub and gecko echo give the same sizes: payload, and on the wire", "[tools][process][pub]") {
    Key k;
    auto echo = k.start_gecko({"echo", "chatter", "--count", "1"});
    k.wait_for_list([](const std::string& out) { return has_topic_line(out, "chatter", "gecko_echo@"); });
    // {"data": "hello"} is 12 bytes of msgpack; the frame header comes on top (its size is the wire format's).
    const auto pub = k.gecko({"pub", "chatter", "--type", "gecko.msgs.String", R"({"data": "hello"})", "--wait", "10"});
    INFO(pub.out << pub.err);
    const std::regex sizes(R"(12 B payload, ([0-9]+) B on the wire)");
    std::smatch said_by_pub, said_by_echo;
    REQUIRE(std::regex_search(pub.out, said_by_pub, sizes));
    CHECK(std::stoi(said_by_pub[1]) > 12);
    CHECK(contains(pub.out, "published 1 message on 'chatter' (gecko.msgs.String, 12 B payload, "));
    CHECK(contains(pub.out, " to 1 subscriber"));
    const auto got = finish(std::move(echo), 10s);
    REQUIRE(!got.lines.empty());
    REQUIRE(std::regex_search(got.lines[0], said_by_echo, sizes));
    CHECK(said_by_echo[1] == said_by_pub[1]);  // the same message, the same two sizes
}
