// SPDX-License-Identifier: Apache-2.0
#include "suggest.hpp"

#include <algorithm>
#include <cctype>

namespace gecko::tools {

namespace {
std::string normalized(const std::string& s) {
    std::string out = !s.empty() && s[0] == '/' ? s.substr(1) : s;
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}
}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
    // Three rows of the (optimal string alignment) table: i - 2, i - 1, i.
    std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
        }
        before.swap(previous);
        previous.swap(row);
    }
    return previous[b.size()];
}

std::string closest(const std::string& name, const std::vector<std::string>& candidates) {
    const std::string wanted = normalized(name);
    for (const auto& c : candidates)
        if (c != name && normalized(c) == wanted) return c;
    const std::size_t limit = std::clamp<std::size_t>(wanted.size() / 3, 1, 3);
    std::string best;
    std::size_t best_distance = limit + 1;
    for (const auto& c : candidates) {
        if (c == name) continue;
        const std::size_t d = edit_distance(wanted, normalized(c));
        if (d < best_distance) {
            best_distance = d;
            best = c;
        }
    }
    return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
    const std::string c = closest(name, candidates);
    return c.empty() ? std::string() : "; did you mean '" + c + "'?";
}

}  // namespace gecko::tools
