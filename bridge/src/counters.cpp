// SPDX-License-Identifier: Apache-2.0
#include "counters.hpp"

namespace gecko::bridge {

std::string Counters::json(const std::string& extra) const {
    std::string out = "{";
#define GECKO_BRIDGE_WRITE(name) out += "\"" #name "\":" + std::to_string(name.load()) + ",";
    GECKO_BRIDGE_COUNTERS(GECKO_BRIDGE_WRITE)
#undef GECKO_BRIDGE_WRITE
    if (!extra.empty()) out += extra + ",";
    out.back() = '}';
    return out;
}

}  // namespace gecko::bridge
