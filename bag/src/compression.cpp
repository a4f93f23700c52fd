// SPDX-License-Identifier: Apache-2.0
#include "compression.hpp"

#include <lz4frame.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "serial.hpp"

namespace gecko::bag::detail {

namespace {

constexpr std::size_t step = 1u << 20;  // output grows by at most this much at a time beyond what came out

// Room for the next piece of output: at most `step` more than is there, and never past `expected`.
std::size_t grow(std::vector<std::uint8_t>& out, std::size_t used, std::uint64_t expected) {
    const std::uint64_t want = std::min<std::uint64_t>(expected, used + step);
    if (out.size() < want) out.resize(static_cast<std::size_t>(want));
    return out.size() - used;
}

void zstd_decompress(const std::uint8_t* in, std::size_t size, std::uint64_t expected, std::vector<std::uint8_t>& out) {
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!ctx) throw ParseError("zstd: out of memory");
    ZSTD_inBuffer src{in, size, 0};
    std::size_t used = 0;
    out.clear();
    for (;;) {
        std::size_t room = grow(out, used, expected);
        std::uint8_t spare = 0;  // one byte past `expected`: a stream longer than it says is caught
        ZSTD_outBuffer dst{room > 0 ? out.data() + used : &spare, room > 0 ? room : 1, 0};
        const std::size_t r = ZSTD_decompressStream(ctx.get(), &dst, &src);
        if (ZSTD_isError(r)) throw ParseError(std::string("zstd: ") + ZSTD_getErrorName(r));
        if (room == 0 && dst.pos > 0) throw ParseError("zstd: inflates to more than the " + std::to_string(expected) + " bytes the chunk says");
        used += dst.pos;
        if (r == 0 && src.pos == src.size) break;  // a frame ended and all input is used
        if (src.pos == src.size && dst.pos < dst.size) throw ParseError("zstd: the data ends inside a frame");
    }
    out.resize(used);
    if (used != expected)
        throw ParseError("zstd: inflates to " + std::to_string(used) + " bytes, the chunk says " + std::to_string(expected));
}

void lz4_decompress(const std::uint8_t* in, std::size_t size, std::uint64_t expected, std::vector<std::uint8_t>& out) {
    LZ4F_dctx* raw = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) throw ParseError("lz4: out of memory");
    std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> ctx(raw, LZ4F_freeDecompressionContext);
    std::size_t used = 0, consumed = 0;
    out.clear();
    std::size_t hint = 1;
    while (consumed < size) {
        std::size_t room = grow(out, used, expected);
        std::uint8_t spare = 0;
        std::size_t dst_size = room > 0 ? room : 1;
        std::size_t src_size = size - consumed;
        hint = LZ4F_decompress(ctx.get(), room > 0 ? out.data() + used : &spare, &dst_size, in + consumed, &src_size, nullptr);
        if (LZ4F_isError(hint)) throw ParseError(std::string("lz4: ") + LZ4F_getErrorName(hint));
        if (room == 0 && dst_size > 0) throw ParseError("lz4: inflates to more than the " + std::to_string(expected) + " bytes the chunk says");
        used += dst_size;
        consumed += src_size;
        if (src_size == 0 && dst_size == 0) throw ParseError("lz4: no progress (corrupt data)");
        if (hint == 0 && consumed < size) {  // a frame ended; another may follow
            LZ4F_resetDecompressionContext(ctx.get());
        }
    }
    // Output the decoder still holds (it may keep some until asked again).
    while (hint != 0) {
        std::size_t room = grow(out, used, expected);
        std::uint8_t spare = 0;
        std::size_t dst_size = room > 0 ? room : 1;
        std::size_t src_size = 0;
        hint = LZ4F_decompress(ctx.get(), room > 0 ? out.data() + used : &spare, &dst_size, nullptr, &src_size, nullptr);
        if (LZ4F_isError(hint)) throw ParseError(std::string("lz4: ") + LZ4F_getErrorName(hint));
        if (room == 0 && dst_size > 0) throw ParseError("lz4: inflates to more than the " + std::to_string(expected) + " bytes the chunk says");
        if (dst_size == 0) {
            if (hint != 0) throw ParseError("lz4: the data ends inside a frame");
            break;
        }
        used += dst_size;
    }
    out.resize(used);
    if (used != expected)
        throw ParseError("lz4: inflates to " + std::to_string(used) + " bytes, the chunk says " + std::to_string(expected));
}

}  // namespace

void compress(Compression c, int level, const std::uint8_t* in, std::size_t size, std::vector<std::uint8_t>& out) {
    switch (c) {
        case Compression::none:
            out.assign(in, in + size);
            return;
        case Compression::zstd: {
            out.resize(ZSTD_compressBound(size));
            const std::size_t n = ZSTD_compress(out.data(), out.size(), in, size, level == 0 ? ZSTD_CLEVEL_DEFAULT : level);
            if (ZSTD_isError(n)) throw ParseError(std::string("zstd: ") + ZSTD_getErrorName(n));
            out.resize(n);
            return;
        }
        case Compression::lz4: {
            LZ4F_preferences_t prefs{};
            prefs.frameInfo.contentSize = size;
            prefs.compressionLevel = level;
            out.resize(LZ4F_compressFrameBound(size, &prefs));
            const std::size_t n = LZ4F_compressFrame(out.data(), out.size(), in, size, &prefs);
            if (LZ4F_isError(n)) throw ParseError(std::string("lz4: ") + LZ4F_getErrorName(n));
            out.resize(n);
            return;
        }
    }
}

void decompress(std::string_view compression, const std::uint8_t* in, std::size_t size, std::uint64_t expected,
                std::vector<std::uint8_t>& out) {
    if (compression == "zstd") return zstd_decompress(in, size, expected, out);
    if (compression == "lz4") return lz4_decompress(in, size, expected, out);
    if (compression.empty()) {
        if (size != expected)
            throw ParseError("uncompressed records of " + std::to_string(size) + " bytes, the chunk says " + std::to_string(expected));
        out.assign(in, in + size);
        return;
    }
    throw ParseError("unknown compression '" + std::string(compression) + "' (known: zstd, lz4, none)");
}

}  // namespace gecko::bag::detail
