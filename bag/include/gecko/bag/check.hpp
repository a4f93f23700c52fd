// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file check.hpp
/// Checks a file against the MCAP specification, the checks the MCAP CLI's
/// `doctor` makes: magic and record framing, CRCs (chunks, data section,
/// summary), what may appear inside chunks, chunk times against their
/// messages, message indexes against their chunks, duplicate and
/// inconsistent schemas and channels, messages before their channel,
/// chunk indexes against the chunks they point at, the summary's copies of
/// schemas and channels, statistics against the data, summary offsets
/// against their groups. `gecko bag doctor` prints the result.

#include <cstdint>
#include <string>
#include <vector>

namespace gecko::bag {

struct Finding {
    enum class Severity { error, warning };
    Severity severity = Severity::error;
    std::uint64_t offset = 0;  ///< where in the file
    std::string message;
    /// "error at offset 1234: ...".
    std::string to_string() const;
};

struct CheckReport {
    std::vector<Finding> findings;   ///< at most 1000, in file order within each pass
    std::uint64_t records = 0;       ///< top-level records read
    std::uint64_t chunks = 0;
    std::uint64_t messages = 0;
    std::size_t errors() const;
    std::size_t warnings() const;
    bool ok() const { return errors() == 0; }
};

/// Reads all of `path` and checks it. Never throws for what the file holds
/// (that is what findings are for). A chunk that inflates to more than
/// `max_chunk_size` bytes is an error, not read.
/// @throws gecko::Error (Errc::invalid_argument) if it cannot be opened.
CheckReport check(const std::string& path, std::uint64_t max_chunk_size = 1ull << 30);

}  // namespace gecko::bag
