// The node's context: options from the environment and the command line,
// Rate's overrun rule, and the log threshold.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_support.hpp"

using namespace std::chrono_literals;

namespace {

/// Sets environment variables for one test and restores them after.
class ScopedEnv {
public:
    ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
        for (const auto& [name, value] : vars) {
            const char* old = std::getenv(name);
            saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
            if (value) {
                ::setenv(name, value, 1);
            } else {
                ::unsetenv(name);
            }
        }
    }
    ~ScopedEnv() {
        for (const auto& [name, value] : saved_) {
            if (value) {
                ::setenv(name.c_str(), value->c_str(), 1);
            } else {
                ::unsetenv(name.c_str());
            }
        }
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

TEST_CASE("NodeOptions::from_env reads every GECKO_ variable", "[node]") {
    ScopedEnv env{{"GECKO_KEY", "dalek"},           {"GECKO_NODE", "arm"},         {"GECKO_CORE", "10.0.0.2:7651"},
                  {"GECKO_MULTICAST", "239.255.1.2:7000"}, {"GECKO_INTERFACE", "10.0.0.1"},
                  {"GECKO_NO_MULTICAST", "1"},     {"GECKO_DISCOVERY", "off"},    {"GECKO_IPC_DIR", "/run/gecko"}};
    const auto o = gecko::NodeOptions::from_env();
    CHECK(o.key == "dalek");
    CHECK(o.name == "arm");
    CHECK(o.core == "10.0.0.2:7651");
    CHECK(o.multicast == "239.255.1.2:7000");
    CHECK(o.interface == "10.0.0.1");
    CHECK_FALSE(o.multicast_enabled);
    CHECK_FALSE(o.discovery);
    CHECK(o.ipc_directory == "/run/gecko");
}

TEST_CASE("NodeOptions::from_args puts flags over the environment, beside the program's own options", "[node]") {
    ScopedEnv env{{"GECKO_KEY", "from-env"}, {"GECKO_NODE", nullptr}, {"GECKO_NO_MULTICAST", nullptr}};
    const char* argv[] = {"prog", "--count", "5", "--key", "dalek", "--core", "10.0.0.2", "--no-multicast"};
    gecko::OptionParser args("prog", "a test program");
    long count = 0;
    args.integer("--count", count, 1, 10, "N", "how many");
    const auto o = gecko::NodeOptions::from_args(8, argv, args, "default-name");
    CHECK(count == 5);
    CHECK(o.key == "dalek");
    CHECK(o.name == "default-name");  // neither GECKO_NODE nor --name
    CHECK(o.core == "10.0.0.2");
    CHECK_FALSE(o.multicast_enabled);
    CHECK(o.discovery);

    const char* named[] = {"prog", "--name", "wrist"};
    CHECK(gecko::NodeOptions::from_args(3, named, "default-name").name == "wrist");
}

TEST_CASE("Rate restarts its schedule after an overrun instead of bursting to catch up", "[node][rate]") {
    gecko::Rate rate(200.0);  // 5 ms
    CHECK(rate.period() == 5ms);
    std::this_thread::sleep_for(20ms);  // a cycle that overran by several periods
    CHECK_FALSE(rate.sleep());          // late: says so and does not sleep
    CHECK(rate.overruns() == 1);
    const auto before = std::chrono::steady_clock::now();
    CHECK(rate.sleep());  // the next deadline is one period from the overrun, not in the past
    CHECK(std::chrono::steady_clock::now() - before >= 4ms);
}

TEST_CASE("the log threshold filters lines below it", "[node][log]") {
    test::LogCapture log;
    const auto old = gecko::log_level();
    gecko::set_log_level(gecko::LogLevel::warn);
    gecko::Logger logger("probe");
    logger.info("quiet line");
    logger.warn("loud line");
    gecko::set_log_level(old);
    CHECK(log.count("quiet line") == 0);
    CHECK(log.count("probe: loud line") == 1);
    CHECK(gecko::parse_log_level("debug") == gecko::LogLevel::debug);
    CHECK_FALSE(gecko::parse_log_level("nonsense").has_value());  // GECKO_LOG=nonsense: said once on stderr, info used
}
