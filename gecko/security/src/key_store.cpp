// SPDX-License-Identifier: Apache-2.0
#include "gecko/security/key_store.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "gecko/error.hpp"

namespace gecko::security {
namespace {

const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

// One file name per key: bytes that could mean something to a path (or hide the file) are written %XX.
std::string file_name_of(const std::string& key) {
    std::string out;
    for (std::size_t i = 0; i < key.size(); ++i) {
        const auto c = static_cast<unsigned char>(key[i]);
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                           c == '-' || (c == '.' && i > 0);
        if (plain) {
            out += static_cast<char>(c);
        } else {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            out += hex;
        }
    }
    return out + ".secret";
}

}  // namespace

std::string secret_path(const std::string& key) {
    if (const char* file = env("GECKO_SECRET_FILE")) return file;
    std::string config;
    if (const char* xdg = env("XDG_CONFIG_HOME")) config = xdg;
    else if (const char* home = env("HOME")) config = std::string(home) + "/.config";
    else
        throw Error(Errc::security, "cannot tell where the secret of key '" + key +
                                        "' is kept: neither XDG_CONFIG_HOME nor HOME is set (set GECKO_SECRET_FILE)");
    return config + "/gecko/keys/" + file_name_of(key);
}

std::optional<SecretFile> find_secret_file(const std::string& key) {
    const std::string path = secret_path(key);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) {
        if (env("GECKO_SECRET_FILE"))
            throw Error(Errc::security, "GECKO_SECRET_FILE names " + path + ", which does not exist");
        return std::nullopt;
    }
    return SecretFile::read(path);
}

std::optional<Secret> find_secret(const std::string& key) {
    auto file = find_secret_file(key);
    if (!file) return std::nullopt;
    return file->own;
}

}  // namespace gecko::security
