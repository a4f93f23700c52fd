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

TEST_CASE("gecko keygen rotates a key's secret in three rounds", "[security][keygen][rotation]") {
    using gecko::security::SecretFile;
    gecko::test::TempDir config;
    const std::string path = config.path() + "/gecko/keys/dalek.secret";
    REQUIRE(keygen({"--key", "dalek"}, config.path()).code == 0);
    const std::string old_fp = SecretFile::read(path).own.fingerprint();
    CHECK(keygen({"--key", "dalek", "--switch"}, config.path()).code == 1);  // no rotation started

    const auto rotated = keygen({"--key", "dalek", "--rotate"}, config.path());  // round 1: old, accepting new
    CHECK(rotated.code == 0);
    const auto round1 = SecretFile::read(path);
    CHECK(round1.own.fingerprint() == old_fp);
    REQUIRE(round1.accepted);
    const std::string new_fp = round1.accepted->fingerprint();
    CHECK(new_fp != old_fp);
    CHECK_THAT(rotated.out, Catch::Contains("also accepting " + new_fp) && Catch::Contains("--switch"));
    CHECK_THAT(keygen({"--key", "dalek", "--rotate"}, config.path()).out, Catch::Contains("in a rotation already"));
    CHECK_THAT(keygen({"--key", "dalek", "--fingerprint"}, config.path()).out,
               Catch::Contains("fingerprint " + old_fp + ", also accepting " + new_fp));

    CHECK(keygen({"--key", "dalek", "--switch"}, config.path()).code == 0);  // round 2: new, accepting old
    const auto round2 = SecretFile::read(path);
    CHECK(round2.own.fingerprint() == new_fp);
    REQUIRE(round2.accepted);
    CHECK(round2.accepted->fingerprint() == old_fp);

    const auto finished = keygen({"--key", "dalek", "--finish"}, config.path());  // round 3: new alone
    CHECK(finished.code == 0);
    CHECK_THAT(finished.out, Catch::Contains(old_fp + " is no longer accepted"));
    const auto round3 = SecretFile::read(path);
    CHECK(round3.own.fingerprint() == new_fp);
    CHECK_FALSE(round3.accepted);
    CHECK(keygen({"--key", "dalek", "--finish"}, config.path()).code == 1);
    CHECK(keygen({"--key", "dalek", "--rotate", "--switch"}, config.path()).code == 2);
}
