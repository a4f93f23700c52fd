// SPDX-License-Identifier: Apache-2.0
#include "wire_check.hpp"

#include "utf8.hpp"

#include <cstdint>
#include <utility>

namespace gecko::click::detail {

namespace {

namespace gp = ::google::protobuf;

enum WireType : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, start_group = 3, end_group = 4, fixed32 = 5 };

const char* wire_type_name(std::uint32_t t) {
    switch (t) {
        case varint: return "varint";
        case fixed64: return "fixed64";
        case length_delimited: return "length-delimited";
        case start_group:
        case end_group: return "group";
        case fixed32: return "fixed32";
        default: break;
    }
    return "invalid wire type";
}

// The wire type a field's single value has (packed repeated scalars also come length-delimited).
std::uint32_t wire_type_of(const gp::FieldDescriptor& f) {
    switch (f.type()) {
        case gp::FieldDescriptor::TYPE_DOUBLE:
        case gp::FieldDescriptor::TYPE_FIXED64:
        case gp::FieldDescriptor::TYPE_SFIXED64: return fixed64;
        case gp::FieldDescriptor::TYPE_FLOAT:
        case gp::FieldDescriptor::TYPE_FIXED32:
        case gp::FieldDescriptor::TYPE_SFIXED32: return fixed32;
        case gp::FieldDescriptor::TYPE_STRING:
        case gp::FieldDescriptor::TYPE_BYTES:
        case gp::FieldDescriptor::TYPE_MESSAGE: return length_delimited;
        case gp::FieldDescriptor::TYPE_GROUP: return start_group;
        default: break;
    }
    return varint;
}

// Reads one message's fields in order, without copying anything.
class Cursor {
public:
    explicit Cursor(std::string_view bytes) : bytes_(bytes) {}
    bool done() const noexcept { return pos_ == bytes_.size(); }

    bool read_varint(std::uint64_t& out) {
        out = 0;
        for (int shift = 0; shift < 64 && pos_ < bytes_.size(); shift += 7) {
            const auto byte = static_cast<unsigned char>(bytes_[pos_++]);
            out |= static_cast<std::uint64_t>(byte & 0x7fu) << shift;
            if ((byte & 0x80u) == 0) return true;
        }
        return false;
    }
    bool skip(std::size_t n) {
        if (n > bytes_.size() - pos_) return false;
        pos_ += n;
        return true;
    }
    bool read_bytes(std::uint64_t n, std::string_view& out) {
        if (n > bytes_.size() - pos_) return false;
        out = bytes_.substr(pos_, static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return true;
    }

private:
    std::string_view bytes_;
    std::size_t pos_ = 0;
};

struct Failure {
    std::string reason;
};

[[noreturn]] void fail(std::string reason) { throw Failure{std::move(reason)}; }

[[noreturn]] void malformed(const std::string& path) {
    fail(path + ": malformed or truncated protobuf");
}

// Calls `visit(number, wire type, varint value, length-delimited payload)` for
// each top-level field of `bytes`, without descending. @return false if the
// bytes end inside a field, or hold a group (which Click never uses).
template <class Visit>
bool for_each_field(std::string_view bytes, Visit&& visit) {
    Cursor in(bytes);
    while (!in.done()) {
        std::uint64_t tag = 0;
        std::uint64_t scalar = 0;
        std::string_view payload;
        if (!in.read_varint(tag)) return false;
        bool ok = false;
        switch (tag & 7u) {
            case varint: ok = in.read_varint(scalar); break;
            case fixed64: ok = in.skip(8); break;
            case fixed32: ok = in.skip(4); break;
            case length_delimited: ok = in.read_varint(scalar) && in.read_bytes(scalar, payload); break;
            default: break;
        }
        if (!ok) return false;
        visit(tag >> 3, static_cast<std::uint32_t>(tag & 7u), scalar, payload);
    }
    return true;
}

// A map entry's key as a path names it: quoted, printable, at most 64 bytes; "?" if it has none.
std::string map_key(std::string_view entry) {
    std::string_view key;
    bool found = false;
    for_each_field(entry, [&](std::uint64_t number, std::uint32_t wire, std::uint64_t, std::string_view payload) {
        if (number == 1 && wire == length_delimited) {
            key = payload;
            found = true;
        }
    });
    if (!found) return "?";
    std::string out = sanitize_utf8(key.substr(0, 64));
    for (char& c : out) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return "'" + out + (key.size() > 64 ? "...'" : "'");
}

class Walk {
public:
    explicit Walk(const DecodeLimits& limits) : limits_(limits) {}

