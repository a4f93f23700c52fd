#pragma once
/// @file options.hpp
/// The one command-line parser every Gecko program uses (geckocore, the
/// `gecko` tool, gecko-sim, the examples): typed options with help text, each
/// value checked where it is read, `--name=value` or `--name value`, and the
/// same behaviour everywhere: `--help` prints the options and exits 0; an
/// unknown option, a missing or malformed value is a usage error (exit 2) that
/// says which option and why.
///
/// **Example**:
/// ```
/// gecko::OptionParser args("gecko-sim", "a simulated robot served in Click lockstep");
/// int joints = 3;
/// args.integer("--joints", joints, 1, 16, "N", "joints per arm");
/// gecko::NodeOptions node = gecko::node_options(args);   // --key, --core, ... (node.hpp)
/// args.parse_or_exit(argc, argv);
/// ```

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gecko {

class OptionParser {
public:
    /// `program` is the name in messages; `summary` is the first line of --help.
    OptionParser(std::string program, std::string summary);

    /// A flag without a value (`--no-multicast`): sets `out` to true.
    OptionParser& flag(const std::string& name, bool& out, const std::string& help);
    /// A string value; `check` (optional) returns "" if the value is acceptable, else why not.
    OptionParser& text(const std::string& name, std::string& out, const std::string& metavar, const std::string& help,
                       std::function<std::string(const std::string&)> check = {});
    /// An integer in [min, max].
    OptionParser& integer(const std::string& name, long long& out, long long min, long long max, const std::string& metavar,
                          const std::string& help);
    template <class Int>
    OptionParser& integer(const std::string& name, Int& out, long long min, long long max, const std::string& metavar,
                          const std::string& help) {
        return custom(name, metavar, help, [&out, min, max, name](const std::string& v) {
            long long n = 0;
            const auto why = parse_integer(v, min, max, n);
            if (why.empty()) out = static_cast<Int>(n);
            return why;
        });
    }
    /// A number in [min, max].
    OptionParser& number(const std::string& name, double& out, double min, double max, const std::string& metavar,
                         const std::string& help);
    /// Any value, handled by `take`, which returns "" or why it is refused.
    OptionParser& custom(const std::string& name, const std::string& metavar, const std::string& help,
                         std::function<std::string(const std::string&)> take);
    /// Arguments that are not options, in order (`gecko echo TOPIC`); without
    /// one, such an argument is a usage error.
    OptionParser& positionals(std::vector<std::string>& out, const std::string& usage);
    /// A second name for the last option added ("-k" for "--key").
    OptionParser& alias(const std::string& name);

    enum class Outcome { ok, help, usage_error };
    /// Parses argv[1..]. On help, help() says what to print; on a usage error, error() says why.
    Outcome parse(int argc, const char* const* argv);
    /// parse(), printing help and exiting 0, or printing the error and exiting 2.
    void parse_or_exit(int argc, const char* const* argv);

    const std::string& error() const noexcept { return error_; }
    std::string help() const;
    const std::string& program() const noexcept { return program_; }

    /// "" if `text` is an integer in [min, max] (then in `out`), else why not.
    static std::string parse_integer(const std::string& text, long long min, long long max, long long& out);

private:
    struct Option {
        std::vector<std::string> names;
        std::string metavar;  // empty: a flag
        std::string help;
        std::function<std::string(const std::string&)> take;
    };
    const Option* find(const std::string& name) const;

    std::string program_;
    std::string summary_;
    std::vector<Option> options_;
    std::vector<std::string>* positionals_ = nullptr;
    std::string positional_usage_;
    std::string error_;
};

/// "" if `text` is GROUP[:PORT] with GROUP an IPv4 multicast group and PORT
/// 1-65535 (then in `group` and `port`), else why not.
std::string parse_multicast(const std::string& text, std::string& group, std::uint16_t& port);

/// "" if `text` is a boolean (then in `out`), else why not. The one set of
/// values of every boolean GECKO_* variable (GECKO_NO_MULTICAST,
/// GECKO_SHM_GROUP, GECKO_DISCOVERY), in every program and in Python:
/// surrounding whitespace is ignored and case does not matter; `1`, `true`,
/// `yes`, `on` mean on and `0`, `false`, `no`, `off` mean off. Empty (or only
/// whitespace) leaves `out` alone: the default.
std::string parse_flag(const std::string& text, bool& out);

/// The environment variable `name`, or "" when it is unset.
std::string env_text(const char* name);

/// The boolean environment variable `name` (parse_flag()): unset or empty, `fallback`.
/// @throws gecko::Error (Errc::invalid_argument) for any other value, naming
/// the variable and the value: `GECKO_NO_MULTICAST='maybe': expected 1, true,
/// yes or on; or 0, false, no or off`.
bool env_flag(const char* name, bool fallback);

}  // namespace gecko
