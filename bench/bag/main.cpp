// gecko_bag_bench: what recording and replay cost, each figure next to a
// baseline measured in the same run (docs/BENCHMARKS.md, "Recording"):
//
//   write   gecko::bag::Writer to a file vs plain write() of the same bytes to
//           the same directory (what `dd` does), for 1 MiB and 100 B messages
//
// Every row is the median of --reps (default 5) runs, its baseline's runs
// alternating with its own.
//   read    gecko::bag::Reader over those files
//   keepup  a 64 B stream as fast as a publisher process sends it: received by
//           `gecko record` vs by a plain subscriber, and by a key-wide one (the
//           recorder's kind of subscription) (alternating runs)
//   cpu     `gecko record` of 640x480 rgb8 images at 30 Hz plus a 1 kHz IMU,
//           with each compression: its CPU time over the publisher's sending time
//   timing  `gecko play` of a 1 kHz IMU recording: the error of each interval
//           between arrivals against the recorded 1 ms, next to a publisher
//           that paces itself with gecko::Rate at 1 kHz
//
//   gecko_bag_bench [--dir DIR] [--seconds S] [--reps N] [--only write|read|keepup|cpu|timing] [--markdown]
//   (the publisher role it spawns: gecko_bag_bench --publish KEY CORE KIND SECONDS)

#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/bag/writer.hpp>
#include <gecko/gecko.hpp>
#include <gecko/msgs/sensors.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double secs_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

std::string fmt(double v, int digits) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    return b;
}

