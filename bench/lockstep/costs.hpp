// SPDX-License-Identifier: Apache-2.0
#pragma once
// gecko_lockstep_bench's in-process costs, measured before the runs to say
// where a step's time goes: the envelopes' codec, the CPU time per step with
// both ends in one process, and the spin stack's transport alone.
#include "lockstep.hpp"

#include <cmath>
#include <string>

namespace lockstep {

struct Costs {
    // msgpack, into a reused buffer and decoded into reused objects, as the
    // Controller and the SimulationServer do on every step:
    double request_encode_us{NAN};
    double request_decode_us{NAN};
    double answer_encode_us{NAN};
    double answer_decode_us{NAN};
    double gateway_codec_us;  ///< the gateway's protobuf decode of the Control and encode of the Sensor, and
                              ///< the Click client's encode and parse (on top of gecko_codec_us())
    double inproc_gecko_cpu_us{NAN};  ///< CPU per step, Controller <-> SimulationServer in one process over inproc
    double inproc_raw_cpu_us{NAN};    ///< CPU per step, raw REQ/REP in one process over inproc
    double frames_spin_p50_us{NAN};   ///< the spin stack's transport alone: raw frames, round trip p50
    double frames_spin_p99_us{NAN};
    /// Everything the two envelopes cost a step: both encoded, both decoded.
    double gecko_codec_us() const { return request_encode_us + request_decode_us + answer_encode_us + answer_decode_us; }
    std::string gecko_codec_parts() const {
        return "Request encode " + fmt(request_encode_us, 2) + " + decode " + fmt(request_decode_us, 2) +
               ", Answer encode " + fmt(answer_encode_us, 2) + " + decode " + fmt(answer_decode_us, 2) + " µs";
    }
};

/// The codec costs (msgpack envelopes, Click protobuf), in this process.
Costs measure_costs(const Scene& scene);
/// The spin stack's transport alone: raw frames of the envelopes' sizes over
/// shared memory to an echo process, both ends spinning kSpin.
void measure_frames_spin(const Scene& scene, int rounds, Costs& costs);
/// CPU time per step of Gecko and of raw REQ/REP, both ends in this process over inproc.
void measure_inproc(const Scene& scene, int rounds, Costs& costs);
/// --profile: only Gecko's steps over inproc, for perf.
void profile_inproc(const Scene& scene, int steps);

}  // namespace lockstep
