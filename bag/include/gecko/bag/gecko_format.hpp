// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file gecko_format.hpp
/// How Gecko fills an MCAP file (docs/RECORDING.md): one channel per topic
/// and publisher, `message_encoding` "msgpack" (self-describing: no MCAP
/// schema, schema_id 0), the Gecko type, its hash and its schema in the
/// channel's metadata under the keys below; a `gecko` Metadata record for
/// the file; `gecko.drops` Metadata records counting what the recorder
/// could not keep. And typed helpers for programs that log their own
/// messages and read them back.
///
/// **Example**: a spine logging every cycle, and reading the log back
///
///     gecko::bag::Writer bag("spine.mcap");
///     const auto ch = gecko::bag::add_channel<my::Cycle>(bag, "spine/cycle");
///     gecko::bag::write(bag, ch, cycle, seq++, gecko::now_ns());
///     ...
///     gecko::bag::Reader log("spine.mcap");
///     log.read_messages({}, [](const gecko::bag::Channel& ch, const gecko::bag::MessageView& m) {
///         if (gecko::bag::type_name_of(ch) == my::Cycle::type_name) use(gecko::bag::decode<my::Cycle>(m));
///         return true;
///     });

#include <gecko/bag/reader.hpp>
#include <gecko/bag/writer.hpp>
#include <gecko/buffer.hpp>
#include <gecko/wire/codec.hpp>
#include <gecko/wire/hash.hpp>
#include <gecko/wire/schema.hpp>
#include <gecko/wire/schema_of.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace gecko::bag {

/// Channel metadata keys and record names of Gecko's files.
namespace keys {
inline constexpr const char* type_name = "gecko.type_name";        ///< e.g. "gecko.msgs.Imu"
inline constexpr const char* type_hash = "gecko.type_hash";        ///< fnv1a64 of the type name, 16 hex digits
inline constexpr const char* schema = "gecko.schema";              ///< the declared fields as JSON (wire::Schema::to_json)
inline constexpr const char* publisher_id = "gecko.publisher_id";  ///< 16 hex digits
inline constexpr const char* node = "gecko.node";                  ///< the publisher's node
inline constexpr const char* host = "gecko.host";                  ///< the publisher's host
inline constexpr const char* latched = "gecko.latched";            ///< "true" or "false"
inline constexpr const char* twin_of = "gecko.twin_of";            ///< a json twin: the topic it transcodes
inline constexpr const char* file_record = "gecko";                ///< the file's Metadata record
inline constexpr const char* drops_record = "gecko.drops";         ///< what the recorder could not keep
}  // namespace keys

inline constexpr const char* msgpack_encoding = "msgpack";

/// 16 lowercase hex digits.
std::string hex64(std::uint64_t v);
/// The Gecko type a channel carries ("" if its metadata does not say).
std::string type_name_of(const Channel& channel);
/// The schema in a channel's metadata, or null (none, or unreadable).
std::shared_ptr<const wire::Schema> schema_of(const Channel& channel);
/// Channel metadata for a Gecko type (and its schema, if any).
StringMap channel_metadata(const std::string& type_name, const wire::Schema* schema = nullptr);

/// A msgpack channel carrying T, with T's type name, hash and schema.
template <class T>
std::uint16_t add_channel(Writer& writer, const std::string& topic) {
    const wire::Schema schema = wire::schema_of<T>();
    return writer.add_channel(topic, msgpack_encoding, 0, channel_metadata(T::type_name, &schema));
}

/// Writes `message` encoded as msgpack; publish time = log time.
template <class T>
void write(Writer& writer, std::uint16_t channel, const T& message, std::uint32_t sequence, Timestamp log_time) {
    thread_local Buffer buffer;
    buffer.clear();
    wire::encode(buffer, message);
    writer.write(channel, sequence, log_time, log_time, buffer.data(), buffer.size());
}

/// Decodes a message of a Gecko channel as T.
/// @throws gecko::Error (Errc::decode) if it is not a T.
template <class T>
T decode(const MessageView& m) {
    T out{};
    wire::decode(m.data, m.size, out);
    return out;
}

}  // namespace gecko::bag
