#include "gecko/options.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "gecko/error.hpp"

namespace gecko {

OptionParser::OptionParser(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

OptionParser& OptionParser::custom(const std::string& name, const std::string& metavar, const std::string& help,
                                   std::function<std::string(const std::string&)> take) {
    options_.push_back(Option{{name}, metavar, help, std::move(take)});
    return *this;
}

OptionParser& OptionParser::flag(const std::string& name, bool& out, const std::string& help) {
    options_.push_back(Option{{name}, "", help, [&out](const std::string&) {
                                  out = true;
                                  return std::string();
                              }});
    return *this;
}

OptionParser& OptionParser::text(const std::string& name, std::string& out, const std::string& metavar,
                                 const std::string& help, std::function<std::string(const std::string&)> check) {
    return custom(name, metavar, help, [&out, check](const std::string& v) {
        if (check) {
            auto why = check(v);
            if (!why.empty()) return why;
        }
        out = v;
        return std::string();
    });
}

OptionParser& OptionParser::integer(const std::string& name, long long& out, long long min, long long max,
                                    const std::string& metavar, const std::string& help) {
    return custom(name, metavar, help, [&out, min, max](const std::string& v) { return parse_integer(v, min, max, out); });
}

OptionParser& OptionParser::number(const std::string& name, double& out, double min, double max,
                                   const std::string& metavar, const std::string& help) {
    return custom(name, metavar, help, [&out, min, max](const std::string& v) {
        char* end = nullptr;
        errno = 0;
        const double d = std::strtod(v.c_str(), &end);
        if (v.empty() || errno != 0 || !end || *end != '\0' || !(d >= min && d <= max))
            return "'" + v + "' is not a number between " + std::to_string(min) + " and " + std::to_string(max);
        out = d;
        return std::string();
    });
}

OptionParser& OptionParser::positionals(std::vector<std::string>& out, const std::string& usage) {
    positionals_ = &out;
    positional_usage_ = usage;
    return *this;
}

OptionParser& OptionParser::alias(const std::string& name) {
    if (!options_.empty()) options_.back().names.push_back(name);
    return *this;
}

std::string OptionParser::parse_integer(const std::string& text, long long min, long long max, long long& out) {
    const std::string digits = !text.empty() && text[0] == '-' ? text.substr(1) : text;
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
        return "'" + text + "' is not a whole number";
    const long long n = std::stoll(text);
    if (n < min || n > max) return "'" + text + "' is not between " + std::to_string(min) + " and " + std::to_string(max);
    out = n;
    return {};
}

const OptionParser::Option* OptionParser::find(const std::string& name) const {
    for (const auto& o : options_)
        for (const auto& n : o.names)
            if (n == name) return &o;
    return nullptr;
}

OptionParser::Outcome OptionParser::parse(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") return Outcome::help;
        if (arg.size() > 1 && arg[0] == '-' && !(arg.size() > 1 && (std::isdigit(static_cast<unsigned char>(arg[1])) != 0))) {
            std::string value;
            bool inline_value = false;
            if (const auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
                value = arg.substr(eq + 1);
                arg = arg.substr(0, eq);
                inline_value = true;
            }
            const Option* o = find(arg);
            if (!o) {
                error_ = "unknown option '" + arg + "' (--help lists them)";
                return Outcome::usage_error;
            }
            if (!o->metavar.empty() && !inline_value) {
                if (i + 1 >= argc) {
                    error_ = arg + " needs a value (" + o->metavar + ")";
                    return Outcome::usage_error;
                }
                value = argv[++i];
            } else if (o->metavar.empty() && inline_value) {
                error_ = arg + " takes no value";
                return Outcome::usage_error;
            }
            const auto why = o->take(value);
            if (!why.empty()) {
                error_ = arg + ": " + why;
                return Outcome::usage_error;
            }
            continue;
        }
        if (!positionals_) {
            error_ = "unexpected argument '" + arg + "' (--help lists the options)";
            return Outcome::usage_error;
        }
        positionals_->push_back(arg);
    }
    return Outcome::ok;
}

std::string OptionParser::help() const {
    std::string out = program_ + (summary_.empty() ? "" : ": " + summary_) + "\n";
    out += "usage: " + program_ + (positional_usage_.empty() ? "" : " " + positional_usage_) + " [options]\n";
    out += "options:\n";
    for (const auto& o : options_) {
        // Short aliases first, then the long name with its value: "-k, --key KEY".
        std::string names;
        for (std::size_t i = o.names.size(); i-- > 0;) names += (names.empty() ? "" : ", ") + o.names[i];
        if (!o.metavar.empty()) names += " " + o.metavar;
        std::string line = "  " + names;
        if (line.size() < 28) line.resize(28, ' ');
        else line += "  ";
        out += line + o.help + "\n";
    }
    out += "  -h, --help                print this help and exit\n";
    return out;
}

void OptionParser::parse_or_exit(int argc, const char* const* argv) {
    switch (parse(argc, argv)) {
        case Outcome::ok: return;
        case Outcome::help: {
            const auto text = help();
            [[maybe_unused]] const auto n = ::write(STDOUT_FILENO, text.data(), text.size());
            std::exit(0);
        }
        case Outcome::usage_error: {
            const auto text = program_ + ": " + error_ + "\n";
            [[maybe_unused]] const auto n = ::write(STDERR_FILENO, text.data(), text.size());
            std::exit(2);
        }
    }
}

std::string parse_multicast(const std::string& text, std::string& group, std::uint16_t& port) {
    const auto colon = text.rfind(':');
    const std::string g = text.substr(0, colon);
    std::uint16_t p = 7650;
    if (colon != std::string::npos) {
        long long n = 0;
        const auto why = OptionParser::parse_integer(text.substr(colon + 1), 1, 65535, n);
        if (!why.empty()) return "port " + why.substr(0, why.find(" is")) + " is not 1-65535";
        p = static_cast<std::uint16_t>(n);
    }
    in_addr a{};
    if (::inet_pton(AF_INET, g.c_str(), &a) != 1 || !IN_MULTICAST(ntohl(a.s_addr)))
        return "'" + g + "' is not an IPv4 multicast group (224.0.0.0/4)";
    group = g;
    port = p;
    return {};
}

std::string parse_flag(const std::string& text, bool& out) {
    const auto first = text.find_first_not_of(" \t\n\r\f\v");
    if (first == std::string::npos) return {};
    const auto last = text.find_last_not_of(" \t\n\r\f\v");
    std::string word;
    for (char c : text.substr(first, last - first + 1))
        word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (word == "1" || word == "true" || word == "yes" || word == "on") {
        out = true;
    } else if (word == "0" || word == "false" || word == "no" || word == "off") {
        out = false;
    } else {
        return "expected 1, true, yes or on; or 0, false, no or off";
    }
    return {};
}

std::string env_text(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

bool env_flag(const char* name, bool fallback) {
    const std::string value = env_text(name);
    bool out = fallback;
    if (const auto why = parse_flag(value, out); !why.empty())
        throw Error(Errc::invalid_argument, std::string(name) + "='" + value + "': " + why);
    return out;
}

}  // namespace gecko
