// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file counters.hpp
/// What the bridge refused, dropped and sent, counted: shown at /api/stats,
/// on the page, and in the log when the bridge stops.

#include <atomic>
#include <cstdint>
#include <string>

namespace gecko::bridge {

struct Counters {
#define GECKO_BRIDGE_COUNTERS(X)                                                                    \
    X(connections)            /* WebSocket clients accepted */                                      \
    X(refused_token)          /* upgrades and page loads without the right token */                 \
    X(refused_origin)         /* upgrades from a web page of another origin */                      \
    X(refused_subprotocol)    /* upgrades offering no Foxglove subprotocol */                       \
    X(refused_http)           /* other HTTP requests refused (unknown path, method, size) */        \
    X(malformed_requests)     /* JSON or binary client messages that do not parse */                \
    X(unknown_ops)            /* well-formed JSON naming an op the bridge does not take */          \
    X(refused_requests)       /* requests refused (unknown channel, limits, ...) */                 \
    X(refused_publishes)      /* client messages refused (shape, unknown channel, ...) */           \
    X(published)              /* client messages published to Gecko */                              \
    X(service_calls)          /* service calls made */                                              \
    X(service_failures)       /* calls answered with serviceCallFailure */                          \
    X(messages_sent)          /* MessageData frames written */                                      \
    X(bytes_sent)             /* their bytes */                                                     \
    X(drops)                  /* messages dropped for a slow client */                              \
    X(feed_drops)             /* messages dropped before any client's queue: the io thread behind */ \
    X(control_overflows)      /* clients disconnected for not reading their control messages */     \
    X(stalled)                /* clients disconnected for a write that never finished */            \
    X(transcode_errors)       /* Gecko messages that could not be turned into JSON */               \
    X(connection_errors)      /* connections that ended in an error (too big, protocol, TLS) */
#define GECKO_BRIDGE_DECLARE(name) std::atomic<std::uint64_t> name{0};
    GECKO_BRIDGE_COUNTERS(GECKO_BRIDGE_DECLARE)
#undef GECKO_BRIDGE_DECLARE

    /// {"connections": 3, ...}, plus `extra` members ("\"clients\":2") if given.
    std::string json(const std::string& extra = "") const;
};

}  // namespace gecko::bridge
