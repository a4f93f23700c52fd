// SPDX-License-Identifier: Apache-2.0
// gecko bridge: runs gecko-bridge (bridge/, docs/BRIDGE.md) with the same
// arguments, so that `gecko --help` leads to it. The program is looked for
// beside this one (a build tree's bin/, an installed prefix's bin/), then on PATH.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"

namespace gecko::tools {

int run_bridge(const Args& args) {
    std::vector<std::string> forwarded{"gecko-bridge"};
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--timeout") {  // a `gecko` option that means nothing to a server
            ++i;
            continue;
        }
        if (args[i].rfind("--timeout=", 0) == 0) continue;
        forwarded.push_back(args[i]);
    }
    std::vector<char*> argv;
    for (auto& a : forwarded) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto beside = (self.parent_path() / "gecko-bridge").string();
        if (::access(beside.c_str(), X_OK) == 0) ::execv(beside.c_str(), argv.data());
    }
    ::execvp("gecko-bridge", argv.data());
    std::fprintf(stderr, "gecko bridge: cannot run gecko-bridge (%s): it is built with the bridge "
                         "(Boost and OpenSSL development files, scripts/install-deps) and installed beside gecko\n",
                 std::strerror(errno));
    return exit_failure;
}

}  // namespace gecko::tools
