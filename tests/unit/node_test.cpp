// The node's context: options from the environment and the command line,
// Rate's overrun rule, and the log threshold.

#include <catch2/catch.hpp>

#include <gecko/gecko.hpp>

#include <gecko/msgs/std.hpp>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
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

TEST_CASE("NodeOptions::from_env reads the shared-memory variables, and refuses what they cannot mean", "[node][shm]") {
    {
        ScopedEnv env{{"GECKO_SHM", "require"}, {"GECKO_SHM_GROUP", "1"}, {"GECKO_SPIN_US", "25"}, {"GECKO_SHM_SIZE", "64M"}};
        const auto o = gecko::NodeOptions::from_env();
        CHECK(o.shared_memory == gecko::NodeOptions::SharedMemory::required);
        CHECK(o.shared_memory_group);
        CHECK(o.spin == std::chrono::microseconds(25));
        CHECK(o.shared_memory_size == std::size_t(64) << 20);
    }
    for (const auto& [value, bytes] : {std::pair<const char*, std::size_t>{"0", 0}, {"1048576", 1 << 20}, {"512K", 512 << 10}, {"1G", 1 << 30}}) {
        ScopedEnv env{{"GECKO_SHM_SIZE", value}};
        CHECK(gecko::NodeOptions::from_env().shared_memory_size == bytes);
    }
    {
        ScopedEnv env{{"GECKO_SHM", nullptr}, {"GECKO_SHM_GROUP", nullptr}, {"GECKO_SPIN_US", nullptr}, {"GECKO_SHM_SIZE", nullptr}};
        const auto o = gecko::NodeOptions::from_env();
        CHECK(o.shared_memory == gecko::NodeOptions::SharedMemory::automatic);
        CHECK_FALSE(o.shared_memory_group);
        CHECK(o.spin == std::chrono::microseconds(0));
        CHECK(o.shared_memory_size == std::size_t(8) << 20);
    }
    for (const auto& [name, value] : {std::pair<const char*, const char*>{"GECKO_SHM", "sometimes"},
                                      {"GECKO_SHM_GROUP", "2"},
                                      {"GECKO_SPIN_US", "-3"},
                                      {"GECKO_SHM_SIZE", "-1"},
                                      {"GECKO_SHM_SIZE", "8MB"},
                                      {"GECKO_SHM_SIZE", "lots"},
                                      {"GECKO_SHM_SIZE", "99999999G"}}) {
        ScopedEnv env{{name, value}};
        CHECK_THROWS_WITH(gecko::NodeOptions::from_env(), Catch::Contains(name));
    }
}

TEST_CASE("NodeOptions::from_env reads the byte budget of ZeroMQ links, and refuses what it cannot mean", "[node]") {
    {
        ScopedEnv env{{"GECKO_SEND_QUEUE_BYTES", nullptr}};
        CHECK(gecko::NodeOptions::from_env().send_queue_bytes == std::size_t(8) << 20);
    }
    for (const auto& [value, bytes] : {std::pair<const char*, std::size_t>{"0", 0}, {"65536", 1 << 16}, {"32M", 32 << 20}}) {
        ScopedEnv env{{"GECKO_SEND_QUEUE_BYTES", value}};
        CHECK(gecko::NodeOptions::from_env().send_queue_bytes == bytes);
    }
    for (const char* value : {"-1", "8MB", "lots"}) {
        ScopedEnv env{{"GECKO_SEND_QUEUE_BYTES", value}};
        CHECK_THROWS_WITH(gecko::NodeOptions::from_env(), Catch::Contains("GECKO_SEND_QUEUE_BYTES"));
    }
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

namespace {

// Blocks in receive() (one thread) and spin() (another) on two nodes, then
// runs `shut` and returns how long the slower of the two took to return.
template <class Shut>
std::chrono::milliseconds shutdown_latency(Shut shut) {
    auto a = test::make_node("waits-in-receive");
    auto b = test::make_node("waits-in-spin");
    auto sub = a.subscriber<gecko::msgs::Int64>("never");
    auto cb = b.subscriber<gecko::msgs::Int64>("never", [](const gecko::msgs::Int64&) {});
    std::atomic<int> returned{0};
    std::chrono::steady_clock::time_point shut_at, last_return;
    std::mutex m;
    auto done = [&] {
        std::lock_guard<std::mutex> lock(m);
        last_return = std::chrono::steady_clock::now();
        ++returned;
    };
    std::thread receiver([&] {
        (void)sub.receive(10s);
        done();
    });
    std::thread spinner([&] {
        b.spin();
        done();
    });
    // Let both block (if they had not yet, they return at once anyway: the
    // measured latency can only come out smaller, never hide a missed wake-up).
    std::this_thread::sleep_for(50ms);
    shut_at = std::chrono::steady_clock::now();
    shut();
    receiver.join();
    spinner.join();
    gecko::reset_shutdown();
    REQUIRE(returned == 2);
    return std::chrono::duration_cast<std::chrono::milliseconds>(last_return - shut_at);
}

}  // namespace

TEST_CASE("request_shutdown() wakes a blocked receive() and spin() at once", "[node][shutdown]") {
    const auto latency = shutdown_latency([] { gecko::request_shutdown(); });
    INFO("returned " << latency.count() << " ms after request_shutdown()");
    CHECK(latency < 20ms);
}

TEST_CASE("SIGINT wakes a blocked receive() and spin() at once, whichever thread it lands on", "[node][shutdown]") {
    struct sigaction old_int {};
    sigaction(SIGINT, nullptr, &old_int);
    gecko::install_signal_handlers();
    const auto latency = shutdown_latency([] { ::kill(::getpid(), SIGINT); });
    sigaction(SIGINT, &old_int, nullptr);  // the test runner's own handling, back
    INFO("returned " << latency.count() << " ms after SIGINT");
    CHECK(latency < 20ms);
}

TEST_CASE("a node offers what the transport registry knows, and names it when asked for something else", "[node][transports]") {
    // Every registered scheme opens; locators come back with their scheme.
    auto node = test::make_node("registry", {"inproc", "ipc", "tcp", "mem"});
    std::set<std::string> schemes;
    for (const auto& l : node.locators()) schemes.insert(l.substr(0, l.find("://")));
    CHECK(schemes == std::set<std::string>{"inproc", "ipc", "tcp", "mem"});
    // An exact locator to bind replaces the automatic ones of its transport.
    gecko::NodeOptions o;
    o.key = "unit";
    o.name = "listener";
    o.discovery = false;
    o.transports = {};
    o.listen = {"tcp://127.0.0.1:*"};  // the kernel picks the port
    gecko::Node listener(o);
    std::vector<std::string> tcp;
    for (const auto& l : listener.locators())
        if (l.rfind("tcp://", 0) == 0) tcp.push_back(l);
    REQUIRE(tcp.size() == 1);
    CHECK(tcp[0].rfind("tcp://127.0.0.1:", 0) == 0);
    // An unknown one is refused with the list of known ones.
    try {
        test::make_node("unknown", {"udp"});
        FAIL("a node opened an unknown transport");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::invalid_argument);
        CHECK_THAT(e.what(), Catch::Contains("unknown transport 'udp'") && Catch::Contains("inproc, ipc, tcp"));
    }
}
