// `gecko keygen`: a new secret in the key store, the fingerprint, and no
// overwrite unless asked.

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <string>

#include <gecko/security/secret.hpp>

#include "support/ports.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using gecko::test::Process;
using gecko::test::SpawnOptions;

namespace {

struct Run {
    int code;
    std::string out;  // stdout and stderr
};

Run keygen(const std::vector<std::string>& args, const std::string& config_home) {
    SpawnOptions o;
    o.env = {{"XDG_CONFIG_HOME", config_home}};
    o.unset_env = {"GECKO_SECRET_FILE", "GECKO_KEY"};
    o.stderr_mode = gecko::test::Stderr::merge;
    std::vector<std::string> all{"keygen"};
    all.insert(all.end(), args.begin(), args.end());
    auto p = Process::spawn(GECKO_CLI_PATH, all, o);
    std::string out;
    while (auto line = p.read_line(30s)) out += *line + "\n";  // until it closes stdout
    const auto code = p.wait(30s);
    REQUIRE(code.has_value());
    return {*code, out};
}

}  // namespace

TEST_CASE("gecko keygen writes a key's secret to the key store, prints its fingerprint, and keeps an existing one",
          "[security][keygen]") {
    gecko::test::TempDir config;
    const std::string path = config.path() + "/gecko/keys/dalek.secret";
    const auto first = keygen({"--key", "dalek"}, config.path());
    CHECK(first.code == 0);
    CHECK_THAT(first.out, Catch::Contains(path) && Catch::Contains("fingerprint"));
    const auto secret = gecko::security::Secret::read_file(path);
    CHECK_THAT(first.out, Catch::Contains(secret.fingerprint()));

    const auto again = keygen({"--key", "dalek"}, config.path());
    CHECK(again.code == 1);
    CHECK_THAT(again.out, Catch::Contains("exists already"));
    CHECK(gecko::security::Secret::read_file(path).fingerprint() == secret.fingerprint());

    const auto shown = keygen({"--key", "dalek", "--fingerprint"}, config.path());
    CHECK(shown.code == 0);
    CHECK_THAT(shown.out, Catch::Contains(secret.fingerprint()));

    const auto forced = keygen({"--key", "dalek", "--force"}, config.path());
    CHECK(forced.code == 0);
    CHECK(gecko::security::Secret::read_file(path).fingerprint() != secret.fingerprint());

    const auto elsewhere = keygen({"--key", "dalek", "--secret-file", config.path() + "/x/y.secret"}, config.path());
    CHECK(elsewhere.code == 0);
    CHECK_NOTHROW(gecko::security::Secret::read_file(config.path() + "/x/y.secret"));

    const auto no_key = keygen({}, config.path());
    CHECK(no_key.code == 2);
}
