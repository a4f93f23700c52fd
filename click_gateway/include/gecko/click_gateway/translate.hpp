// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file translate.hpp
/// Click's wire format (protobuf, package click.protobuf) <-> Gecko's Click
/// message types (gecko/msgs/click.hpp).
///
/// Nothing here throws: every failure comes back as a value with a reason a
/// person can act on (DecodeError, EncodeError), because a Click server must
/// answer every request, malformed or not, with exactly one reply.
///
/// Classification follows the wire rules of Click: a frame is first read as
/// `{messageType = 1}` only (ControlMessage's field 2 clashes with Message.id),
/// and since HandshakeInitMessageType is 0, the proto3 default, a frame without
/// messageType (an empty frame, or one holding only `version`) is a
/// HandshakeInit. Every encoded message sets messageType explicitly.
///
/// Decoding is strict: fields the Click schema does not have, value types it
/// does not define, vectors that are not 3 numbers, sensor values with no type,
/// and controls that set more than one of values / angles / angularVelocities /
/// torques are errors, never silent guesses. The Gecko-side pairing fields
/// (request_id, answers) are not on Click's wire: decode leaves them 0 and
/// encode drops them.

#include <gecko/msgs/click.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace gecko::click {

namespace mc = gecko::msgs::click;

/// Bytes that are not a valid Click message, with the reason.
struct DecodeError {
    std::string reason;
};

/// A Gecko message that cannot be expressed as a valid Click message, with the reason.
struct EncodeError {
    std::string reason;
};

/// Everything one Click frame can decode to.
using Decoded = std::variant<DecodeError, mc::HandshakeInit, mc::Handshake, mc::SensorRequest, mc::Control,
                             mc::Sensor, mc::Reset, mc::Error>;

/// Protobuf bytes of one Click message, or why they could not be made.
using Encoded = std::variant<std::string, EncodeError>;

/// What decoding one frame may build. The frame is checked on the wire against
/// these (and the schema) before protobuf builds anything, so what a decode
/// allocates is bounded by them, not by what the sender wrote.
struct DecodeLimits {
    /// Fields, map entries and packed numbers in one frame, at every depth. A
    /// Click request of a robot with a dozen joints has a few dozen.
    std::size_t max_elements{1u << 20};
    /// Bytes of one string (an object, joint, event or sensor name, an error
    /// text), which a reply or a log line may quote.
    std::size_t max_string_bytes{1u << 20};
    /// Objects (robots) a ControlMessage may name: the handshake's count, when
    /// the caller knows it. nullopt: only max_elements bounds them.
    std::optional<std::size_t> max_control_objects;
};

/// Decodes one Click frame (the protobuf bytes of one message, no envelope).
/// @param bytes the frame; empty is a valid HandshakeInit.
/// @param reset_error_direction the direction given to a decoded Reset or Error:
///        `request` when reading what a client sent (a server's view), `answer`
///        when reading what a server sent (a client's view).
/// @param limits what the frame may hold; a frame beyond them is a DecodeError.
/// @return the message, or a DecodeError saying what is wrong. Never throws.
Decoded decode(std::string_view bytes, mc::Direction reset_error_direction = mc::Direction::request,
               const DecodeLimits& limits = {}) noexcept;

/// Encodes a Gecko Click message as Click protobuf bytes, messageType set.
/// @return the bytes, or an EncodeError naming the offending field. Never throws.
Encoded encode(const mc::HandshakeInit& msg) noexcept;
Encoded encode(const mc::Handshake& msg) noexcept;       ///< @copydoc encode(const mc::HandshakeInit&)
Encoded encode(const mc::SensorRequest& msg) noexcept;   ///< @copydoc encode(const mc::HandshakeInit&)
Encoded encode(const mc::Control& msg) noexcept;         ///< @copydoc encode(const mc::HandshakeInit&)
Encoded encode(const mc::Sensor& msg) noexcept;          ///< @copydoc encode(const mc::HandshakeInit&)
Encoded encode(const mc::Reset& msg) noexcept;           ///< @copydoc encode(const mc::HandshakeInit&)
Encoded encode(const mc::Error& msg) noexcept;           ///< @copydoc encode(const mc::HandshakeInit&)

/// The bytes of a Click ErrorMessage carrying `reason` (invalid UTF-8 replaced by
/// '?', as Click's proto3 string requires). What a server replies to a request it
/// cannot serve. Never fails, never throws (short of running out of memory).
std::string error_reply(std::string_view reason);

/// The name of a decoded alternative, for logs: "HandshakeInit", "Control",
/// "DecodeError", ...
const char* kind_name(const Decoded& msg) noexcept;

/// Checks the rule Click leaves implicit: per object, at most one of `values`,
/// `angles`, `angular_velocities`, `torques` is non-empty.
/// @return the reason if violated, or nullopt.
std::optional<std::string> check_control(const mc::Control& control);


/// What a Click client may send to a server.
using ClientRequest = std::variant<mc::HandshakeInit, mc::SensorRequest, mc::Control, mc::Reset, mc::Error>;
/// What a Click server may answer.
using ServerAnswer = std::variant<mc::Handshake, mc::Sensor, mc::Reset, mc::Error>;

/// What a handler made by make_click_handler asks and tells its owner. Every field may be empty.
struct ClickHandlerHooks {
    /// The limits each request is decoded with, asked per request (a gateway
    /// narrows them once it knows the handshake). Empty: DecodeLimits{}.
    std::function<DecodeLimits()> limits;
    /// Called with the reason when a request is refused without calling `serve`
    /// (bytes that are not a Click request within the limits, or a message only a
    /// server sends): for the owner's log and counters.
    std::function<void(const std::string& reason)> refused;
};

/// Wraps a typed server into a bytes-in, bytes-out handler (for serve_click_rep).
/// Each request is decoded, given a `request_id` (1, 2, 3, ... counting the
/// requests this handler accepted), and passed to `serve`; the answer's `answers`
/// is set to that id (and a Reset's or Error's `direction` to answer) and the
/// answer is encoded. Malformed bytes, messages only a server may send (Handshake,
/// Sensor), an exception from `serve`, and answers that cannot be encoded all
/// become an ErrorMessage saying so, without calling `serve` for bad bytes. The
/// returned handler never throws; call it from one thread at a time.
std::function<std::string(std::string_view)> make_click_handler(std::function<ServerAnswer(const ClientRequest&)> serve,
                                                                ClickHandlerHooks hooks = {});

}  // namespace gecko::click
