// SPDX-License-Identifier: Apache-2.0
#include "transport/shm_trust.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace gecko::detail::shm {

namespace {

bool in_group(gid_t gid) {
    if (gid == ::getegid()) return true;
    gid_t groups[256];
    const int n = ::getgroups(256, groups);
    return std::find(groups, groups + std::max(n, 0), gid) != groups + std::max(n, 0);
}

std::string octal(unsigned mode) {
    char s[8];
    std::snprintf(s, sizeof s, "%04o", mode);
    return s;
}

}  // namespace

bool may_map(const struct stat& st, const std::string& path, bool group_access, std::string& why) {
    const bool ours = st.st_uid == ::geteuid() || (group_access && in_group(st.st_gid));
    if (!ours) {
        why = path + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user" +
              (group_access ? " or a group it is in" : "") + ": not mapped";
        return false;
    }
    if (st.st_mode & S_IWOTH) {
        why = path + " is writable by every user (mode " + octal(st.st_mode & 07777) + "): not mapped";
        return false;
    }
    return true;
}

bool sealed_with(const HeaderCopy& h, const std::string& name, const std::string& path, const SealKey& key,
                 const SealKey* accepted, std::string& why) {
    const auto check = check_seal(h, name, key);
    if (check == SealCheck::sealed) return true;
    if (check != SealCheck::unsealed && accepted && check_seal(h, name, *accepted) == SealCheck::sealed) return true;
    why = path + (check == SealCheck::unsealed
                      ? " is not sealed: its publisher holds no secret of this key (docs/SECURITY.md §8): not mapped"
                      : " is sealed with another secret than this node's (docs/SECURITY.md §8): not mapped");
    return false;
}

}  // namespace gecko::detail::shm
