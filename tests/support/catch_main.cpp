// Catch2's main(), compiled once and linked into every test program: it is
// the slowest unit to compile, and every area's is the same.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
