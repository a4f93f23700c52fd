#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# sim_control.py: pauses, resets and resumes a simulation through its control
# services (SIM/control/...), printing the status each answer carries: every
# answer comes once its operation has taken effect.
# Run:  geckocore --key demo &   gecko-sim --key demo &   gecko-controller --key demo --steps 0 --rate 100 &
#       PYTHONPATH=python python3 examples/python/sim_control.py --key demo [--paused-for 1.0]
import argparse
import sys
import time

import gecko
import gecko.args
from gecko.msgs.sim import ControlReply, ControlRequest


def main():
    parser = argparse.ArgumentParser(description="pauses, resets and resumes a simulation through its control services")
    parser.add_argument("--sim", default="sim", help="the simulation's name (default sim)")
    parser.add_argument("--paused-for", type=float, default=1.0, help="seconds to stay paused (default 1.0)")
    gecko.args.add_node_arguments(parser)
    args = parser.parse_args()
    with gecko.args.node_from_args(args, "sim-control") as node:
        def control(verb):
            client = node.client(args.sim + "/control/" + verb, ControlRequest, ControlReply)
            reply = client.call(ControlRequest(requester="sim_control.py"), timeout=20.0)
            if not reply.ok:
                sys.exit("sim_control.py: %s refused: %s" % (verb, reply.error))
            s = reply.status
            print("%-6s -> %s: %d steps, %.2f s simulated, controller %s" % (
                verb, s.state.name, s.steps, s.simulated_time, s.controller or "-"), flush=True)
            return s

        control("status")
        paused = control("pause")
        time.sleep(args.paused_for)  # what a person does while paused
        still = control("status")
        print("paused for %.1f s: %d steps taken meanwhile" % (args.paused_for, still.steps - paused.steps), flush=True)
        control("reset")
        control("resume")
    return 0


if __name__ == "__main__":
    sys.exit(main())