struct Table {
    std::string title;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> notes;
    void print(bool markdown) const {
        std::printf("\n%s%s\n\n", markdown ? "#### " : "", title.c_str());
        std::vector<std::size_t> w(header.size());
        for (std::size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
        for (const auto& r : rows)
            for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
        auto line = [&](const std::vector<std::string>& r) {
            std::printf(markdown ? "|" : "");
            for (std::size_t i = 0; i < r.size(); ++i) std::printf(markdown ? " %-*s |" : "%-*s  ", static_cast<int>(w[i]), r[i].c_str());
            std::printf("\n");
        };
        line(header);
        if (markdown) {
            std::printf("|");
            for (std::size_t i = 0; i < header.size(); ++i) std::printf("%s|", std::string(w[i] + 2, '-').c_str());
            std::printf("\n");
        }
        for (const auto& r : rows) line(r);
        for (const auto& n : notes) std::printf("%s%s\n", markdown ? "\n" : "  ", n.c_str());
    }
};

pid_t spawn(const std::vector<std::string>& args, const char* out_path = nullptr) {
    std::vector<char*> argv;
    std::vector<std::string> copy = args;
    for (auto& s : copy) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_path) posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    if (posix_spawn(&pid, copy[0].c_str(), &fa, nullptr, argv.data(), environ) != 0)
        throw std::runtime_error("cannot start " + copy[0]);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

// Waits for `pid`; its CPU seconds (user + system).
double reap(pid_t pid, int* status = nullptr) {
    int st = 0;
    rusage ru{};
    ::wait4(pid, &st, 0, &ru);
    if (status) *status = st;
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// A geckocore of the benchmark's own (unicast on loopback, no door).
struct Core {
    pid_t pid = -1;
    std::string address;
    explicit Core(const std::string& key) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        ::close(fd);
        address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
        pid = spawn({GECKOCORE_PATH, "--key", key, "--no-multicast", "--door", "0", "--listen", "tcp://" + address});
    }
    ~Core() {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
    }
};

gecko::NodeOptions node_options(const std::string& key, const std::string& core, const std::string& name) {
    gecko::NodeOptions o;
    o.key = key;
    o.name = name;
    o.core = core;
    o.multicast_enabled = false;
    return o;
}

// The environment variables that point `gecko` at the benchmark's core.
void point_at(const std::string& key, const std::string& core) {
    ::setenv("GECKO_KEY", key.c_str(), 1);
    ::setenv("GECKO_CORE", core.c_str(), 1);
    ::setenv("GECKO_NO_MULTICAST", "1", 1);
}

// ---- the publisher role (a process of its own) ----

int publish(const std::string& key, const std::string& core, const std::string& kind, double seconds) {
    gecko::Node node(node_options(key, core, "bench_pub"));
    if (kind == "small") {  // 64 B as fast as it goes
        auto pub = node.raw_publisher("bench/small", "bench.Bytes64");
        pub.wait_for_subscribers(1, 20s);
        std::this_thread::sleep_for(200ms);  // the subscriber's side of the link settles
        std::vector<std::uint8_t> payload(64, 0);
        payload[0] = 0xc4;  // msgpack bin8 of 62 bytes
        payload[1] = 62;
        std::uint64_t sent = 0;
        const auto start = Clock::now();
        while (secs_since(start) < seconds) {
            for (int i = 0; i < 64; ++i) pub.publish(payload.data(), payload.size());
            sent += 64;
        }
        std::printf("%llu %.6f\n", static_cast<unsigned long long>(sent), secs_since(start));
        return 0;
    }
    // "camera": 640x480 rgb8 at 30 Hz plus an IMU at 1 kHz
    auto cam = node.publisher<gecko::msgs::Image>("camera/image");
    auto imu = node.publisher<gecko::msgs::Imu>("imu");
    cam.wait_for_subscribers(1, 20s);
    imu.wait_for_subscribers(1, 20s);
    gecko::msgs::Image image;
    image.width = 640;
    image.height = 480;
    image.encoding = "rgb8";
    image.step = 640 * 3;
    image.data.assign(640 * 480 * 3, 0);
    for (std::size_t i = 0; i < image.data.size(); ++i) image.data[i] = static_cast<std::uint8_t>(i * 7 + (i >> 11));
    gecko::msgs::Imu reading;
    gecko::Rate rate(1000.0);
    std::uint64_t n = 0;
    const auto start = Clock::now();
    while (secs_since(start) < seconds) {
        reading.stamp_ns = gecko::now_ns();
        imu.publish(reading);
        if (n++ % 33 == 0) {
            image.stamp_ns = reading.stamp_ns;
            image.data[n % image.data.size()] ^= 1;
            cam.publish(image);
        }
        rate.sleep();
    }
    std::printf("%llu %.6f\n", static_cast<unsigned long long>(n), secs_since(start));
    return 0;
}

struct Sent {
    std::uint64_t count = 0;
    double seconds = 0;
};

Sent read_sent(const std::string& path) {
    Sent s;
    std::ifstream in(path);
    in >> s.count >> s.seconds;
    return s;
}

// ---- write and read ----

struct WriteRow {
    std::string what;
    double mb_s = 0, msg_s = 0;
};

double dd(const std::string& path, std::size_t total, std::size_t block) {
    std::vector<std::uint8_t> b(block, 0x5a);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const auto start = Clock::now();
    for (std::size_t done = 0; done < total; done += block)
        if (::write(fd, b.data(), block) != static_cast<ssize_t>(block)) throw std::runtime_error("dd: write failed");
    ::close(fd);
    const double s = secs_since(start);
    ::unlink(path.c_str());
    return static_cast<double>(total) / s / 1e6;
}

WriteRow write_bag(const std::string& path, std::size_t total, std::size_t size, gecko::bag::WriterOptions o,
                   const std::string& what) {
    std::vector<std::uint8_t> payload(size);
    for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<std::uint8_t>((i * 131) ^ (i >> 9));
    const std::size_t n = total / size;
    const auto start = Clock::now();
    {
        gecko::bag::Writer w(path, o);
        const auto ch = w.add_channel("bench", "msgpack");
        for (std::size_t i = 0; i < n; ++i) w.write(ch, static_cast<std::uint32_t>(i), 1000 + i, 1000 + i, payload.data(), size);
        w.close();
    }
    const double s = secs_since(start);
    return {what, static_cast<double>(n * size) / s / 1e6, static_cast<double>(n) / s};
}

WriteRow read_bag(const std::string& path, const std::string& what) {
    const auto start = Clock::now();
    gecko::bag::Reader r(path);
    std::uint64_t bytes = 0, n = 0;
    r.read_messages({}, [&](const gecko::bag::Channel&, const gecko::bag::MessageView& m) {
        bytes += m.size;
        ++n;
        return true;
    });
    const double s = secs_since(start);
    return {what, static_cast<double>(bytes) / s / 1e6, static_cast<double>(n) / s};
}

void bench_write_read(const std::string& dir, bool markdown, bool write, bool read, int reps) {
    Table tw, tr;
    tw.title = "Writing: gecko::bag::Writer next to plain write() of the same bytes to the same directory";
    tw.header = {"messages", "how", "MB/s", "messages/s", "vs write()"};
    tr.title = "Reading back: gecko::bag::Reader, every message handed out";
    tr.header = {"messages", "file", "MB/s", "messages/s"};
    struct Size {
        std::size_t size, total;
        const char* name;
    };
    struct Config {
        const char* name;
        gecko::bag::Compression c;
        bool crc;
    };
    const std::vector<Config> configs{{"chunked, uncompressed, CRCs", gecko::bag::Compression::none, true},
                                      {"chunked, uncompressed, no CRC", gecko::bag::Compression::none, false},
                                      {"chunked, lz4, CRCs", gecko::bag::Compression::lz4, true},
                                      {"chunked, zstd, CRCs", gecko::bag::Compression::zstd, true}};
    for (const Size sz : {Size{1u << 20, 512u << 20, "1 MiB"}, Size{100, 64u << 20, "100 B"}}) {
        // Alternating: write() then each configuration, rep after rep, so that drift spreads over all.
        std::vector<double> base;
        std::vector<std::vector<WriteRow>> runs(configs.size()), reads(configs.size());
        for (int rep = 0; rep < reps; ++rep) {
            base.push_back(dd(dir + "/dd.bin", sz.total, std::max<std::size_t>(sz.size, 1u << 20)));
            for (std::size_t c = 0; c < configs.size(); ++c) {
                gecko::bag::WriterOptions o;
                o.compression = configs[c].c;
                o.crc = configs[c].crc;
                const std::string path = dir + "/bench.mcap";
                runs[c].push_back(write_bag(path, sz.total, sz.size, o, configs[c].name));
                if (read) reads[c].push_back(read_bag(path, configs[c].name));
                ::unlink(path.c_str());
            }
        }
        const double b = median(base);
        tw.rows.push_back({sz.name, "write() in 1 MiB blocks (dd)", fmt(b, 0), "", "1.00"});
        auto med = [](const std::vector<WriteRow>& v, double WriteRow::*f) {
            std::vector<double> x;
            for (const auto& r : v) x.push_back(r.*f);
            return median(x);
        };
        for (std::size_t c = 0; c < configs.size(); ++c) {
            const double mb = med(runs[c], &WriteRow::mb_s);
            tw.rows.push_back({sz.name, configs[c].name, fmt(mb, 0), fmt(med(runs[c], &WriteRow::msg_s), 0), fmt(mb / b, 2)});
            if (read) tr.rows.push_back({sz.name, configs[c].name, fmt(med(reads[c], &WriteRow::mb_s), 0), fmt(med(reads[c], &WriteRow::msg_s), 0)});
        }
    }
    tw.notes = {"median of " + std::to_string(reps) + " alternating runs each (write(), then each configuration); files in " + dir +
                    ", page cache not flushed (neither for write()); 512 MiB per 1 MiB run, 64 MiB per 100 B run",
                "the MCAP project's C++ writer, Intel NUC to a ramdisk (Nov 2022): 2.2 GB/s at 1 MiB, 39 MB/s at 100 B chunked"};
    tr.notes = {"median of " + std::to_string(reps) + " runs, each right after its file was written (in the page cache)"};
    if (write) tw.print(markdown);
    if (read) tr.print(markdown);
}

// ---- keep up, CPU, timing ----

struct Rig {
    std::string key, self;
    Core core;
    Rig(const std::string& k, const std::string& s) : key(k), self(s), core(k) { point_at(key, core.address); }
};

// A 64 B stream: what a plain subscriber, a key-wide one (both in this process) and `gecko record` (a process) receive per second.
void bench_keepup(Rig& rig, const std::string& dir, double seconds, int reps, bool markdown) {
    std::vector<double> plain, keywide, recorder, plain_sent, keywide_sent, rec_sent, recorder_inline, rec_inline_sent;
    std::uint64_t rec_drops = 0;
    for (int rep = 0; rep < reps; ++rep) {
        for (const bool key_wide : {false, true}) {  // A: a plain subscriber; A': a key-wide one, as the recorder's
            gecko::Node node(node_options(rig.key, rig.core.address, "bench_sub"));
            gecko::SubscriberOptions so;
            so.depth = 10000;
            gecko::TopicFilter filter;
            filter.topics = {"bench/small"};
            auto sub = key_wide ? node.subscribe_all(filter, so) : node.raw_subscriber("bench/small", so);
            const std::string out = dir + "/sent.txt";
            const pid_t pub = spawn({rig.self, "--publish", rig.key, rig.core.address, "small", fmt(seconds, 3)}, out.c_str());
            std::uint64_t got = 0;
            Clock::time_point first{}, last{};
            int status = 0;
            for (;;) {
                const bool any = sub.receive(500ms, [&](const gecko::RawView&) {
                    if (got++ == 0) first = Clock::now();
                    last = Clock::now();
                });
                if (!any && got > 0 && ::waitpid(pub, &status, WNOHANG) == pub) break;
                if (!any && got == 0 && ::waitpid(pub, &status, WNOHANG) == pub) break;
            }
            const Sent s = read_sent(out);
            (key_wide ? keywide : plain).push_back(static_cast<double>(got) / std::max(1e-9, s.seconds));
            (key_wide ? keywide_sent : plain_sent).push_back(static_cast<double>(s.count) / std::max(1e-9, s.seconds));
            std::fprintf(stderr, "  %s subscriber: %llu of %llu\n", key_wide ? "key-wide" : "plain",
                         static_cast<unsigned long long>(got), static_cast<unsigned long long>(s.count));
        }
        for (const bool inline_writer : {false, true}) {  // B: gecko record; B': chunks written on its receiving thread
            const std::string file = dir + "/keepup.mcap", out = dir + "/sent.txt";
            std::vector<std::string> command{GECKO_CLI_PATH, "record", "-o", file, "bench/small", "--quiet", "--queue", "10000"};
            if (inline_writer) command.push_back("--inline-writer");
            const pid_t rec = spawn(command);
            const pid_t pub = spawn({rig.self, "--publish", rig.key, rig.core.address, "small", fmt(seconds, 3)}, out.c_str());
            reap(pub);
            ::kill(rec, SIGINT);  // as Ctrl-C: the recorder writes what it has queued, and closes the file
            reap(rec);
            const Sent s = read_sent(out);
            gecko::bag::Reader r(file);
            const std::uint64_t got = r.statistics() ? r.statistics()->message_count : 0;
            for (const auto& m : r.metadata())
                if (m.name == gecko::bag::keys::drops_record) rec_drops = std::stoull(m.metadata.at("total"));
            (inline_writer ? recorder_inline : recorder).push_back(static_cast<double>(got) / std::max(1e-9, s.seconds));
            (inline_writer ? rec_inline_sent : rec_sent).push_back(static_cast<double>(s.count) / std::max(1e-9, s.seconds));
            std::fprintf(stderr, "  gecko record%s: %llu of %llu (drops in the file: %llu)\n",
                         inline_writer ? " --inline-writer" : "", static_cast<unsigned long long>(got),
                         static_cast<unsigned long long>(s.count), static_cast<unsigned long long>(rec_drops));
            ::unlink(file.c_str());
        }
    }
    Table t;
    t.title = "Keeping up: a 64 B stream sent as fast as a publisher process can, median of " + std::to_string(reps) +
              " alternating runs of " + fmt(seconds, 1) + " s";
    t.header = {"receiver", "publisher sent/s", "received/s", "vs plain subscriber"};
    t.rows.push_back({"plain subscriber (RawSubscriber, counts)", fmt(median(plain_sent), 0), fmt(median(plain), 0), "1.00"});
    t.rows.push_back({"key-wide subscriber (subscribe_all, counts)", fmt(median(keywide_sent), 0), fmt(median(keywide), 0),
                      fmt(median(keywide) / median(plain), 2)});
    t.rows.push_back({"gecko record (to MCAP, zstd)", fmt(median(rec_sent), 0), fmt(median(recorder), 0),
                      fmt(median(recorder) / median(plain), 2)});
    t.rows.push_back({"gecko record --inline-writer (chunks compressed on its receiving thread)", fmt(median(rec_inline_sent), 0),
                      fmt(median(recorder_inline), 0), fmt(median(recorder_inline) / median(plain), 2)});
    t.notes = {"received/s: messages the receiver kept, over the publisher's sending time; the rest were counted as drops "
               "(by the recorder: into the file's gecko.drops)"};
    t.print(markdown);
}

void bench_cpu(Rig& rig, const std::string& dir, double seconds, int reps, bool markdown) {
    const std::vector<std::string> compressions{"zstd", "lz4", "none"};
    std::vector<std::vector<double>> share(compressions.size()), pub_share(compressions.size());
    std::vector<std::uint64_t> messages(compressions.size()), drops(compressions.size()), bytes(compressions.size());
    for (int rep = 0; rep < reps; ++rep)
        for (std::size_t c = 0; c < compressions.size(); ++c) {
            const std::string file = dir + "/cpu.mcap", out = dir + "/sent.txt";
            const pid_t rec = spawn({GECKO_CLI_PATH, "record", "-o", file, "--quiet", "--compression", compressions[c]});
            const pid_t pub = spawn({rig.self, "--publish", rig.key, rig.core.address, "camera", fmt(seconds, 3)}, out.c_str());
            const double pub_cpu = reap(pub);
            ::kill(rec, SIGINT);
            const double rec_cpu = reap(rec);
            const Sent sent = read_sent(out);  // the publisher's sending time: the recorder's startup CPU counts against it
            share[c].push_back(100 * rec_cpu / std::max(1e-9, sent.seconds));
            pub_share[c].push_back(100 * pub_cpu / std::max(1e-9, sent.seconds));
            gecko::bag::Reader r(file);
            messages[c] += r.statistics() ? r.statistics()->message_count : 0;
            bytes[c] += r.file_size();
            for (const auto& m : r.metadata())
                if (m.name == gecko::bag::keys::drops_record) drops[c] += std::stoull(m.metadata.at("total"));
            std::fprintf(stderr, "  gecko record --compression %s: %.1f %% of a core\n", compressions[c].c_str(), share[c].back());
            ::unlink(file.c_str());
        }
    Table t;
    t.title = "CPU: gecko record of 640x480 rgb8 images at 30 Hz and a 1 kHz IMU, " + fmt(seconds, 0) + " s, median of " +
              std::to_string(reps) + " alternating runs";
    t.header = {"recorder", "share of one core", "min", "max", "the publisher (baseline)", "messages recorded", "MB written", "drops"};
    for (std::size_t c = 0; c < compressions.size(); ++c) {
        const auto [lo, hi] = std::minmax_element(share[c].begin(), share[c].end());
        t.rows.push_back({"gecko record --compression " + compressions[c], fmt(median(share[c]), 1) + " %", fmt(*lo, 1) + " %",
                          fmt(*hi, 1) + " %", fmt(median(pub_share[c]), 1) + " %", std::to_string(messages[c] / reps),
                          fmt(static_cast<double>(bytes[c]) / reps / 1e6, 1), std::to_string(drops[c])});
    }
    t.notes = {"share: the recorder's CPU time (user + system, its whole life, startup included) over the publisher's sending "
               "time; messages and MB per run; drops summed over the runs"};
    t.print(markdown);
}

std::vector<double> interval_errors(const std::vector<std::int64_t>& arrivals, double period_ns) {
    std::vector<double> e;
    for (std::size_t i = 1; i < arrivals.size(); ++i) e.push_back(std::fabs(static_cast<double>(arrivals[i] - arrivals[i - 1]) - period_ns) / 1e3);
    return e;
}

void bench_timing(Rig& rig, const std::string& dir, int reps, bool markdown) {
    const int n = 3000;
    const std::string file = dir + "/imu1k.mcap";
    {
        gecko::bag::Writer w(file);
        const auto ch = gecko::bag::add_channel<gecko::msgs::Imu>(w, "imu");
        gecko::msgs::Imu m;
        for (int i = 0; i < n; ++i) {
            m.stamp_ns = i;
            gecko::bag::write(w, ch, m, static_cast<std::uint32_t>(i + 1), 1'700'000'000'000'000'000ull + 1'000'000ull * i);
        }
    }
    struct Runs {
        std::vector<double> p50, p99, max, cpu;
        std::size_t intervals = 0;
    };
    Runs runs[2];
    for (int rep = 0; rep < reps; ++rep)
        for (const bool played : {false, true}) {
            gecko::Node node(node_options(rig.key, rig.core.address, "bench_timing"));
            gecko::SubscriberOptions so;
            so.depth = 10000;
            auto sub = node.raw_subscriber("imu", so);
            std::vector<std::int64_t> arrivals;
            pid_t child = -1;
            std::thread direct;
            if (played) {
                child = spawn({GECKO_CLI_PATH, "play", file, "--quiet", "--wait-subscribers", "1"});
            } else {
                direct = std::thread([&] {
                    gecko::Node pn(node_options(rig.key, rig.core.address, "bench_rate"));
                    auto pub = pn.publisher<gecko::msgs::Imu>("imu");
                    pub.wait_for_subscribers(1, 20s);
                    gecko::Rate rate(1000.0);
                    gecko::msgs::Imu m;
                    for (int i = 0; i < n; ++i) {
                        pub.publish(m);
                        rate.sleep();
                    }
                });
            }
            while (static_cast<int>(arrivals.size()) < n &&
                   sub.receive(3s, [&](const gecko::RawView& v) { arrivals.push_back(v.info.receive_time_ns); })) {
            }
            auto& r = runs[played ? 1 : 0];
            if (played) r.cpu.push_back(100.0 * reap(child) / (n * 1e-3));  // its CPU over the recording's length
            else direct.join();
            const auto e = interval_errors(arrivals, 1e6);
            r.p50.push_back(percentile(e, 0.5));
            r.p99.push_back(percentile(e, 0.99));
            r.max.push_back(e.empty() ? 0 : *std::max_element(e.begin(), e.end()));
            r.intervals += e.size();
        }
    Table t;
    t.title = "Timing at 1 kHz: the error of each interval between arrivals at a subscriber, against 1 ms (median of " +
              std::to_string(reps) + " alternating runs)";
    t.header = {"publisher", "intervals", "p50 µs", "p99 µs", "p99 range µs", "max µs (worst run)", "CPU, % of a core"};
    for (const bool played : {false, true}) {
        const auto& r = runs[played ? 1 : 0];
        const auto [lo, hi] = std::minmax_element(r.p99.begin(), r.p99.end());
        t.rows.push_back({played ? "gecko play of a 1 kHz recording" : "a publisher paced by gecko::Rate (baseline)",
                          std::to_string(r.intervals), fmt(median(r.p50), 1), fmt(median(r.p99), 1),
                          fmt(*lo, 1) + " - " + fmt(*hi, 1), fmt(*std::max_element(r.max.begin(), r.max.end()), 1),
                          played ? fmt(median(r.cpu), 1) + " %" : ""});
    }
    t.notes = {"both over the same link to a subscriber in this process; arrival times are the subscriber's receive times, "
               "so the transport's own jitter is in both rows",
               "CPU: gecko play's (user + system, its whole life, startup included) over the recording's " +
                   fmt(n * 1e-3, 0) + " s; most of it is the poll of the clock in the last 200 µs before each message"};
    t.print(markdown);
    ::unlink(file.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 6 && std::string(argv[1]) == "--publish") return publish(argv[2], argv[3], argv[4], std::atof(argv[5]));
    std::string dir = "/tmp", only;
    double seconds = 3;
    int reps = 5;
    bool markdown = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool value = i + 1 < argc;
        if (a == "--dir" && value) dir = argv[++i];
        else if (a == "--seconds" && value) seconds = std::max(0.5, std::atof(argv[++i]));
        else if (a == "--reps" && value) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--only" && value) only = argv[++i];
        else if (a == "--markdown") markdown = true;
        else {
            std::fprintf(stderr, "usage: gecko_bag_bench [--dir DIR] [--seconds S] [--reps N] [--only write|read|keepup|cpu|timing] [--markdown]\n");
            return a == "--help" || a == "-h" ? 0 : 2;
        }
    }
    ::signal(SIGPIPE, SIG_IGN);
    try {
        char self[4096] = {};
        if (::readlink("/proc/self/exe", self, sizeof self - 1) <= 0) throw std::runtime_error("cannot find myself");
        if (only.empty() || only == "write" || only == "read") bench_write_read(dir, markdown, only != "read", only != "write", reps);
        if (only.empty() || only == "keepup" || only == "cpu" || only == "timing") {
            Rig rig("bagbench-" + std::to_string(::getpid()), self);
            if (only.empty() || only == "keepup") bench_keepup(rig, dir, seconds, reps, markdown);
            if (only.empty() || only == "cpu") bench_cpu(rig, dir, std::max(5.0, seconds), reps, markdown);
            if (only.empty() || only == "timing") bench_timing(rig, dir, reps, markdown);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gecko_bag_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
