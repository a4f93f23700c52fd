// SPDX-License-Identifier: Apache-2.0
#pragma once
// Names an entity is made with, checked where the application gives them
// (gecko/wire/names.hpp has the rules).

#include <string>

#include "gecko/error.hpp"
#include "gecko/wire/names.hpp"

namespace gecko::detail {

inline void check_topic_name(const std::string& name, const std::string& what) {
    if (const auto why = wire::check_topic_name(name); !why.empty())
        throw Error(Errc::invalid_argument, what + " needs a valid topic name: '" + wire::printable(name) + "': " + why);
}

inline void check_type_name(const std::string& name, const std::string& what) {
    if (const auto why = wire::check_type_name(name); !why.empty())
        throw Error(Errc::invalid_argument, what + ": invalid type name '" + wire::printable(name) + "': " + why);
}

}  // namespace gecko::detail
