// SPDX-License-Identifier: Apache-2.0
// gecko::bag::Writer and Reader: every record written reads back, through
// the summary and by scanning; and what a damaged file does to the reader.
#include <catch2/catch.hpp>

#include <gecko/bag/check.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/bag/repair.hpp>
#include <gecko/bag/writer.hpp>
#include <gecko/error.hpp>

#include <sys/resource.h>

#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "bag_files.hpp"

using namespace gecko;
using gecko::bag_test::Build;
using gecko::bag_test::Bytes;
using gecko::bag_test::Scratch;

namespace {

struct Written {
    std::uint16_t channel;
    std::uint32_t sequence;
    std::uint64_t time;
    Bytes data;
};

// 3 channels, `n` messages of 1-200 bytes, log times 1000 + 10 i.
std::vector<Written> write_sample(const std::string& path, bag::WriterOptions options, int n = 3000) {
    bag::Writer w(path, options);
    const auto schema = w.add_schema("gecko.msgs.Imu", "jsonschema", Bytes{'{', '}'});
    const std::uint16_t ids[3] = {w.add_channel("imu", "msgpack", 0, {{"gecko.type_name", "gecko.msgs.Imu"}}),
                                  w.add_channel("odom", "msgpack"), w.add_channel("json/imu", "json", schema)};
    std::vector<Written> all;
    for (int i = 0; i < n; ++i) {
        Written m{ids[i % 3], static_cast<std::uint32_t>(i + 1), 1000 + 10 * static_cast<std::uint64_t>(i), {}};
        m.data.resize(1 + static_cast<std::size_t>(i * 7) % 200);
        for (std::size_t k = 0; k < m.data.size(); ++k) m.data[k] = static_cast<std::uint8_t>(i + k);
        w.write(m.channel, m.sequence, m.time, m.time + 1, m.data.data(), m.data.size());
        all.push_back(std::move(m));
    }
    w.add_metadata({"gecko", {{"key", "dalek"}}});
    w.close();
    return all;
}

std::vector<Written> read_all(bag::Reader& r, const bag::MessageFilter& f = {}) {
    std::vector<Written> out;
    r.read_messages(f, [&](const bag::Channel& ch, const bag::MessageView& m) {
        CHECK(ch.id == m.channel_id);
        out.push_back({m.channel_id, m.sequence, m.log_time, Bytes(m.data, m.data + m.size)});
        CHECK(m.publish_time == m.log_time + 1);
        return true;
    });
    return out;
}

bool same(const std::vector<Written>& a, const std::vector<Written>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].channel != b[i].channel || a[i].sequence != b[i].sequence || a[i].time != b[i].time || a[i].data != b[i].data)
            return false;
    return true;
}

}  // namespace

TEST_CASE("a file written with each compression reads back every message in order, indexed and scanned", "[bag]") {
    Scratch dir;
    for (auto c : {bag::Compression::none, bag::Compression::lz4, bag::Compression::zstd}) {
        INFO("compression '" << bag::to_string(c) << "'");
        bag::WriterOptions o;
        o.compression = c;
        o.chunk_size = 16 * 1024;
        const auto path = dir.path(std::string("sample-") + bag::to_string(c) + ".mcap");
        const auto written = write_sample(path, o);

        bag::Reader indexed(path);
        REQUIRE(indexed.has_summary());
        REQUIRE(indexed.statistics());
        CHECK(indexed.statistics()->message_count == written.size());
        CHECK(indexed.statistics()->channel_count == 3);
        CHECK(indexed.statistics()->schema_count == 1);
        CHECK(indexed.statistics()->chunk_count == indexed.chunk_indexes().size());
        CHECK(indexed.chunk_indexes().size() > 5);
        CHECK(indexed.channels().size() == 3);
        CHECK(indexed.header().library.find("gecko-bag") == 0);
        CHECK(same(read_all(indexed), written));
        CHECK(indexed.problems().empty());
        const auto meta = indexed.metadata();
        REQUIRE(meta.size() == 1);
        CHECK(meta[0].metadata.at("key") == "dalek");

        bag::ReaderOptions scan;
        scan.use_index = false;
        bag::Reader scanned(path, scan);
        CHECK(same(read_all(scanned), written));
        CHECK(scanned.problems().empty());

        const auto report = bag::check(path);
        for (const auto& f : report.findings) UNSCOPED_INFO(f.to_string());
        CHECK(report.findings.empty());
        CHECK(report.messages == written.size());
    }
}

