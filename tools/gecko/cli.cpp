// SPDX-License-Identifier: Apache-2.0
#include "cli.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gecko::tools {

Connection::Connection(const std::string& default_name) : node(NodeOptions::from_env()) {
    const char* env_name = std::getenv("GECKO_NODE");
    if (!env_name || !*env_name) node.name = default_name;
}

Parser::Parser(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {}

Parser& Parser::flag(const std::string& name, const std::string& help, bool& out) {
    return flag(name, help, [&out] { out = true; });
}

Parser& Parser::flag(const std::string& name, const std::string& help, std::function<void()> on) {
    specs_.push_back(Spec{name, "", help, [on = std::move(on)](const std::string&) { on(); }, false, adding_common_, ""});
    return *this;
}

Parser& Parser::option(const std::string& name, const std::string& metavar, const std::string& help,
                       std::function<void(const std::string&)> on) {
    specs_.push_back(Spec{name, metavar, help, std::move(on), true, adding_common_, ""});
    return *this;
}

Parser& Parser::option(const std::string& name, const std::string& metavar, const std::string& help, std::string& out) {
    return option(name, metavar, help, [&out](const std::string& v) { out = v; });
}

Parser& Parser::option(const std::string& name, const std::string& metavar, const std::string& help, long& out,
                       long min, long max) {
    return option(name, metavar, help, [&out, name, min, max](const std::string& v) {
        errno = 0;
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno != 0 || n < min || n > max)
            throw UsageError(name + " needs an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                             ", not '" + v + "'");
        out = n;
    });
}

Parser& Parser::option(const std::string& name, const std::string& metavar, const std::string& help, double& out,
                       double min, double max) {
    return option(name, metavar, help, [&out, name, min, max](const std::string& v) {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || !std::isfinite(x) || x < min || x > max) {
            char range[96];
            std::snprintf(range, sizeof range, "%g to %g", min, max);
            throw UsageError(name + " needs a number from " + range + ", not '" + v + "'");
        }
        out = x;
    });
}

Parser& Parser::positional(const std::string& name, const std::string& help, std::string& out, bool required) {
    positionals_.push_back(Positional{name, help, &out, required});
    return *this;
}

Parser& Parser::connection(Connection& out, bool require_key) {
    connection_ = &out;
    require_key_ = require_key;
    adding_common_ = true;
    auto& n = out.node;
    option("--key", "KEY", "the robot or simulation to look at (default: $GECKO_KEY)", [&n](const std::string& v) {
        if (v.empty()) throw UsageError("--key needs a non-empty value");
        n.key = v;
    });
    specs_.back().short_name = "-k";
    option("--core", "HOST[:PORT]", "the core's address where multicast does not reach it (default: $GECKO_CORE)",
           n.core);
    flag("--no-multicast", "use only --core / $GECKO_CORE (also $GECKO_NO_MULTICAST=1)",
         [&n] { n.multicast_enabled = false; });
    option("--multicast", "GROUP:PORT", "discovery multicast group (default 239.255.71.67:7650, $GECKO_MULTICAST)",
           n.multicast);
    option("--interface", "IF", "interface name or address for multicast (default: $GECKO_INTERFACE)", n.interface);
    option("--name", "NAME", "this tool's node name, as others see it", n.name);
    option("--timeout", "DURATION", "how long to wait for the core to answer (default 3s)",
           [&out](const std::string& v) { out.timeout = parse_duration(v, "--timeout"); });
    adding_common_ = false;
    return *this;
}

const Parser::Spec* Parser::find(const std::string& name) const {
    for (const auto& s : specs_)
        if (s.name == name || (!s.short_name.empty() && s.short_name == name)) return &s;
    return nullptr;
}

bool Parser::parse(const std::vector<std::string>& args) {
    std::size_t next_positional = 0;
    bool options_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        const bool looks_like_option = !options_done && arg.size() > 1 && arg[0] == '-' &&
                                       !(std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');
        if (!options_done && arg == "--") {
            options_done = true;
        } else if (looks_like_option) {
            if (arg == "--help" || arg == "-h") {
                std::fputs(help().c_str(), stdout);
                return false;
            }
            std::string name = arg, value;
            const auto eq = arg.find('=');
            const bool inline_value = eq != std::string::npos;
            if (inline_value) {
                name = arg.substr(0, eq);
                value = arg.substr(eq + 1);
            }
            const Spec* spec = find(name);
            if (!spec) throw UsageError("unknown option '" + name + "'");
            if (spec->takes_value) {
                if (!inline_value) {
                    if (i + 1 >= args.size()) throw UsageError(name + " needs a value (" + spec->metavar + ")");
                    value = args[++i];
                }
            } else if (inline_value) {
                throw UsageError(name + " takes no value");
            }
            spec->on(value);
        } else {
            if (next_positional >= positionals_.size()) throw UsageError("unexpected argument '" + arg + "'");
            *positionals_[next_positional++].out = arg;
        }
    }
    for (std::size_t p = next_positional; p < positionals_.size(); ++p)
        if (positionals_[p].required) throw UsageError("missing " + positionals_[p].name);
    if (connection_ && require_key_ && connection_->node.key.empty())
        throw UsageError("no key: pass --key KEY or set GECKO_KEY");
    return true;
}

std::string Parser::help() const {
    std::string s = "usage: gecko " + command_ + " " + synopsis_ + "\n\n" + description_ + "\n";
    auto section = [&](bool common, const char* title) {
        std::size_t width = 0;
        std::vector<std::pair<std::string, std::string>> rows;
        if (!common)
            for (const auto& p : positionals_) rows.emplace_back(p.name, p.help);
        for (const auto& spec : specs_)
            if (spec.common == common)
                rows.emplace_back((spec.short_name.empty() ? "" : spec.short_name + ", ") + spec.name +
                                      (spec.takes_value ? " " + spec.metavar : ""),
                                  spec.help);
        if (!common) rows.emplace_back("--help", "this text");
        for (const auto& r : rows) width = std::max(width, r.first.size());
        s += std::string("\n") + title + ":\n";
        for (const auto& r : rows) s += "  " + r.first + std::string(width - r.first.size() + 2, ' ') + r.second + "\n";
    };
    section(false, "Arguments and options");
    if (connection_) section(true, "Connection options");
    s += "\nExit codes: 0 ok, 1 failure (e.g. no core answered), 2 usage error.\n";
    return s;
}

const GlobalOption global_options[8] = {{"--key", true},       {"-k", true},        {"--core", true},
                                        {"--no-multicast", false}, {"--multicast", true}, {"--interface", true},
                                        {"--name", true},          {"--timeout", true}};

std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what) {
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    const std::string unit = end ? std::string(end) : std::string();
    double ms = 0;
    if (unit.empty() || unit == "s")
        ms = x * 1000;
    else if (unit == "ms")
        ms = x;
    else if (unit == "m" || unit == "min")
        ms = x * 60000;
    else
        ms = -1;
    if (text.empty() || end == text.c_str() || !std::isfinite(x) || ms < 0 || ms > 1e10)
        throw UsageError(what + " needs a duration such as 2, 1.5s or 500ms, not '" + text + "'");
    return std::chrono::milliseconds(static_cast<long long>(std::llround(ms)));
}

}  // namespace gecko::tools
