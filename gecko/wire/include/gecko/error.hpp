#pragma once
/// @file error.hpp
/// The one exception type Gecko throws: a reason a person can act on, plus a
/// code a program can branch on.

#include <stdexcept>
#include <string>

namespace gecko {

/// What went wrong, for programs. The message (`what()`) says it for people.
enum class Errc {
    invalid_argument,  ///< a bad option, name or endpoint passed by the caller
    transport,         ///< the transport refused (bind, connect, send)
    timeout,           ///< a bounded wait ran out
    no_peer,           ///< nobody to talk to (no service server, no core)
    type_mismatch,     ///< the two sides disagree on a message type
    decode,            ///< bytes could not be decoded into the requested type
    remote,            ///< the other side answered with an error
    protocol,          ///< a peer broke the protocol (wrong order, unknown message)
    discovery,         ///< the discovery core could not be found or refused us
    closed,            ///< the Node this handle belongs to was destroyed
    security,          ///< a secret is missing, unreadable or unsafe, or a peer failed to prove it
};

/// Returns a short stable name for a code ("timeout", "type_mismatch", ...).
const char* to_string(Errc code) noexcept;

/// Thrown by Gecko calls that cannot do what was asked.
class Error : public std::runtime_error {
public:
    Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
    Errc code() const noexcept { return code_; }

private:
    Errc code_;
};

}  // namespace gecko
