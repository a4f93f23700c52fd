# SPDX-License-Identifier: Apache-2.0
"""The Python Click lockstep Controller driving gecko-sim: 1000 steps with a
reset midway, on angle, velocity and torque joints, with the same tracking
error as gecko-controller (C++) on a fresh simulation of the same scene (the
simulation is deterministic, so the two runs should agree to rounding);
and the protocol's edges: a control that does not fit the handshake is
refused before sending, no simulation is a clear no_peer error."""

import os
import re
import sys

import pytest

from conftest import ROOT, bin_path, eventually, python_exe

import gecko
import gecko.click
from gecko import msgs
from gecko.msgs import click as mc

SCENE = ["--robots", "arm1,arm2", "--joints", "3", "--control-types", "angle,angular_velocity,torque"]


def run_controller(rig, args):
    sim = rig.spawn([bin_path("gecko-sim"), "--key", rig.key] + SCENE)
    ctl = rig.spawn(args + ["--key", rig.key, "--steps", "1000"])
    assert ctl.wait(120) == 0, "\n".join(ctl.out + ctl.err)
    sim.stop()
    line = [l for l in ctl.out if l.startswith("done:")][0]
    errors = {k: float(v) for k, v in re.findall(r"(\w+) ([0-9.e+-]+) rad", line)}
    rate = int(re.search(r"\((\d+) steps/s\)", line).group(1))
    return line, errors, rate


def test_python_controller_tracks_like_gecko_controller(rig):
    example = os.path.join(ROOT, "examples", "python", "click_controller.py")
    py_line, py_err, py_rate = run_controller(rig, [python_exe(), example])
    cpp_line, cpp_err, cpp_rate = run_controller(rig, [bin_path("gecko-controller")])
    print("python:", py_line)
    print("c++:   ", cpp_line)
    assert set(py_err) == set(cpp_err) == {"Angle", "AngularVelocity1D", "Torque1D"}
    for kind in cpp_err:
        assert py_err[kind] == pytest.approx(cpp_err[kind], rel=1e-6, abs=1e-9), kind
    assert "1 reset" in py_line


def test_controller_edges(rig):
    sim = rig.spawn([bin_path("gecko-sim"), "--key", rig.key] + SCENE)
    node = rig.node("py_ctl")
    ctl = gecko.click.Controller(node, "sim", connect_timeout=10.0)
    with pytest.raises(gecko.Error) as e:
        ctl.step(mc.Control())
    assert e.value.code == "protocol"
    hs = ctl.handshake()
    assert {"arm1", "arm2"} <= set(hs.objects) and hs.time_step
    bad = ctl.make_control()
    bad.objects["arm1"].values.append(1.0)
    with pytest.raises(gecko.Error) as e:
        ctl.step(bad)
    assert e.value.code == "invalid_argument" and "4 values for 3 controls" in str(e.value)
    before = ctl.sensors().sensor.simulated_time
    r = ctl.step(ctl.make_control())
    assert r.is_sensor() and r.sensor.simulated_time == pytest.approx(before + hs.time_step)
    ctl.reset()
    assert ctl.sensors().sensor.simulated_time == pytest.approx(0.0)
    assert ctl.error("done")
    other = gecko.click.Controller(node, "nosim", connect_timeout=0.3)
    with pytest.raises(gecko.Error) as e:
        other.handshake()
    assert e.value.code == "no_peer"


def test_a_control_held_while_paused_is_refused_as_such_and_resumed(rig):
    rig.spawn([bin_path("gecko-sim"), "--key", rig.key, "--paused-hold-ms", "300"] + SCENE)
    node = rig.node("py_ctl")
    ctl = gecko.click.Controller(node, "sim", connect_timeout=10.0)
    ctl.handshake()
    assert ctl.step(ctl.make_control()).is_sensor()
    pause = node.client("sim/control/pause", msgs.sim.ControlRequest, msgs.sim.ControlReply)
    assert pause.call(msgs.sim.ControlRequest(requester="pytest"), timeout=20).ok
    r = ctl.step(ctl.make_control())  # held 300 ms, then refused: not applied
    assert r.is_error() and r.is_paused_refusal(), r.value
    assert not ctl.step(ctl.make_control()).is_sensor()  # still paused: refused again, not a lost run
    resume = node.client("sim/control/resume", msgs.sim.ControlRequest, msgs.sim.ControlReply)
    assert resume.call(msgs.sim.ControlRequest(requester="pytest"), timeout=20).ok
    r = ctl.step(ctl.make_control())
    assert r.is_sensor() and not r.is_paused_refusal()


def test_a_control_after_the_watchdog_stopped_the_simulation_is_refused_as_such(rig):
    sim = rig.spawn([bin_path("gecko-sim"), "--key", rig.key, "--watchdog-ms", "100"] + SCENE)
    node = rig.node("py_ctl")
    ctl = gecko.click.Controller(node, "sim", connect_timeout=10.0)
    ctl.handshake()
    assert ctl.step(ctl.make_control()).is_sensor()
    # gecko-sim logs each trip; the line is the event to wait for.
    eventually(lambda: any("watchdog" in l and "stop" in l for l in sim.out + sim.err), 20, "gecko-sim's watchdog trip")
    r = ctl.step(ctl.make_control())
    assert r.is_error() and r.is_watchdog_refusal() and not r.is_paused_refusal(), r.value
    assert ctl.step(ctl.make_control()).is_sensor()  # the next one starts it again
