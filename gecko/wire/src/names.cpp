// SPDX-License-Identifier: Apache-2.0
#include "gecko/wire/names.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstdio>

namespace gecko::wire {
namespace {

std::string check_printable(std::string_view name, std::size_t max, const char* what) {
    if (name.empty()) return std::string(what) + " is empty";
    if (name.size() > max)
        return std::string(what) + " is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(max) + ")";
    for (std::size_t i = 0; i < name.size(); ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c < 0x21 || c > 0x7e)
            return std::string(what) + " has a space or a non-printable byte (0x" +
                   [&] {
                       char h[3];
                       std::snprintf(h, sizeof h, "%02x", c);
                       return std::string(h);
                   }() +
                   ") at byte " + std::to_string(i) + "; names are printable ASCII";
    }
    return {};
}

// An IPv4 address in dotted decimal, or an IPv6 address in brackets: what
// ZeroMQ connects to without asking a resolver.
bool is_numeric_host(std::string_view host) {
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    const std::string text(bracketed ? host.substr(1, host.size() - 2) : host);
    unsigned char address[sizeof(in6_addr)];
    return ::inet_pton(bracketed ? AF_INET6 : AF_INET, text.c_str(), address) == 1;
}

}  // namespace

std::string check_topic_name(std::string_view name) {
    auto why = check_printable(name, max_topic_name, "the name");
    if (why.empty() && name.front() == '#') why = "the name starts with '#', which Gecko reserves";
    if (why.empty() && is_glob(name)) why = "the name has '*' or '?', which match names in filters (e.g. 'arm1/*')";
    return why;
}

std::string check_type_name(std::string_view name) {
    auto why = check_printable(name, max_type_name, "the type name");
    if (why.empty() && is_glob(name)) why = "the type name has '*' or '?', which match names in filters";
    return why;
}

std::string check_pattern(std::string_view pattern) { return check_printable(pattern, max_topic_name, "the pattern"); }

bool is_glob(std::string_view pattern) noexcept { return pattern.find_first_of("*?") != std::string_view::npos; }

// Greedy with one backtrack point: a later '*' supersedes an earlier one, so
// the work is at most |pattern| x |text|.
bool glob_match(std::string_view pattern, std::string_view text) noexcept {
    std::size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
    while (t < text.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = t;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

std::string check_key(std::string_view name) { return check_printable(name, max_key, "the key"); }

std::string check_node_name(std::string_view name) {
    if (name.empty()) return "the name is empty";
    if (name.size() > max_node_name)
        return "the name is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(max_node_name) + ")";
    for (char ch : name) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) return "the name has a control character";
    }
    return {};
}

std::string check_locator(std::string_view locator) {
    if (locator.empty() || locator.size() > max_locator)
        return "a locator is 1-" + std::to_string(max_locator) + " bytes";
    for (char ch : locator)
        if (static_cast<unsigned char>(ch) <= 0x20 || static_cast<unsigned char>(ch) >= 0x7f)
            return "a locator is printable ASCII without spaces";
    const auto at = locator.find("://");
    if (at == std::string_view::npos) return "a locator is SCHEME://ADDRESS";
    const auto scheme = locator.substr(0, at);
    const auto rest = locator.substr(at + 3);
    if (rest.empty()) return "the locator has no address";
    if (scheme == "ipc") return rest.size() <= 107 ? "" : "an ipc path is at most 107 bytes";
    if (scheme == "inproc" || scheme == "mem" || scheme == "shm") return {};
    if (scheme != "tcp") return "unknown scheme '" + std::string(scheme) + "' (tcp, ipc, inproc, mem, shm)";
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return "tcp://HOST:PORT needs a host and a port";
    const auto host = rest.substr(0, colon);
    const auto port = rest.substr(colon + 1);
    if (host == "*" || host == "0.0.0.0") return "tcp host is a wildcard; a locator names an address others can reach";
    // A host name would be resolved by ZeroMQ on its I/O thread, blocking every
    // link of the process while a DNS server does not answer: numbers only.
    if (!is_numeric_host(host))
        return "tcp host '" + std::string(host) +
               "' is not a numeric address (IPv4 a.b.c.d, or IPv6 in brackets); locators name no host names";
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos)
        return "tcp port is not a number";
    const int p = std::stoi(std::string(port));
    if (p < 1 || p > 65535) return "tcp port is not 1-65535";
    return {};
}

std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) return 1;
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1Fu;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07u;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + k]);
        if ((cc & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (cc & 0x3Fu);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    return n;
}

std::string printable(std::string_view text, bool keep_newlines) {
    std::string out;
    out.reserve(text.size());
    char hex[8];
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t n = 1;
        bool safe = (c >= 0x20 && c != 0x7f) || (keep_newlines && c == '\n');
        if (c >= 0x80) {
            n = utf8_sequence(text, i);
            // U+0080-U+009F (C1, CSI among them) is "\xc2\x80".."\xc2\x9f" in UTF-8.
            safe = n != 0 && !(n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0);
            if (n == 0) n = 1;
        }
        if (safe) {
            out.append(text.substr(i, n));
        } else {
            for (std::size_t k = 0; k < n; ++k) {
                std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(text[i + k])));
                out += hex;
            }
        }
        i += n;
    }
    return out;
}

}  // namespace gecko::wire
