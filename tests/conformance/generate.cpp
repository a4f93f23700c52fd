// SPDX-License-Identifier: Apache-2.0
// gecko_conformance_generate DIR [DOCS]: writes the golden vectors (vectors.hpp)
// into DIR: index.json, schemas.json and one .hex file per vector; and, given
// the docs directory DOCS, DOCS/MESSAGES.md (the same schemas, as tables). Run it only when
// the wire changes on purpose, then review the diff and commit it;
// gecko_conformance_tests fails as long as the code and the files disagree.

#include <filesystem>
#include <fstream>
#include <iostream>

#include "vectors.hpp"

namespace {

void write(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && argc != 3) {
        std::cerr << "usage: gecko_conformance_generate DIR [DOCS]   (DIR: tests/conformance/vectors of the source tree; "
                     "DOCS: its docs)\n";
        return 2;
    }
    namespace c = gecko::conformance;
    try {
        const std::filesystem::path dir = argv[1];
        const auto vectors = c::byte_vectors();
        for (const auto& v : vectors) write(dir / v.file, c::to_hex_file(v.bytes));
        write(dir / "index.json", c::dump(c::index(vectors)));
        write(dir / "schemas.json", c::dump(c::schemas()));
        if (argc == 3) write(std::filesystem::path(argv[2]) / "MESSAGES.md", c::messages_markdown());
        std::cout << "wrote " << vectors.size() << " vectors, index.json and schemas.json to " << dir.string() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "gecko_conformance_generate: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
