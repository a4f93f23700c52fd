// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a reader may map a segment another process made (docs/PROTOCOL.md
// §7.1, "Trust"; docs/SECURITY.md §8): who can write the file, and in a key
// with a secret, whether its header carries the key's seal. Each check says
// why it refuses.

#include <sys/stat.h>

#include <string>

#include "gecko/shm/segment.hpp"

namespace gecko::detail::shm {

/// Nobody but the file's owner (and the owner's group) can write it or cut it
/// short: its owner is this process's user, or with `group_access`
/// (GECKO_SHM_GROUP) a user of a group this process is in, and others may not
/// write it at all.
bool may_map(const struct stat& st, const std::string& path, bool group_access, std::string& why);

/// The header `h` of the segment `name` is sealed with `key` (a secured key's
/// subkey 4), or with `accepted` (the same of the secret accepted during a
/// rotation; null outside one): a process that can write the directory but
/// does not hold the secret (a member of the shared group) cannot stand in
/// for a publisher.
bool sealed_with(const HeaderCopy& h, const std::string& name, const std::string& path, const SealKey& key,
                 const SealKey* accepted, std::string& why);

}  // namespace gecko::detail::shm
