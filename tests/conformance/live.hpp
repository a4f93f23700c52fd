// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers of the live conformance tests: raw ZeroMQ peers that play a core, a
// node or a tool against the real code, bounded receives, and the comparison
// of a live message with a golden vector (same keys in the same order, same
// values, except named fields that differ from run to run, which must still
// have the vector's msgpack type).

#include <catch2/catch.hpp>

#include <zmq.hpp>

#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "vectors.hpp"

namespace gecko::conformance::live {

using namespace std::chrono_literals;

/// The committed bytes of vector `name` (e.g. "discovery.hello").
inline Bytes vector_bytes(const std::string& name) {
    static const Json index = [] {
        std::ifstream in(std::string(GECKO_CONFORMANCE_DIR) + "/index.json");
        std::ostringstream text;
        text << in.rdbuf();
        return Json::parse(text.str());
    }();
    for (const auto& e : index.at("vectors")) {
        if (e.at("name") != name) continue;
        std::ifstream in(std::string(GECKO_CONFORMANCE_DIR) + "/" + e.at("file").get<std::string>());
        std::ostringstream text;
        text << in.rdbuf();
        return from_hex(text.str());
    }
    throw std::runtime_error("no vector named " + name);
}

inline Json as_json(const Bytes& b) { return msgpack_to_json(b.data(), b.size()); }
inline Json as_json(const zmq::message_t& m) {
    return msgpack_to_json(static_cast<const std::uint8_t*>(m.data()), m.size());
}
inline Bytes bytes_of(const zmq::message_t& m) {
    const auto* p = static_cast<const std::uint8_t*>(m.data());
    return Bytes(p, p + m.size());
}

/// msgpack's families, as msgpack_to_json renders them.
inline std::string family(const Json& j) {
    if (j.is_null()) return "nil";
    if (j.is_boolean()) return "bool";
    if (j.is_number_float()) return "float";
    if (j.is_number()) return "int";
    if (j.is_string()) return "str";
    if (j.is_array()) return "array";
    if (j.size() == 1 && j.contains("bin")) return "bin";
    return "map";
}

/// Fields whose value may be a msgpack int or float (msgpack-c writes an integral double as an int).
inline const std::set<std::string>& numbers() {
    static const std::set<std::string> n{"messages_per_s", "bytes_per_s"};
    return n;
}

/// The same keys in the same order and the same families, recursively (arrays: their first elements).
inline void check_shape(const Json& live, const Json& vec, const std::string& path, const std::string& key = "") {
    INFO("at " << path);
    const bool number_ok = numbers().count(key) && live.is_number() && vec.is_number();
    if (!number_ok) CHECK(family(live) == family(vec));
    if (live.is_object() && vec.is_object()) {
        std::vector<std::string> a, b;
        for (auto it = live.begin(); it != live.end(); ++it) a.push_back(it.key());
        for (auto it = vec.begin(); it != vec.end(); ++it) b.push_back(it.key());
        CHECK(a == b);
        for (const auto& k : b)
            if (live.contains(k)) check_shape(live.at(k), vec.at(k), path + "." + k, k);
    } else if (live.is_array() && vec.is_array() && !live.empty() && !vec.empty()) {
        check_shape(live.front(), vec.front(), path + "[0]", key);
    }
}

/// `live` is `vec`, except that the fields named in `differ` (at any depth)
/// may hold other values of the same msgpack type.
inline void check_like(const Json& live, const Json& vec, const std::set<std::string>& differ, const std::string& path = "$") {
    INFO("at " << path);
    if (live.is_object() && vec.is_object() && family(vec) == "map") {
        std::vector<std::string> a, b;
        for (auto it = live.begin(); it != live.end(); ++it) a.push_back(it.key());
        for (auto it = vec.begin(); it != vec.end(); ++it) b.push_back(it.key());
        REQUIRE(a == b);
        for (const auto& k : b) {
            if (differ.count(k)) {
                check_shape(live.at(k), vec.at(k), path + "." + k, k);
            } else {
                check_like(live.at(k), vec.at(k), differ, path + "." + k);
            }
        }
    } else if (live.is_array() && vec.is_array()) {
        REQUIRE(live.size() == vec.size());
        for (std::size_t i = 0; i < vec.size(); ++i) check_like(live[i], vec[i], differ, path + "[" + std::to_string(i) + "]");
    } else {
        CHECK(live == vec);
    }
}

/// The next message on `s` within `timeout`; nullopt on timeout.
inline std::optional<zmq::message_t> receive(zmq::socket_t& s, std::chrono::milliseconds timeout = 10000ms) {
    zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() < 0) return std::nullopt;
        zmq::poll(&item, 1, left);
        zmq::message_t m;
        if (s.recv(m, zmq::recv_flags::dontwait)) return m;
    }
}

/// A DEALER that talks to a core (or a door) as a node or a tool does.
struct Dealer {
    zmq::socket_t socket;
    Dealer(zmq::context_t& context, const std::string& endpoint) : socket(context, zmq::socket_type::dealer) {
        socket.set(zmq::sockopt::linger, 0);
        socket.connect(endpoint);
    }
    void send(const Bytes& b) { socket.send(zmq::const_buffer(b.data(), b.size()), zmq::send_flags::none); }
    /// The next message whose `t` is `type`, skipping others (kept in `skipped`).
    std::optional<Json> next(const std::string& type, std::chrono::milliseconds timeout = 10000ms) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            auto m = receive(socket, std::max(left, 0ms));
            if (!m) return std::nullopt;
            Json j = as_json(*m);
            if (j.at("t") == type) return j;
            skipped.push_back(std::move(j));
        }
    }
    std::vector<Json> skipped;
};

/// 8 bytes of a channel, for a ZeroMQ subscription.
inline std::string prefix(std::uint64_t channel, std::size_t size = 8) {
    std::string p(8, '\0');
    for (int i = 0; i < 8; ++i) p[static_cast<std::size_t>(i)] = static_cast<char>(channel >> (8 * i));
    return p.substr(0, size);
}

/// `frame` with its channel (bytes 0-7) replaced.
inline Bytes with_channel(Bytes frame, std::uint64_t channel) {
    for (int i = 0; i < 8; ++i) frame[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(channel >> (8 * i));
    return frame;
}

inline std::uint64_t u64_at(const Bytes& b, std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + static_cast<std::size_t>(i)];
    return v;
}

}  // namespace gecko::conformance::live
