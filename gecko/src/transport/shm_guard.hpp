// SPDX-License-Identifier: Apache-2.0
#pragma once
// A segment is a file that any process of its owner may cut short
// (ftruncate) while others have it mapped: a later access to a page past
// the new end raises SIGBUS, which ends a process that does not handle it.
// No such file operation may crash a Gecko process, so every mapping of a
// segment is guarded: a SIGBUS at an address inside a guarded mapping maps
// zero pages over the whole mapping (anonymous, private, MAP_FIXED) and the
// access completes, on zeros. The port then finds the truncation at its
// next size check (fstat) and stops using the segment; a Frame still held
// reads zeros. A SIGBUS anywhere else goes to the handler that was there
// before (or ends the process, as it would have).
//
// Concurrency: the table of guarded mappings is lock-free (the handler may
// run on any thread, at any instant): a slot's size is published before its
// base, and a mapping is unguarded before it is unmapped.
//
// The handler is installed once, with sigaction, when the first mapping is
// guarded. A program that installs its own SIGBUS handler afterwards
// replaces it (and should forward what it does not handle).

#include <cstddef>
#include <cstdint>

namespace gecko::detail::shm {

/// Guards [base, base + size); false if no more mappings can be guarded (the
/// caller must then not map the segment).
bool guard(void* base, std::size_t size) noexcept;
/// Stops guarding the mapping at `base` (before it is unmapped); a base never guarded is ignored.
void unguard(void* base) noexcept;
/// How many faults the guard turned into zero pages since the process started.
std::uint64_t guarded_faults() noexcept;

}  // namespace gecko::detail::shm
