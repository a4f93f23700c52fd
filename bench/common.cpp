#include "common.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>
#include <thread>

namespace bench {

std::int64_t mono_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

const char* to_string(Impl impl) {
    switch (impl) {
        case Impl::raw: return "raw";
        case Impl::gecko: return "gecko";
        case Impl::gecko_raw: return "gecko-raw-layer";
        case Impl::iceoryx: return "iceoryx";
    }
    return "?";
}
const char* to_string(Transport t) {
    switch (t) {
        case Transport::ipc: return "ipc";
        case Transport::tcp: return "tcp";
        case Transport::shm: return "shm";
    }
    return "?";
}

std::string make_endpoint(Transport t, const std::string& what) {
    static int counter = 0;
    if (t == Transport::shm) {  // Gecko's shared memory: a segment name under /dev/shm
        return "shm://gecko-bench-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" + what;
    }
    if (t == Transport::ipc) {
        return "ipc:///tmp/gecko-bench-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" + what;
    }
    // A port that is free now, for ZeroMQ to bind next (in this process or a
    // child). Taken below the kernel's ephemeral range (32768 and up on
    // Linux), which outgoing connections draw from: a port the kernel handed
    // us and we gave back could be some connection's source port by the time
    // ZeroMQ binds it ("Address already in use", seen once in a full run).
    static std::uint32_t seed = static_cast<std::uint32_t>(::getpid()) * 2654435761u;
    for (int attempt = 0; attempt < 200; ++attempt) {
        seed = seed * 1664525u + 1013904223u;
        const auto port = static_cast<std::uint16_t>(20000 + (seed >> 8) % 12000);  // 20000..31999
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) throw Stall(std::string("socket(): ") + std::strerror(errno));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port);
        const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        ::close(fd);
        if (free) return "tcp://127.0.0.1:" + std::to_string(port);
    }
    throw Stall("cannot find a free tcp port in 20000-31999");
}

bool same_host_rows_ran(const Options& options) {
    if (options.ipc && options.same_host) return true;
    std::cout << (options.markdown ? "" : "  ") << "Gecko over shm and iceoryx: "
              << (options.ipc ? "left out (--without-shm)" : "run with the ipc rows only (--transport tcp)") << "\n\n"
              << std::flush;
    return false;
}

void remove_endpoint(const std::string& endpoint) noexcept {
    const std::string prefix = "ipc://";
    if (endpoint.compare(0, prefix.size(), prefix) == 0) ::unlink(endpoint.c_str() + prefix.size());
}

// ---- child processes ----

namespace {
std::set<pid_t>& live_children() {
    static std::set<pid_t> pids;
    return pids;
}
}  // namespace

void kill_children() noexcept {
    for (pid_t pid : live_children()) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    live_children().clear();
}

Child::Child(const std::function<int(Child&)>& body) {
    int down[2];  // parent -> child
    int up[2];    // child -> parent
    if (::pipe(down) != 0 || ::pipe(up) != 0) throw Stall(std::string("pipe(): ") + std::strerror(errno));
    std::fflush(stdout);
    std::fflush(stderr);
    // The parent measures run after run, and its heap keeps what earlier runs
    // freed (hundreds of MiB once 1 MiB frames have queued). A fork makes those
    // pages copy-on-write, and the parent then faults and copies each one it
    // writes again (perf: do_wp_page under memmove, ~10 % of a 1 MiB
    // publisher's time), a cost that depends on which stack ran before. Give
    // them back first: every run then starts from the same heap.
    ::malloc_trim(0);
    pid_ = ::fork();
    if (pid_ < 0) throw Stall(std::string("fork(): ") + std::strerror(errno));
    if (pid_ == 0) {
        ::close(down[1]);
        ::close(up[0]);
        read_fd_ = down[0];
        write_fd_ = up[1];
        live_children().clear();  // not ours to kill
        // Never outlive a parent that died: the pipe to it closes, and as a
        // last resort an alarm ends a child that hangs.
        ::alarm(120);
        int code = 2;
        try {
            code = body(*this);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "gecko_bench (child): %s\n", e.what());
            code = 2;
        }
        std::fflush(stdout);
        std::fflush(stderr);
        ::_exit(code);
    }
    ::close(down[0]);
    ::close(up[1]);
    read_fd_ = up[0];
    write_fd_ = down[1];
    live_children().insert(pid_);
}

