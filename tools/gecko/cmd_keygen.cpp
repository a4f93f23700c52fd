// SPDX-License-Identifier: Apache-2.0
// gecko keygen: a new secret for a key, in the key store (docs/SECURITY.md).
#include <cstdio>

#include <gecko/security/key_store.hpp>
#include <gecko/security/secret.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace gecko::tools {

int run_keygen(const Args& args) {
    Connection connection;
    std::string file;
    bool force = false, fingerprint = false;
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
    if (!parser.parse(args)) return exit_ok;

    const std::string& key = connection.node.key;
    const std::string path = file.empty() ? security::secret_path(key) : file;
    if (fingerprint) {
        const auto secret = security::Secret::read_file(path);
        std::printf("key '%s': secret %s, fingerprint %s\n", key.c_str(), path.c_str(), secret.fingerprint().c_str());
        return exit_ok;
    }
    const auto secret = security::Secret::generate();
    secret.write_file(path, force);
    std::printf("key '%s': wrote a new secret to %s (mode 0600), fingerprint %s\n"
                "Copy this file to every machine of the key, to the same place (or name it with GECKO_SECRET_FILE).\n",
                key.c_str(), path.c_str(), secret.fingerprint().c_str());
    return exit_ok;
}

}  // namespace gecko::tools
