// SPDX-License-Identifier: Apache-2.0
// An independent reader and writer: MCAP's own TypeScript library
// (@mcap/core with @mcap/nodejs and @mcap/support's zstd and lz4, installed
// by scripts/install-deps into tests/bag/npm/node_modules) opens the files
// gecko::bag writes, with its indexed reader and its stream reader, CRCs
// validated; and gecko::bag reads a file @mcap/core wrote. Without node or
// those packages these tests fail, saying so: they are never skipped.
#include <catch2/catch.hpp>

#include <gecko/bag/check.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/bag/repair.hpp>
#include <gecko/bag/writer.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "bag_files.hpp"
#include "node_oracle.hpp"

using namespace gecko;
using gecko::bag_test::Bytes;
using gecko::bag_test::Scratch;
using gecko::bag_test::node;
using gecko::bag_test::quoted;

namespace {

std::string hex(const std::uint8_t* p, std::size_t n) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

// Writes a sample file and returns its messages as read_mcap.mjs lists them.
nlohmann::json write_sample(const std::string& path, bag::WriterOptions o) {
    bag::Writer w(path, o);
    const auto imu = w.add_channel("imu", "msgpack", 0, {{"gecko.type_name", "gecko.msgs.Imu"}, {"gecko.node", "n@h"}});
    const auto odom = w.add_channel("arm/odom", "msgpack");
    const auto schema = w.add_schema("gecko.msgs.Imu", "jsonschema", Bytes{'{', '}'});
    const auto twin = w.add_channel("/json/imu", "json", schema);
    nlohmann::json list = nlohmann::json::array();
    for (std::uint32_t i = 0; i < 2000; ++i) {
        const std::uint16_t ch = i % 5 == 0 ? twin : i % 2 ? imu : odom;
        Bytes data(1 + (i * 13) % 300);
        for (std::size_t k = 0; k < data.size(); ++k) data[k] = static_cast<std::uint8_t>(i * 31 + k);
        const std::uint64_t t = 1'700'000'000'000'000'000ull + i * 1'000'000ull;
        w.write(ch, i + 1, t, t - 5, data.data(), data.size());
        list.push_back({ch, i + 1, std::to_string(t), std::to_string(t - 5), hex(data.data(), data.size())});
    }
    w.add_metadata({"gecko", {{"key", "dalek"}, {"recorder", "test"}}});
    w.close();
    return list;
}

void expect_read_by_mcap_core(const std::string& path, const nlohmann::json& list) {
    const auto ran = node("read_mcap.mjs", quoted(path) + " --messages");
    REQUIRE(ran.status == 0);
    const auto got = nlohmann::json::parse(ran.out);
    CHECK(got["indexed"]["messages"] == list.size());
    CHECK(got["stream"]["messages"] == list.size());
    CHECK(got["stream"]["done"] == true);
    CHECK(got["indexed"]["list"] == list);  // every message, in order, byte for byte
    CHECK(got["indexed"]["topics"] == got["stream"]["topics"]);
    CHECK(got["indexed"]["statistics"]["messageCount"] == list.size());
    CHECK(got["indexed"]["channels"].size() == 3);
    CHECK(got["indexed"]["metadata"][0]["metadata"]["key"] == "dalek");
    CHECK(got["indexed"]["channels"][0]["metadata"]["gecko.node"] == "n@h");
}

}  // namespace

TEST_CASE("@mcap/core's indexed and stream readers read every message gecko::bag writes, with each compression",
          "[bag][mcap-core]") {
    Scratch dir;
    for (auto c : {bag::Compression::zstd, bag::Compression::lz4, bag::Compression::none}) {
        INFO("compression '" << bag::to_string(c) << "'");
        bag::WriterOptions o;
        o.compression = c;
        o.chunk_size = 8192;
        const auto path = dir.path("g.mcap");
        const auto list = write_sample(path, o);
        expect_read_by_mcap_core(path, list);
    }
}

TEST_CASE("a cut file, once recovered, is read whole by @mcap/core", "[bag][mcap-core]") {
    Scratch dir;
    bag::WriterOptions o;
    o.chunk_size = 8192;
    const auto path = dir.path("g.mcap");
    auto list = write_sample(path, o);
    Bytes b = bag_test::read_file(path);
    b.resize(b.size() * 2 / 3);
    bag_test::write_file(path, b);
    CHECK(node("read_mcap.mjs", quoted(path)).status != 0);  // no footer: its indexed reader refuses the cut file
    const auto out = dir.path("recovered.mcap");
    const auto result = bag::recover(path, out);
    REQUIRE(result.messages > 100);
    list.erase(list.begin() + static_cast<long>(result.messages), list.end());
    bag::Reader r(out);
    CHECK(r.has_summary());
    const auto ran = node("read_mcap.mjs", quoted(out) + " --messages");
    REQUIRE(ran.status == 0);
    const auto got = nlohmann::json::parse(ran.out);
    CHECK(got["indexed"]["list"] == list);
    CHECK(got["stream"]["messages"] == list.size());
}

TEST_CASE("gecko::bag reads a file @mcap/core wrote, and finds nothing wrong in it", "[bag][mcap-core]") {
    Scratch dir;
    const auto path = dir.path("node.mcap");
    REQUIRE(node("write_mcap.mjs", quoted(path) + " 300").status == 0);
    bag::Reader r(path);
    CHECK(r.has_summary());
    CHECK(r.header().library == "mcap-ts write_mcap.mjs");
    std::map<std::string, int> topics;
    std::uint64_t last = 0;
    int bad = 0;
    r.read_messages({}, [&](const bag::Channel& ch, const bag::MessageView& m) {
        ++topics[ch.topic];
        if (m.log_time < last) ++bad;
        last = m.log_time;
        if (ch.message_encoding == "msgpack" && (m.size != 4 || m.data[0] != 0x81)) ++bad;
        return true;
    });
    CHECK(bad == 0);
    CHECK(topics["imu"] == 150);
    CHECK(topics["odom"] == 150);
    CHECK(topics["/json/imu"] == 30);
    CHECK(r.problems().empty());
    REQUIRE(r.metadata().size() == 1);
    CHECK(r.metadata()[0].metadata.at("key") == "from-node");
    const auto report = bag::check(path);
    for (const auto& f : report.findings) UNSCOPED_INFO(f.to_string());
    CHECK(report.ok());
}
