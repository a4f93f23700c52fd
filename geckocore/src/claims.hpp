// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the core's table held, kept in a file so that a restarted core knows
// which session held which entity id, and the secret that proves a session:
// until its warm-up is over (one lease, in which every live node registers
// again), it gives a claimed session id or entity id to no one else.
//
// The file is the core user's own (0600, created anew and renamed over the
// old one); a file another user owns, or others may write, is not read.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace gecko::core {

struct Claims {
    std::map<std::uint64_t, std::uint64_t> secrets;   ///< session id -> its secret
    std::map<std::uint64_t, std::uint64_t> entities;  ///< entity id -> its session id
};

/// Where the core of `key` keeps its claims in `directory` (per user and key).
std::string claims_path(const std::string& directory, const std::string& key);

/// The claims in `path`; nullopt if there are none to trust (`why` says why
/// when the file exists: another owner, wider permissions, malformed).
std::optional<Claims> read_claims(const std::string& path, std::string& why);

/// Replaces `path` with `claims`. "" or why not.
std::string write_claims(const std::string& path, const Claims& claims);

/// Removes the claims files of this user in `directory` not written for
/// `age` (cores long gone). Returns how many.
std::size_t remove_old_claims(const std::string& directory, std::chrono::seconds age);

}  // namespace gecko::core
