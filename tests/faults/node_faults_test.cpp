// SPDX-License-Identifier: Apache-2.0
// Nodes against hostile peers and faults (issue 9, items 1, 6, 8-13, 15 on the
// node's side): a victim node in a process of its own (gecko_fault_victim) is
// linked to a hostile publisher that sends crafted frames, or handed crafted
// discovery answers by a fake core; its counters, CPU time, memory and log
// lines are read from outside.
#include "faults.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include <filesystem>

using namespace gecko::faults;
using gecko::discovery::EntityKind;
namespace discovery = gecko::discovery;
namespace wire = gecko::wire;

namespace {

Victim linked_server(HostilePublisher& hostile, const std::string& key, const std::string& service) {
    auto v = Victim::start({"serve", "--service", service, "--key", key, "--no-discovery"});
    REQUIRE(v.ask("connect " + hostile.locator()) == "connected");
    REQUIRE(hostile.wait_subscribed(wire::directed_channel(key, v.id), 10s));
    return v;
}

std::size_t count_containing(const std::vector<std::string>& lines, const std::string& needle) {
    return static_cast<std::size_t>(
        std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
}

}  // namespace

// ---- item 1 -------------------------------------------------------------------------------

TEST_CASE("a node handed locators ZeroMQ rejects skips them, logs once, and keeps receiving from the others",
          "[faults][item1][node]") {
    const auto key = unique_key("badpeer");
    HostilePublisher good;
    const std::vector<std::string> bad = {"tcp://x", "tcp://*:5", "ipc:///" + std::string(200, 'a'), "bogus"};
    // A core that pushes, with every heartbeat, a peer set mixing bad locators and one good one.
    std::atomic<std::uint64_t> watcher{0};
    FakeCore fake([&](FakeCore& f, const FakeCore::Request& r) {
        const auto& t = r.message.type();
        if (t == "hello") f.welcome(r, key, 300);
        if (t == "add") watcher = discovery::get_u64(r.message.root(), "id").value_or(0);
        if ((t == "add" || t == "hb") && watcher != 0) {
            discovery::Writer w("peers", 4);
            w.kv("instance", f.instance());
            w.kv("id", watcher.load());
            w.kv("partial", false);
            w.key("peers");
            w.packer().pack_array(static_cast<std::uint32_t>(bad.size() + 1));
            for (std::size_t i = 0; i < bad.size(); ++i)
                pack_fake_peer(w.packer(), 100 + i, EntityKind::publisher, "badpeer", "gecko.msgs.Bytes", {bad[i]});
            pack_fake_peer(w.packer(), 99, EntityKind::publisher, "badpeer", "gecko.msgs.Bytes", {good.locator()});
            f.reply(r, w);
        }
    });
    auto sub = Victim::start({"sub", "--topic", "badpeer"}, {{"GECKO_CORE", fake.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_KEY", key}});
    REQUIRE(good.wait_subscribed(wire::channel_of(key, "badpeer"), 10s));
    // And once more by hand, through the public API.
    CHECK(sub.ask("connect tcp://x") == "connected");
    REQUIRE(fake.wait_count("hb", 10, 10s));  // ten pushes of the bad set
    CHECK(still_delivers(sub, good, wire::channel_of(key, "badpeer"), 0, 7));
    CHECK(sub.proc.running());
    const auto lines = sub.log_lines(300ms);
    for (const auto& l : lines) INFO(l);
    // One line per reason per period, whatever the number of pushes and bad locators.
    CHECK(count_containing(lines, "cannot connect to another node") >= 1);
    CHECK(count_containing(lines, "cannot connect to another node") <= 2);
}

// ---- item 6 -------------------------------------------------------------------------------

TEST_CASE("50,000 requests with distinct type names write a bounded number of lines in a service server",
          "[faults][item6][node][heavy]") {
    const std::size_t n = scaled(50000, 2000);
    const auto key = unique_key("requests");
    HostilePublisher hostile;
    auto server = linked_server(hostile, key, "victim");
    const auto channel = wire::directed_channel(key, server.id);
    const auto lines0 = server.log_lines(100ms).size();
    // In batches the server's request queue (64) holds: beyond it the oldest
    // are pushed out uncounted (see docs/RELIABILITY.md, item 6).
    const std::size_t batch = 48;
    std::map<std::string, long long> s;
    for (std::size_t i = 0; i < n;) {
        for (const std::size_t end = std::min(n, i + batch); i < end; ++i)
            hostile.send(make_frame(channel, 777, i + 1, wire::type_hash("evil.Type" + std::to_string(i)), bytes_payload({}),
                                    wire::frame_flags::request));
        s = server.stats_until([&](auto& st) { return static_cast<std::size_t>(st["rejected"]) >= i; }, 10s);
        REQUIRE(static_cast<std::size_t>(s.at("rejected")) >= i);
    }
    const auto written = server.log_lines(500ms).size() - lines0;
    WARN("item 6: " << n << " requests of distinct types: " << s.at("rejected") << " rejected, " << written
                    << " server lines, server CPU " << s.at("cpu_ms") << " ms");
    CHECK(static_cast<std::size_t>(s.at("rejected")) == n);
    CHECK(written < 20);
    CHECK(server.proc.running());
}

// ---- item 8 -------------------------------------------------------------------------------

namespace {
// A frame that declares (and carries) `payload` bytes: only its header is written.
zmq::message_t oversized_frame(wire::Channel channel, std::uint8_t flags, std::size_t payload) {
    zmq::message_t m(wire::frame_header_size + payload);
    wire::FrameHeader h;
    h.channel = channel;
    h.flags = flags;
    h.payload_size = static_cast<std::uint32_t>(payload);
    h.sequence = 1;
    h.sender_id = 4242;
    h.type_hash = bytes_type;
    wire::write_frame_header(static_cast<std::uint8_t*>(m.data()), h);
    return m;
}
}  // namespace

TEST_CASE("a 256 MiB frame to a subscriber and to a server is refused before it is read whole (RSS measured)",
          "[faults][item8][node][heavy]") {
    const auto key = unique_key("huge");
    HostilePublisher hostile;
    const std::size_t payload = 256u << 20;  // the limit is 64 MiB (NodeOptions::max_message_size)
    SECTION("subscriber") {
        auto sub = linked_subscriber(hostile, key, "big");
        const auto before = sub.stats();
        auto m = oversized_frame(wire::channel_of(key, "big"), 0, payload);
        REQUIRE(hostile.send(m));
        // The victim's transport hangs up on us when it reads the size, not the bytes.
        CHECK(hostile.wait_disconnected(20s));
        const auto after = sub.stats();
        REQUIRE(!after.empty());  // alive and answering
        const auto grew_kb = after.at("hwm_kb") - before.at("hwm_kb");
        WARN("item 8: subscriber peak RSS grew by " << grew_kb / 1024.0 << " MiB after a 256 MiB frame");
        CHECK(grew_kb < 16 * 1024);
    }
    SECTION("server") {
        auto server = linked_server(hostile, key, "big");
        const auto before = server.stats();
        auto m = oversized_frame(wire::directed_channel(key, server.id), wire::frame_flags::request, payload);
        REQUIRE(hostile.send(m));
        CHECK(hostile.wait_disconnected(20s));
        const auto after = server.stats();
        REQUIRE(!after.empty());
        const auto grew_kb = after.at("hwm_kb") - before.at("hwm_kb");
        WARN("item 8: server peak RSS grew by " << grew_kb / 1024.0 << " MiB after a 256 MiB request");
        CHECK(grew_kb < 16 * 1024);
    }
}

TEST_CASE("after refusing an oversized frame, a subscriber hears from that publisher again", "[faults][item8][node]") {
    const auto key = unique_key("again");
    HostilePublisher hostile;
    auto sub = linked_subscriber(hostile, key, "big");
    const auto channel = wire::channel_of(key, "big");
    REQUIRE(still_delivers(sub, hostile, channel, 0, 4343));  // the link works
    const auto before = sub.stats().at("delivered");
    auto m = oversized_frame(channel, 0, (64u << 20) + 1);  // one byte above the limit
    REQUIRE(hostile.send(m));
    CHECK(hostile.wait_disconnected(20s));  // refused when the size is read
    // ZeroMQ ends such a session for good; the node's in-port connects again.
    CHECK(still_delivers(sub, hostile, channel, before, 4343, 10s));
}

namespace {
// Whether a TCP connection to 127.0.0.1:`port` is in `state` (as /proc/net/tcp
// writes it: "01" ESTABLISHED; "08" CLOSE_WAIT, the peer's FIN is in: everything
// it sent before hanging up is in this host's kernel, waiting to be read).
bool link_in_state(int port, const char* state) {
    std::ifstream tcp("/proc/net/tcp");
    char want[8];
    std::snprintf(want, sizeof want, ":%04X", port);
    for (std::string line; std::getline(tcp, line);) {
        std::istringstream fields(line);
        std::string slot, local, remote, st;
        fields >> slot >> local >> remote >> st;
        if (remote.size() > 5 && remote.compare(remote.size() - 5, 5, want) == 0 && st == state) return true;
    }
    return false;
}
bool peer_hung_up(int port) { return link_in_state(port, "08"); }
bool link_established(int port) { return link_in_state(port, "01"); }

std::string tcp_lines(int port) {
    std::ifstream tcp("/proc/net/tcp");
    char want[8];
    std::snprintf(want, sizeof want, ":%04X", port);
    std::string out;
    for (std::string line; std::getline(tcp, line);)
        if (line.find(want) != std::string::npos) out += line + "\n";
    return out;
}
}  // namespace

TEST_CASE("frames that arrived just before their publisher hung up are all delivered, however late they are read",
          "[faults][node]") {
    // A subscriber that sees the data and the hang-up together (its process
    // was descheduled, here stopped) must read the data first: ZeroMQ keeps
    // it in the link's pipe while it reconnects, and dropping the link then
    // would throw it away unread (the port once did, for every dropped link).
    const auto key = unique_key("late");
    auto hostile = std::make_unique<HostilePublisher>("tcp://127.0.0.1:*", 5000ms);  // its frames go out after it is destroyed
    const int port = std::stoi(hostile->locator().substr(hostile->locator().rfind(':') + 1));
    auto sub = linked_subscriber(*hostile, key, "late", {"--depth", "1000"});
    const auto channel = wire::channel_of(key, "late");
    REQUIRE(still_delivers(sub, *hostile, channel, 0, 777));
    const auto before = sub.stats().at("delivered");

    // Stopped with its link up: on a loaded machine the link is sometimes
    // being re-established at that moment (then it is let run until it is up).
    bool linked = false;
    for (int attempt = 0; attempt < 20 && !linked; ++attempt) {
        sub.proc.kill(SIGSTOP);
        linked = link_established(port);
        if (linked) break;
        WARN("attempt " << attempt << ": no established link at SIGSTOP:\n" << tcp_lines(port));
        ::kill(sub.proc.pid(), SIGCONT);
        const auto until = Clock::now() + 10s;
        for (auto pause = 1ms; !link_established(port) && Clock::now() < until; pause = std::min(pause * 2, 20ms))
            std::this_thread::sleep_for(pause);  // poll interval of a bounded wait on the kernel's view of the link
    }
    REQUIRE(linked);
    constexpr std::uint64_t frames = 300;
    for (std::uint64_t seq = 1; seq <= frames; ++seq)
        REQUIRE(hostile->send(make_frame(channel, 778, seq, bytes_type,
                                         bytes_payload({static_cast<std::uint8_t>(seq), static_cast<std::uint8_t>(seq >> 8)}))));
    hostile.reset();  // hangs up once they are sent
    const auto deadline = Clock::now() + 10s;
    bool hung_up = false;
    for (auto pause = 1ms; !(hung_up = peer_hung_up(port)) && Clock::now() < deadline; pause = std::min(pause * 2, 20ms))
        std::this_thread::sleep_for(pause);  // poll interval of a bounded wait on the kernel's view of the link
    ::kill(sub.proc.pid(), SIGCONT);
    INFO(tcp_lines(port));
    REQUIRE(hung_up);

    // (A probe still in flight when `before` was read may be delivered too: at least, not exactly.)
    const auto after = sub.stats_until([&](auto& s) { return s["last"] == static_cast<long long>(frames); }, 10s);
    CHECK(after.at("last") == static_cast<long long>(frames));  // the last frame sent, the last delivered
    CHECK(after.at("delivered") - before >= static_cast<long long>(frames));
    CHECK(after.at("drops") == 0);
}

// ---- item 9 -------------------------------------------------------------------------------

namespace {
// 60 MiB of zeros deflated (~61 kB): not a Bytes message once inflated, a decode error.
const std::vector<std::uint8_t>& zip_bomb() {
    static const std::vector<std::uint8_t> bomb = [] {
        const std::size_t inflated = 60u << 20;
        std::vector<std::uint8_t> zeros(inflated, 0);
        uLongf size = compressBound(static_cast<uLong>(inflated));
        std::vector<std::uint8_t> out(size);
        if (compress2(out.data(), &size, zeros.data(), static_cast<uLong>(inflated), 9) != Z_OK) out.clear();
        out.resize(size);
        return out;
    }();
    return bomb;
}
constexpr std::uint32_t bomb_inflated = 60u << 20;

// Sends `frames` bombs to a fresh victim; its stats before and after they are all counted.
std::pair<std::map<std::string, long long>, std::map<std::string, long long>> drop_bombs(std::size_t frames) {
    const auto& bomb = zip_bomb();
    REQUIRE(!bomb.empty());
    const auto key = unique_key("bomb");
    HostilePublisher hostile;
    auto sub = linked_subscriber(hostile, key, "bomb", {"--depth", "64"});
    auto before = sub.stats();
    const auto channel = wire::channel_of(key, "bomb");
    for (std::size_t i = 0; i < frames; ++i)
        hostile.send(make_frame(channel, 5150, i + 1, bytes_type, bomb, wire::frame_flags::compressed, bomb_inflated));
    // Then one small good frame: delivered only once the last bomb's delivery
    // has ended (one reader, in order), buffer given back included; the
    // counters alone would be read while that is still under way.
    hostile.send(make_frame(channel, 5150, frames + 1, bytes_type, bytes_payload({1})));
    auto after = sub.stats_until(
        [&](auto& s) {
            return static_cast<std::size_t>(s["decode_errors"] + s["delivered"] + s["overwritten"]) >= frames + 1 &&
                   s["delivered"] >= 1;
        },
        90s);
    return {before, after};
}
// The CPU seconds this process spends writing `count` fresh 60 MiB blocks,
// as inflating a bomb does: most of it is page faults, whose cost differs
// fivefold between machines (and between hours on one shared VM).
double fresh_memory_s(std::size_t count) {
    auto cpu_s = [] {
        timespec t{};
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
    };
    const double t0 = cpu_s();
    for (std::size_t i = 0; i < count; ++i) {
        std::unique_ptr<unsigned char[]> block(new unsigned char[60u << 20]);
        std::memset(block.get(), static_cast<int>(i), 60u << 20);
        volatile unsigned char sink = block[(60u << 20) - 1];
        (void)sink;
    }
    return cpu_s() - t0;
}

}  // namespace

TEST_CASE("a zip bomb under the size limit costs bounded CPU and memory, and is counted (CPU and RSS measured)",
          "[faults][item9][node][heavy]") {
    const std::size_t frames = scaled(40, 4);
    const auto [before, after] = drop_bombs(frames);
    const double cpu_s = (after.at("cpu_ms") - before.at("cpu_ms")) / 1000.0;
    const double kept_mib = (after.at("rss_kb") - before.at("rss_kb")) / 1024.0;
    const double peak_mib = (after.at("hwm_kb") - before.at("hwm_kb")) / 1024.0;
    WARN("item 9: " << frames << " frames of " << zip_bomb().size() << " bytes inflating to 60 MiB: CPU " << cpu_s
                    << " s, RSS kept +" << kept_mib << " MiB, peak +" << peak_mib << " MiB, decode errors "
                    << after.at("decode_errors"));
    CHECK(static_cast<std::size_t>(after.at("decode_errors")) == frames);
    CHECK(after.at("delivered") == 1);  // the good frame after them
    // Inflating is ~0.1 s per 60 MiB on a quick machine, plus writing 60 MiB
    // of fresh memory per frame, measured here (what the sender makes us do, no more).
    const double fresh_s = fresh_memory_s(frames);
    INFO("writing " << frames << " fresh 60 MiB blocks here: " << fresh_s << " s of CPU");
    CHECK(cpu_s < (sanitized ? 60.0 : 10.0) * static_cast<double>(frames) / 40.0 + 2.0 * fresh_s + 1.0);
    // Memory only in the plain build: AddressSanitizer keeps freed memory in
    // its quarantine (256 MiB by default), so RSS there says nothing of ours.
    if (!sanitized) {
        CHECK(peak_mib < 160);  // one message inflated at a time, never 40
        CHECK(kept_mib < 80);   // bounded, whatever the number of bombs (issue 25 item 14 bounds it tighter: below)
    }
}

TEST_CASE("zip bombs leave a subscriber no memory once they are read, and cost it one payload at a time (RSS measured)",
          "[faults][r2.14][node][heavy]") {
    // Issue 25, item 14: +34 MiB kept and a +101 MiB peak after 40 bombs at e56893e.
    const std::size_t frames = scaled(40, 4);
    const auto [before, after] = drop_bombs(frames);
    const double kept_mib = (after.at("rss_kb") - before.at("rss_kb")) / 1024.0;
    const double peak_mib = (after.at("hwm_kb") - before.at("hwm_kb")) / 1024.0;
    WARN("item 14 (round 2): subscriber, " << frames << " bombs of 60 MiB: RSS kept +" << kept_mib << " MiB, peak +"
                                           << peak_mib << " MiB");
    CHECK(static_cast<std::size_t>(after.at("decode_errors")) == frames);
    if (!sanitized) {  // ASan's quarantine keeps freed memory
        CHECK(kept_mib < 8);
        CHECK(peak_mib < 80);  // one declared payload (60 MiB) being inflated, not a growing copy of it
    }
}

TEST_CASE("zip bombs leave a service server no memory once they are answered (RSS measured)", "[faults][r2.14][node][heavy]") {
    // Issue 25, item 14: +64 MiB kept in a server at e56893e (its inflate buffer, kept for good).
    const std::size_t frames = scaled(40, 4);
    const auto& bomb = zip_bomb();
    REQUIRE(!bomb.empty());
    const auto key = unique_key("bomb-server");
    HostilePublisher hostile;
    auto server = linked_server(hostile, key, "bomb");
    const auto channel = wire::directed_channel(key, server.id);
    const auto before = server.stats();
    for (std::size_t i = 0; i < frames; ++i)
        hostile.send(make_frame(channel, 5151, i + 1, bytes_type, bomb, wire::frame_flags::request | wire::frame_flags::compressed,
                                bomb_inflated));
    // A good request after them: answered once the last bomb's answer is done, its storage released.
    hostile.send(make_frame(channel, 5151, frames + 1, bytes_type, bytes_payload({1}), wire::frame_flags::request));
    const auto after = server.stats_until(
        [&](auto& s) { return static_cast<std::size_t>(s["rejected"]) >= frames && s["requests"] >= 1; }, 90s);
    const double kept_mib = (after.at("rss_kb") - before.at("rss_kb")) / 1024.0;
    const double peak_mib = (after.at("hwm_kb") - before.at("hwm_kb")) / 1024.0;
    WARN("item 14 (round 2): server, " << frames << " bombs of 60 MiB: RSS kept +" << kept_mib << " MiB, peak +" << peak_mib
                                       << " MiB, CPU " << (after.at("cpu_ms") - before.at("cpu_ms")) / 1000.0 << " s");
    CHECK(static_cast<std::size_t>(after.at("rejected")) == frames);
    CHECK(after.at("requests") == 1);
    if (!sanitized) {
        CHECK(kept_mib < 8);
        CHECK(peak_mib < 80);
    }
}

// ---- item 10 ------------------------------------------------------------------------------

TEST_CASE("600,000 sender ids: per-sender state is capped and memory bounded (RSS measured)", "[faults][item10][node][heavy]") {
    const std::size_t n = scaled(600000, 20000);
    const auto key = unique_key("senders");
    HostilePublisher hostile;
    auto sub = linked_subscriber(hostile, key, "many");
    const auto before = sub.stats();
    const auto channel = wire::channel_of(key, "many");
    const auto payload = bytes_payload({1});
    auto frame = make_frame(channel, 1, 1, bytes_type, payload);
    for (std::size_t i = 0; i < n; ++i) {
        // The sender id is at offset 24 (docs/PROTOCOL.md §2).
        const std::uint64_t sender = 1000 + i;
        for (int b = 0; b < 8; ++b) frame[24 + b] = static_cast<std::uint8_t>(sender >> (8 * b));
        hostile.send(frame);
    }
    auto after = sub.stats_until([&](auto& s) { return static_cast<std::size_t>(s["received"]) >= n; }, 90s);
    const double grew_mib = (after.at("rss_kb") - before.at("rss_kb")) / 1024.0;
    WARN("item 10: " << after.at("received") << " frames from distinct senders: " << after.at("publishers")
                     << " tracked, " << after.at("forgotten") << " forgotten, RSS +" << grew_mib << " MiB, CPU "
                     << (after.at("cpu_ms") - before.at("cpu_ms")) / 1000.0 << " s");
    CHECK(static_cast<std::size_t>(after.at("received")) == n);
    CHECK(after.at("publishers") <= 1024);
    CHECK(static_cast<std::size_t>(after.at("forgotten")) == n - 1024);
    CHECK(after.at("drops") == 0);
    if (!sanitized) CHECK(grew_mib < 32);  // ASan's quarantine holds freed memory: no bound of ours there
}

// ---- item 11 ------------------------------------------------------------------------------

TEST_CASE("sequence jumps 1, 2^64-1, 5 are counted as epochs and never as drops", "[faults][item11][node]") {
    const auto key = unique_key("epochs");
    HostilePublisher hostile;
    auto sub = linked_subscriber(hostile, key, "seq");
    const auto channel = wire::channel_of(key, "seq");
    for (std::uint64_t seq : {std::uint64_t{1}, ~std::uint64_t{0}, std::uint64_t{5}})
        hostile.send(make_frame(channel, 31337, seq, bytes_type, bytes_payload({9})));
    auto s = sub.stats_until([](auto& st) { return st["received"] >= 3; }, 10s);
    CHECK(s.at("received") == 3);
    CHECK(s.at("epochs") == 2);
    CHECK(s.at("drops") == 0);
}

// ---- item 12 ------------------------------------------------------------------------------

TEST_CASE("{\"data\": \"text\"} sent as gecko.msgs.Bytes is a decode error, counted", "[faults][item12][node]") {
    const auto key = unique_key("text");
    HostilePublisher hostile;
    auto sub = linked_subscriber(hostile, key, "bytes");
    msgpack::sbuffer b;
    msgpack::packer<msgpack::sbuffer> pk(b);
    pk.pack_map(1);
    pk.pack(std::string_view("data"));
    pk.pack(std::string_view("text"));
    const std::vector<std::uint8_t> text(b.data(), b.data() + b.size());
    const auto channel = wire::channel_of(key, "bytes");
    hostile.send(make_frame(channel, 12, 1, bytes_type, text));
    hostile.send(make_frame(channel, 12, 2, bytes_type, bytes_payload({1, 2})));  // a good one after it
    auto s = sub.stats_until([](auto& st) { return st["received"] >= 2 && st["delivered"] + st["decode_errors"] >= 2; }, 10s);
    CHECK(s.at("decode_errors") == 1);
    CHECK(s.at("delivered") == 1);
}

// ---- item 13 ------------------------------------------------------------------------------

TEST_CASE("a call to a service no server offers fails with no_peer well under its timeout", "[faults][item13][node]") {
    const auto key = unique_key("nopeer");
    auto core = gecko::test::start_core(GECKOCORE_PATH, key);
    gecko::test::TempDir ipc_dir;
    SpawnOptions o;
    o.env = {{"GECKO_CORE", core.address()}, {"GECKO_NO_MULTICAST", "1"}, {"GECKO_LOG", "warn"},
             {"GECKO_IPC_DIR", ipc_dir.path()}};
    o.unset_env = {"GECKO_KEY", "GECKO_MULTICAST", "GECKO_INTERFACE"};
    o.stderr_mode = Stderr::merge;
    auto client = Process::spawn(GECKO_FAULT_VICTIM, {"client", "--service", "nobody", "--timeout-ms", "5000", "--key", key}, o);
    const auto line = client.wait_for_line("call ", 15s);
    REQUIRE(line);
    const auto ms = fields_of(*line)["ms"];
    WARN("item 13: " << *line);
    CHECK(line->find("call no_peer") == 0);
    CHECK(ms < 1500);
}

// ---- item 15 ------------------------------------------------------------------------------

TEST_CASE("killed nodes leave no stale ipc socket files once the next node is up", "[faults][item15][node]") {
    gecko::test::TempDir dir;
    const auto key = unique_key("ipc");
    const std::map<std::string, std::string> env{{"GECKO_IPC_DIR", dir.path()}};
    auto sockets = [&] {
        std::vector<std::string> out;
        for (const auto& e : std::filesystem::directory_iterator(dir.path()))
            if (e.path().extension() == ".sock") out.push_back(e.path().string());
        std::sort(out.begin(), out.end());
        return out;
    };
    // A long-lived node whose socket is old too: it must survive the clean-up.
    auto alive = Victim::start({"pub", "--topic", "t", "--key", key, "--no-discovery"}, env);
    const auto alive_files = sockets();
    REQUIRE(alive_files.size() == 1);
    std::vector<std::string> killed_files;
    for (int i = 0; i < 3; ++i) {
        auto v = Victim::start({"pub", "--topic", "t", "--key", key, "--no-discovery"}, env);
        v.proc.kill();
        REQUIRE(v.proc.wait(20s));
    }
    for (const auto& f : sockets())
        if (f != alive_files[0]) killed_files.push_back(f);
    REQUIRE(killed_files.size() == 3);  // SIGKILL leaves them behind
    // As if they had died a minute ago (the clean-up spares sockets being bound right now).
    const timespec old[2] = {{::time(nullptr) - 60, 0}, {::time(nullptr) - 60, 0}};
    for (const auto& f : sockets()) REQUIRE(::utimensat(AT_FDCWD, f.c_str(), old, AT_SYMLINK_NOFOLLOW) == 0);
    auto next = Victim::start({"pub", "--topic", "t", "--key", key, "--no-discovery"}, env);
    // The new node's reactor cleans up ~100 ms after it starts (not in its
    // constructor: that would delay its first message).
    auto left = sockets();
    for (int i = 0; i < 200 && left.size() > 2; ++i) {
        std::this_thread::sleep_for(10ms);  // polling a directory: no event to wait on
        left = sockets();
    }
    for (const auto& f : killed_files) CHECK(std::find(left.begin(), left.end(), f) == left.end());
    CHECK(std::find(left.begin(), left.end(), alive_files[0]) != left.end());
    CHECK(left.size() == 2);  // the live one and the new one
}
