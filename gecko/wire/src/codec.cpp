// SPDX-License-Identifier: Apache-2.0
// The non-template parts of the message codec (gecko/message.hpp): error
// wording for map keys and enum names, and writing a msgpack-c object tree
// back to bytes for msgpack_unpack.
#include "gecko/message.hpp"

#include <string>

namespace gecko::wire::detail {

std::string quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text.substr(0, 64)) out += (c >= 0x20 && c <= 0x7e) ? c : '?';
    if (text.size() > 64) out += "...";
    return out + "\"";
}

void fail_key(Reader& r, const char* expected) {
    throw DecodeError(std::string("has a map key of msgpack type ") + to_string(r.peek()) + ", expected " + expected);
}

void fail_twice(std::string_view key) {
    DecodeError e("appears twice in the map");
    e.nest_field(key);
    throw e;
}

namespace {

void repack(const msgpack::object& o, msgpack::packer<msgpack::sbuffer>& pk, msgpack::sbuffer& out, std::size_t depth) {
    char buf[9];
    switch (o.type) {
        case msgpack::type::NIL: pk.pack_nil(); return;
        case msgpack::type::BOOLEAN: pk.pack(o.via.boolean); return;
        case msgpack::type::POSITIVE_INTEGER: pk.pack(o.via.u64); return;
        case msgpack::type::NEGATIVE_INTEGER: pk.pack(o.via.i64); return;
        case msgpack::type::FLOAT32: out.write(buf, store_float(buf, static_cast<float>(o.via.f64))); return;
        case msgpack::type::FLOAT64: out.write(buf, store_float(buf, o.via.f64)); return;
        // Empty bodies are not written: their pointer may be null.
        case msgpack::type::STR:
            pk.pack_str(o.via.str.size);
            if (o.via.str.size != 0) pk.pack_str_body(o.via.str.ptr, o.via.str.size);
            return;
        case msgpack::type::BIN:
            pk.pack_bin(o.via.bin.size);
            if (o.via.bin.size != 0) pk.pack_bin_body(o.via.bin.ptr, o.via.bin.size);
            return;
        case msgpack::type::EXT:
            pk.pack_ext(o.via.ext.size, o.via.ext.type());
            if (o.via.ext.size != 0) pk.pack_ext_body(o.via.ext.data(), o.via.ext.size);
            return;
        case msgpack::type::ARRAY:
        case msgpack::type::MAP: break;
    }
    if (depth >= Reader::max_depth) {
        throw ConvertError("msgpack object nests arrays and maps more than " + std::to_string(Reader::max_depth) +
                           " deep");
    }
    if (o.type == msgpack::type::ARRAY) {
        pk.pack_array(o.via.array.size);
        for (std::uint32_t i = 0; i < o.via.array.size; ++i) repack(o.via.array.ptr[i], pk, out, depth + 1);
    } else {
        pk.pack_map(o.via.map.size);
        for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
            repack(o.via.map.ptr[i].key, pk, out, depth + 1);
            repack(o.via.map.ptr[i].val, pk, out, depth + 1);
        }
    }
}

}  // namespace

void repack_object(const msgpack::object& o, msgpack::sbuffer& out) {
    msgpack::packer<msgpack::sbuffer> pk(out);
    repack(o, pk, out, 0);
}

}  // namespace gecko::wire::detail
