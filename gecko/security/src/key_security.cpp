// SPDX-License-Identifier: Apache-2.0
#include "gecko/security/key_security.hpp"

#include "gecko/error.hpp"
#include "gecko/security/key_store.hpp"

namespace gecko::security {

net::CurveKeys curve_keys(const std::string& key, const Secret& secret) {
    const auto server = secret.curve_key_pair(Purpose::curve_server);
    const auto client = secret.curve_key_pair(Purpose::curve_client);
    return net::CurveKeys{"gecko/" + key, server.public_key, server.secret_key, client.public_key, client.secret_key};
}

net::DatagramKey datagram_key(const Secret& secret) {
    net::DatagramKey k;
    k.mac_key = secret.derive(Purpose::discovery_mac);
    k.fingerprint = secret.fingerprint();
    return k;
}

KeySecurity KeySecurity::find(const std::string& key) {
    KeySecurity s;
    try {
        s.path_ = secret_path(key);
    } catch (const Error&) {
        // Neither XDG_CONFIG_HOME nor HOME: no store, so no secret (find_secret says the same).
    }
    if (s.path_.empty()) return s;
    if (auto secret = find_secret(key)) {
        s.curve_ = std::make_shared<const net::CurveKeys>(curve_keys(key, *secret));
        s.fingerprint_ = secret->fingerprint();
        s.datagram_key_ = std::make_shared<const net::DatagramKey>(security::datagram_key(*secret));
        s.segment_key_ = std::make_shared<const Secret::Bytes>(secret->derive(Purpose::shm_mac));
    }
    return s;
}

}  // namespace gecko::security
