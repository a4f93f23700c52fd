#pragma once
// Shared pieces of gecko_bench: options, failure handling, child processes,
// endpoints, statistics and table output.

#include <sched.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Monotonic time in ns. CLOCK_MONOTONIC is system-wide on Linux, so values
/// from two processes on one host can be compared.
std::int64_t mono_ns() noexcept;

struct Options {
    bool quick = false;
    bool markdown = false;
    bool latency = true;
    bool throughput = true;
    bool codec = true;
    bool session = true;
    bool fanout = true;       ///< one publisher to 1, 2, 4, 8 subscriber processes (fanout.cpp)
    int reps = 3;             ///< repetitions per row in rotating order (samples are pooled)
    bool ipc = true;
    bool tcp = true;
    std::size_t only_size = 0;  ///< nonzero: latency/throughput rows of this payload size only
    /// The ipc rows with raw ZeroMQ and Gecko only: no Gecko-over-shm and
    /// iceoryx stacks in their rotation (those change how fast the others'
    /// wake-ups are on a VM; see docs/BENCHMARKS.md).
    bool same_host = true;
    /// Throughput rows: raw ZMQ_SNDHWM = gecko send_queue, in messages (Gecko's default).
    int send_queue = 1000;
};

/// The same-host rows (Gecko over shm, iceoryx) run with the ipc rows: false,
/// and a line saying so, when this run has none.
bool same_host_rows_ran(const Options& options);


/// A side stopped answering, or the machinery failed: the run cannot go on.
struct Stall : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// raw: ZeroMQ PUB/SUB; gecko: Publisher<Bytes>/Subscriber<Bytes>; gecko_raw: Gecko's untyped
/// layer (RawPublisher/RawSubscriber, payload read in place: no decode copy), a diagnostic;
/// iceoryx: iceoryx 2.0 untyped publisher/subscriber over its shared memory (bench/iceoryx.hpp).
enum class Impl { raw, gecko, gecko_raw, iceoryx };
/// shm: iceoryx's shared memory (no endpoint of make_endpoint's).
enum class Transport { ipc, tcp, shm };
const char* to_string(Impl impl);
const char* to_string(Transport t);

/// A fresh endpoint for one socket: ipc:///tmp/gecko-bench-<pid>-<n>-<what>
/// or tcp://127.0.0.1:<free port>.
std::string make_endpoint(Transport t, const std::string& what);
/// Removes the socket file of an ipc:// endpoint (ZeroMQ may leave it behind).
void remove_endpoint(const std::string& endpoint) noexcept;
/// Removes ipc endpoints' socket files when leaving scope (also on failure).
struct EndpointCleanup {
    std::vector<std::string> endpoints;
    EndpointCleanup() = default;
    explicit EndpointCleanup(std::vector<std::string> e) : endpoints(std::move(e)) {}
    EndpointCleanup(const EndpointCleanup&) = delete;
    EndpointCleanup& operator=(const EndpointCleanup&) = delete;
    ~EndpointCleanup() {
        for (const auto& e : endpoints) remove_endpoint(e);
    }
};

// ---- child processes ----

/// Fixed-size record sent over the pipes between the parent and its child.
struct PipeMsg {
    std::uint32_t kind = 0;  ///< one of the k* constants below
    std::uint32_t code = 0;
    std::uint64_t a = 0, b = 0, c = 0, d = 0, e = 0;
};
inline constexpr std::uint32_t kReady = 1;    ///< child is set up
inline constexpr std::uint32_t kProbe = 2;    ///< child saw a probe message
inline constexpr std::uint32_t kDone = 3;     ///< parent finished sending (a = count sent)
inline constexpr std::uint32_t kResult = 4;   ///< child's result
inline constexpr std::uint32_t kError = 5;    ///< child failed (text follows on stderr)

class Child {
public:
    /// Forks; the child runs `body(*this)` and exits with its return value
    /// (2 if it throws). The parent must hold no live ZeroMQ context.
    explicit Child(const std::function<int(Child&)>& body);
    ~Child();  ///< kills the child if it is still running
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    /// Either side: sends one record. Throws Stall on failure.
    void send(const PipeMsg& m);
    /// Either side: waits up to `timeout` for one record; false on timeout.
    /// Throws Stall if the other side closed the pipe.
    bool receive(PipeMsg& m, milliseconds timeout);
    /// Parent: waits for the child to exit (killing it after `timeout`); throws
    /// Stall if it failed or had to be killed.
    void join(milliseconds timeout, const std::string& what);

