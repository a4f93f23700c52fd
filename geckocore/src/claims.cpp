// SPDX-License-Identifier: Apache-2.0
#include "claims.hpp"

#include "gecko/wire/hash.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>

namespace gecko::core {
namespace {

constexpr std::string_view magic = "gecko-claims 1\n";
constexpr off_t max_file = 32 << 20;  // ~1.5 M lines: more than any table a core admits

std::string hex(std::uint64_t v) {
    char s[17];
    std::snprintf(s, sizeof s, "%016" PRIx64, v);
    return s;
}

std::string prefix() { return "geckocore-" + std::to_string(::getuid()) + "-"; }

}  // namespace

std::string claims_path(const std::string& directory, const std::string& key) {
    return directory + "/" + prefix() + hex(wire::fnv1a64(key)) + ".claims";
}

std::optional<Claims> read_claims(const std::string& path, std::string& why) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT) why = std::string("cannot open it: ") + std::strerror(errno);
        return std::nullopt;
    }
    struct stat st {};
    std::string text;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_uid != ::geteuid())
        why = "owned by uid " + std::to_string(st.st_uid) + ", not this user";
    else if (st.st_mode & 077)
        why = "others may read or write it";
    else if (st.st_size > max_file)
        why = "larger than " + std::to_string(max_file) + " bytes";
    else {
        text.resize(static_cast<std::size_t>(st.st_size));
        std::size_t at = 0;
        while (at < text.size()) {
            const auto n = ::read(fd, text.data() + at, text.size() - at);
            if (n <= 0) break;
            at += static_cast<std::size_t>(n);
        }
        text.resize(at);
    }
    ::close(fd);
    if (!why.empty()) return std::nullopt;
    if (text.compare(0, magic.size(), magic) != 0) {
        why = "not a claims file";
        return std::nullopt;
    }
    Claims c;
    const char* p = text.c_str() + magic.size();
    // Lines "s SESSION SECRET" and "e ENTITY SESSION", decimal.
    while (*p == 's' || *p == 'e') {
        const char kind = *p;
        char* end = nullptr;
        if (p[1] != ' ') break;
        const unsigned long long a = std::strtoull(p + 2, &end, 10);
        if (end == p + 2 || *end != ' ') break;
        const char* second = end + 1;
        const unsigned long long b = std::strtoull(second, &end, 10);
        if (end == second || *end != '\n') break;
        (kind == 's' ? c.secrets : c.entities)[a] = b;
        p = end + 1;
    }
    if (*p != '\0') {
        why = "malformed at byte " + std::to_string(p - text.c_str());
        return std::nullopt;
    }
    return c;
}

std::string write_claims(const std::string& path, const Claims& claims) {
    std::string text(magic);
    text.reserve(magic.size() + 48 * (claims.secrets.size() + claims.entities.size()));
    for (const auto& [session, secret] : claims.secrets)
        text += "s " + std::to_string(session) + " " + std::to_string(secret) + "\n";
    for (const auto& [id, session] : claims.entities)
        text += "e " + std::to_string(id) + " " + std::to_string(session) + "\n";
    const std::string temporary = path + ".tmp" + std::to_string(::getpid());
    ::unlink(temporary.c_str());
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot create " + temporary + ": " + std::strerror(errno);
    std::size_t at = 0;
    while (at < text.size()) {
        const auto n = ::write(fd, text.data() + at, text.size() - at);
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (at != text.size() || ::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        ::unlink(temporary.c_str());
        return "cannot write " + path + ": " + why;
    }
    return {};
}

std::size_t remove_old_claims(const std::string& directory, std::chrono::seconds age) {
    DIR* dir = ::opendir(directory.c_str());
    if (!dir) return 0;
    const std::string mine = prefix();
    const std::time_t now = std::time(nullptr);
    std::size_t removed = 0;
    int budget = 4096;
    while (const dirent* e = ::readdir(dir)) {
        if (--budget < 0) break;
        const std::string name = e->d_name;
        if (name.rfind(mine, 0) != 0 || name.find(".claims") == std::string::npos) continue;
        const std::string path = directory + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
            now - st.st_mtime < age.count())
            continue;
        if (::unlink(path.c_str()) == 0) ++removed;
    }
    ::closedir(dir);
    return removed;
}

}  // namespace gecko::core
