// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/schema.hpp"

#include <msgpack.hpp>

#include <cmath>
#include <limits>
#include <set>

#include "gecko/error.hpp"
#include "gecko/wire/json.hpp"
#include "gecko/wire/names.hpp"

namespace gecko::wire {
namespace {

using Kind = FieldType::Kind;
using Packer = msgpack::packer<msgpack::sbuffer>;

struct ScalarName {
    Kind kind;
    const char* name;
};
constexpr ScalarName scalars[] = {
    {Kind::boolean, "bool"},  {Kind::int8, "int8"},       {Kind::int16, "int16"},     {Kind::int32, "int32"},
    {Kind::int64, "int64"},   {Kind::uint8, "uint8"},     {Kind::uint16, "uint16"},   {Kind::uint32, "uint32"},
    {Kind::uint64, "uint64"}, {Kind::float32, "float32"}, {Kind::float64, "float64"}, {Kind::str, "str"},
    {Kind::bin, "bin"},
};

const char* scalar_name(Kind k) {
    for (const auto& s : scalars)
        if (s.kind == k) return s.name;
    return nullptr;
}

// ---- encoding -------------------------------------------------------------------------------

void pack_fields(Packer& p, const std::vector<SchemaField>& fields);

void pack_type(Packer& p, const FieldType& t) {
    if (t.kind == Kind::bin && t.size != 0) {
        p.pack_map(1);
        p.pack(std::string_view("bin"));
        p.pack(static_cast<std::uint64_t>(t.size));
    } else if (const char* name = scalar_name(t.kind)) {
        p.pack(std::string_view(name));
    } else if (t.kind == Kind::array || t.kind == Kind::optional || t.kind == Kind::map) {
        const bool sized = t.kind == Kind::array && t.size != 0;
        p.pack_map(sized ? 2 : 1);
        p.pack(std::string_view(t.kind == Kind::array ? "array" : t.kind == Kind::optional ? "optional" : "map"));
        pack_type(p, t.item.at(0));
        if (sized) {
            p.pack(std::string_view("size"));
            p.pack(static_cast<std::uint64_t>(t.size));
        }
    } else if (t.kind == Kind::message) {
        p.pack_map(1);
        p.pack(std::string_view("message"));
        p.pack(t.name);
    } else if (t.kind == Kind::record) {
        p.pack_map(1);
        p.pack(std::string_view("struct"));
        pack_fields(p, t.fields);
    } else {  // enumeration
        p.pack_map(3);
        p.pack(std::string_view("enum"));
        p.pack(t.name);
        p.pack(std::string_view("names"));
        p.pack(t.names);
        p.pack(std::string_view("values"));
        p.pack(t.values);
    }
}

void pack_fields(Packer& p, const std::vector<SchemaField>& fields) {
    p.pack_array(static_cast<std::uint32_t>(fields.size()));
    for (const auto& f : fields) {
        p.pack_map(2);
        p.pack(std::string_view("name"));
        p.pack(f.name);
        p.pack(std::string_view("type"));
        pack_type(p, f.type);
    }
}

// ---- decoding -------------------------------------------------------------------------------

[[noreturn]] void bad(const std::string& where, const std::string& what) {
    throw Error(Errc::decode, "schema: " + where + ": " + what);
}

constexpr std::size_t max_types = 256, max_fields = 4096, max_depth = 16, max_enum_names = 4096;

struct Decoder {
    std::size_t fields = 0;

    std::string text(const Value& v, const std::string& where) {
        const auto s = v.as_str();
        if (!s) bad(where, std::string("is ") + to_string(v.type()) + ", expected a str");
        if (s->empty() || s->size() > 256) bad(where, "is empty or longer than 256 bytes");
        for (char c : *s)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) bad(where, "has a control character");
        return std::string(*s);
    }

    std::size_t count(const Value& v, const std::string& where) {
        const auto n = v.as_uint();
        if (!n || *n == 0 || *n > (1u << 30)) bad(where, "is not a count from 1 to 2^30");
        return static_cast<std::size_t>(*n);
    }

