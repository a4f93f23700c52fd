// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers of the bag tests: a scratch directory removed at the end, files
// as bytes, and MCAP records built by hand (for files no Writer would
// write: unknown opcodes, lies about lengths, messages before channels).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gecko/bag/records.hpp>

namespace gecko::bag_test {

using Bytes = std::vector<std::uint8_t>;

struct Scratch {
    std::filesystem::path dir;
    Scratch() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "gecko-bag-XXXXXX").string();
        dir = ::mkdtemp(tmpl.data());
    }
    ~Scratch() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    std::string path(const std::string& name) const { return (dir / name).string(); }
};

inline Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::string& path, const Bytes& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Hand-built records.
struct Build {
    Bytes b;
    Build() { b.assign(bag::magic, bag::magic + 8); }
    void le(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) b.push_back(i < 8 ? static_cast<std::uint8_t>(v >> (8 * i)) : 0);  // n may exceed 8
    }
    void str(const std::string& s) {
        le(s.size(), 4);
        b.insert(b.end(), s.begin(), s.end());
    }
    void record(std::uint8_t op, const Bytes& content) {
        b.push_back(op);
        le(content.size(), 8);
        b.insert(b.end(), content.begin(), content.end());
    }
    static Bytes content(const std::function<void(Build&)>& f) {
        Build c;
        c.b.clear();
        f(c);
        return c.b;
    }
    void header() {
        record(0x01, content([](Build& c) {
                   c.str("");
                   c.str("hand");
               }));
    }
    void channel(std::uint16_t id, const std::string& topic) {
        record(0x04, content([&](Build& c) {
                   c.le(id, 2);
                   c.le(0, 2);
                   c.str(topic);
                   c.str("msgpack");
                   c.le(0, 4);
               }));
    }
    void message(std::uint16_t channel, std::uint64_t t, const Bytes& data) {
        record(0x05, content([&](Build& c) {
                   c.le(channel, 2);
                   c.le(1, 4);
                   c.le(t, 8);
                   c.le(t + 1, 8);  // publish time: a tick before the log time
                   c.b.insert(c.b.end(), data.begin(), data.end());
               }));
    }
    void end() {
        record(0x0f, content([](Build& c) { c.le(0, 4); }));
        record(0x02, content([](Build& c) {
                   c.le(0, 8);
                   c.le(0, 8);
                   c.le(0, 4);
               }));
        b.insert(b.end(), bag::magic, bag::magic + 8);
    }
};

}  // namespace gecko::bag_test
