# SPDX-License-Identifier: Apache-2.0
"""gecko.spine.Agent against a real geckocore and gecko-sim (a C++ spine behind
Click lockstep): a 200-step action/observation loop, reset, stop then start
again, and how refusals surface. The spine's state-machine refusals are
raised as SpineError / WatchdogStop; every reason format of
gecko/spine/src/state_machine.cpp is checked, and a stand-in spine answers
with them over real topics; gecko-sim's watchdog stop reaches the agent as
WatchdogStop."""

import os
import threading

import pytest

from conftest import ROOT, bin_path, eventually, python_exe

import gecko
import gecko.spine
from gecko.msgs import click as mc
from gecko.spine import SpineError, WatchdogStop

SCENE = ["--robots", "arm1,arm2", "--joints", "3", "--control-types", "angle"]


def sim(rig, watchdog_ms=0):
    return rig.spawn([bin_path("gecko-sim"), "--key", rig.key, "--watchdog-ms", str(watchdog_ms)] + SCENE,
                     stdin=True)


def test_a_200_step_loop_then_stop_and_start_again(rig):
    sim(rig)
    with gecko.spine.Agent(rig.node("agent"), "sim", connect_timeout=10.0) as agent:
        obs = agent.start()
        dt = agent.handshake.time_step
        assert {"arm1", "arm2"} <= set(agent.handshake.objects) and dt > 0
        start = obs.objects["arm1"].angle_sensors[0]
        target = {"arm1": [start + 0.2, 0.0, 0.0]}
        for _ in range(200):
            obs = agent.step(target)
        assert obs.simulated_time == pytest.approx(200 * dt)
        assert obs.objects["arm1"].angle_sensors[0] == pytest.approx(start + 0.2, abs=0.02)
        assert agent.observe().simulated_time == obs.simulated_time  # observing moves nothing
        agent.stop()
        with pytest.raises(gecko.Error) as e:
            agent.step(target)
        assert e.value.code == "protocol" and "start()" in str(e.value)
        assert agent.start().simulated_time == obs.simulated_time  # start does not reset
        assert agent.step(target).simulated_time == pytest.approx(201 * dt)


def test_the_example(rig):
    rig.spawn([bin_path("gecko-sim"), "--key", rig.key])  # the demo scene
    agent = rig.spawn([python_exe(), os.path.join(ROOT, "examples", "python", "spine_agent.py"), "--key", rig.key])
    assert agent.wait(60) == 0, "\n".join(agent.out + agent.err)
    assert agent.out[-1] == "done at t=1.00 s" and len(agent.out) == 5, agent.out  # 100 steps after the reset


def test_reset(rig):
    sim(rig)
    with gecko.spine.Agent(rig.node("agent"), "sim", connect_timeout=10.0) as agent:
        first = agent.start()
        for _ in range(10):
            agent.step({"arm2": [0.5, 0.5, 0.5]})
        obs = agent.reset()
        assert obs.simulated_time == pytest.approx(0.0)
        assert obs.objects["arm2"].angle_sensors == pytest.approx(first.objects["arm2"].angle_sensors)
        assert agent.step({"arm2": [0.0, 0.0, 0.0]}).simulated_time == pytest.approx(agent.handshake.time_step)


def test_a_simulation_side_reset_and_a_busy_spine(rig):
    s = sim(rig)
    node = rig.node("agent")
    with gecko.spine.Agent(node, "sim", connect_timeout=10.0) as agent:
        agent.start()
        agent.step({"arm1": [0.1, 0.1, 0.1]})
        s.p.stdin.write("reset\nstatus\n")  # the status line comes once the reset is done
        s.p.stdin.flush()
        s.wait_line("^status:", 10)
        with pytest.raises(gecko.spine.SimulationReset):
            agent.step({"arm1": [0.1, 0.1, 0.1]})
        assert agent.observe().simulated_time == pytest.approx(0.0)
        # Another agent while this one drives: the server refuses, not the spine.
        with gecko.spine.Agent(node, "sim") as other:
            with pytest.raises(gecko.Error) as e:
                other.start()
            assert not isinstance(e.value, SpineError) and e.value.code == "remote"
            assert "is driven by controller" in str(e.value)


