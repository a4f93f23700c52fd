// SPDX-License-Identifier: Apache-2.0
#pragma once
// gecko play --lockstep: re-drives a simulation with the requests of a
// recorded Click run (handshake, controls, sensor requests, resets, in
// order), compares each answer with the recorded one, and reports the
// first step whose answer differs: its field and both values.

#include <gecko/node.hpp>

#include <string>
#include <vector>

namespace gecko::bag::cli {

struct LockstepSettings {
    std::vector<std::string> files;
    std::string simulation = "sim";  ///< topic prefix: SIM/click/request, SIM/click/answer
    double tolerance = 0;            ///< numbers within it are equal
    bool quiet = false;
};

/// 0: every answer equal; 1: an answer differed (or the replay failed), said on stdout/stderr.
int replay_lockstep(Node& node, const LockstepSettings& settings);

}  // namespace gecko::bag::cli