Child::~Child() {
    if (read_fd_ >= 0) ::close(read_fd_);
    if (write_fd_ >= 0) ::close(write_fd_);
    if (pid_ > 0 && live_children().count(pid_)) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        live_children().erase(pid_);
    }
}

void Child::send(const PipeMsg& m) {
    const ssize_t n = ::write(write_fd_, &m, sizeof m);
    if (n != static_cast<ssize_t>(sizeof m)) {
        throw Stall(is_child() ? "parent process went away" : "child process went away");
    }
}

bool Child::receive(PipeMsg& m, milliseconds timeout) {
    pollfd p{read_fd_, POLLIN, 0};
    int rc;
    do {
        rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return false;
    ssize_t n;
    do {
        n = ::read(read_fd_, &m, sizeof m);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof m)) {
        throw Stall(is_child() ? "parent process went away" : "child process exited early");
    }
    return true;
}

void Child::join(milliseconds timeout, const std::string& what) {
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    for (;;) {
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) break;
        if (r < 0) throw Stall(what + ": waitpid failed");
        if (Clock::now() > deadline) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            live_children().erase(pid_);
            throw Stall(what + ": child did not exit within " + std::to_string(timeout.count()) + " ms (killed)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    live_children().erase(pid_);
    if (WIFSIGNALED(status)) throw Stall(what + ": child killed by signal " + std::to_string(WTERMSIG(status)));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        throw Stall(what + ": child exited with status " + std::to_string(WEXITSTATUS(status)));
    }
}

// ---- statistics ----

std::vector<pid_t> tasks_of(pid_t pid) {
    std::vector<pid_t> out;
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
        ::closedir(d);
    }
    return out;
}

void pin(pid_t pid, const cpu_set_t& cpus) {
    for (pid_t tid : tasks_of(pid)) ::sched_setaffinity(tid, sizeof cpus, &cpus);
}

cpu_set_t initial_affinity() {
    static const cpu_set_t initial = [] {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        if (::sched_getaffinity(0, sizeof cpus, &cpus) != 0) throw Stall("cannot read this process's CPU affinity");
        return cpus;
    }();
    return initial;
}

int first_allowed_cpu() {
    const cpu_set_t allowed = initial_affinity();
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) return c;
    return 0;
}

cpu_set_t first_cpu() {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first_allowed_cpu(), &one);
    return one;
}

Usage usage_of(pid_t pid) {
    Usage u;
    for (pid_t tid : tasks_of(pid)) {
        std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/schedstat");
        double run_ns = 0, wait_ns = 0, slices = 0;
        if (f >> run_ns >> wait_ns >> slices) {
            u.cpu_ns += run_ns;
            u.scheduled += slices;
        }
    }
    return u;
}

Usage usage_of(const std::vector<pid_t>& pids) {
    Usage sum;
    for (pid_t p : pids) {
        const Usage u = usage_of(p);
        sum.cpu_ns += u.cpu_ns;
        sum.scheduled += u.scheduled;
    }
    return sum;
}

