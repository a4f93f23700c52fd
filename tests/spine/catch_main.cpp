// SPDX-License-Identifier: Apache-2.0
// Catch2's main for gecko_spine_tests, compiled once and apart from the tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
