// SPDX-License-Identifier: Apache-2.0
// The interests seqlock of a slot: see shm_interests.hpp.
#include "transport/shm_interests.hpp"

#include <algorithm>
#include <cstring>

#include "cpu_relax.hpp"

namespace gecko::detail::shm {

bool same_interest(const Interest& a, const Interest& b) {
    return a.channel == b.channel && a.wildcard == b.wildcard && a.announcement == b.announcement;
}

bool write_interests(const View& v, std::size_t i, const std::vector<Interest>& interests) {
    SlotHead& s = v.slot(i);
    std::atomic<u64>* w = v.interests(i);
    const u64 capacity = v.geo.interest_words;
    u64 version = s.interest_version.load(std::memory_order_relaxed);
    version += version & 1;  // even: not being written
    s.interest_version.store(version + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    u64 at = 0;
    bool overflow = false;
    for (const auto& interest : interests) {
        const u64 len = std::min<u64>(interest.announcement.size(), wire::max_announcement_size);
        const u64 words = 2 + (len + 7) / 8;
        if (at + words > capacity) {
            overflow = true;
            break;
        }
        w[at].store(interest.channel, std::memory_order_relaxed);
        w[at + 1].store((interest.wildcard ? interest_wildcard : 0) | (len << 32), std::memory_order_relaxed);
        for (u64 j = 0; j * 8 < len; ++j) {
            u64 x = 0;
            std::memcpy(&x, interest.announcement.data() + j * 8, std::min<u64>(8, len - j * 8));
            w[at + 2 + j].store(x, std::memory_order_relaxed);
        }
        at += words;
    }
    s.interest_used.store(at, std::memory_order_relaxed);
    s.flags.store(overflow ? slot_overflow : 0, std::memory_order_relaxed);
    s.interest_version.store(version + 2, std::memory_order_release);
    return !overflow;
}

Read read_interests(const View& v, std::size_t i, std::vector<Interest>& out, bool& overflow, u64& version) {
    SlotHead& s = v.slot(i);
    const std::atomic<u64>* w = v.interests(i);
    const u64 capacity = v.geo.interest_words;
    std::vector<u64> words;
    for (int attempt = 0; attempt < 8; ++attempt) {
        const u64 v1 = s.interest_version.load(std::memory_order_acquire);
        if (v1 & 1) {
            cpu_relax();
            continue;
        }
        const u64 used = s.interest_used.load(std::memory_order_relaxed);
        const u64 flags = s.flags.load(std::memory_order_relaxed);
        words.resize(std::min(used, capacity));
        for (std::size_t k = 0; k < words.size(); ++k) words[k] = w[k].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (s.interest_version.load(std::memory_order_relaxed) != v1) continue;
        if (used > capacity) return Read::corrupt;
        out.clear();
        for (u64 at = 0; at < used;) {
            if (used - at < 2) return Read::corrupt;
            const u64 len = words[at + 1] >> 32;
            if (len > wire::max_announcement_size || (words[at + 1] & 0xffffffffu & ~interest_wildcard) != 0)
                return Read::corrupt;
            const u64 n = (len + 7) / 8;
            if (used - at - 2 < n) return Read::corrupt;
            Interest interest;
            interest.channel = words[at];
            interest.wildcard = (words[at + 1] & interest_wildcard) != 0;
            interest.announcement.resize(len);
            for (u64 j = 0; j < n; ++j)
                std::memcpy(interest.announcement.data() + j * 8, &words[at + 2 + j], std::min<u64>(8, len - j * 8));
            out.push_back(std::move(interest));
            at += 2 + n;
        }
        overflow = (flags & slot_overflow) != 0;
        version = v1;
        return Read::ok;
    }
    return Read::busy;
}

}  // namespace gecko::detail::shm
