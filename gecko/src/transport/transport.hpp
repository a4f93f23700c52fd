// SPDX-License-Identifier: Apache-2.0
#pragma once
// The transport seam. A node sends every frame through one OutPort per
// transport and receives through one InPort per transport; which transport a
// pair of nodes uses is chosen once, from the locators discovery carries
// (usable_locators). Nothing above this file knows what a ZeroMQ socket or a
// shared-memory ring is: a new transport is a new file that implements these
// three classes plus an entry in the registry (registry.hpp), by locator scheme.
//
// Locators are URLs: "tcp://10.0.0.2:41234", "ipc:///tmp/gecko-…",
// "inproc://gecko-…" (ZeroMQ), "mem://<name>" (in-process queues, for tests
// and deterministic runs). The scheme before "://" names the transport.
//
// Threads: ports are not thread-safe; the node session serialises each one
// (one lock per OutPort; the inbound leader for InPorts).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gecko/net/zmq_socket.hpp"

#include "gecko/buffer.hpp"
#include "gecko/detail/function_ref.hpp"
#include "gecko/log.hpp"
#include "gecko/wire/announcement.hpp"
#include "transport/frame.hpp"

namespace gecko::detail {

/// What sending one frame did.
struct SendResult {
    bool sent = true;          ///< handed to the transport (false: refused, e.g. the port is closed)
    std::size_t dropped = 0;   ///< subscribers whose queue was full and lost a frame because of it (counted)
    /// Of those, subscribers that this frame itself did not reach (no room for
    /// it at all, as opposed to an older frame dropped to make room).
    std::size_t missed = 0;
};

/// Memory an OutPort lends for one frame, written in place by the publisher
/// (loaned messages): the frame goes out from where it was written.
struct FrameLoan {
    std::uint8_t* data = nullptr;  ///< the frame's first byte (its header goes there)
    std::size_t capacity = 0;      ///< bytes that may be written from `data`
    std::uint64_t token = 0;       ///< the port's own handle on it
    std::shared_ptr<void> keep;    ///< keeps the memory mapped while the loan lives, even past the port
};

/// A subscriber (or server, or client) of another node appeared on, or left,
/// a channel this node sends on.
struct PortEvent {
    bool joined = true;
    wire::Announcement who;
};

/// What a node subscribes to on an InPort: a channel (or a whole key) plus
/// the announcement that tells publishers who is asking.
struct Interest {
    wire::Channel channel = 0;
    bool wildcard = false;     ///< every channel of the key (recorders, bridges)
    std::string announcement;  ///< wire::encode_announcement(...)
};

/// How ports are opened; a transport ignores what does not concern it.
struct PortOptions {
    std::string node;             ///< the node's name (socket file names, logs)
    std::uint64_t session = 0;    ///< the node's session id (unique names)
    std::string key;
    /// The key's CurveZMQ keys when it is secured (docs/SECURITY.md §5): a
    /// network transport's listening sockets are CURVE servers, its
    /// connecting ones CURVE clients. Null: plain.
    std::shared_ptr<const net::CurveKeys> curve;
    /// The key's subkey 4 when it is secured (docs/SECURITY.md §8): a shm
    /// publisher seals its segment's header with it, and a shm reader maps
    /// only segments sealed with it. Null: plain.
    std::shared_ptr<const std::array<std::uint8_t, 32>> segment_key;
    /// During a rotation (docs/SECURITY.md §9), the accepted secret's subkey
    /// 4: a shm reader also maps segments sealed with it. Null outside one.
    std::shared_ptr<const std::array<std::uint8_t, 32>> accepted_segment_key;
    std::string ipc_directory;    ///< where ipc:// sockets go
    std::string tcp_address;      ///< address tcp:// binds to ("0.0.0.0")
    std::vector<std::string> listen;  ///< exact locators to bind (their schemes must be this transport's); empty: automatic
    int send_queue = 1000;        ///< frames queued per remote subscriber before drops
    /// Bytes queued per remote subscriber before drops (ZeroMQ; 0: frames only).
    std::size_t send_queue_bytes = 8u << 20;
    int receive_queue = 1000;     ///< frames queued per remote publisher before drops
    std::size_t max_message_size = 64u << 20;  ///< frames above this are refused on arrival
    std::chrono::milliseconds linger{200};     ///< how long unsent frames may still go out when the node closes
    /// How long a waiting InPort polls its queues before it blocks, where the
    /// transport can (shm); 0 blocks at once. A bounded busy-wait: it wins a
    /// lockstep exchange when both sides are awake, at the cost of CPU.
    std::chrono::microseconds spin{0};
    /// Files a transport creates (shared-memory segments and doorbells) are
    /// readable and writable by the group too, not only the user: processes
    /// of several users that share a group link over them.
    bool group_access = false;
    /// The most memory a port's own buffers hold at once, in bytes (shm: the
    /// pages of its segment in /dev/shm); 0: no bound. Where a frame would go
    /// past it, the port gives back idle memory first, then treats the frame
    /// as it treats a full queue: older frames are dropped, counted.
    std::size_t memory = 8u << 20;
    /// Where a port reports a fault it handled (a link it dropped, a corrupt
    /// or dead peer), for the node's log. Called on the thread using the port,
    /// possibly with the node's locks held: queue it (Notices::add), never log
    /// or publish from inside. Empty: the port keeps it to itself.
    std::function<void(LogLevel level, const std::string& reason, const std::string& message)> notice;
};

class OutPort {
public:
    virtual ~OutPort() = default;
    /// Where other nodes reach this port (wildcard ports resolved).
    virtual std::vector<std::string> locators() const = 0;
    /// Sends a complete frame (its first 8 bytes are its channel) to every
    /// subscriber of that channel. May take `frame`'s memory (large frames)
    /// if takes_memory() says so.
    virtual SendResult send(Buffer& frame) = 0;
    /// Whether send() may take the frame's memory; a port that copies what it
    /// sends says false, and the node hands it the frame itself rather than
    /// a copy made in case.
    virtual bool takes_memory() const { return true; }
    /// Lends memory for a frame of up to `capacity` bytes, written in place
    /// and sent with send_loan(). False: this port does not lend, or has
    /// nothing free now (the caller writes into a Buffer instead). A loan
    /// holds memory the port would otherwise send with: a port lends a
    /// bounded share of it, and never blocks.
    virtual bool lend(std::size_t /*capacity*/, FrameLoan& /*out*/) { return false; }
    /// Sends the first `size` bytes of a loan this port made (a complete
    /// frame), as send() would, without a copy. The loan is used up.
    virtual SendResult send_loan(FrameLoan& /*loan*/, std::size_t /*size*/) { return SendResult{false, 0}; }
    /// Takes back a loan this port made that will not be sent.
    virtual void return_loan(FrameLoan& /*loan*/) {}
    /// Reports subscribers that joined or left since the last call.
    virtual void drain_events(FunctionRef<void(const PortEvent&)> on) = 0;
    /// True if drain_events() has something (cheap; no waiting).
    virtual bool events_pending() = 0;
    /// A file descriptor that becomes readable when events may be pending
    /// (edge-triggered: after it fires, drain until events_pending() is false).
    virtual int event_fd() const = 0;
    /// Housekeeping that may take a while, such as removing what killed
    /// processes left in a shared directory. The node calls it from its
    /// reactor shortly after it is up (never on the constructor's path, which
    /// a new subscriber's time to first message includes), then every 10 minutes.
    virtual void tidy() {}
};

class InPort {
public:
    virtual ~InPort() = default;
    /// Connects to another node's OutPort. A locator that cannot be used is
    /// not an exception (it came from a peer): false, with the reason in `why`.
    virtual bool connect(const std::string& locator, std::string& why) = 0;
    /// connect() to a peer whose listening sockets use the secret with
    /// fingerprint `peer_fingerprint`: in a secured key during a rotation, a
    /// CURVE client must name its server's key before connecting
    /// (docs/SECURITY.md §9). "" (or a transport without CurveZMQ): connect().
    virtual bool connect_with_secret(const std::string& locator, const std::string& peer_fingerprint, std::string& why) {
        (void)peer_fingerprint;
        return connect(locator, why);
    }
    /// After connect() failed: whether `locator` is well formed and may open
    /// later (a shared-memory segment its node has not made yet), so that the
    /// node retries it quietly for a while rather than warn at once.
    virtual bool may_open_later(const std::string& /*locator*/) const { return false; }
    virtual void disconnect(const std::string& locator) = 0;
    /// True if the port dropped links by itself since the last take_dropped()
    /// (it may be asked from any thread).
    virtual bool has_dropped() const { return false; }
    /// The locators of the links this port dropped by itself (a publisher
    /// gone, a segment corrupt or cut short) since the last call: the node
    /// links through the peer's next locator instead.
    virtual std::vector<std::string> take_dropped() { return {}; }
    virtual void subscribe(const Interest& interest) = 0;
    virtual void unsubscribe(const Interest& interest) = 0;
    /// The next frame, if one is waiting; never blocks.
    virtual bool take(Frame& out) = 0;
    /// True if take() may succeed now (no waiting; it may answer true when it
    /// does not know). After take() returned false, and nothing else was done
    /// on the port since, this is false and costs nothing: the receive path
    /// calls it instead of a take() that would fail.
    virtual bool ready_now() = 0;
    /// Waits up to `timeout` until take() may succeed or one of `also` (other
    /// file descriptors: the node's wake-up, the process's shutdown; -1 for
    /// none) is readable. Returns what fired: bit 0 the port, bit 1 also[0],
    /// bit 2 also[1]; 0 on timeout (spurious port wake-ups are allowed).
    virtual unsigned wait(std::chrono::nanoseconds timeout, const std::array<int, 2>& also) = 0;
    /// A file descriptor that becomes readable when frames may be waiting
    /// (edge-triggered: after it fires, take() until it returns false), once
    /// prepare_wait() has asked for it.
    virtual int event_fd() const = 0;
    /// For a caller that waits on event_fd() itself (several ports polled
    /// together, the reactor's epoll) instead of calling wait(): makes the fd
    /// fire on the next arrival (shared memory must ask its publishers to
    /// ring). False if a frame may already be there: take() instead of waiting.
    virtual bool prepare_wait() { return !ready_now(); }
    /// For a caller that busy-polls several ports (NodeOptions::spin): it is
    /// about to call frames_waiting() in a loop, so nobody need ring for it.
    virtual void begin_spin() {}
    /// True if frames are waiting, read from memory without a system call.
    /// Ports that cannot tell that way say nullopt, and the busy-polling
    /// caller polls their event_fd() now and then instead.
    virtual std::optional<bool> frames_waiting() { return std::nullopt; }
};

class Transport {
public:
    virtual ~Transport() = default;
    /// The locator schemes this transport serves ("tcp", "ipc", "inproc").
    virtual std::vector<std::string> schemes() const = 0;
    virtual std::unique_ptr<OutPort> open_out(const PortOptions& options) = 0;
    virtual std::unique_ptr<InPort> open_in(const PortOptions& options) = 0;
};

/// The scheme of a locator ("tcp" for "tcp://…"); empty if it has none.
std::string_view scheme_of(std::string_view locator) noexcept;

/// What a node knows about where another node runs.
struct Whereabouts {
    std::string host;           ///< gethostname()
    std::string host_id;        ///< boot id + mount namespace: equal means the same /tmp and /dev/shm
    std::int32_t pid = 0;
    std::string pid_namespace;  ///< equal host_id and pid_namespace and pid: the same process
};

}  // namespace gecko::detail
