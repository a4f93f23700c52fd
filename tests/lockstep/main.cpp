// Catch2's main for gecko_lockstep_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
