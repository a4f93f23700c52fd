// SPDX-License-Identifier: Apache-2.0
// gecko::wire::printable: text from the network, made safe for a terminal.
// The one implementation geckocore, the tools and the node runtime share.

#include <catch2/catch.hpp>

#include <gecko/wire/names.hpp>

#include <string>

using gecko::wire::printable;

TEST_CASE("printable passes UTF-8 text and escapes what a terminal would obey", "[wire][printable]") {
    CHECK(printable("imu/accel") == "imu/accel");
    CHECK(printable("r\xc3\xb6" "bot \xe2\x9c\x93 \xf0\x9f\xa6\x8e") == "r\xc3\xb6" "bot \xe2\x9c\x93 \xf0\x9f\xa6\x8e");
    // C0 controls and DEL: escape sequences, bells, carriage returns.
    CHECK(printable("\x1b[2J\a\r\x7f") == "\\x1b[2J\\x07\\x0d\\x7f");
    CHECK(printable(std::string("a\0b", 3)) == "a\\x00b");
    // C1 controls as UTF-8 (U+009B is a CSI to many terminals): both bytes escaped.
    CHECK(printable("n\xc2\x9b" "2J") == "n\\xc2\\x9b2J");
    CHECK(printable("\xc2\xa0") == "\xc2\xa0");  // U+00A0, just above C1, passes
    // Bytes that are not UTF-8: a raw 8-bit CSI, a cut sequence, an overlong form, a surrogate.
    CHECK(printable("x\x9b" "31m") == "x\\x9b31m");
    CHECK(printable("\xe2\x9c") == "\\xe2\\x9c");
    CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");
    CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");
}

TEST_CASE("printable keeps newlines only when asked", "[wire][printable]") {
    CHECK(printable("line 1\nline 2") == "line 1\\x0aline 2");
    CHECK(printable("line 1\nline 2\r", true) == "line 1\nline 2\\x0d");
}
