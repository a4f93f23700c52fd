// SPDX-License-Identifier: Apache-2.0
#pragma once
// Little-endian fields of MCAP records: Out appends them to a byte vector,
// In reads them from a bounded span and throws ParseError (never reads past
// its end, never allocates more than the span holds).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gecko::bag::detail {

/// A field that does not fit or does not parse; the reader adds the offset and record kind.
class ParseError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

using Bytes = std::vector<std::uint8_t>;

/// The low `n` bytes of `v` at `p`, least significant first.
inline void store_le(std::uint8_t* p, std::uint64_t v, int n) noexcept {
    for (int i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

class Out {
public:
    explicit Out(Bytes& to) : b_(to) {}
    void u8(std::uint8_t v) { b_.push_back(v); }
    void u16(std::uint16_t v) { le(v, 2); }
    void u32(std::uint32_t v) { le(v, 4); }
    void u64(std::uint64_t v) { le(v, 8); }
    void raw(const void* data, std::size_t size) {
        const auto* p = static_cast<const std::uint8_t*>(data);
        b_.insert(b_.end(), p, p + size);
    }
    void str(std::string_view s) {
        u32(static_cast<std::uint32_t>(s.size()));
        raw(s.data(), s.size());
    }
    /// Starts a u32 (or u64) length prefix; close it with end_length(at).
    std::size_t begin_length32() {
        const std::size_t at = b_.size();
        u32(0);
        return at;
    }
    void end_length32(std::size_t at) { put(at, b_.size() - at - 4, 4); }
    /// Starts a record: opcode and a u64 length filled in by end_record(at).
    std::size_t begin_record(std::uint8_t opcode) {
        u8(opcode);
        const std::size_t at = b_.size();
        u64(0);
        return at;
    }
    void end_record(std::size_t at) { put(at, b_.size() - at - 8, 8); }
    std::size_t size() const noexcept { return b_.size(); }

private:
    void le(std::uint64_t v, int n) {
        const std::size_t at = b_.size();
        b_.resize(at + static_cast<std::size_t>(n));
        put(at, v, n);
    }
    void put(std::size_t at, std::uint64_t v, int n) { store_le(b_.data() + at, v, n); }
    Bytes& b_;
};

inline std::uint64_t load_le(const std::uint8_t* p, int n) noexcept {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

class In {
public:
    In(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}
    std::uint8_t u8(const char* what) { return static_cast<std::uint8_t>(take(1, what)); }
    std::uint16_t u16(const char* what) { return static_cast<std::uint16_t>(take(2, what)); }
    std::uint32_t u32(const char* what) { return static_cast<std::uint32_t>(take(4, what)); }
    std::uint64_t u64(const char* what) { return take(8, what); }
    std::string str(const char* what) {
        const std::uint32_t n = u32(what);
        need(n, what);
        std::string s(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        return s;
    }
    /// `n` bytes in place.
    const std::uint8_t* bytes(std::uint64_t n, const char* what) {
        need(n, what);
        const auto* at = p_;
        p_ += n;
        return at;
    }
    /// A u32 byte length, then a sub-reader over exactly that many bytes.
    In sub32(const char* what) {
        const std::uint32_t n = u32(what);
        return In(bytes(n, what), n);
    }
    std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - p_); }
    bool done() const noexcept { return p_ == end_; }
    const std::uint8_t* at() const noexcept { return p_; }

private:
    void need(std::uint64_t n, const char* what) const {
        if (n > left())
            throw ParseError(std::string(what) + " needs " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                             " left in the record");
    }
    std::uint64_t take(int n, const char* what) {
        need(static_cast<std::uint64_t>(n), what);
        const std::uint64_t v = load_le(p_, n);
        p_ += n;
        return v;
    }
    const std::uint8_t* p_;
    const std::uint8_t* end_;
};

}  // namespace gecko::bag::detail
