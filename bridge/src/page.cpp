// SPDX-License-Identifier: Apache-2.0
#include "page.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef GECKO_BRIDGE_WWW_INSTALLED
#define GECKO_BRIDGE_WWW_INSTALLED ""
#endif
#ifndef GECKO_BRIDGE_WWW_SOURCE
#define GECKO_BRIDGE_WWW_SOURCE ""
#endif

namespace gecko::bridge {

namespace fs = std::filesystem;

const std::vector<PageFile>& page_files() {
    static const std::vector<PageFile> files{
        {"/", "index.html", "text/html; charset=utf-8", false},
        {"/app.js", "app.js", "text/javascript; charset=utf-8", false},
        {"/style.css", "style.css", "text/css; charset=utf-8", false},
        {"/simulation.js", "simulation.js", "text/javascript; charset=utf-8", false},
        {"/vendor/uPlot.iife.min.js", "npm/node_modules/uplot/dist/uPlot.iife.min.js", "text/javascript; charset=utf-8", true},
        {"/vendor/uPlot.min.css", "npm/node_modules/uplot/dist/uPlot.min.css", "text/css; charset=utf-8", true},
        {"/vendor/msgpack.min.js", "npm/node_modules/@msgpack/msgpack/dist.umd/msgpack.min.js",
         "text/javascript; charset=utf-8", true},
        // The simulation view's code editor (Ace, a plain script: no bundler) and its Python mode.
        {"/vendor/ace.js", "npm/node_modules/ace-builds/src-min-noconflict/ace.js", "text/javascript; charset=utf-8", true},
        {"/vendor/ace-mode-python.js", "npm/node_modules/ace-builds/src-min-noconflict/mode-python.js",
         "text/javascript; charset=utf-8", true},
    };
    return files;
}

const PageFile* page_file(const std::string& path) {
    const std::string p = path == "/index.html" ? "/" : path;
    for (const auto& f : page_files())
        if (f.path == p) return &f;
    return nullptr;
}

std::string find_www(const std::string& given, const std::string& program_path) {
    if (!given.empty()) return given;
    if (const char* env = std::getenv("GECKO_BRIDGE_WWW"); env && *env) return env;
    std::vector<fs::path> candidates;
    std::error_code ec;
    const fs::path program = fs::weakly_canonical(fs::path(program_path), ec);
    if (!ec && program.has_parent_path())  // <prefix>/bin/gecko-bridge -> <prefix>/share/gecko/bridge/www
        candidates.push_back(program.parent_path().parent_path() / "share" / "gecko" / "bridge" / "www");
    if (*GECKO_BRIDGE_WWW_INSTALLED) candidates.emplace_back(GECKO_BRIDGE_WWW_INSTALLED);
    if (*GECKO_BRIDGE_WWW_SOURCE) candidates.emplace_back(GECKO_BRIDGE_WWW_SOURCE);
    for (const auto& c : candidates)
        if (fs::exists(c / "index.html", ec)) return c.string();
    return candidates.empty() ? std::string() : candidates.back().string();
}

std::vector<std::string> missing_page_files(const std::string& www) {
    std::vector<std::string> missing;
    std::error_code ec;
    for (const auto& f : page_files())
        if (!fs::exists(fs::path(www) / f.file, ec)) missing.push_back(f.file);
    return missing;
}

std::optional<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace gecko::bridge