# The reasons of gecko/spine/src/state_machine.cpp and gecko/click/src/simulation.cpp, verbatim.
REASONS = [
    ("spine: request 'action' is invalid in state 'stop': send 'start' first", SpineError, "stop", "action"),
    ("spine: request 'observation' is invalid in state 'stop': send 'start' first (the watchdog stopped the spine: "
     "no action for 12 cycles (104 ms))", WatchdogStop, "stop", "observation"),
    ("spine: request 'start' is invalid in state 'idle': the spine is already started; send 'stop' then 'start' "
     "to reset it", SpineError, "idle", "start"),
    ("spine: request 'action' refused in state 'shutdown': the spine is shutting down", SpineError, "shutdown",
     "action"),
    ("spine: request 'start' not answered within 13 cycles (state 'stop')", SpineError, "stop", "start"),
    ("spine: request 'action' interrupted: the spine is shutting down", SpineError, None, "action"),
]


@pytest.mark.parametrize("reason,kind,state,refused", REASONS)
def test_spine_reasons_parse(reason, kind, state, refused):
    e = gecko.spine.spine_error("simulation 'sim' refused the handshake: " + reason, "sim")
    assert type(e) is kind and isinstance(e, gecko.Error) and e.code == "remote"
    assert (e.reason, e.state, e.request) == (reason, state, refused)
    assert gecko.spine.spine_error("simulation 'sim' is driven by controller 'x'") is None


def stand_in_spine(node, reason, stop):
    """Serves HandshakeInit and SensorRequest like a spine; refuses every Control with `reason`."""
    requests = node.subscriber("sim/click/request", mc.Request, depth=64)
    answers = node.publisher("sim/click/answer", mc.Answer)
    arm = mc.HandshakeObject(controls_in_order=["j"], control_types_in_order=[mc.ValueType.angle],
                             joint_sensors_in_order=["j"])

    def serve():
        while not stop.is_set():
            r = requests.receive(0.05)
            if r is None:
                continue
            a = mc.Answer(controller_id=r.controller_id, answers=r.request_id, simulation="sim")
            if r.kind == mc.RequestKind.handshake_init:
                a.kind, a.handshake = mc.AnswerKind.handshake, mc.Handshake(objects={"arm": arm}, time_step=0.01)
            elif r.kind == mc.RequestKind.sensor_request:
                a.kind, a.sensor = mc.AnswerKind.sensor, mc.Sensor(simulated_time=0.0)
            elif r.kind == mc.RequestKind.error:
                a.kind = mc.AnswerKind.ended
            else:
                a.kind, a.error = mc.AnswerKind.error, mc.Error(reason=reason)
            answers.publish(a)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("reason,kind,state,refused", REASONS[:2])
def test_a_spine_refusal_over_the_topics(rig, reason, kind, state, refused):
    stop = threading.Event()
    server = stand_in_spine(rig.node("spine"), reason, stop)
    try:
        with gecko.spine.Agent(rig.node("agent"), "sim", connect_timeout=10.0) as agent:
            agent.start()
            with pytest.raises(SpineError) as e:
                agent.step({"arm": [0.1]})
            assert type(e.value) is kind and (e.value.state, e.value.reason) == (state, reason)
    finally:
        stop.set()
        server.join(5)


def test_the_watchdog_stop_reaches_the_agent(rig):
    s = sim(rig, watchdog_ms=100)
    with gecko.spine.Agent(rig.node("agent"), "sim", connect_timeout=10.0) as agent:
        agent.start()
        before = agent.step({"arm1": [0.1, 0.1, 0.1]}).simulated_time
        eventually(lambda: any("watchdog:" in line for line in s.err), 10, "gecko-sim's watchdog")
        assert agent.observe().simulated_time == before  # reading still works, nothing moved
        with pytest.raises(WatchdogStop) as e:
            agent.step({"arm1": [0.1, 0.1, 0.1]})
        assert (e.value.state, e.value.request) == ("stop", "action")
        assert "no Control from controller" in e.value.reason and "The next Control starts it again" in e.value.reason
        assert agent.observe().simulated_time == before  # the refused action was not applied
        after = agent.step({"arm1": [0.1, 0.1, 0.1]})  # the next one starts the spine again and steps once
        assert after.simulated_time == pytest.approx(before + agent.handshake.time_step)
