#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# click_controller.py: drives a Click lockstep simulation (gecko-sim) step by
# step, exactly as examples/controller/gecko_controller.cpp does: every joint
# follows a sine around its starting angle whatever its control type, the
# gripper closes for a while, the simulation is reset once midway; at the end
# it prints the step rate and the tracking error in gecko-controller's words.
# Run:  geckocore --key demo &   gecko-sim --key demo &
#       PYTHONPATH=python python3 examples/python/click_controller.py --key demo [--steps 1000]
import argparse
import math
import sys
import time

import gecko
import gecko.args
import gecko.click
from gecko.msgs.click import ValueType

AMPLITUDE, FREQUENCY = 0.3, 0.5                        # rad, Hz
KP_TORQUE, KD_TORQUE, KI_TORQUE = 80.0, 8.0, 200.0     # PID on torque: the integral carries the arm's weight
KP_VELOCITY = 5.0
OMEGA = 2.0 * 3.141592653589793 * FREQUENCY


def angle(start, t, j):
    return start + AMPLITUDE * math.sin(OMEGA * t + j)


def velocity(t, j):
    return AMPLITUDE * OMEGA * math.cos(OMEGA * t + j)


def joint_command(kind, q_ref, v_ref, q, v, integral):
    if kind == ValueType.angle:
        return q_ref                                    # the servo tracks it
    if kind == ValueType.angular_velocity_1d:
        return v_ref + KP_VELOCITY * (q_ref - q)
    if kind == ValueType.torque_1d:
        return KP_TORQUE * (q_ref - q) + KD_TORQUE * (v_ref - v) + KI_TORQUE * integral
    return 0.0


def main():
    parser = argparse.ArgumentParser(description="tracks a sine on every joint of a Click lockstep simulation")
    parser.add_argument("--steps", type=int, default=1000, help="steps to run (default 1000)")
    parser.add_argument("--sim", default="sim", help="the simulation's topic prefix (default: sim)")
    gecko.args.add_node_arguments(parser)
    args = parser.parse_args()
    gecko.install_signal_handlers()
    with gecko.args.node_from_args(args, "py-controller") as node:
        # 1. Handshake: what can be controlled, in which order, with which types.
        ctl = gecko.click.Controller(node, args.sim)
        hs = ctl.handshake()
        dt = hs.time_step if hs.time_step is not None else 0.01
        index = {}  # per object: control j -> its index in the Sensor arrays (matched by joint name)
        for name, obj in sorted(hs.objects.items()):
            if obj.controls_in_order:
                print("object %s: %s" % (name, " ".join("%s(%s)" % (c, t.wire) for c, t in
                                                        zip(obj.controls_in_order, obj.control_types_in_order))))
                index[name] = [obj.joint_sensors_in_order.index(j) for j in obj.controls_in_order]

        # 2. Where every joint starts (a SensorRequest does not step).
        sensor = ctl.sensors().sensor
        start = {n: [sensor.objects[n].angle_sensors[k] for k in ks] for n, ks in index.items()}

        # 3. The lockstep loop: one Control in, the sensors of one step out.
        integral, errors = {}, {}
        done = resets = 0
        reset_midway = False
        began = time.monotonic()
        while done < args.steps and gecko.ok():
            if not reset_midway and done == args.steps // 2:
                ctl.reset()
                reset_midway = True
                sensor = ctl.sensors().sensor
                integral.clear()
                resets += 1
            t = (sensor.simulated_time or 0.0) + dt
            control = ctl.make_control()
            for name, obj in control.objects.items():
                announced, measured = hs.objects[name], sensor.objects[name]
                sums = integral.setdefault(name, [0.0] * len(obj.values))
                for j in range(len(obj.values)):
                    k = index[name][j]
                    q_ref, q = angle(start[name][j], t, j), measured.angle_sensors[k]
                    sums[j] += (q_ref - q) * dt
                    obj.values[j] = joint_command(announced.control_types_in_order[j], q_ref, velocity(t, j), q,
                                                  measured.angular_velocity_sensors[k], sums[j])
                if "gripper" in announced.control_events:
                    obj.control_events["gripper"] = math.fmod(t, 4.0) >= 1.0  # closed 3 s out of 4
            result = ctl.step(control)
            if result.is_error():
                print("click_controller.py: the simulation refused a control: " + result.error.reason, file=sys.stderr)
                return 1
            if result.is_reset():  # reset from the simulation side: start over
                print("the simulation was reset")
                sensor = ctl.sensors().sensor
                integral.clear()
                resets += 1
                continue
            sensor = result.sensor
            done += 1
            for name, obj in control.objects.items():
                angles = sensor.objects[name].angle_sensors
                for j in range(len(obj.values)):
                    e = angles[index[name][j]] - angle(start[name][j], t, j)
                    acc = errors.setdefault(hs.objects[name].control_types_in_order[j], [0.0, 0])
                    acc[0] += e * e
                    acc[1] += 1
        seconds = time.monotonic() - began

        # 4. End the run, so that another controller may drive the simulation.
        ctl.error("click_controller.py finished")
        print("done: %d steps in %g s (%d steps/s), %d reset%s; tracking error (RMS):%s" % (
            done, seconds, done / seconds, resets, "" if resets == 1 else "s",
            "".join(" %s %.6g rad" % (k.wire, math.sqrt(s / max(n, 1))) for k, (s, n) in sorted(errors.items()))))
        return 0 if done == args.steps else 1


if __name__ == "__main__":
    sys.exit(main())
