// SPDX-License-Identifier: Apache-2.0
#include "gecko/security/secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sodium.h>
#include <zmq.h>

#include "gecko/error.hpp"

namespace gecko::security {
namespace {

// crypto_kdf's context: 8 bytes, the same for every Gecko subkey (docs/SECURITY.md §3).
constexpr char kdf_context[crypto_kdf_CONTEXTBYTES + 1] = "geckokey";
// A subkey of its own for the fingerprint: never one that protects anything.
constexpr std::uint64_t fingerprint_id = 0;
// The longest secret file we read: 64 digits, a line end, some slack for whitespace.
constexpr std::size_t max_file_size = 256;

void init_sodium() {
    if (sodium_init() < 0) throw Error(Errc::security, "libsodium could not start (sodium_init failed)");
}

Error security_error(const std::string& what) { return Error(Errc::security, what); }

std::string errno_text() { return std::strerror(errno); }

Secret::Bytes derive_id(const Secret::Bytes& key, std::uint64_t id) {
    Secret::Bytes out{};
    if (crypto_kdf_derive_from_key(out.data(), out.size(), id, kdf_context, key.data()) != 0)
        throw security_error("deriving a subkey failed (crypto_kdf_derive_from_key)");
    return out;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Creates the missing directories of `path`'s parent with mode 0700.
void make_parents(const std::string& path) {
    for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
        const std::string dir = path.substr(0, at);
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
            throw security_error("cannot create the directory " + dir + " for a secret: " + errno_text());
    }
}

}  // namespace

Secret Secret::generate() {
    init_sodium();
    Secret s;
    randombytes_buf(s.bytes_.data(), s.bytes_.size());
    return s;
}

Secret Secret::from_bytes(const Bytes& bytes) {
    Secret s;
    s.bytes_ = bytes;
    return s;
}

Secret::~Secret() { sodium_memzero(bytes_.data(), bytes_.size()); }

Secret Secret::read_file(const std::string& path) { return SecretFile::read(path).own; }

bool Secret::same_as(const Secret& other) const noexcept {
    return sodium_memcmp(bytes_.data(), other.bytes_.data(), size) == 0;
}

SecretFile SecretFile::read(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ELOOP) throw security_error("the secret file " + path + " is a symbolic link; name the file itself");
        throw security_error("cannot read the secret file " + path + ": " + errno_text());
    }
    struct FdCloser {
        int fd;
        ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw security_error("cannot stat the secret file " + path + ": " + errno_text());
    if (!S_ISREG(st.st_mode)) throw security_error("the secret file " + path + " is not a regular file");
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw security_error("the secret file " + path + " can be read or written by other users (mode " + mode +
                             "); run `chmod 600 '" + path + "'` (a secret others can read is no secret)");
    }
    if (st.st_uid != ::geteuid())
        throw security_error("the secret file " + path + " belongs to another user (uid " + std::to_string(st.st_uid) +
                             "); each user keeps their own copy");
    char text[max_file_size + 1];
    std::size_t got = 0;
    for (;;) {
        const ssize_t n = ::read(fd, text + got, sizeof text - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw security_error("cannot read the secret file " + path + ": " + errno_text());
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
        if (got == sizeof text - 1) break;
    }
    // At most two secrets, each 64 digits on a line of its own.
    Secret found[2] = {Secret(), Secret()};
    std::size_t count = 0, digits = 0;
    bool bad = got == sizeof text - 1;
    for (std::size_t i = 0; i < got && !bad; ++i) {
        const char c = text[i];
        if (c == '\n' || c == '\r') {
            if (digits != 0 && digits != 2 * Secret::size) bad = true;
            if (digits == 2 * Secret::size) ++count, digits = 0;
            continue;
        }
        if (c == ' ' || c == '\t') {
            if (digits != 0 && digits != 2 * Secret::size) bad = true;  // whitespace inside the digits
            continue;
        }
        const int v = hex_digit(c);
        if (v < 0 || digits >= 2 * Secret::size || count >= 2) {
            bad = true;
            break;
        }
        auto& b = found[count].bytes_;
        b[digits / 2] = static_cast<std::uint8_t>(b[digits / 2] | (v << (digits % 2 ? 0 : 4)));
        ++digits;
    }
    if (digits == 2 * Secret::size && count < 2) ++count, digits = 0;
    sodium_memzero(text, sizeof text);
    if (bad || digits != 0 || count == 0)
        throw security_error("the secret file " + path + " does not hold a secret: it must be one line of " +
                             std::to_string(2 * Secret::size) +
                             " hexadecimal digits (`gecko keygen` writes one), and during a rotation a second such line");
    if (count == 2 && found[0].same_as(found[1]))
        throw security_error("the secret file " + path +
                             " holds the same secret on both lines: a rotation's second line is another secret");
    SecretFile file{found[0], std::nullopt};
    if (count == 2) file.accepted = found[1];
    return file;
}

