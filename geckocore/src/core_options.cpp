// SPDX-License-Identifier: Apache-2.0
// CoreOptions::from_env: the GECKO_* variables geckocore reads, parsed by the
// same helpers as the nodes' (gecko/options.hpp), so that a value means one
// thing to every program.
#include "geckocore/core.hpp"

#include "gecko/error.hpp"
#include "gecko/options.hpp"

namespace gecko::core {

CoreOptions CoreOptions::from_env() {
    CoreOptions o;
    o.key = env_text("GECKO_KEY");
    if (const auto v = env_text("GECKO_MULTICAST"); !v.empty()) {
        if (const auto why = parse_multicast(v, o.multicast_group, o.multicast_port); !why.empty())
            throw Error(Errc::invalid_argument, "GECKO_MULTICAST='" + v + "': " + why);
    }
    o.interface = env_text("GECKO_INTERFACE");
    o.multicast = !env_flag("GECKO_NO_MULTICAST", false);
    return o;
}

}  // namespace gecko::core
