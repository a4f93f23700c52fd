// SPDX-License-Identifier: Apache-2.0
#include <gecko/bag/repair.hpp>

#include <gecko/error.hpp>

#include <sys/stat.h>

#include <set>

namespace gecko::bag {

namespace {
bool same_file(const std::string& a, const std::string& b) {
    struct stat sa{}, sb{};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
}  // namespace

RecoverResult recover(const std::string& input, const std::string& output, WriterOptions options) {
    if (input == output || same_file(input, output))
        throw Error(Errc::invalid_argument, "recover writes a new file: give an output other than '" + input + "'");
    ReaderOptions ro;
    ro.use_index = false;
    Reader reader(input, ro);
    if (options.library.empty()) options.library = reader.header().library;
    options.profile = reader.header().profile;
    Writer writer(output, options);
    RecoverResult result;
    std::set<std::uint16_t> added;
    auto ensure_channel = [&](const Channel& ch) {
        if (!added.insert(ch.id).second) return;
        if (ch.schema_id != 0) {
            auto s = reader.schemas().find(ch.schema_id);
            if (s != reader.schemas().end()) {
                writer.add_schema(s->second);
            }
        }
        Channel copy = ch;
        if (copy.schema_id != 0 && !reader.schemas().count(copy.schema_id)) copy.schema_id = 0;  // its schema is lost
        writer.add_channel(copy);
        ++result.channels;
    };
    result.messages = reader.read_messages(MessageFilter{}, [&](const Channel& ch, const MessageView& m) {
        ensure_channel(ch);
        writer.write(m);
        return true;
    });
    for (const auto& [id, ch] : reader.channels()) ensure_channel(ch);  // channels without messages too
    for (const auto& m : reader.metadata()) {
        writer.add_metadata(m);
        ++result.metadata;
    }
    result.attachments = reader.read_attachments([&](const Attachment& a) {
        writer.add_attachment(a);
        return true;
    });
    const auto scan = reader.scan();
    result.bytes_read = scan.valid_end;
    result.bytes_lost = reader.file_size() > scan.valid_end ? reader.file_size() - scan.valid_end : 0;
    if (scan.data_end) result.bytes_lost = 0;  // the summary after Data End is rebuilt, not lost
    writer.close();
    // Each pass over the file reports the same problems: keep one of each.
    for (const auto& p : reader.problems()) {
        bool seen = false;
        for (const auto& q : result.problems) seen = seen || (q.offset == p.offset && q.message == p.message);
        if (!seen) result.problems.push_back(p);
    }
    return result;
}

}  // namespace gecko::bag