TEST_CASE("WriterOptions::sync syncs each chunk written and the closed file, and without it nothing", "[bag]") {
    Scratch dir;
    for (const bool sync : {true, false}) {
        bag::WriterOptions o;
        o.chunk_size = 4096;
        o.sync = sync;
        bag::Writer w(dir.path("s.mcap"), o);
        const auto ch = w.add_channel("imu", "msgpack");
        const std::vector<std::uint8_t> payload(1000, 0x5a);
        for (int i = 0; i < 20; ++i) w.write(ch, static_cast<std::uint32_t>(i), 1000 + i, 1000 + i, payload.data(), payload.size());
        w.close();
        const auto st = w.stats();
        CHECK(st.chunks >= 4);
        CHECK(st.syncs == (sync ? st.chunks + 1 : 0));
    }
}

TEST_CASE("topic globs and a time range take only their messages", "[bag]") {
    Scratch dir;
    bag::WriterOptions o;
    o.chunk_size = 4096;
    const auto path = dir.path("f.mcap");
    const auto written = write_sample(path, o, 900);
    for (bool use_index : {true, false}) {
        bag::ReaderOptions ro;
        ro.use_index = use_index;
        bag::Reader r(path, ro);
        bag::MessageFilter f;
        f.topics = {"*imu"};
        f.start = 2000;
        f.end = 5000;
        std::vector<Written> want;
        for (const auto& m : written)
            if (m.channel != 1 && m.time >= 2000 && m.time <= 5000) want.push_back(m);
        CHECK(same(read_all(r, f), want));
    }
}

TEST_CASE("a file cut anywhere reads up to its last whole chunk, and recover completes it", "[bag]") {
    Scratch dir;
    bag::WriterOptions o;
    o.chunk_size = 2048;
    const auto path = dir.path("whole.mcap");
    const auto written = write_sample(path, o, 600);
    const Bytes whole = bag_test::read_file(path);
    bag::Reader full(path);
    std::size_t cuts = 0;
    for (std::size_t cut = 9; cut < whole.size(); cut += whole.size() / 37) {
        ++cuts;
        INFO("cut at " << cut << " of " << whole.size());
        const auto cut_path = dir.path("cut.mcap");
        bag_test::write_file(cut_path, Bytes(whole.begin(), whole.begin() + static_cast<long>(cut)));
        std::unique_ptr<bag::Reader> r;
        try {
            r = std::make_unique<bag::Reader>(cut_path);
        } catch (const Error& e) {  // cut inside the header: not yet an MCAP file
            CHECK(e.code() == Errc::decode);
            CHECK(cut < 40);
            continue;
        }
        CHECK_FALSE(r->has_summary());
        const auto got = read_all(*r);
        // Every message read is the one written at its place; those of the cut chunk are lost.
        REQUIRE(got.size() <= written.size());
        CHECK(same(got, std::vector<Written>(written.begin(), written.begin() + static_cast<long>(got.size()))));
        REQUIRE_FALSE(r->problems().empty());
        // Cut in the data section: reading stopped at the cut. Cut in the summary: every message, and the missing footer said.
        if (got.size() < written.size()) CHECK(r->problems().back().fatal);
        const auto out = dir.path("recovered.mcap");
        const auto result = bag::recover(cut_path, out);
        CHECK(result.messages == got.size());
        const auto report = bag::check(out);
        for (const auto& f : report.findings) UNSCOPED_INFO(f.to_string());
        CHECK(report.ok());
        bag::Reader recovered(out);
        CHECK(recovered.has_summary());
        CHECK(same(read_all(recovered), got));
    }
    CHECK(cuts > 30);
}

