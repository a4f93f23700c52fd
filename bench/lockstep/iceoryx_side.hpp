#pragma once
// gecko_lockstep_bench's iceoryx rows: the lockstep round trip (a request of
// the Click Control's size, a reply of the Click Sensor's size) between this
// process and the iceoryx peer process (bench/iceoryx.hpp), two ways:
//   WaitSet    both ends block: the responder waits on a WaitSet attached to
//              its request subscriber, the requester on one attached to its
//              reply subscriber.
//   busy-poll  both ends spin on take(). So that a spinning responder does not
//              take a vCPU from the other stacks' round trips (they alternate
//              with these), the responder spins only for its own round trip:
//              the requester arms it over the pipe, and starts the clock once
//              the armed responder has answered on the reply channel.
// Both stacks join the rotation of the other stacks (rotating_stack over all
// of them): the responder follows the same order, waiting for the next round
// trip of its own.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common.hpp"

namespace lockstep_iceoryx {

enum class Wake { waitset, busy_poll };

/// Where the two iceoryx stacks sit in the run's rotation, and the sizes.
struct Layout {
    int stacks = 0;        ///< stacks in the rotation, all paths
    int waitset = -1;      ///< index of the WaitSet stack
    int busy_poll = -1;    ///< index of the busy-poll stack
    std::size_t request = 0, reply = 0;
};

/// The peer process's handler (iceoryx::start_peer): serves one run per command.
void serve(const bench::PipeMsg& command, bench::Child& self);

/// This process's end of one run: sets both stacks up with the peer (bounded
/// waits, probes), then steps them; finish() stops the peer's run.
class Run {
public:
    Run(const Layout& layout, std::uint64_t id);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    /// One round trip on stack `wake` as round trip `j` of the rotation; µs.
    double step(Wake wake, std::uint64_t j);
    /// After the last round trip `j - 1`: stops the peer where it waits next.
    void finish(std::uint64_t j);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep_iceoryx
