// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs the scripts of tests/bag/npm (MCAP's own TypeScript library) with
// node. Without node or the npm packages the calling test fails, saying
// what to install: it is never skipped.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

namespace gecko::bag_test {

struct Ran {
    int status = -1;
    std::string out;
};

inline std::string quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// node SCRIPT ARGS (ARGS already quoted); stdout captured, stderr to the test's.
inline Ran node(const std::string& script, const std::string& args) {
    const std::string dir = GECKO_BAG_NPM_DIR;
    INFO("node: '" GECKO_NODE_PATH "' (Debian 12: nodejs, installed by scripts/install-deps)");
    REQUIRE_FALSE(std::string(GECKO_NODE_PATH).empty());
    REQUIRE(std::string(GECKO_NODE_PATH).find("NOTFOUND") == std::string::npos);
    INFO("the npm packages of " << dir << " are missing: run scripts/install-deps (npm ci there)");
    REQUIRE(std::filesystem::exists(dir + "/node_modules/@mcap/core/package.json"));
    const std::string cmd = quoted(GECKO_NODE_PATH) + " " + quoted(dir + "/" + script) + " " + args;
    Ran r;
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    r.status = ::pclose(p);
    return r;
}

}  // namespace gecko::bag_test
