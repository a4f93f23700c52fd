# SPDX-License-Identifier: Apache-2.0
"""Simulation control from Python (gecko.msgs.sim over the package's service
client): gecko-sim stepped by gecko-controller, paused, reset and resumed by
examples/python/sim_control.py and by the test's own client, with the status
topic read back."""

import os
import re

from conftest import ROOT, bin_path, python_exe

from gecko.msgs.sim import ControlReply, ControlRequest, SimulationState, Status


def await_status(topic, wanted, timeout=30.0):
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = topic.receive(timeout=0.5)
        if s is not None and wanted(s):
            return s
    return None


def test_pause_reset_resume_from_python(rig):
    sim = rig.spawn([bin_path("gecko-sim"), "--key", rig.key])
    sim.wait_line("ready", 20)
    ctl = rig.spawn([bin_path("gecko-controller"), "--key", rig.key, "--steps", "0", "--rate", "200"])
    node = rig.node("py_sim_control")
    topic = node.subscriber("sim/status", Status)
    assert await_status(topic, lambda s: s.steps >= 20 and s.state == SimulationState.running)

    example = rig.spawn([python_exe(), os.path.join(ROOT, "examples", "python", "sim_control.py"), "--key", rig.key])
    assert example.wait(60) == 0, "\n".join(example.out + example.err)
    out = "\n".join(example.out)
    assert re.search(r"^pause  -> paused: \d+ steps", out, re.M), out
    assert "paused for 1.0 s: 0 steps taken meanwhile" in out, out
    assert re.search(r"^reset  -> paused: \d+ steps, 0.00 s simulated", out, re.M), out
    assert re.search(r"^resume -> running", out, re.M), out

    # Stepping again, from the initial state; the controller never failed.
    status = node.client("sim/control/status", ControlRequest, ControlReply)
    resumed_at = status.call(ControlRequest(requester="pytest"), timeout=20.0).status.steps
    s = await_status(topic, lambda s: s.steps >= resumed_at + 20)
    assert s is not None and s.simulated_time > 0 and s.resets == 1
    ctl.wait_line("the simulation was reset", 20)
    assert ctl.p.poll() is None, "\n".join(ctl.out + ctl.err)