TEST_CASE("recover keeps the attachments and metadata records, of a whole file and of one cut after an attachment", "[bag]") {
    Scratch dir;
    bag::WriterOptions o;
    o.chunk_size = 2048;
    const auto path = dir.path("whole.mcap");
    const std::vector<bag::Attachment> attached{{5, 6, "calibration.yaml", "text/yaml", Bytes{'k', ':', ' ', '1'}},
                                                {7, 8, "map.bin", "application/octet-stream", Bytes(3000, 0xab)}};
    {
        bag::Writer w(path, o);
        const auto ch = w.add_channel("imu", "msgpack");
        const Bytes payload(50, 0x11);
        for (int part = 0; part < 2; ++part) {
            for (std::uint32_t i = 0; i < 200; ++i) w.write(ch, i, 1000 + i, 1000 + i, payload.data(), payload.size());
            w.add_metadata({"gecko", {{"part", std::to_string(part)}}});
            w.add_attachment(attached[static_cast<std::size_t>(part)]);
        }
        w.close();
    }
    auto attachments_of = [](bag::Reader& r) {
        std::vector<bag::Attachment> out;
        r.read_attachments([&](const bag::Attachment& a) {
            out.push_back(a);
            return true;
        });
        return out;
    };
    auto same_attachments = [](const std::vector<bag::Attachment>& a, const std::vector<bag::Attachment>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].name != b[i].name || a[i].media_type != b[i].media_type || a[i].data != b[i].data ||
                a[i].log_time != b[i].log_time || a[i].create_time != b[i].create_time)
                return false;
        return true;
    };
    bag::Reader whole(path);
    REQUIRE(same_attachments(attachments_of(whole), attached));
    REQUIRE(whole.attachment_indexes().size() == 2);

    SECTION("a whole file") {
        const auto out = dir.path("recovered.mcap");
        const auto result = bag::recover(path, out);
        CHECK(result.attachments == 2);
        CHECK(result.metadata == 2);
        CHECK(bag::check(out).ok());
        bag::Reader r(out);
        CHECK(r.attachment_indexes().size() == 2);
        CHECK(same_attachments(attachments_of(r), attached));
        CHECK(r.metadata().size() == 2);
    }
    SECTION("a file cut right after its second attachment: both attachments and both metadata records") {
        const auto& last = whole.attachment_indexes().back();
        const Bytes bytes = bag_test::read_file(path);
        const auto cut_path = dir.path("cut.mcap");
        bag_test::write_file(cut_path, Bytes(bytes.begin(), bytes.begin() + static_cast<long>(last.offset + last.length)));
        bag::Reader cut(cut_path);
        CHECK_FALSE(cut.has_summary());
        CHECK(same_attachments(attachments_of(cut), attached));
        const auto out = dir.path("recovered.mcap");
        const auto result = bag::recover(cut_path, out);
        CHECK(result.attachments == 2);
        CHECK(result.metadata == 2);
        CHECK(bag::check(out).ok());
        bag::Reader r(out);
        CHECK(r.has_summary());
        CHECK(same_attachments(attachments_of(r), attached));
        CHECK(r.metadata().size() == 2);
    }
}

TEST_CASE("a corrupted chunk is skipped and said, the chunks after it are read", "[bag]") {
    Scratch dir;
    for (auto c : {bag::Compression::none, bag::Compression::zstd}) {
        bag::WriterOptions o;
        o.compression = c;
        o.chunk_size = 2048;
        const auto path = dir.path("f.mcap");
        const auto written = write_sample(path, o, 600);
        bag::Reader clean(path);
        REQUIRE(clean.chunk_indexes().size() > 4);
        const auto& victim = clean.chunk_indexes()[2];
        Bytes b = bag_test::read_file(path);
        b[victim.chunk_start_offset + victim.chunk_length - 5] ^= 0x5a;  // inside its records
        bag_test::write_file(path, b);
        for (bool use_index : {true, false}) {
            bag::ReaderOptions ro;
            ro.use_index = use_index;
            bag::Reader r(path, ro);
            const auto got = read_all(r);
            CHECK(got.size() < written.size());
            CHECK(got.size() > written.size() / 2);
            CHECK(got.back().sequence == written.back().sequence);
            REQUIRE_FALSE(r.problems().empty());
            CHECK(r.problems().front().offset == victim.chunk_start_offset);
            CHECK(r.problems().front().record == "Chunk");
        }
        CHECK_FALSE(bag::check(path).ok());
    }
}

