#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# spine_agent.py: an Upkie-style agent loop against a C++ spine (gecko-sim):
# start the spine, then act and observe one cycle at a time; every joint
# follows a sine (the demo scene's joints take angles); reset once midway.
# Run:  geckocore --key demo &   gecko-sim --key demo &
#       PYTHONPATH=python python3 examples/python/spine_agent.py --key demo [--steps 200]
import argparse
import math
import sys

import gecko
import gecko.args
import gecko.spine


def main():
    parser = argparse.ArgumentParser(description="drives gecko-sim's spine with a sine on every joint")
    parser.add_argument("--steps", type=int, default=200, help="steps to run (default 200)")
    gecko.args.add_node_arguments(parser)
    args = parser.parse_args()
    gecko.install_signal_handlers()
    with gecko.args.node_from_args(args, "spine-agent") as node, gecko.spine.Agent(node, "sim") as agent:
        obs = agent.start()  # the spine: stop -> start -> idle
        joints = {name: len(o.controls_in_order) for name, o in agent.handshake.objects.items() if o.controls_in_order}
        try:
            for step in range(args.steps):
                if not gecko.ok():
                    break
                if step == args.steps // 2:
                    obs = agent.reset()  # back to the initial state
                t = obs.simulated_time
                action = {name: [0.3 * math.sin(2 * math.pi * 0.5 * t + j) for j in range(n)]
                          for name, n in joints.items()}
                obs = agent.step(action)  # one cycle: apply, step, observe
                if step % 50 == 0:
                    print("t=%.2f s  %s" % (obs.simulated_time, "  ".join(
                        "%s=%s" % (name, " ".join("%+.3f" % q for q in obs.objects[name].angle_sensors))
                        for name in sorted(joints))))
        except gecko.spine.WatchdogStop as e:  # we were silent too long: the actuators were stopped
            print("watchdog: " + e.reason, file=sys.stderr)
            return 1
        except gecko.spine.SpineError as e:  # any other refusal of the spine's state machine
            print("spine refused '%s' in state '%s': %s" % (e.request, e.state, e.reason), file=sys.stderr)
            return 1
        print("done at t=%.2f s" % obs.simulated_time)
    return 0  # leaving the `with` stopped the spine: another agent may start it


if __name__ == "__main__":
    sys.exit(main())
