// SPDX-License-Identifier: Apache-2.0
#pragma once
// The network helpers live in gecko::net (gecko/net/net.hpp); discovery code
// still says detail::net.
#include "gecko/net/net.hpp"

namespace gecko::detail {
namespace net = ::gecko::net;
}