    FieldType type(const Value& v, const std::string& where, std::size_t depth) {
        if (depth > max_depth) bad(where, "nests more than 16 levels deep");
        FieldType t;
        if (const auto s = v.as_str()) {
            for (const auto& sc : scalars)
                if (*s == sc.name) {
                    t.kind = sc.kind;
                    return t;
                }
            bad(where, "unknown type '" + printable(*s) + "'");
        }
        if (v.type() != Type::map) bad(where, std::string("is ") + to_string(v.type()) + ", expected a str or a map");
        auto item = [&](Kind k, const Value& of) {
            t.kind = k;
            t.item.push_back(type(of, where, depth + 1));
        };
        if (const auto a = v.find("array")) {
            item(Kind::array, *a);
            if (const auto n = v.find("size")) t.size = count(*n, where + ".size");
        } else if (const auto o = v.find("optional")) {
            item(Kind::optional, *o);
        } else if (const auto m = v.find("map")) {
            item(Kind::map, *m);
        } else if (const auto b = v.find("bin")) {
            t.kind = Kind::bin;
            t.size = count(*b, where + ".bin");
        } else if (const auto msg = v.find("message")) {
            t.kind = Kind::message;
            t.name = text(*msg, where + ".message");
            if (auto why = check_type_name(t.name); !why.empty()) bad(where, why);
        } else if (const auto st = v.find("struct")) {
            t.kind = Kind::record;
            t.fields = field_list(*st, where, depth + 1);
        } else if (const auto e = v.find("enum")) {
            t.kind = Kind::enumeration;
            t.name = text(*e, where + ".enum");
            const auto names = v.find("names");
            const auto values = v.find("values");
            if (!names || !values || names->type() != Type::array || values->type() != Type::array ||
                names->count() != values->count() || names->count() == 0 || names->count() > max_enum_names)
                bad(where, "an enum needs 'names' and 'values', arrays of one length (1 to 4096)");
            std::set<std::string> seen;
            for (const Value& n : names->items()) {
                t.names.push_back(text(n, where + ".names"));
                if (!seen.insert(t.names.back()).second) bad(where, "enum name '" + t.names.back() + "' twice");
            }
            for (const Value& n : values->items()) {
                const auto x = n.as_int();
                if (!x) bad(where + ".values", "holds something other than an integer");
                t.values.push_back(*x);
            }
        } else {
            bad(where, "a map type needs one of array, optional, map, bin, message, struct, enum");
        }
        return t;
    }

    std::vector<SchemaField> field_list(const Value& v, const std::string& where, std::size_t depth) {
        if (v.type() != Type::array) bad(where, "'fields' is not an array");
        std::vector<SchemaField> out;
        std::set<std::string> seen;
        for (const Value& f : v.items()) {
            if (++fields > max_fields) bad(where, "more than 4096 fields in all");
            if (f.type() != Type::map) bad(where, "a field is not a map");
            const auto name = f.find("name");
            const auto type_value = f.find("type");
            if (!name || !type_value) bad(where, "a field needs 'name' and 'type'");
            SchemaField field;
            field.name = text(*name, where + " field name");
            if (!seen.insert(field.name).second) bad(where, "field '" + field.name + "' twice");
            field.type = type(*type_value, where + "." + field.name, depth);
            out.push_back(std::move(field));
        }
        return out;
    }
};

void collect_messages(const std::vector<SchemaField>& fields, std::set<std::string>& out);
void collect_messages(const FieldType& t, std::set<std::string>& out) {
    if (t.kind == Kind::message) out.insert(t.name);
    for (const auto& i : t.item) collect_messages(i, out);
    collect_messages(t.fields, out);
}
void collect_messages(const std::vector<SchemaField>& fields, std::set<std::string>& out) {
    for (const auto& f : fields) collect_messages(f.type, out);
}

// ---- checking a payload ---------------------------------------------------------------------

struct Checker {
    const Schema& schema;
    Schema::Check mode;
    std::string root;  // the type checked, for messages

    std::string fail(const std::string& path, const std::string& what) const {
        return root + ": field '" + path + "' " + what;
    }
    static std::string join(const std::string& path, std::string_view name) {
        return path.empty() ? std::string(name) : path + "." + std::string(name);
    }

    std::string fields(const Value& v, const std::vector<SchemaField>& fields, const std::string& type_name,
                       const std::string& path) const {
        if (v.type() != Type::map) {
            if (path.empty()) return "not a msgpack map (a message) but " + std::string(to_string(v.type()));
            return fail(path, std::string("has msgpack type ") + to_string(v.type()) + ", expected a map");
        }
        std::set<std::string_view> seen;
        for (const auto& [key, value] : v.entries()) {
            const auto name = key.as_str();
            if (!name) return root + ": a key of " + (path.empty() ? "the message" : "'" + path + "'") + " is not a str";
            if (!seen.insert(*name).second) return root + ": field '" + join(path, *name) + "' appears twice";
            const SchemaField* f = nullptr;
            for (const auto& candidate : fields)
                if (candidate.name == *name) f = &candidate;
            if (!f) {
                if (mode == Schema::Check::as_receiver) continue;
                std::string list;
                for (const auto& c : fields) list += (list.empty() ? "" : ", ") + c.name;
                return (type_name.empty() ? root + " '" + path + "'" : type_name) + " has no field '" +
                       printable(*name) + "'; its fields are: " + (list.empty() ? "(none)" : list);
            }
            if (auto why = value_of(value, f->type, join(path, f->name)); !why.empty()) return why;
        }
        return {};
    }