void Secret::write_file(const std::string& path, bool replace) const { SecretFile{*this, std::nullopt}.write(path, replace); }

void SecretFile::write(const std::string& path, bool replace) const {
    if (path.empty()) throw security_error("no path to write the secret to");
    struct stat st {};
    if (!replace && ::lstat(path.c_str(), &st) == 0)
        throw security_error("a secret file exists already at " + path +
                             "; keep it (every machine of the key must hold the same one), or replace it with --force");
    make_parents(path);
    const std::string temp = path + ".new." + std::to_string(::getpid());
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw security_error("cannot write the secret file " + temp + ": " + errno_text());
    constexpr std::size_t line = 2 * Secret::size + 1;
    char text[2 * line + 1];
    std::size_t length = 0;
    for (const Secret* s : {&own, accepted ? &*accepted : nullptr}) {
        if (!s) continue;
        for (std::size_t i = 0; i < Secret::size; ++i) std::snprintf(text + length + 2 * i, 3, "%02x", s->bytes_[i]);
        text[length + 2 * Secret::size] = '\n';
        length += line;
    }
    const bool written = ::write(fd, text, length) == static_cast<ssize_t>(length) && ::fsync(fd) == 0;
    const std::string why = written ? "" : errno_text();
    sodium_memzero(text, sizeof text);
    ::close(fd);
    if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
        const std::string reason = written ? errno_text() : why;
        ::unlink(temp.c_str());
        throw security_error("cannot write the secret file " + path + ": " + reason);
    }
}

Secret::Bytes Secret::derive(Purpose purpose) const {
    init_sodium();
    return derive_id(bytes_, static_cast<std::uint64_t>(purpose));
}

CurveKeyPair Secret::curve_key_pair(Purpose purpose) const {
    Bytes secret_key = derive(purpose);
    Bytes public_key{};
    if (crypto_scalarmult_base(public_key.data(), secret_key.data()) != 0)
        throw security_error("deriving a CURVE key pair failed (crypto_scalarmult_base)");
    char z85_public[41], z85_secret[41];
    if (!zmq_z85_encode(z85_public, public_key.data(), public_key.size()) ||
        !zmq_z85_encode(z85_secret, secret_key.data(), secret_key.size()))
        throw security_error("encoding a CURVE key pair failed (zmq_z85_encode)");
    CurveKeyPair pair{z85_public, z85_secret};
    sodium_memzero(secret_key.data(), secret_key.size());
    sodium_memzero(z85_secret, sizeof z85_secret);
    return pair;
}

namespace {
// The first `n` bytes of a subkey in lowercase hexadecimal: what names a secret or serves as a token.
std::string hex_prefix(const Secret::Bytes& subkey, std::size_t n) {
    char text[2 * Secret::size + 1];
    sodium_bin2hex(text, sizeof text, subkey.data(), n);
    return text;
}
}  // namespace

std::string Secret::fingerprint() const {
    init_sodium();
    return hex_prefix(derive_id(bytes_, fingerprint_id), 8);
}

std::string Secret::bridge_token() const { return hex_prefix(derive(Purpose::bridge_token), 16); }

}  // namespace gecko::security
