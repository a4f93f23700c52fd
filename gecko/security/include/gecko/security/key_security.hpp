// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file key_security.hpp
/// What a program of a key needs to know to secure its links: whether the key
/// has a secret here, and the CurveZMQ keys derived from it
/// (docs/SECURITY.md §5). Nodes, geckocore and the tools call it with their
/// key alone: turning security on is putting the secret file in place.
///
///     auto security = gecko::security::KeySecurity::find("dalek");
///     if (security.secured()) options.curve = security.curve();

#include <memory>
#include <optional>
#include <string>

#include "gecko/net/datagram_seal.hpp"
#include "gecko/net/zmq_socket.hpp"
#include "gecko/security/secret.hpp"

namespace gecko::security {

/// The CurveZMQ keys of `key` from its secret: server pair = subkey 1,
/// client pair = subkey 2, ZAP domain "gecko/" + key; with `accepted` (a
/// rotation, docs/SECURITY.md §9), that secret's public keys too.
net::CurveKeys curve_keys(const std::string& key, const Secret& secret, const Secret* accepted = nullptr);
/// What seals and checks the key's discovery datagrams: subkey 3 and the
/// secret's fingerprint (docs/SECURITY.md §6); with `accepted`, what checks
/// that secret's too.
net::DatagramKey datagram_key(const Secret& secret, const Secret* accepted = nullptr);

/// A key's security as this process finds it: a secret (then CURVE on every
/// ZeroMQ link) or none (plain, as before).
class KeySecurity {
public:
    /// Looks the key's secret up (find_secret). Throws gecko::Error
    /// (Errc::security) when a secret file is there but unusable: a secret
    /// that is there is never ignored.
    static KeySecurity find(const std::string& key);

    bool secured() const noexcept { return curve_ != nullptr; }
    /// The CURVE keys (null when not secured), for net::SocketOptions::curve.
    const std::shared_ptr<const net::CurveKeys>& curve() const noexcept { return curve_; }
    /// What seals and checks the key's discovery datagrams (null when not
    /// secured; docs/SECURITY.md §6), for net::FinderOptions::seal.
    const std::shared_ptr<const net::DatagramKey>& datagram_key() const noexcept { return datagram_key_; }
    /// What seals the key's shared-memory segment headers: subkey 4 (null
    /// when not secured; docs/SECURITY.md §8), for the transports' PortOptions.
    const std::shared_ptr<const Secret::Bytes>& segment_key() const noexcept { return segment_key_; }
    /// The subkey 4 of the secret accepted during a rotation (null outside
    /// one): a shm reader also maps segments it sealed (docs/SECURITY.md §9).
    const std::shared_ptr<const Secret::Bytes>& accepted_segment_key() const noexcept { return accepted_segment_key_; }
    /// The secret's fingerprint ("" when not secured).
    const std::string& fingerprint() const noexcept { return fingerprint_; }
    /// The fingerprint of the secret accepted beside it during a rotation
    /// (the secret file's second line; "" outside one).
    const std::string& accepted_fingerprint() const noexcept { return accepted_fingerprint_; }
    /// Where the secret was looked for (secret_path(key); "" if no path could be made).
    const std::string& path() const noexcept { return path_; }

private:
    std::shared_ptr<const net::CurveKeys> curve_;
    std::shared_ptr<const net::DatagramKey> datagram_key_;
    std::shared_ptr<const Secret::Bytes> segment_key_, accepted_segment_key_;
    std::string fingerprint_, accepted_fingerprint_;
    std::string path_;
};

}  // namespace gecko::security
