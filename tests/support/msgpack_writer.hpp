// SPDX-License-Identifier: Apache-2.0
#pragma once
// Test input written value by value, floats kept at their width (msgpack-c's
// packer writes an integral double as an int): gecko::wire::Packer into a
// vector of bytes.

#include <gecko/buffer.hpp>
#include <gecko/wire/packer.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace gecko::test {

class MsgpackWriter {
public:
    MsgpackWriter() : pk_(out_) {}
    void nil() { pk_.pack_nil(); }
    void boolean(bool v) { v ? pk_.pack_true() : pk_.pack_false(); }
    void integer(std::int64_t v) { pk_.pack(v); }
    void unsigned_integer(std::uint64_t v) { pk_.pack(v); }
    void float64(double v) { pk_.pack_float64(v); }
    void float32(float v) { pk_.pack_float32(v); }
    void string(std::string_view v) { pk_.pack(v); }
    void binary(const std::uint8_t* data, std::size_t size) {
        pk_.pack_bin(static_cast<std::uint32_t>(size));
        pk_.pack_bin_body(reinterpret_cast<const char*>(data), static_cast<std::uint32_t>(size));
    }
    void array(std::uint32_t size) { pk_.pack_array(size); }
    void map(std::uint32_t size) { pk_.pack_map(size); }

    std::vector<std::uint8_t> bytes() const { return std::vector<std::uint8_t>(out_.data(), out_.data() + out_.size()); }
    std::vector<std::uint8_t> take() const { return bytes(); }

private:
    Buffer out_;
    wire::Packer pk_;
};

}  // namespace gecko::test
