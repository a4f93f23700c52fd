// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file std.hpp
/// Single-value messages for examples, tests, benchmarks and quick tools:
/// String, Float64, Int64, Bytes, Empty. Each wraps its value in a field
/// named `data`, so the wire form is a map like every other message.

#include <gecko/msgs/codec.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gecko::msgs {

/// A UTF-8 text.
struct String {
    static constexpr const char* type_name = "gecko.msgs.String";
    std::string data;

    bool operator==(const String& o) const { return data == o.data; }
    bool operator!=(const String& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(data)
};

/// A double-precision number (float64 on the wire, even when integral).
struct Float64 {
    static constexpr const char* type_name = "gecko.msgs.Float64";
    double data = 0.0;

    bool operator==(const Float64& o) const { return data == o.data; }
    bool operator!=(const Float64& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(data)
};

/// A signed 64-bit integer (msgpack's smallest int encoding on the wire).
struct Int64 {
    static constexpr const char* type_name = "gecko.msgs.Int64";
    std::int64_t data = 0;

    bool operator==(const Int64& o) const { return data == o.data; }
    bool operator!=(const Int64& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(data)
};

/// An opaque byte payload, msgpack bin on the wire (up to 4 GiB - 1).
/// The benchmark uses it for 64 B .. 4 MiB payloads.
struct Bytes {
    static constexpr const char* type_name = "gecko.msgs.Bytes";
    std::vector<std::uint8_t> data;

    bool operator==(const Bytes& o) const { return data == o.data; }
    bool operator!=(const Bytes& o) const { return !(*this == o); }
    GECKO_MSG_FIELDS(data)
};

/// No content (an empty map on the wire): a trigger or a heartbeat.
struct Empty {
    static constexpr const char* type_name = "gecko.msgs.Empty";

    bool operator==(const Empty&) const { return true; }
    bool operator!=(const Empty&) const { return false; }
    GECKO_MSG_FIELDS()
};

}  // namespace gecko::msgs
