// libFuzzer target for what a page sends gecko-bridge's academy endpoints
// (bridge/src/academy/messages.hpp): a manager order (JSON), a code message
// split into its name and body, and #freq's body. Whatever the bytes, each
// reader gives a value or a reason: never a crash, a hang or an exception.
#include "academy/messages.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace gecko::bridge::academy;
    if (size == 0) return 0;
    const std::uint8_t mode = data[0] % 3;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (mode) {
        case 0: {
            const ManagerOrder o = read_manager_order(text);
            if (o.command.empty() == o.error.empty()) std::abort();  // an order or a reason, never both or neither
            break;
        }
        case 1: {
            const CodeMessage m = split_code_message(text);
            if (m.name.size() + m.body.size() != text.size() && text.size() > 5) std::abort();
            if (m.name.size() > 5) std::abort();
            break;
        }
        case 2: {
            const Frequencies f = read_frequencies(text);
            for (const auto& hz : {f.brain, f.gui})
                if (hz && !(std::isfinite(*hz) && *hz > 0 && *hz <= 1000)) std::abort();  // only what it takes
            if (!f.error.empty() && (f.brain || f.gui)) std::abort();
            break;
        }
    }
    return 0;
}
