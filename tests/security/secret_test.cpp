// A key's secret: where it is kept, what a secret file must be, and the keys
// derived from it. The expected subkeys were computed with Python's hashlib
// (BLAKE2b, key = the secret, salt = the purpose's id as 8 little-endian
// bytes then 8 zeros, person = "geckokey" then 8 zeros, 32 bytes of output)
// and the public keys with pyzmq's zmq.curve_public: an implementation of
// docs/SECURITY.md §3 that is not ours.

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gecko/error.hpp>
#include <gecko/security/key_store.hpp>
#include <gecko/security/secret.hpp>

#include "support/ports.hpp"

using gecko::security::Purpose;
using gecko::security::Secret;

namespace {

Secret counting_secret() {  // bytes 0, 1, ..., 31
    Secret::Bytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i);
    return Secret::from_bytes(b);
}

std::string hex(const Secret::Bytes& b) {
    std::string s;
    char d[3];
    for (auto v : b) {
        std::snprintf(d, sizeof d, "%02x", v);
        s += d;
    }
    return s;
}

void write_text(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
}

unsigned mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old, had_ = true;
        value ? ::setenv(name, value, 1) : ::unsetenv(name);
    }
    ~ScopedEnv() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }

private:
    const char* name_;
    std::string old_;
    bool had_ = false;
};

}  // namespace

TEST_CASE("the derived subkeys and CURVE key pairs are those docs/SECURITY.md describes", "[security]") {
    const Secret s = counting_secret();
    CHECK(hex(s.derive(Purpose::curve_server)) == "158343a05096a123b3e5d6208d3ea7df7a14708d90040c501707d917e40b8926");
    CHECK(hex(s.derive(Purpose::curve_client)) == "db9673337fa400c0e406bedde648d57c01d2ab6080726a9ea22c29a5bc4f78a0");
    CHECK(hex(s.derive(Purpose::discovery_mac)) == "1a48fac296161c7c96cae0fb8371d0be5998cf7d139acf0c91bb94f6f28acf47");
    CHECK(hex(s.derive(Purpose::shm_mac)) == "4f21350a1ad34be55473aa8d317231db15d07ff687e038a92b5708500f76f750");
    CHECK(hex(s.derive(Purpose::bridge_token)) == "1652a88e4f44c6f0243fc1f8727987dafaa3e2b39c29d0cec6a43ed158c7110b");
    CHECK(s.fingerprint() == "b7bab9d6740a8a76");  // the first 8 bytes of subkey 0
    CHECK(s.bridge_token() == "1652a88e4f44c6f0243fc1f8727987da");  // the first 16 bytes of subkey 5
    const auto server = s.curve_key_pair(Purpose::curve_server);
    CHECK(server.public_key == "1LwLYiTHqqFkx<jV{cWCif^6dvOoU9oBo0>AtB9:");
    CHECK(server.secret_key == "6[X(Dp)N!1V/P:XJxTn$Dk7sTKot$*7yeRf<o{!>");
    const auto client = s.curve_key_pair(Purpose::curve_client);
    CHECK(client.public_key == "I:e!5fi00EJDgkJ@hKqo0jpX@N/1!pmCdvUt3)?j");
    CHECK(client.secret_key == "*M([pF207W<oAuO>1a3I0N!2RFo2y@Qav:&YIA^B");
    // Two generated secrets differ (the random source works).
    CHECK(Secret::generate().fingerprint() != Secret::generate().fingerprint());
}

TEST_CASE("a secret file is written with mode 0600 in 0700 directories, read back, and never overwritten unasked",
          "[security]") {
    gecko::test::TempDir dir;
    const std::string path = dir.path() + "/a b/keys/dalek.secret";
    const Secret s = Secret::generate();
    s.write_file(path);
    CHECK(mode_of(path) == 0600);
    CHECK(mode_of(dir.path() + "/a b/keys") == 0700);
    CHECK(Secret::read_file(path).fingerprint() == s.fingerprint());
    CHECK_THROWS_WITH(Secret::generate().write_file(path), Catch::Contains("exists already") && Catch::Contains("--force"));
    CHECK(Secret::read_file(path).fingerprint() == s.fingerprint());
    const Secret other = Secret::generate();
    other.write_file(path, true);
    CHECK(Secret::read_file(path).fingerprint() == other.fingerprint());
}

TEST_CASE("a secret file that others can read, or that holds anything but 64 hex digits, is refused with the fix",
          "[security]") {
    gecko::test::TempDir dir;
    const std::string path = dir.path() + "/k.secret";
    const std::string digits(64, 'a');
    write_text(path, digits + "\n", 0644);
    try {
        Secret::read_file(path);
        FAIL("a world-readable secret was accepted");
    } catch (const gecko::Error& e) {
        CHECK(e.code() == gecko::Errc::security);
        CHECK_THAT(e.what(), Catch::Contains("mode 0644") && Catch::Contains("chmod 600"));
    }
    for (const std::string& bad : std::vector<std::string>{digits.substr(1), digits + "a", digits.substr(2) + "zz", "",
                                                            "aa " + digits.substr(2)}) {
        INFO("content: '" << bad << "'");
        write_text(path, bad + "\n", 0600);
        CHECK_THROWS_WITH(Secret::read_file(path), Catch::Contains("64 hexadecimal digits"));
    }
    write_text(path, "  " + digits + "\r\n", 0600);  // whitespace around the digits is fine
    CHECK_NOTHROW(Secret::read_file(path));
    const std::string link = dir.path() + "/link.secret";
    REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
    CHECK_THROWS_WITH(Secret::read_file(link), Catch::Contains("symbolic link"));
    CHECK_THROWS_WITH(Secret::read_file(dir.path() + "/none.secret"), Catch::Contains("cannot read"));
}

TEST_CASE("the key store is GECKO_SECRET_FILE, else XDG_CONFIG_HOME, else ~/.config, one file name per key",
          "[security]") {
    gecko::test::TempDir dir;
    ScopedEnv file("GECKO_SECRET_FILE", nullptr);
    {
        ScopedEnv xdg("XDG_CONFIG_HOME", dir.path().c_str());
        CHECK(gecko::security::secret_path("dalek") == dir.path() + "/gecko/keys/dalek.secret");
        CHECK(gecko::security::secret_path("arm 1/../x") == dir.path() + "/gecko/keys/arm%201%2F..%2Fx.secret");
        CHECK(gecko::security::secret_path(".hidden") == dir.path() + "/gecko/keys/%2Ehidden.secret");
        CHECK_FALSE(gecko::security::find_secret("dalek").has_value());  // none yet: security is off
        const Secret s = Secret::generate();
        s.write_file(gecko::security::secret_path("dalek"));
        CHECK(gecko::security::find_secret("dalek")->fingerprint() == s.fingerprint());
    }
    {
        ScopedEnv xdg("XDG_CONFIG_HOME", nullptr);
        ScopedEnv home("HOME", dir.path().c_str());
        CHECK(gecko::security::secret_path("dalek") == dir.path() + "/.config/gecko/keys/dalek.secret");
    }
    {
        ScopedEnv named("GECKO_SECRET_FILE", (dir.path() + "/missing.secret").c_str());
        CHECK(gecko::security::secret_path("dalek") == dir.path() + "/missing.secret");
        // A file named on purpose must be there: no silent fallback to no security.
        CHECK_THROWS_WITH(gecko::security::find_secret("dalek"), Catch::Contains("does not exist"));
    }
}
