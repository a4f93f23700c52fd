// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file key_store.hpp
/// Where a key's secret is kept, so that every program finds it by the key
/// alone (docs/SECURITY.md §2).

#include <optional>
#include <string>

#include "gecko/security/secret.hpp"

namespace gecko::security {

/// The secret file of `key`: $GECKO_SECRET_FILE if set, else
/// $XDG_CONFIG_HOME/gecko/keys/KEY.secret, else
/// $HOME/.config/gecko/keys/KEY.secret. In KEY, a byte other than a letter,
/// a digit, '.', '_' or '-' is written %XX (and a leading '.' too), so any
/// key makes one file name. Throws gecko::Error (Errc::security) when
/// neither XDG_CONFIG_HOME nor HOME is set.
std::string secret_path(const std::string& key);

/// The secret of `key` (read_file(secret_path(key))), or nothing if that
/// file does not exist. Throws as Secret::read_file for a file that exists
/// but is not a usable secret: a secret that is there must never be ignored.
std::optional<Secret> find_secret(const std::string& key);

/// The whole secret file of `key` (SecretFile::read(secret_path(key))): its
/// secret and, during a rotation, the one it accepts too. Nothing and throws
/// as find_secret.
std::optional<SecretFile> find_secret_file(const std::string& key);

}  // namespace gecko::security
