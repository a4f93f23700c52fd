// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file repair.hpp
/// Rewrites a damaged or cut file (a recorder killed with -9, a disk that
/// filled) as a complete one: every message of every chunk that reads
/// whole, with its schemas and channels (ids kept), its Metadata and
/// Attachment records, then a fresh summary and footer.

#include <gecko/bag/reader.hpp>
#include <gecko/bag/writer.hpp>

#include <string>
#include <vector>

namespace gecko::bag {

struct RecoverResult {
    std::uint64_t messages = 0;         ///< messages written to the new file
    std::uint64_t channels = 0;
    std::uint64_t metadata = 0;
    std::uint64_t attachments = 0;      ///< whose CRC held
    std::uint64_t bytes_read = 0;       ///< of the input, up to its last whole record
    std::uint64_t bytes_lost = 0;       ///< of the input, after it
    std::vector<Problem> problems;      ///< what could not be read, and where
};

/// Reads `input` from its start (ignoring any summary) and writes what is
/// valid to `output` (which must be another path).
/// @throws gecko::Error: (Errc::decode) if `input` is not MCAP at all;
///         (Errc::invalid_argument) if a file cannot be opened or they are the same path.
RecoverResult recover(const std::string& input, const std::string& output, WriterOptions options = {});

}  // namespace gecko::bag