    std::string value_of(const Value& v, const FieldType& t, const std::string& path) const {
        const Type got = v.type();
        auto wrong = [&](const char* expected) {
            return fail(path, std::string("has msgpack type ") + to_string(got) + ", expected " + expected);
        };
        switch (t.kind) {
            case Kind::boolean: return got == Type::boolean ? "" : wrong("a bool");
            case Kind::int8: return integer(v, path, std::numeric_limits<std::int8_t>::min(), std::numeric_limits<std::int8_t>::max());
            case Kind::int16: return integer(v, path, std::numeric_limits<std::int16_t>::min(), std::numeric_limits<std::int16_t>::max());
            case Kind::int32: return integer(v, path, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
            case Kind::int64: return integer(v, path, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
            case Kind::uint8: return unsigned_integer(v, path, std::numeric_limits<std::uint8_t>::max());
            case Kind::uint16: return unsigned_integer(v, path, std::numeric_limits<std::uint16_t>::max());
            case Kind::uint32: return unsigned_integer(v, path, std::numeric_limits<std::uint32_t>::max());
            case Kind::uint64: return unsigned_integer(v, path, std::numeric_limits<std::uint64_t>::max());
            case Kind::float32:
            case Kind::float64: return v.as_number() ? "" : wrong("a number");
            case Kind::str: return got == Type::str ? "" : wrong("a str");
            case Kind::bin:
                if (got != Type::bin) return wrong("a bin");
                if (t.size != 0 && v.as_bin()->size() != t.size)
                    return fail(path, "has " + std::to_string(v.as_bin()->size()) + " bytes, expected exactly " + std::to_string(t.size));
                return "";
            case Kind::array: {
                if (got != Type::array) return wrong("an array");
                if (t.size != 0 && v.count() != t.size)
                    return fail(path, "has " + std::to_string(v.count()) + " items, expected exactly " + std::to_string(t.size));
                std::size_t i = 0;
                for (const Value& item : v.items())
                    if (auto why = value_of(item, t.item.at(0), path + "[" + std::to_string(i++) + "]"); !why.empty()) return why;
                return "";
            }
            case Kind::optional: return v.is_nil() ? "" : value_of(v, t.item.at(0), path);
            case Kind::map: {
                if (got != Type::map) return wrong("a map");
                std::set<std::string_view> seen;
                for (const auto& [key, value] : v.entries()) {
                    const auto k = key.as_str();
                    if (!k) return fail(path, "has a key that is not a str");
                    if (!seen.insert(*k).second) return fail(path, "has the key '" + printable(*k) + "' twice");
                    if (auto why = value_of(value, t.item.at(0), path + "['" + printable(*k) + "']"); !why.empty()) return why;
                }
                return "";
            }
            case Kind::message: {
                const MessageSchema* m = schema.find(t.name);
                if (!m) return "";  // not described: nothing to check against
                return fields(v, m->fields, t.name, path);
            }
            case Kind::record: return fields(v, t.fields, "", path);
            case Kind::enumeration: {
                if (const auto s = v.as_str()) {
                    for (const auto& n : t.names)
                        if (n == *s) return "";
                } else if (const auto n = v.as_int()) {
                    for (const auto x : t.values)
                        if (x == *n) return "";
                } else {
                    return wrong("a str (one of the enum's names)");
                }
                std::string list;
                for (const auto& n : t.names) list += (list.empty() ? "" : ", ") + n;
                return fail(path, "is not one of " + t.name + "'s names: " + list);
            }
        }
        return "";
    }

    std::string integer(const Value& v, const std::string& path, std::int64_t lo, std::int64_t hi) const {
        if (v.type() != Type::integer)
            return fail(path, std::string("has msgpack type ") + to_string(v.type()) + ", expected an integer");
        const auto x = v.as_int();
        if (!x || *x < lo || *x > hi) return fail(path, "does not fit its type (" + std::to_string(lo) + " to " + std::to_string(hi) + ")");
        return "";
    }
    std::string unsigned_integer(const Value& v, const std::string& path, std::uint64_t hi) const {
        if (v.type() != Type::integer)
            return fail(path, std::string("has msgpack type ") + to_string(v.type()) + ", expected an integer");
        const auto x = v.as_uint();
        if (!x || *x > hi) return fail(path, "does not fit its type (0 to " + std::to_string(hi) + ")");
        return "";
    }
};

}  // namespace

std::string FieldType::to_string() const {
    switch (kind) {
        case Kind::bin: return size != 0 ? "bin[" + std::to_string(size) + "]" : "bin";
        case Kind::array: return item.at(0).to_string() + (size != 0 ? "[" + std::to_string(size) + "]" : "[]");
        case Kind::optional: return item.at(0).to_string() + " or nil";
        case Kind::map: return "map<str, " + item.at(0).to_string() + ">";
        case Kind::message: return name;
        case Kind::record: return "struct";
        case Kind::enumeration: return "enum " + name;
        default: return scalar_name(kind);
    }
}

const SchemaField* MessageSchema::field(std::string_view name) const noexcept {
    for (const auto& f : fields)
        if (f.name == name) return &f;
    return nullptr;
}

std::string MessageSchema::field_list() const {
    std::string out;
    for (const auto& f : fields) out += (out.empty() ? "" : ", ") + f.name;
    return out.empty() ? "(none)" : out;
}

const MessageSchema* Schema::find(std::string_view type_name) const noexcept {
    for (const auto& t : types_)
        if (t.type_name == type_name) return &t;
    return nullptr;
}

void Schema::merge(const Schema& other) {
    for (const auto& t : other.types_)
        if (!find(t.type_name)) types_.push_back(t);
}

std::vector<std::uint8_t> Schema::encode() const {
    msgpack::sbuffer buf;
    Packer p(buf);
    p.pack_map(1);
    p.pack(std::string_view("types"));
    p.pack_array(static_cast<std::uint32_t>(types_.size()));
    for (const auto& t : types_) {
        p.pack_map(2);
        p.pack(std::string_view("type_name"));
        p.pack(t.type_name);
        p.pack(std::string_view("fields"));
        pack_fields(p, t.fields);
    }
    return std::vector<std::uint8_t>(buf.data(), buf.data() + buf.size());
}

Schema Schema::decode(const Value& map) {
    if (map.type() != Type::map) bad("the schema", std::string("is ") + to_string(map.type()) + ", expected a map");
    const auto types = map.find("types");
    if (!types || types->type() != Type::array) bad("the schema", "has no array 'types'");
    if (types->count() == 0 || types->count() > max_types) bad("the schema", "'types' holds 1 to 256 types");
    Decoder d;
    std::vector<MessageSchema> out;
    std::set<std::string> names;
    for (const Value& t : types->items()) {
        if (t.type() != Type::map) bad("a type", "is not a map");
        const auto name = t.find("type_name");
        const auto fields = t.find("fields");
        if (!name || !fields) bad("a type", "needs 'type_name' and 'fields'");
        MessageSchema m;
        m.type_name = d.text(*name, "type_name");
        if (auto why = check_type_name(m.type_name); !why.empty()) bad("type '" + printable(m.type_name) + "'", why);
        if (!names.insert(m.type_name).second) bad("type '" + m.type_name + "'", "appears twice");
        m.fields = d.field_list(*fields, m.type_name, 0);
        out.push_back(std::move(m));
    }
    std::set<std::string> named;
    for (const auto& m : out) collect_messages(m.fields, named);
    for (const auto& n : named)
        if (!names.count(n)) bad("the schema", "a field names message type '" + n + "', which 'types' does not hold");
    return Schema(std::move(out));
}

Schema Schema::decode(const std::uint8_t* data, std::size_t size) {
    if (size > max_encoded_size)
        throw Error(Errc::decode, "schema: " + std::to_string(size) + " bytes (at most " + std::to_string(max_encoded_size) + ")");
    try {
        return decode(Value::parse(data, size));
    } catch (const Error& e) {
        if (e.code() == Errc::decode && std::string_view(e.what()).rfind("schema:", 0) == 0) throw;
        throw Error(Errc::decode, std::string("schema: not msgpack: ") + e.what());
    }
}

std::string Schema::to_json() const {
    const auto bytes = encode();
    return msgpack_to_json(bytes.data(), bytes.size());
}

std::string Schema::check(std::string_view type_name, const std::uint8_t* payload, std::size_t size, Check mode) const {
    const MessageSchema* m = find(type_name);
    if (!m) return {};
    Value v;
    try {
        v = Value::parse(payload, size);
    } catch (const Error& e) {
        return std::string(type_name) + ": not msgpack (" + e.what() + ")";
    }
    Checker c{*this, mode, std::string(type_name)};
    return c.fields(v, m->fields, m->type_name, "");
}

}  // namespace gecko::wire
