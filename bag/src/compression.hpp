// SPDX-License-Identifier: Apache-2.0
#pragma once
// Chunk compression: zstd and lz4 (the LZ4 frame format, as MCAP's lz4
// chunks are), from Debian's libzstd and liblz4.

#include <gecko/bag/records.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

namespace gecko::bag::detail {

/// `level` 0: the library's default.
void compress(Compression c, int level, const std::uint8_t* in, std::size_t size, std::vector<std::uint8_t>& out);

/// Inflates `in` (compressed as `compression` says: "zstd", "lz4") into `out`,
/// which must come to exactly `expected` bytes. `out` grows with what really
/// comes out, never by what a header claims.
/// @throws ParseError for an unknown compression, corrupt data, or a size other than `expected`.
void decompress(std::string_view compression, const std::uint8_t* in, std::size_t size, std::uint64_t expected,
                std::vector<std::uint8_t>& out);

}  // namespace gecko::bag::detail
