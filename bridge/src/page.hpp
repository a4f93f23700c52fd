// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file page.hpp
/// The page's files: a fixed list of paths, each mapped to a file of the
/// www folder (no path from a request ever reaches the file system), and
/// where that folder is: --www, else GECKO_BRIDGE_WWW, else the installed
/// share/gecko/bridge/www beside the program, else the source tree's
/// bridge/www (a build that was not installed).

#include <optional>
#include <string>
#include <vector>

namespace gecko::bridge {

struct PageFile {
    std::string path;          ///< as requested: "/", "/app.js", "/vendor/uPlot.iife.min.js"
    std::string file;          ///< relative to the www folder
    std::string content_type;
    bool from_npm = false;     ///< installed by npm (scripts/install-deps), not in git
};

/// Every file the page loads.
const std::vector<PageFile>& page_files();
/// The file served at `path`, or nullptr.
const PageFile* page_file(const std::string& path);

/// The www folder to serve: `given` if not empty, else the first of the
/// places above that has index.html.
std::string find_www(const std::string& given, const std::string& program_path);
/// The page's files missing from `www` (empty: all there).
std::vector<std::string> missing_page_files(const std::string& www);
/// The bytes of a file, or nothing if it cannot be read.
std::optional<std::string> read_file(const std::string& path);

}  // namespace gecko::bridge
