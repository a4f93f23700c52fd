// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file secret.hpp
/// A key's shared secret and what is derived from it (docs/SECURITY.md §2-3).
///
///     auto secret = gecko::security::Secret::generate();
///     secret.write_file(gecko::security::secret_path("dalek"));
///     auto pair = secret.curve_key_pair(gecko::security::Purpose::curve_server);
///
/// Every machine of a robot holds the same 32 random bytes for its key; each
/// use takes its own subkey (libsodium's crypto_kdf: BLAKE2b keyed with the
/// secret, the purpose's number as salt, "geckokey" as personalisation), so
/// no two uses share key material and other implementations derive the same.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace gecko::security {

/// What a subkey is for. The numbers are the KDF's subkey ids: fixed forever.
enum class Purpose : std::uint64_t {
    curve_server = 1,   ///< the CurveZMQ key pair every listening socket of the key uses
    curve_client = 2,   ///< the CurveZMQ key pair every connecting socket uses (ZAP admits only it)
    discovery_mac = 3,  ///< the MAC key of discovery datagrams and core messages
    shm_mac = 4,        ///< the MAC key of shared-memory segment headers
    bridge_token = 5,   ///< the browser bridge's token, when derived from the secret
};

/// A CurveZMQ key pair as libzmq takes it (ZMQ_CURVE_PUBLICKEY and friends):
/// Z85 text, 40 characters each.
struct CurveKeyPair {
    std::string public_key;
    std::string secret_key;
};

class Secret {
public:
    static constexpr std::size_t size = 32;
    using Bytes = std::array<std::uint8_t, size>;

    /// 32 bytes from the operating system's random source.
    static Secret generate();
    /// A secret given as bytes (tests, other stores).
    static Secret from_bytes(const Bytes& bytes);
    /// Reads a secret file (SecretFile::read) and returns the secret its
    /// programs use: its first line.
    static Secret read_file(const std::string& path);
    /// Writes it to `path` with mode 0600, creating missing directories with
    /// mode 0700; the file appears whole or not at all. Throws gecko::Error
    /// (Errc::security) if `path` exists and `replace` is false, or on an
    /// I/O error.
    void write_file(const std::string& path, bool replace = false) const;

    /// The 32-byte subkey for `purpose`.
    Bytes derive(Purpose purpose) const;
    /// The X25519 key pair whose secret key is derive(purpose).
    CurveKeyPair curve_key_pair(Purpose purpose) const;
    /// 16 hexadecimal digits that name this secret in logs and `gecko doctor`
    /// without giving anything away (a subkey of its own, id 0).
    std::string fingerprint() const;
    /// The browser bridge's token in a key with this secret: the first 16
    /// bytes of derive(Purpose::bridge_token), in hexadecimal (32 digits).
    /// Anyone with the secret computes it (`gecko keygen --bridge-token`);
    /// it gives nothing of the secret away.
    std::string bridge_token() const;

    Secret(const Secret&) = default;
    Secret& operator=(const Secret&) = default;
    ~Secret();  ///< the bytes are wiped

    /// Whether two secrets are the same bytes (in constant time).
    bool same_as(const Secret& other) const noexcept;

private:
    friend struct SecretFile;
    Secret() = default;
    Bytes bytes_{};
};

/// What a key's secret file holds: the secret its programs use, and during a
/// rotation a second one they accept too (docs/SECURITY.md §9): a program
/// seals and makes its CurveZMQ key pairs with `own`, and admits what either
/// makes, so that machines change over one at a time.
struct SecretFile {
    Secret own;
    std::optional<Secret> accepted;

    /// Reads a secret file: one line of 64 hexadecimal digits, and during a
    /// rotation a second such line. Throws gecko::Error (Errc::security) if
    /// it is missing, is not a regular file, can be read by other users
    /// (like ssh, a secret others can read is refused: `chmod 600` it),
    /// holds the same secret twice, or anything else.
    static SecretFile read(const std::string& path);
    /// Writes it to `path` (one line per secret, `own` first) as
    /// Secret::write_file does.
    void write(const std::string& path, bool replace = false) const;
};

}  // namespace gecko::security
