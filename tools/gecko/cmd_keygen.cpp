// SPDX-License-Identifier: Apache-2.0
// gecko keygen: a new secret for a key, in the key store (docs/SECURITY.md).
#include <cstdio>
#include <utility>

#include <gecko/security/key_store.hpp>
#include <gecko/security/secret.hpp>
#include <gecko/error.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace gecko::tools {

namespace {

std::string describe(const security::SecretFile& f) {
    return "fingerprint " + f.own.fingerprint() + (f.accepted ? ", also accepting " + f.accepted->fingerprint() : "");
}

// The three rounds of a rotation (docs/SECURITY.md §9): each rewrites the file
// in place; programs read it when they start.
int rotate_step(const std::string& key, const std::string& path, bool rotate, bool swap, bool finish) {
    auto f = security::SecretFile::read(path);
    if (rotate) {
        if (f.accepted)
            throw Error(Errc::security, "the secret file " + path + " is in a rotation already (" + describe(f) +
                                            "): finish it with --switch, then --finish");
        f.accepted = security::Secret::generate();
        f.write(path, true);
        std::printf("key '%s': %s now holds a new secret beside its own (%s).\n"
                    "Round 1 of 3: copy this file to every machine of the key and restart its programs; they still\n"
                    "use the old secret and accept the new one. Then run `gecko keygen --key %s --switch` on each.\n",
                    key.c_str(), path.c_str(), describe(f).c_str(), key.c_str());
    } else if (swap) {
        if (!f.accepted) throw Error(Errc::security, "the secret file " + path + " holds one secret: start a rotation with --rotate");
        std::swap(f.own, *f.accepted);
        f.write(path, true);
        std::printf("key '%s': %s now uses the new secret and accepts the old one (%s).\n"
                    "Round 2 of 3: restart this machine's programs; once every machine has switched, run\n"
                    "`gecko keygen --key %s --finish` on each.\n",
                    key.c_str(), path.c_str(), describe(f).c_str(), key.c_str());
    } else if (finish) {
        if (!f.accepted) throw Error(Errc::security, "the secret file " + path + " holds one secret: no rotation to finish");
        const std::string dropped = f.accepted->fingerprint();
        f.accepted.reset();
        f.write(path, true);
        std::printf("key '%s': %s holds one secret again (%s); %s is no longer accepted.\n"
                    "Round 3 of 3: restart this machine's programs.\n",
                    key.c_str(), path.c_str(), describe(f).c_str(), dropped.c_str());
    }
    return exit_ok;
}

}  // namespace

int run_keygen(const Args& args) {
    Connection connection;
    std::string file;
    bool force = false, fingerprint = false, rotate = false, swap = false, finish = false, token = false;
    Parser parser("keygen", "--key KEY [options]",
                  "Writes a new random secret for the key to the key store: one file per key, mode 0600,\n"
                  "$XDG_CONFIG_HOME/gecko/keys/KEY.secret (else ~/.config/gecko/keys/KEY.secret), or the\n"
                  "file GECKO_SECRET_FILE or --secret-file names. Put the same file on every machine of the\n"
                  "robot. Prints the file and the secret's fingerprint, which names it without giving it away.\n"
                  "docs/SECURITY.md says what the secret protects, and what it does not protect yet.");
    parser.connection(connection);
    parser.option("--secret-file", "FILE", "write the secret here instead of the key store", file);
    parser.flag("--force", "replace an existing secret (every machine of the key then needs the new one)", force);
    parser.flag("--fingerprint", "write nothing: print the file and fingerprint of the key's secret", fingerprint);
    parser.flag("--bridge-token", "write nothing: print the browser bridge's token, derived from the key's secret",
                token);
    parser.flag("--rotate", "rotation, round 1: add a new secret that programs accept beside the key's own", rotate);
    parser.flag("--switch", "rotation, round 2: use the new secret, accept the old one", swap);
    parser.flag("--finish", "rotation, round 3: drop the old secret", finish);
    if (!parser.parse(args)) return exit_ok;

    const std::string& key = connection.node.key;
    const std::string path = file.empty() ? security::secret_path(key) : file;
    if (int(rotate) + int(swap) + int(finish) + int(fingerprint) + int(token) > 1)
        throw UsageError("give one of --rotate, --switch, --finish, --fingerprint and --bridge-token");
    if (token) {  // alone on its line, for scripts: TOKEN=$(gecko keygen --key K --bridge-token)
        std::printf("%s\n", security::SecretFile::read(path).own.bridge_token().c_str());
        return exit_ok;
    }
    if (fingerprint) {
        const auto f = security::SecretFile::read(path);
        std::printf("key '%s': secret %s, %s\n", key.c_str(), path.c_str(), describe(f).c_str());
        return exit_ok;
    }
    if (rotate || swap || finish) return rotate_step(key, path, rotate, swap, finish);
    const auto secret = security::Secret::generate();
    secret.write_file(path, force);
    std::printf("key '%s': wrote a new secret to %s (mode 0600), fingerprint %s\n"
                "Copy this file to every machine of the key, to the same place (or name it with GECKO_SECRET_FILE).\n",
                key.c_str(), path.c_str(), secret.fingerprint().c_str());
    return exit_ok;
}

}  // namespace gecko::tools
