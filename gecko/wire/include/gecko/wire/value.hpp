// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file value.hpp
/// gecko::wire::Value: one msgpack value of any shape, looked at in place.
///
/// For msgpack whose fields are not known in advance: discovery messages
/// (fields may be added without a version bump), announcements, control
/// frames, and whatever `gecko echo` prints. Typed messages decode with
/// gecko::wire::decode instead.
///
/// A Value is a view of the value's encoded bytes, checked whole by the
/// bounded Reader when it is made (parse(), read()): well-formed, every
/// length within the input, nested at most Reader::max_depth deep, and no
/// map with the same key twice, at any depth, as typed reading requires too
/// (keys are the same when they are equal values: str and bin by their
/// bytes, integers by value whatever their encoding, any other key by its
/// encoded bytes). Looking
/// inside it later (a field, the items of an array) reads those checked
/// bytes again, in place: nothing is copied and no tree is built, so a
/// forged header cannot make anyone allocate. The bytes must outlive the
/// Value and every Value, string_view or BytesView taken from it.
///
/// The `as_*` accessors answer "is it one of these, and which?": an empty
/// optional for a value of another type, never an exception.

#include <gecko/bytes_view.hpp>
#include <gecko/wire/reader.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace gecko::wire {

class Value {
public:
    /// Nil.
    Value() noexcept;

    /// The single value `[data, data + size)` holds.
    /// @throws DecodeError if the bytes are not one well-formed msgpack value
    /// (malformed, cut short, nested too deep, a map with a key twice, or
    /// followed by more bytes).
    static Value parse(const std::uint8_t* data, std::size_t size);
    static Value parse(BytesView bytes) { return parse(bytes.data(), bytes.size()); }
    /// The next value of `reader`, consumed and checked whole.
    /// @throws DecodeError as Reader::skip does, or for a map with a key twice
    /// ("'<key>': appears twice in the map", with the path to that map).
    static Value read(Reader& reader);

    Type type() const noexcept;
    /// The encoded value, header included.
    BytesView bytes() const noexcept { return bytes_; }
    /// A reader at the start of the value.
    Reader reader() const noexcept { return Reader(bytes_.data(), bytes_.size()); }

    bool is_nil() const noexcept { return bytes_[0] == 0xc0; }
    std::optional<bool> as_bool() const noexcept;
    /// A msgpack int that is >= 0, whatever format carries it.
    std::optional<std::uint64_t> as_uint() const noexcept;
    /// A msgpack int that fits an int64.
    std::optional<std::int64_t> as_int() const noexcept;
    /// Any msgpack int or float, as a double (NaN and infinities included).
    std::optional<double> as_number() const noexcept;
    std::optional<std::string_view> as_str() const noexcept;
    std::optional<BytesView> as_bin() const noexcept;
    std::optional<Reader::Ext> as_ext() const noexcept;

    /// The number of items of an array or entries of a map; 0 for anything else.
    std::uint32_t count() const noexcept;

    /// One entry of a map: `key`, `value`.
    struct Entry;

    /// The items of an array, or the entries of a map, for range-for:
    /// `for (Value item : v.items())`, `for (auto [key, value] : v.entries())`.
    /// Empty when the value is not an array (not a map).
    template <class Element>
    class Range;
    Range<Value> items() const noexcept;
    Range<Entry> entries() const noexcept;

    /// The item at `index` of an array (each item before it is stepped over);
    /// empty when the value is not an array or has no such item.
    std::optional<Value> item(std::uint32_t index) const noexcept;
    /// The value of the first entry of a map whose key is the str `key`;
    /// empty when the value is not a map or has no such entry.
    std::optional<Value> find(std::string_view key) const noexcept;

private:
    explicit Value(BytesView bytes) noexcept : bytes_(bytes) {}
    // A map with a key twice, anywhere in a value just read (value.cpp).
    static void check_maps(const Value& value);
    static void check_unique_keys(const Value& map);

    BytesView bytes_;
};

struct Value::Entry {
    Value key;
    Value value;
};

template <class Element>
class Value::Range {
public:
    class iterator {
    public:
        const Element& operator*() const noexcept { return current_; }
        const Element* operator->() const noexcept { return &current_; }
        iterator& operator++() {
            if (--left_ > 0) load();
            return *this;
        }
        bool operator!=(const iterator& other) const noexcept { return left_ != other.left_; }
        bool operator==(const iterator& other) const noexcept { return left_ == other.left_; }

    private:
        friend class Range;
        iterator(Reader reader, std::uint32_t left) : reader_(reader), left_(left) {
            if (left_ > 0) load();
        }
        // The bytes were checked when the Value was made: reading them again cannot fail.
        void load() {
            if constexpr (std::is_same_v<Element, Entry>) {
                current_.key = Value(reader_.read_raw());
                current_.value = Value(reader_.read_raw());
            } else {
                current_ = Value(reader_.read_raw());
            }
        }
        Reader reader_;
        std::uint32_t left_;
        Element current_;
    };

    iterator begin() const { return iterator(reader_, count_); }
    iterator end() const { return iterator(reader_, 0); }
    std::uint32_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }

private:
    friend class Value;
    Range(Reader reader, std::uint32_t count) noexcept : reader_(reader), count_(count) {}
    Reader reader_;
    std::uint32_t count_;
};

}  // namespace gecko::wire