    // Checks one message of `type`, its fields and the messages it nests.
    void message(std::string_view bytes, const gp::Descriptor& type, const std::string& path) {
        Cursor in(bytes);
        std::size_t index = 0;  // of the field occurrence, for paths into maps and repeated fields
        while (!in.done()) {
            std::uint64_t tag = 0;
            if (!in.read_varint(tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffffu) malformed(path);
            const auto number = static_cast<int>(tag >> 3);
            const auto wire = static_cast<std::uint32_t>(tag & 7u);
            count(1, path);
            const gp::FieldDescriptor* field = type.FindFieldByNumber(number);
            if (field == nullptr) {
                fail(path + ": field " + std::to_string(number) + " (" + wire_type_name(wire) +
                     ") is not in the Click schema");
            }
            const std::uint32_t expected = wire_type_of(*field);
            const bool packed = field->is_packable() && wire == length_delimited;
            if (wire != expected && !packed) {
                fail(path + ": field " + std::to_string(number) + " (" + field->name() + ") has the wrong wire type (" +
                     wire_type_name(wire) + ")");
            }
            std::string where = path + "." + field->name();
            if (field->is_repeated()) where += "[" + std::to_string(index++) + "]";
            std::uint64_t scalar = 0;
            std::string_view payload;
            switch (wire) {
                case varint:
                    if (!in.read_varint(scalar)) malformed(where);
                    break;
                case fixed64:
                    if (!in.skip(8)) malformed(where);
                    break;
                case fixed32:
                    if (!in.skip(4)) malformed(where);
                    break;
                case length_delimited:
                    if (!in.read_varint(scalar) || !in.read_bytes(scalar, payload)) malformed(where);
                    if (packed) {
                        packed_values(payload, expected, where);
                    } else if (field->type() == gp::FieldDescriptor::TYPE_STRING) {
                        if (payload.size() > limits_.max_string_bytes) {
                            fail(where + ": a string of " + std::to_string(payload.size()) + " bytes, more than the " +
                                 std::to_string(limits_.max_string_bytes) + " this decoder accepts");
                        }
                        if (!valid_utf8(payload)) fail(where + " is not valid UTF-8 (Click strings must be)");
                    } else if (field->type() == gp::FieldDescriptor::TYPE_MESSAGE) {
                        if (field->is_map()) where = path + "." + field->name() + "[" + map_key(payload) + "]";
                        message(payload, *field->message_type(), where);
                    }
                    break;
                default: malformed(where);  // groups: Click has none, and a known field is never one
            }
        }
    }


private:
    void packed_values(std::string_view payload, std::uint32_t wire, const std::string& where) {
        if (wire == fixed64 || wire == fixed32) {
            const std::size_t size = wire == fixed64 ? 8 : 4;
            if (payload.size() % size != 0) malformed(where);
            count(payload.size() / size, where);
            return;
        }
        Cursor in(payload);
        std::size_t n = 0;
        for (std::uint64_t v = 0; !in.done(); ++n) {
            if (!in.read_varint(v)) malformed(where);
        }
        count(n, where);
    }

    void count(std::size_t n, const std::string& where) {
        elements_ += n;
        if (elements_ > limits_.max_elements) {
            fail(where + ": more than " + std::to_string(limits_.max_elements) +
                 " fields and numbers in one message, the most this decoder builds");
        }
    }

    const DecodeLimits& limits_;
    std::size_t elements_ = 0;
};

}  // namespace

std::optional<std::string> check_wire(std::string_view bytes, const gp::Descriptor& type, const DecodeLimits& limits) {
    try {
        if (limits.max_control_objects && type.name() == "ControlMessage") {
            const auto objects = static_cast<std::uint64_t>(type.FindFieldByName("objects")->number());
            std::size_t n = 0;
            for_each_field(bytes, [&](std::uint64_t number, std::uint32_t, std::uint64_t, std::string_view) {
                n += number == objects ? 1 : 0;
            });
            if (n > *limits.max_control_objects) {
                return type.name() + ": " + std::to_string(n) + " objects, more than the " +
                       std::to_string(*limits.max_control_objects) + " of the handshake";
            }
        }
        Walk(limits).message(bytes, type, type.name());
        return std::nullopt;
    } catch (const Failure& f) {
        return f.reason;
    }
}

std::optional<int> message_type_of(std::string_view bytes) {
    int type = 0;  // HandshakeInitMessageType, proto3's default
    const bool whole = for_each_field(bytes, [&](std::uint64_t number, std::uint32_t wire, std::uint64_t value,
                                                 std::string_view) {
        if (number == 1 && wire == varint) type = static_cast<int>(static_cast<std::int32_t>(value));  // the last one wins
    });
    if (!whole) return std::nullopt;
    return type;
}

}  // namespace gecko::click::detail
