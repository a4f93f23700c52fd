// SPDX-License-Identifier: Apache-2.0
#include "gecko/security/key_security.hpp"

#include "gecko/error.hpp"
#include "gecko/security/key_store.hpp"

namespace gecko::security {

net::CurveKeys curve_keys(const std::string& key, const Secret& secret, const Secret* accepted) {
    const auto server = secret.curve_key_pair(Purpose::curve_server);
    const auto client = secret.curve_key_pair(Purpose::curve_client);
    net::CurveKeys k{"gecko/" + key, server.public_key, server.secret_key, client.public_key, client.secret_key,
                     secret.fingerprint(), {}, {}, {}};
    if (accepted) {
        k.accepted_fingerprint = accepted->fingerprint();
        k.accepted_server_public = accepted->curve_key_pair(Purpose::curve_server).public_key;
        k.accepted_client_public = accepted->curve_key_pair(Purpose::curve_client).public_key;
    }
    return k;
}

net::DatagramKey datagram_key(const Secret& secret, const Secret* accepted) {
    net::DatagramKey k;
    k.mac_key = secret.derive(Purpose::discovery_mac);
    k.fingerprint = secret.fingerprint();
    if (accepted) {
        k.accepted_mac_key = accepted->derive(Purpose::discovery_mac);
        k.accepted_fingerprint = accepted->fingerprint();
    }
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
    if (auto file = find_secret_file(key)) {
        const Secret* accepted = file->accepted ? &*file->accepted : nullptr;
        s.curve_ = std::make_shared<const net::CurveKeys>(curve_keys(key, file->own, accepted));
        s.fingerprint_ = file->own.fingerprint();
        s.datagram_key_ = std::make_shared<const net::DatagramKey>(security::datagram_key(file->own, accepted));
        s.segment_key_ = std::make_shared<const Secret::Bytes>(file->own.derive(Purpose::shm_mac));
        if (accepted) {
            s.accepted_fingerprint_ = accepted->fingerprint();
            s.accepted_segment_key_ = std::make_shared<const Secret::Bytes>(accepted->derive(Purpose::shm_mac));
        }
    }
    return s;
}

}  // namespace gecko::security
