#pragma once
// The iceoryx peer of the benchmark programs: iceoryx 2.0 (Debian's
// libiceoryx-posh-dev + iceoryx) measured next to Gecko and raw ZeroMQ in the
// same run. Compiled with GECKO_BENCH_ICEORYX when CMake finds iceoryx_posh;
// without it every call below is a no-op and absent() says "not built".
//
// Processes. iceoryx needs its daemon, RouDi, and a runtime per process that
// cannot be torn down before exit (its destructor unregisters from RouDi, and
// RouDi's shutdown SIGTERMs every process still registered). So:
//   1. start() (first thing in main) launches iox-roudi with a generated
//      config, waits until it says it is ready (bounded), and forks: the
//      benchmark goes on in the child; the original process only waits for
//      it, then stops RouDi (SIGTERM, SIGKILL after 5 s) and removes what
//      RouDi and the runtimes leave in /dev/shm and /tmp, and exits with the
//      benchmark's exit code. RouDi thus always outlives the runtimes.
//   2. start_peer() forks the iceoryx peer process (a Child: pipes, killed on
//      failure) *before* this process registers with RouDi, since a forked copy
//      of a registered runtime is unusable. The peer registers on its own and
//      serves commands (program-specific PipeMsg kinds) until stop_peer().
//      Later children (ZeroMQ/Gecko pongers, simulation...) are forked from a
//      registered process; they never touch iceoryx and leave with _exit, so
//      they neither use nor unregister the parent's runtime.
// A RouDi that is already running (someone else's) is never touched: the
// iceoryx rows are skipped and absent() says so.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common.hpp"

namespace bench {

struct SideOptions;
class Side;

namespace iceoryx {

/// Pipe commands: 200 and up (the programs' own command kinds follow kFirstCommand).
inline constexpr std::uint32_t kQuit = 200;
inline constexpr std::uint32_t kFirstCommand = 210;
/// gecko_bench's throughput and fan-out command: subscribe to link_name("data", a) and count (size b).
inline constexpr std::uint32_t kSink = kFirstCommand + 1;

/// Compiled with iceoryx.
bool built() noexcept;

/// See above. `wanted`: false when no selected section has iceoryx rows (then
/// nothing starts). Returns in the benchmark process. Throws Stall if RouDi
/// does not come up within 10 s.
void start(bool wanted);

/// RouDi runs and the rows will be measured.
bool available() noexcept;

/// Why there are no iceoryx rows: "not built (install libiceoryx-posh-dev
/// iceoryx)", "skipped: ...".
std::string absent();

/// One line for table notes: RouDi's options and mempools.
std::string roudi_note();

using PeerHandler = std::function<void(const PipeMsg& command, Child& self)>;

/// Forks `count` peers (each registers with RouDi, sends kReady, then calls
/// `handler` per command until kQuit), waits for them (bounded), then
/// registers this process. Only when available(). Several peers are several
/// subscriber processes for the fan-out rows.
void start_peer(const PeerHandler& handler, int count = 1);
/// Peer `i` (0 <= i < peer_count()).
Child& peer(int i = 0);
int peer_count() noexcept;
/// kQuit, then joins the peers (bounded).
void stop_peer();

/// The instance name of one link in a run: both processes derive it from `id`.
std::string link_name(const std::string& what, std::uint64_t id);

/// The iceoryx side of a benchmark link (see sides.hpp): an UntypedPublisher on
/// service ("gecko-bench", options.pub_endpoint, "data"), an UntypedSubscriber
/// on options.sub_endpoint. Throws Stall when not built.
std::unique_ptr<Side> make_side(const SideOptions& options);

}  // namespace iceoryx
}  // namespace bench
