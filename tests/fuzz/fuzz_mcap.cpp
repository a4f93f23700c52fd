// SPDX-License-Identifier: Apache-2.0
// The MCAP reader (gecko::bag, bag/src/): any bytes as a file, read by the
// Reader (summary, messages through the index and by scanning, metadata)
// and checked by check() and recover(). Nothing may crash, hang, or
// allocate beyond the file and the chunk limit.
#include <gecko/bag/check.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/bag/repair.hpp>
#include <gecko/error.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

std::string as_file(int& fd, const std::uint8_t* data, std::size_t size) {
    if (fd < 0) fd = ::memfd_create("mcap", 0);
    ::ftruncate(fd, 0);
    for (std::size_t done = 0; done < size;) {
        const auto n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static int in = -1, out = -1;
    const std::string path = as_file(in, data, size);
    const std::string repaired = as_file(out, nullptr, 0);
    gecko::bag::ReaderOptions options;
    options.max_chunk_size = 4u << 20;
    for (bool use_index : {true, false}) {
        options.use_index = use_index;
        try {
            gecko::bag::Reader reader(path, options);
            gecko::bag::MessageFilter filter;
            if (use_index) filter.topics = {"i*"};
            std::size_t bytes = 0;
            reader.read_messages(filter, [&](const gecko::bag::Channel& ch, const gecko::bag::MessageView& m) {
                bytes += m.size + ch.topic.size();
                return true;
            });
            reader.metadata();
            reader.scan();
            (void)bytes;
        } catch (const gecko::Error&) {
            // not MCAP at all: said, not crashed
        }
    }
    (void)gecko::bag::check(path, 4u << 20);
    try {
        gecko::bag::WriterOptions w;
        w.compression = gecko::bag::Compression::none;
        gecko::bag::recover(path, repaired, w);
    } catch (const gecko::Error&) {
    }
    return 0;
}