std::uint64_t thread_cpu_us() {
    rusage usage{};
    ::getrusage(RUSAGE_THREAD, &usage);
    return static_cast<std::uint64_t>((usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000 +
                                      usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
    const std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
    return v[std::min(i, v.size() - 1)];
}

// ---- tables ----

std::string fmt(double v, int decimals) {
    if (std::isnan(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string fmt_size(std::size_t bytes) {
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " B";
}

std::string fmt_count(double v) {
    if (v >= 1e6) return fmt(v / 1e6, 2) + " M";
    if (v >= 1e3) return fmt(v / 1e3, 1) + " k";
    return fmt(v, 0);
}

void Table::print(bool markdown) const {
    if (rows.empty()) {
        std::cout << (markdown ? "### " : "== ") << title << (markdown ? "\n\n" : " ==\n")
                  << "(no rows: --size matches none of this section's payload sizes)\n\n";
        return;
    }
    const std::size_t n = header.size();
    auto aligned_right = [&](std::size_t i) { return i < right.size() && right[i]; };
    if (markdown) {
        std::cout << "### " << title << "\n\n|";
        for (const auto& h : header) std::cout << ' ' << h << " |";
        std::cout << "\n|";
        for (std::size_t i = 0; i < n; ++i) std::cout << (aligned_right(i) ? " ---: |" : " --- |");
        std::cout << '\n';
        for (const auto& row : rows) {
            std::cout << '|';
            for (const auto& cell : row) std::cout << ' ' << cell << " |";
            std::cout << '\n';
        }
        std::cout << '\n';
        for (const auto& note : notes) std::cout << note << "\n\n";
        std::cout << std::flush;
        return;
    }
    std::vector<std::size_t> width(n, 0);
    auto display_width = [](const std::string& s) {
        std::size_t w = 0;
        for (unsigned char c : s) w += (c & 0xC0) != 0x80;  // count UTF-8 code points
        return w;
    };
    for (std::size_t i = 0; i < n; ++i) width[i] = display_width(header[i]);
    for (const auto& row : rows) {
        for (std::size_t i = 0; i < n && i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
    }
    auto line = [&](const std::vector<std::string>& cells) {
        for (std::size_t i = 0; i < n; ++i) {
            const std::string cell = i < cells.size() ? cells[i] : "";
            const std::string pad(width[i] - display_width(cell), ' ');
            std::cout << (i ? "  " : "") << (aligned_right(i) ? pad + cell : cell + pad);
        }
        std::cout << '\n';
    };
    std::cout << "== " << title << " ==\n";
    line(header);
    std::size_t total = 0;
    for (auto w : width) total += w + 2;
    std::cout << std::string(total > 2 ? total - 2 : 0, '-') << '\n';
    for (const auto& row : rows) line(row);
    for (const auto& note : notes) std::cout << "  " << note << '\n';
    std::cout << std::endl;
}

std::string describe_machine() {
    std::string model = "unknown";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        const auto colon = line.find(':');
        if (line.rfind("model name", 0) == 0 && colon != std::string::npos) {
            model = line.substr(colon + 2);
            break;
        }
    }
    std::ifstream loadavg("/proc/loadavg");
    std::string a, b, c;
    loadavg >> a >> b >> c;
    utsname un{};
    ::uname(&un);
    return std::to_string(std::thread::hardware_concurrency()) + " CPUs (" + model + "), Linux " + un.release +
           ", load average " + a + " " + b + " " + c;
}

namespace {

// Hierholzer's walk over the complete directed graph on n vertices: every
// edge a → b (a ≠ b) once, back to 0. Length n(n − 1); n = 1 is just "0".
std::vector<int> balanced_order(int n) {
    if (n <= 1) return {0};
    std::vector<int> next(static_cast<std::size_t>(n), 0);  // per vertex: the next target to try
    auto take = [&](int from) {
        int& t = next[static_cast<std::size_t>(from)];
        if (t == from) ++t;
        return t < n ? t++ : -1;
    };
    std::vector<int> stack{0}, walk;
    while (!stack.empty()) {
        const int to = take(stack.back());
        if (to >= 0) {
            stack.push_back(to);
        } else {
            walk.push_back(stack.back());
            stack.pop_back();
        }
    }
    walk.pop_back();  // the closing 0: the walk repeats from its start
    return walk;
}

}  // namespace

int rotating_stack(std::uint64_t j, int n) {
    static const auto orders = [] {  // built once (thread-safe), 16 short walks
        std::array<std::vector<int>, 16> a;
        for (int k = 1; k <= 16; ++k) a[static_cast<std::size_t>(k - 1)] = balanced_order(k);
        return a;
    }();
    if (n < 1 || n > 16) throw std::invalid_argument("rotating_stack: 1 to 16 stacks");
    const auto& order = orders[static_cast<std::size_t>(n - 1)];
    return order[static_cast<std::size_t>(j % order.size())];
}

}  // namespace bench
