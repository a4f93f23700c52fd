// SPDX-License-Identifier: Apache-2.0
#pragma once
// The interests in a subscriber slot (docs/PROTOCOL.md §7.1): records of
// words, [channel] [flags | announcement length << 32] [the announcement's
// bytes, 8 a word, zero padded], `interest_used` words of them.
//
// Concurrency: a seqlock. Only the slot's subscriber writes (version odd
// while it does); the publisher copies the words with relaxed atomic loads
// and uses the copy only if the version was even and did not change. Every
// word the publisher reads is checked: a record that does not parse is
// Read::corrupt, never a read past the slot.

#include <vector>

#include "transport/shm_view.hpp"
#include "transport/transport.hpp"

namespace gecko::detail::shm {

bool same_interest(const Interest& a, const Interest& b);

/// Subscriber side: rewrites slot i's interests. False if they did not all
/// fit (the slot is then marked to get everything).
bool write_interests(const View& v, std::size_t i, const std::vector<Interest>& interests);

enum class Read { ok, busy, corrupt };

/// Publisher side: what slot i's subscriber wrote, checked word by word.
/// busy: it was being rewritten on every look.
Read read_interests(const View& v, std::size_t i, std::vector<Interest>& out, bool& overflow, u64& version);

}  // namespace gecko::detail::shm