    bool is_child() const noexcept { return pid_ == 0; }
    /// Parent: the child's process id.
    pid_t pid() const noexcept { return pid_; }

private:
    pid_t pid_ = -1;
    int read_fd_ = -1;
    int write_fd_ = -1;
};

/// Kills every child still alive (used on the way out after a failure).
void kill_children() noexcept;

/// The stack that carries round trip `j` when `n` stacks take turns. The
/// order is a closed walk through every ordered pair of different stacks
/// (for 3: 0 2 1 2 0 1, then again), so each stack follows each other one
/// equally often: what ran just before a round trip (another stack's threads
/// awake or asleep, its memory in the caches) moves it by several µs on a
/// small machine, and a plain rotation (0 1 2, 1 2 0, 2 0 1) put one stack
/// behind raw ZeroMQ twice as often as another. Every process of a run uses it.
int rotating_stack(std::uint64_t j, int n);

// ---- where processes run, and what their threads cost ----

/// The thread ids of process `pid` (/proc/PID/task).
std::vector<pid_t> tasks_of(pid_t pid);
/// Every thread of `pid` may run on `cpus` only (threads it makes later inherit it), as taskset does.
void pin(pid_t pid, const cpu_set_t& cpus);
/// This process's CPU affinity as it started (what "spread" restores).
cpu_set_t initial_affinity();
/// The first CPU of initial_affinity() (0 unless this program was started under taskset), and a set of it alone.
int first_allowed_cpu();
cpu_set_t first_cpu();

/// CPU time (ns) and times scheduled in, summed over a process's threads (/proc/PID/task/TID/schedstat).
struct Usage {
    double cpu_ns = 0, scheduled = 0;
};
Usage usage_of(pid_t pid);
Usage usage_of(const std::vector<pid_t>& pids);

/// CPU time of the calling thread, µs.
std::uint64_t thread_cpu_us();

// ---- statistics ----

/// The p-th percentile (0..100) of `v` (sorted in place), nearest-rank.
double percentile(std::vector<double>& v, double p);

// ---- tables ----

struct Table {
    std::string title;
    std::vector<std::string> header;
    std::vector<bool> right;  ///< right-align a column
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> notes;
    void print(bool markdown) const;
};

/// "2 CPUs (AMD EPYC), Linux 6.1.0, load average 0.10 0.20 0.30": for the
/// line that says where figures were measured.
std::string describe_machine();

std::string fmt(double v, int decimals);
std::string fmt_size(std::size_t bytes);   ///< "64 B", "16 KiB", "4 MiB"
std::string fmt_count(double v);           ///< "1.23 M", "456 k"

/// Keeps the optimiser from dropping a computation.
template <class T>
inline void do_not_optimize(T const& value) {
    asm volatile("" : : "r,m"(value) : "memory");
}
inline void clobber() { asm volatile("" : : : "memory"); }

void run_latency(const Options& options);
void run_throughput(const Options& options);
void run_codec(const Options& options);
void run_fanout(const Options& options);
/// The most subscriber processes of a fan-out row (main.cpp starts that many iceoryx peers).
inline constexpr int kMaxFanout = 8;
void run_session(const Options& options);
/// The iceoryx peer process's ends of the latency and throughput runs (bench/iceoryx.hpp).
void latency_iceoryx_peer(const PipeMsg& command, Child& self);
void throughput_iceoryx_peer(const PipeMsg& command, Child& self);
/// The throughput section's subscriber (also the fan-out section's): receives on `endpoint`
/// until the parent's kDone and the count it gives, then sends kResult (a received, b last
/// receive's mono_ns, c gaps, d overwritten, e and code: messages and CPU µs of its thread).
int throughput_subscriber(Impl impl, const std::string& endpoint, std::size_t size, Child& self);
/// iceoryx SubscriberOptions.queueCapacity for a payload size (throughput.cpp).
std::uint64_t iceoryx_queue(std::size_t size);

}  // namespace bench
