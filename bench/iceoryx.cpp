// The iceoryx peer of the benchmark programs: RouDi's lifetime, the peer
// process and the iceoryx Side. See iceoryx.hpp for the process layout.
#include "iceoryx.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "sides.hpp"

#ifdef GECKO_BENCH_ICEORYX
#include <iceoryx_hoofs/log/logmanager.hpp>
#include <iceoryx_posh/mepoo/chunk_header.hpp>
#include <iceoryx_posh/popo/untyped_publisher.hpp>
#include <iceoryx_posh/popo/untyped_subscriber.hpp>
#include <iceoryx_posh/popo/wait_set.hpp>
#include <iceoryx_posh/runtime/posh_runtime.hpp>
#endif

namespace bench::iceoryx {
namespace {

constexpr milliseconds kReadyTimeout{10000};  // RouDi up, the peer registered
constexpr milliseconds kStopTimeout{5000};    // RouDi's graceful shutdown before SIGKILL

// The mempools of our RouDi: each payload size of the rows fits one pool
// (iceoryx's `size` is the payload a chunk holds; its header comes on top),
// and the counts cover a full subscriber queue (256 chunks for <= 64 KiB, 64
// above: see the throughput section) plus the chunks loaned and held.
struct Pool {
    std::uint32_t size, count;
};
constexpr Pool kPools[] = {{128, 4096},  {1024, 1024},     {16 * 1024, 64},
                           {256 * 1024, 16}, {1024 * 1024, 80}, {4 * 1024 * 1024, 8}};

enum class State { off, not_built, skipped, running };
State g_state = State::off;
std::string g_reason;
std::string g_prefix;  // runtime names: "gbench<supervisor pid>-"

std::string tmp_path(const std::string& what) {
    return "/tmp/gecko-bench-roudi-" + std::to_string(::getpid()) + what;
}

/// Where iox-roudi is, or "" (PATH lookup, as execvp would do).
std::string find_roudi() {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        const std::string candidate = (dir.empty() ? "." : dir) + "/iox-roudi";
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
}

/// True when a RouDi holds iceoryx's lock file (iceoryx takes it with flock()).
bool roudi_running() {
    const int fd = ::open("/tmp/iox-unique-roudi.lock", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);  // releases our lock, if we got it
    return held;
}

std::string tail(const std::string& file) {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::string out;
    for (std::size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i) out += "\n    " + lines[i];
    return out.empty() ? " (empty)" : out;
}

void write_config(const std::string& file) {
    std::ofstream out(file);
    out << "# gecko_bench's RouDi: one segment, a mempool per payload size of the rows\n"
           "[general]\nversion = 1\n\n[[segment]]\n";
    for (const Pool& p : kPools) out << "\n[[segment.mempool]]\nsize = " << p.size << "\ncount = " << p.count << "\n";
    if (!out) throw Stall("cannot write the RouDi config " + file);
}

pid_t spawn_roudi(const std::string& exe, const std::string& config, const std::string& log) {
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) throw Stall(std::string("fork(): ") + std::strerror(errno));
    if (pid != 0) return pid;
    ::setpgid(0, 0);                    // Ctrl-C reaches the benchmark, not RouDi: the supervisor stops it
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // and if the supervisor dies, RouDi goes too
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // RouDi aborts when it cannot signal a registered process that died
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    // -m off: no keep-alive monitoring (on a loaded 2-vCPU box a late keep-alive would
    // make RouDi drop a benchmark process); -k 2: its shutdown waits 2 s at most for
    // processes still registered.
    const char* argv[] = {exe.c_str(), "-c", config.c_str(), "-m", "off", "-k", "2", "-l", "warning", nullptr};
    ::execv(exe.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
}

/// Waits for `pid` up to `timeout`; true if it exited.
bool reap(pid_t pid, milliseconds timeout, int* status = nullptr) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        int s = 0;
        const pid_t r = ::waitpid(pid, &s, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD)) {
            if (status) *status = s;
            return true;
        }
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(milliseconds(5));
    }
}

std::string group_name() {
    const group* g = ::getgrgid(::getegid());
    return g ? g->gr_name : "";
}

constexpr int kMaxPeers = 16;
std::string peer_name(int i) { return g_prefix + "peer" + (i ? std::to_string(i) : ""); }