TEST_CASE("unknown and private records are skipped, and a message before its channel is skipped and said", "[bag]") {
    Scratch dir;
    Build f;
    f.header();
    f.record(0x80, {1, 2, 3});  // private
    f.record(0x42, {4, 5});     // a future record of version 0
    f.message(7, 5, {0xc0});    // before its channel
    f.channel(7, "imu");
    f.message(7, 6, {0x01});
    f.end();
    const auto path = dir.path("hand.mcap");
    bag_test::write_file(path, f.b);
    bag::Reader r(path);
    const auto got = read_all(r);
    REQUIRE(got.size() == 1);
    CHECK(got[0].data == Bytes{0x01});
    REQUIRE(r.problems().size() == 1);
    CHECK(r.problems()[0].message.find("no Channel record before it") != std::string::npos);
    CHECK(r.problems()[0].record == "Message");
    const auto report = bag::check(path);
    std::string all;
    for (const auto& x : report.findings) all += x.to_string() + "\n";
    INFO(all);
    CHECK(all.find("unknown record 0x42") != std::string::npos);
    CHECK(all.find("0x80") == std::string::npos);
    CHECK(all.find("before its Channel") != std::string::npos);
}

TEST_CASE("lengths that lie are refused with the offset and record kind, without allocating what they claim", "[bag]") {
    Scratch dir;
    const auto path = dir.path("lies.mcap");
    SECTION("a record longer than the file") {
        Build f;
        f.header();
        f.channel(1, "imu");
        const auto at = f.b.size();
        f.b.push_back(0x05);
        f.le(1ull << 40, 8);
        f.le(0, 16);
        bag_test::write_file(path, f.b);
        bag::Reader r(path);
        read_all(r);
        REQUIRE_FALSE(r.problems().empty());
        const auto& p = r.problems().back();
        CHECK(p.fatal);
        CHECK(p.offset == at);
        CHECK(p.to_string().find("Message record: claims 1099511627776 bytes") != std::string::npos);
    }
    SECTION("a chunk that claims gigabytes uncompressed") {
        Build f;
        f.header();
        f.channel(1, "imu");
        const auto at = f.b.size();
        f.record(0x06, Build::content([](Build& c) {
                     c.le(1, 8);
                     c.le(2, 8);
                     c.le(1ull << 36, 8);  // 64 GiB
                     c.le(0, 4);
                     c.str("zstd");
                     c.le(4, 8);
                     c.le(0xfd2fb528, 4);  // a zstd frame's magic, and nothing else
                 }));
        f.end();
        bag_test::write_file(path, f.b);
        bag::Reader r(path);
        CHECK(read_all(r).empty());
        REQUIRE(r.problems().size() == 1);
        CHECK(r.problems()[0].offset == at);
        CHECK(r.problems()[0].message.find("above the reader's limit") != std::string::npos);
        bag::ReaderOptions big;
        big.max_chunk_size = 1ull << 40;
        bag::Reader r2(path, big);
        CHECK(read_all(r2).empty());
        REQUIRE(r2.problems().size() == 1);
        CHECK(r2.problems()[0].message.find("zstd") != std::string::npos);
    }
    SECTION("not an MCAP file at all") {
        bag_test::write_file(path, Bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!'});
        try {
            bag::Reader r(path);
            FAIL("opened");
        } catch (const Error& e) {
            CHECK(e.code() == Errc::decode);
            CHECK(std::string(e.what()).find("lies.mcap' is not an MCAP file") != std::string::npos);
        }
    }
}

TEST_CASE("channels and schemas keep their ids when copied, and conflicting ids are refused", "[bag]") {
    Scratch dir;
    bag::Writer w(dir.path("ids.mcap"));
    w.add_schema(bag::Schema{9, "T", "jsonschema", {'{', '}'}});
    w.add_channel(bag::Channel{300, 9, "a", "json", {}});
    w.add_channel(bag::Channel{300, 9, "a", "json", {}});  // the same again: fine
    CHECK_THROWS_AS(w.add_channel(bag::Channel{300, 0, "b", "json", {}}), Error);
    CHECK_THROWS_AS(w.add_schema(bag::Schema{0, "T", "", {}}), Error);
    CHECK_THROWS_AS(w.add_channel("c", "json", 77), Error);
    CHECK_THROWS_AS(w.write(301, 0, 0, 0, nullptr, 0), Error);
    const auto next = w.add_channel("d", "msgpack");
    CHECK(next != 300);
    w.write(300, 1, 5, 5, reinterpret_cast<const std::uint8_t*>("{}"), 2);
    w.close();
    bag::Reader r(dir.path("ids.mcap"));
    CHECK(r.channels().at(300).schema_id == 9);
    CHECK(r.schemas().at(9).name == "T");
}

TEST_CASE("a Writer whose chunks are written on its own thread writes the same bytes, and flush() puts them in the file",
          "[bag]") {
    Scratch dir;
    for (auto c : {bag::Compression::none, bag::Compression::lz4, bag::Compression::zstd}) {
        INFO("compression '" << bag::to_string(c) << "'");
        bag::WriterOptions o;
        o.compression = c;
        o.chunk_size = 8 * 1024;
        const auto inline_path = dir.path("inline.mcap"), background_path = dir.path("background.mcap");
        write_sample(inline_path, o, 5000);
        o.background = true;
        o.background_chunks = 1;  // the caller waits on the thread as often as it can
        write_sample(background_path, o, 5000);
        const auto a = bag_test::read_file(inline_path), b = bag_test::read_file(background_path);
        CHECK(a.size() > 100 * 1024);
        CHECK(a == b);
    }

    bag::WriterOptions o;
    o.background = true;
    o.chunk_size = 1u << 20;  // nothing fills it: only flush() writes a chunk
    bag::Writer w(dir.path("open.mcap"), o);
    const auto ch = w.add_channel("imu", "msgpack");
    const std::vector<std::uint8_t> payload(100, 0x5a);
    for (int i = 0; i < 50; ++i) w.write(ch, static_cast<std::uint32_t>(i), 1000 + i, 1000 + i, payload.data(), payload.size());
    CHECK(w.stats().pending_bytes > 5000);
    w.flush();
    CHECK(w.stats().pending_bytes == 0);
    CHECK(w.stats().chunks == 1);
    bag::Reader open_file(dir.path("open.mcap"));  // no summary yet: scanned
    std::size_t seen = 0;
    open_file.read_messages({}, [&](const bag::Channel&, const bag::MessageView&) { return ++seen, true; });
    CHECK(seen == 50);
}

TEST_CASE("a disk error on the Writer's thread is thrown by the caller's next call, naming the file", "[bag]") {
    Scratch dir;
    // A file size limit stands in for a full disk: writes past it fail with EFBIG.
    struct FileSizeLimit {
        rlimit saved{};
        void (*handler)(int) = nullptr;
        explicit FileSizeLimit(rlim_t bytes) {
            handler = std::signal(SIGXFSZ, SIG_IGN);
            ::getrlimit(RLIMIT_FSIZE, &saved);
            rlimit r = saved;
            r.rlim_cur = bytes;
            ::setrlimit(RLIMIT_FSIZE, &r);
        }
        ~FileSizeLimit() {
            ::setrlimit(RLIMIT_FSIZE, &saved);
            std::signal(SIGXFSZ, handler);
        }
    };
    bag::WriterOptions o;
    o.background = true;
    o.compression = bag::Compression::none;
    o.chunk_size = 16 * 1024;
    const auto path = dir.path("full.mcap");
    std::string error;
    std::uint64_t written = 0;
    {
        FileSizeLimit limit(64 * 1024);
        bag::Writer w(path, o);
        const auto ch = w.add_channel("imu", "msgpack");
        const std::vector<std::uint8_t> payload(1000, 0x5a);
        try {
            for (int i = 0; i < 10000; ++i) {  // 10 MB: far past the limit
                w.write(ch, static_cast<std::uint32_t>(i), 1000 + i, 1000 + i, payload.data(), payload.size());
                ++written;
            }
            w.close();
        } catch (const Error& e) {
            error = e.what();
            CHECK(e.code() == Errc::transport);
        }
    }
    CHECK(written < 10000);  // the error stopped the writing, not the end of the loop
    CHECK(error.find(path) != std::string::npos);
    bag::Reader cut(path);  // what reached the file is whole chunks
    std::size_t seen = 0;
    cut.read_messages({}, [&](const bag::Channel&, const bag::MessageView&) { return ++seen, true; });
    CHECK(seen > 0);
    CHECK(seen < written);
}
