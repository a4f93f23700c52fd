// SPDX-License-Identifier: Apache-2.0
#include "transport/transport.hpp"

namespace gecko::detail {

std::string_view scheme_of(std::string_view locator) noexcept {
    const auto at = locator.find("://");
    return at == std::string_view::npos ? std::string_view() : locator.substr(0, at);
}

}  // namespace gecko::detail