/// What RouDi and the runtimes leave behind when killed (a RouDi that shuts down
/// cleanly removes its own; one that aborts or is killed does not). Only called
/// once our RouDi is gone: no other RouDi can have started meanwhile, ours held
/// the lock until then.
void remove_leftovers() {
    for (const std::string& f : {std::string("/dev/shm/iceoryx_mgmt"), "/dev/shm/" + group_name(), std::string("/tmp/roudi"),
                                 std::string("/tmp/roudi.lock"), std::string("/tmp/iox-unique-roudi.lock")}) {
        ::unlink(f.c_str());
    }
    // The runtimes' sockets and locks (a process that was killed keeps its own).
    for (const char* suffix : {"main", "main.lock"}) ::unlink(("/tmp/" + g_prefix + suffix).c_str());
    for (int i = 0; i < kMaxPeers; ++i)
        for (const char* suffix : {"", ".lock"}) ::unlink(("/tmp/" + peer_name(i) + suffix).c_str());
}

pid_t g_benchmark = 0;
void forward(int sig) {
    if (g_benchmark > 0) ::kill(g_benchmark, sig);
}

/// The supervisor: waits for the benchmark, stops RouDi, cleans up, exits.
[[noreturn]] void supervise(pid_t benchmark, pid_t roudi, const std::string& config, const std::string& log) {
    g_benchmark = benchmark;
    struct sigaction sa {};
    sa.sa_handler = forward;
    ::sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    int status = 0;
    while (::waitpid(benchmark, &status, 0) < 0 && errno == EINTR) {
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    int early = 0;
    if (::waitpid(roudi, &early, WNOHANG) == roudi) {
        std::fprintf(stderr, "gecko bench: RouDi exited during the run (status %d), its output:%s\n", early, tail(log).c_str());
        remove_leftovers();
        ::unlink(config.c_str());
        ::_exit(code == 0 ? 2 : code);
    }
    // After a clean run every runtime has unregistered: RouDi may shut down cleanly. After a
    // failure some process was killed while registered, and RouDi's shutdown would abort on it
    // (it cannot signal it): kill RouDi outright then.
    ::kill(roudi, code == 0 ? SIGTERM : SIGKILL);
    int roudi_status = 0;
    if (!reap(roudi, kStopTimeout, &roudi_status)) {
        std::fprintf(stderr, "gecko bench: RouDi did not stop within %lld ms of SIGTERM: killed\n",
                     static_cast<long long>(kStopTimeout.count()));
        ::kill(roudi, SIGKILL);
        reap(roudi, kStopTimeout);
        if (code == 0) code = 2;
    } else if (code == 0 && !(WIFEXITED(roudi_status) && WEXITSTATUS(roudi_status) == 0)) {
        std::fprintf(stderr, "gecko bench: RouDi did not shut down cleanly (status %d), its output:%s\n", roudi_status,
                     tail(log).c_str());
    }
    remove_leftovers();
    ::unlink(config.c_str());
    if (code == 0 || std::getenv("GECKO_BENCH_KEEP_ROUDI_LOG") == nullptr) ::unlink(log.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(code);
}

std::vector<std::unique_ptr<Child>> g_peers;

}  // namespace

bool built() noexcept {
#ifdef GECKO_BENCH_ICEORYX
    return true;
#else
    return false;
#endif
}

bool available() noexcept { return g_state == State::running; }

std::string absent() {
    switch (g_state) {
        case State::not_built: return "iceoryx: not built (install libiceoryx-posh-dev iceoryx)";
        case State::skipped: return "iceoryx: skipped, " + g_reason;
        case State::off: return built() ? "iceoryx: not run" : "iceoryx: not built (install libiceoryx-posh-dev iceoryx)";
        case State::running: return "";
    }
    return "";
}

std::string roudi_note() {
    std::string pools;
    for (const Pool& p : kPools) pools += (pools.empty() ? "" : ", ") + std::to_string(p.count) + " × " + fmt_size(p.size);
    return "iceoryx 2.0: the benchmark's own iox-roudi (-m off -k 2, a generated config: one segment, mempools " + pools +
           "), UntypedPublisher/UntypedSubscriber, overflow policy DISCARD_OLDEST_DATA on both ends (a slow subscriber "
           "never blocks the publisher; what it loses shows as sequence-number gaps)";
}

void start(bool wanted) {
    if (!built()) {
        g_state = State::not_built;
        return;
    }
    if (!wanted) return;
    const std::string exe = find_roudi();
    if (exe.empty()) {
        g_state = State::skipped;
        g_reason = "iox-roudi not found in PATH (install iceoryx)";
        return;
    }
    if (roudi_running()) {
        // Only one RouDi per machine (iceoryx 2.0 has no domains): never share or stop someone else's.
        g_state = State::skipped;
        g_reason = "a RouDi is already running on this machine (/tmp/iox-unique-roudi.lock is held); stop it to get the "
                   "iceoryx rows (this benchmark starts and stops its own)";
        return;
    }
    const std::string config = tmp_path(".toml"), log = tmp_path(".log");
    write_config(config);
    g_prefix = "gbench" + std::to_string(::getpid()) + "-";
    const pid_t roudi = spawn_roudi(exe, config, log);
    // Ready when RouDi prints so (it does on stdout whatever its log level); bounded.
    const auto deadline = Clock::now() + kReadyTimeout;
    for (;;) {
        std::ifstream in(log);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (text.find("RouDi is ready for clients") != std::string::npos) break;
        int status = 0;
        if (::waitpid(roudi, &status, WNOHANG) == roudi) {
            ::unlink(config.c_str());
            throw Stall("iox-roudi exited before it was ready (status " + std::to_string(status) + "), its output:" +
                        tail(log));
        }
        if (Clock::now() > deadline) {
            ::kill(roudi, SIGKILL);
            reap(roudi, kStopTimeout);
            remove_leftovers();
            ::unlink(config.c_str());
            throw Stall("iox-roudi not ready within 10 s, its output:" + tail(log));
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    std::cout << std::flush;
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t benchmark = ::fork();
    if (benchmark < 0) {
        ::kill(roudi, SIGKILL);
        throw Stall(std::string("fork(): ") + std::strerror(errno));
    }
    if (benchmark != 0) supervise(benchmark, roudi, config, log);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the supervisor is gone: so is RouDi, do not linger
    g_state = State::running;
}

std::string link_name(const std::string& what, std::uint64_t id) { return what + "-" + std::to_string(id); }

#ifdef GECKO_BENCH_ICEORYX

namespace {

void init_runtime(const std::string& name) {
    iox::log::LogManager::GetLogManager().SetDefaultLogLevel(iox::log::LogLevel::kWarn,
                                                             iox::log::LogLevelOutput::kHideLogLevel);
    iox::runtime::PoshRuntime::initRuntime(iox::RuntimeName_t(iox::cxx::TruncateToCapacity, name));
}

iox::capro::ServiceDescription service(const std::string& instance) {
    return {"gecko-bench", iox::capro::IdString_t(iox::cxx::TruncateToCapacity, instance), "data"};
}

std::uint64_t read_tag(const void* data, std::size_t size) {
    std::uint64_t tag = 0;
    if (size >= sizeof tag) std::memcpy(&tag, data, sizeof tag);
    return tag;
}

class IceoryxSide final : public Side {
public:
    explicit IceoryxSide(const SideOptions& o) : busy_(o.busy_poll) {
        if (!o.pub_endpoint.empty()) {
            iox::popo::PublisherOptions po;
            po.historyCapacity = 0;
            po.subscriberTooSlowPolicy = iox::popo::ConsumerTooSlowPolicy::DISCARD_OLDEST_DATA;
            pub_ = std::make_unique<iox::popo::UntypedPublisher>(service(o.pub_endpoint), po);
        }
        if (!o.sub_endpoint.empty()) {
            iox::popo::SubscriberOptions so;
            so.queueCapacity = o.queue_capacity;
            so.queueFullPolicy = iox::popo::QueueFullPolicy::DISCARD_OLDEST_DATA;
            sub_ = std::make_unique<iox::popo::UntypedSubscriber>(service(o.sub_endpoint), so);
            if (!busy_) {
                waitset_ = std::make_unique<iox::popo::WaitSet<1>>();
                if (waitset_->attachState(*sub_, iox::popo::SubscriberState::HAS_DATA).has_error()) {
                    throw Stall("iceoryx: cannot attach the subscriber to a WaitSet");
                }
            }
        }
    }
    ~IceoryxSide() override {
        release();
        if (waitset_) waitset_->detachState(*sub_, iox::popo::SubscriberState::HAS_DATA);
    }

    /// iceoryx tells whether a publisher has a subscriber, not how many: count <= 1 only.
    bool wait_subscribers(std::size_t, milliseconds timeout) override {
        const auto deadline = Clock::now() + timeout;
        while (!pub_->hasSubscribers()) {
            if (Clock::now() > deadline) return false;
            std::this_thread::sleep_for(milliseconds(1));
        }
        return true;
    }

    void send(std::uint64_t tag, std::size_t size) override {
        if (buffer_.size() < size) buffer_.resize(size, 0xA5);
        std::memcpy(buffer_.data(), &tag, sizeof tag);
        publish_copy(buffer_.data(), size);
    }

    bool receive(milliseconds timeout) override {
        release();
        if (take()) return true;
        const std::int64_t deadline = mono_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
        if (busy_) {
            for (unsigned n = 1;; ++n) {
                if (take()) return true;
                if ((n & 1023) == 0 && mono_ns() > deadline) return false;
            }
        }
        for (;;) {
            const std::int64_t left = deadline - mono_ns();
            if (left <= 0) return false;
            (void)waitset_->timedWait(iox::units::Duration::fromNanoseconds(left));
            if (take()) return true;
        }
    }

    std::uint64_t tag() const override { return read_tag(in_, size_); }
    std::size_t size() const override { return size_; }
    void echo() override { publish_copy(in_, size_); }
    std::uint64_t drops() const override { return gaps_; }
    std::uint64_t send_failures() const override { return loan_failures_; }

private:
    void publish_copy(const void* data, std::size_t size) {
        auto loan = pub_->loan(static_cast<std::uint32_t>(size));
        if (loan.has_error()) {
            ++loan_failures_;
            return;
        }
        std::memcpy(loan.value(), data, size);
        pub_->publish(loan.value());
    }

    bool take() {
        auto taken = sub_->take();
        if (taken.has_error()) return false;
        in_ = taken.value();
        const auto* header = iox::mepoo::ChunkHeader::fromUserPayload(in_);
        size_ = header->userPayloadSize();
        // Sequence numbers count per publisher: a gap is what the full queue discarded.
        const std::uint64_t seq = header->sequenceNumber();
        if (have_seq_ && seq > next_seq_) gaps_ += seq - next_seq_;
        next_seq_ = seq + 1;
        have_seq_ = true;
        return true;
    }

    void release() {
        if (in_) sub_->release(in_);
        in_ = nullptr;
    }

    bool busy_;
    std::unique_ptr<iox::popo::UntypedPublisher> pub_;
    std::unique_ptr<iox::popo::UntypedSubscriber> sub_;
    std::unique_ptr<iox::popo::WaitSet<1>> waitset_;
    const void* in_ = nullptr;
    std::size_t size_ = 0;
    std::vector<std::uint8_t> buffer_;
    std::uint64_t gaps_ = 0, next_seq_ = 0, loan_failures_ = 0;
    bool have_seq_ = false;
};

}  // namespace

std::unique_ptr<Side> make_side(const SideOptions& options) { return std::make_unique<IceoryxSide>(options); }

void start_peer(const PeerHandler& handler, int count) {
    if (!available()) return;
    if (count < 1 || count > kMaxPeers) throw Stall("iceoryx peers: 1 to " + std::to_string(kMaxPeers));
    for (int i = 0; i < count; ++i) {
        g_peers.push_back(std::make_unique<Child>([&handler, i](Child& self) -> int {
            ::alarm(0);  // lives as long as the benchmark: it ends when told to or when the pipe closes
            init_runtime(peer_name(i));
            self.send(PipeMsg{kReady});
            for (;;) {
                PipeMsg m;
                if (!self.receive(m, milliseconds(1000))) continue;  // throws Stall once the parent is gone
                // exit(), not a return (Child would _exit): the runtime's destructor unregisters
                // from RouDi, whose shutdown would otherwise abort on a registered process gone.
                if (m.kind == kQuit) std::exit(0);
                handler(m, self);
            }
        }));
    }
    for (auto& p : g_peers) {
        PipeMsg m;
        if (!p->receive(m, kReadyTimeout) || m.kind != kReady) {
            throw Stall("an iceoryx peer process did not register with RouDi within 10 s");
        }
    }
    init_runtime(g_prefix + "main");
}

#else  // not built

std::unique_ptr<Side> make_side(const SideOptions&) { throw Stall(absent()); }
void start_peer(const PeerHandler&, int) {}

#endif

Child& peer(int i) {
    if (i < 0 || i >= peer_count()) throw Stall("the iceoryx peer " + std::to_string(i) + " is not running");
    return *g_peers[static_cast<std::size_t>(i)];
}

int peer_count() noexcept { return static_cast<int>(g_peers.size()); }

void stop_peer() {
    for (auto& p : g_peers) p->send(PipeMsg{kQuit});
    for (auto& p : g_peers) p->join(milliseconds(10000), "iceoryx peer");
    g_peers.clear();
}

}  // namespace bench::iceoryx
