# SPDX-License-Identifier: Apache-2.0
"""gecko.click.SimulationServer: a simulation written in Python served in
Click lockstep. The C++ gecko-controller drives one in a child process (two
runs, one after the other: the first one's Error frees the simulation); the
Python Controller drives one on a thread of the test: handshake, sensors
without stepping, exactly one step per Control, resets from both sides,
backend failures, one controller at a time, duplicates and bad requests,
the watchdog, and the stop cycles of a shutdown."""

import inspect
import math
import os
import signal
import threading
import time

import msgpack
import pytest

from conftest import ROOT, eventually, python_exe

import gecko
import gecko.click
import gecko.spine
from gecko import message
from gecko.msgs import click as mc

WAIT = 20.0  # every wait of these tests, generous


@pytest.fixture(autouse=True)
def built_programs():
    """The programs these tests need: a test that cannot run fails, it is never skipped."""
    d = os.environ.get("GECKO_BIN_DIR") or os.path.join(ROOT, "build", "bin")
    for name in ("geckocore", "gecko-controller"):
        assert os.access(os.path.join(d, name), os.X_OK), "%s is not built in %s (GECKO_BIN_DIR)" % (name, d)
    return d


class Arm(gecko.click.Backend):
    """Two joints: `shoulder` takes its angle command at once, `elbow`
    integrates its velocity command. Counts what the server asks of it;
    `fault`, if set, is raised by the next step()."""

    dt = 0.01

    def __init__(self):
        self.steps = self.resets = self.stops = 0
        self.ended_reasons = []
        self.fault = None
        self._initial_state()

    def _initial_state(self):
        self.q, self.v, self.command, self.t = [0.1, -0.2], [0.0, 0.0], [0.1, 0.0], 0.0

    def handshake(self):
        arm = mc.HandshakeObject(controls_in_order=["shoulder", "elbow"],
                                 control_types_in_order=[mc.ValueType.angle, mc.ValueType.angular_velocity_1d],
                                 joint_sensors_in_order=["shoulder", "elbow"],
                                 joint_sensors=[mc.ValueType.angle, mc.ValueType.angular_velocity_1d])
        return mc.Handshake(objects={"arm": arm}, time_step=self.dt)

    def apply(self, control):
        if "arm" in control.objects and control.objects["arm"].values:
            self.command = list(control.objects["arm"].values)

    def step(self):
        if self.fault is not None:
            fault, self.fault = self.fault, None
            raise fault
        angle, velocity = self.command
        self.v = [(angle - self.q[0]) / self.dt, velocity]
        self.q = [angle, self.q[1] + velocity * self.dt]
        self.t += self.dt
        self.steps += 1

    def sensors(self):
        arm = mc.SensorObject(angle_sensors=list(self.q), angular_velocity_sensors=list(self.v))
        return mc.Sensor(objects={"arm": arm}, simulated_time=self.t)

    def reset(self):
        self._initial_state()
        self.resets += 1

    def stop_actuators(self):
        self.command = [self.q[0], 0.0]  # hold the angle, no velocity
        self.stops += 1

    def ended(self, reason):
        self.ended_reasons.append(reason)


# The simulation of a child process: Arm behind a SimulationServer until
# SIGINT, then one line with its counts (stop commands of the shutdown included).
CHILD = ("import sys\nimport gecko\nimport gecko.click\nfrom gecko.msgs import click as mc\n\n"
         + inspect.getsource(Arm) + r'''

class ChildArm(Arm):
    shutdown_stops = 0

    def stop_actuators(self):
        super().stop_actuators()
        if server.status().state == "shutdown":
            self.shutdown_stops += 1


gecko.install_signal_handlers()
arm = ChildArm()
with gecko.Node(name="py-sim") as node:
    server = gecko.click.SimulationServer(node, sys.argv[1], arm)
    print("ready", flush=True)
    server.run()
    s = server.status()
    print("over state=%s steps=%d arm_steps=%d resets=%d refused=%d shutdown_stops=%d ended=%d" % (
        s.state, s.steps, arm.steps, arm.resets, s.refused_requests, arm.shutdown_stops, len(arm.ended_reasons)),
        flush=True)
''')


def test_gecko_controller_drives_a_python_simulation(rig, built_programs):
    sim = rig.spawn([python_exe(), "-c", CHILD, "pysim"])
    sim.wait_line("^ready", WAIT)
    for run in range(2):  # the second run is accepted once the first ended its run (Error)
        ctl = rig.spawn([os.path.join(built_programs, "gecko-controller"), "--key", rig.key, "--sim", "pysim",
                         "--steps", "300"])
        assert ctl.wait(120) == 0, "\n".join(ctl.out + ctl.err)
        done = [line for line in ctl.out if line.startswith("done:")]
        assert done and done[0].startswith("done: 300 steps") and "1 reset;" in done[0], ctl.out
        assert "arm" in ctl.out[0] and "shoulder(Angle) elbow(AngularVelocity1D)" in ctl.out[0], ctl.out
        assert not [line for line in ctl.err if "refused" in line or "error" in line.lower()], ctl.err
    sim.p.send_signal(signal.SIGINT)
    line = sim.wait_line("^over", WAIT)
    assert sim.wait(WAIT) == 0, "\n".join(sim.out + sim.err)
    counts = dict(word.split("=") for word in line.split()[1:])
    assert counts == {"state": "over", "steps": "600", "arm_steps": "600", "resets": "2", "refused": "0",
                      "shutdown_stops": "5", "ended": "2"}, line


class Served:
    """A SimulationServer of an Arm on a thread of the test, on a node of its own."""

    def __init__(self, rig, name="sim", **options):
        self.arm = Arm()
        self.node = rig.node("py-sim")
        self.server = gecko.click.SimulationServer(self.node, name, self.arm, **options)
        self.thread = threading.Thread(target=self.server.run, name="simulation-server", daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the server's run() did not return after shutdown()"


@pytest.fixture
def serve(rig):
    started = []

    def start(**options):
        started.append(Served(rig, **options))
        return started[-1]

    yield start
    for s in started:
        s.stop()


def controller(rig, name="py-ctl", simulation="sim"):
    return gecko.click.Controller(rig.node(name), simulation, timeout=WAIT, connect_timeout=WAIT)


def control(shoulder, elbow_velocity):
    return mc.Control(objects={"arm": mc.ControlObject(values=[shoulder, elbow_velocity])})


def test_handshake_sensors_steps_and_reset(rig, serve):
    sim = serve()
    ctl = controller(rig)
    hs = ctl.handshake()
    assert set(hs.objects) == {"arm"} and hs.time_step == pytest.approx(0.01)
    assert hs.objects["arm"].controls_in_order == ["shoulder", "elbow"]
    assert hs.objects["arm"].control_types_in_order == [mc.ValueType.angle, mc.ValueType.angular_velocity_1d]
    s = ctl.sensors().sensor
    assert s.simulated_time == 0.0 and s.objects["arm"].angle_sensors == [0.1, -0.2]
    assert sim.arm.steps == 0  # reading moves nothing

    for _ in range(25):
        r = ctl.step(control(0.3, 1.0))
        assert r.is_sensor(), r.value
    assert r.sensor.simulated_time == pytest.approx(0.25)
    assert r.sensor.objects["arm"].angle_sensors == pytest.approx([0.3, -0.2 + 0.25])
    assert sim.arm.steps == 25 and sim.server.status().steps == 25  # exactly one step per Control
    assert ctl.sensors().sensor.simulated_time == pytest.approx(0.25) and sim.arm.steps == 25
    status = sim.server.status()
    assert status.controller == ctl.id and status.running and status.state == "idle"

    ctl.reset()
    assert sim.arm.resets == 1 and sim.server.status().resets == 1 and not sim.server.status().running
    s = ctl.sensors().sensor
    assert s.simulated_time == 0.0 and s.objects["arm"].angle_sensors == [0.1, -0.2]
    assert ctl.step(control(0.2, 0.0)).sensor.simulated_time == pytest.approx(0.01)
    assert sim.arm.steps == 26 and sim.server.status().refused_requests == 0


def test_resets_from_the_simulation_side_and_failures_of_the_backend(rig, serve):
    sim = serve()
    ctl = controller(rig)
    ctl.handshake()
    assert ctl.step(control(0.3, 1.0)).is_sensor()

    sim.server.request_reset()  # the simulation's own reset: the next request learns of it
    r = ctl.step(control(0.3, 1.0))
    assert r.is_reset() and sim.arm.resets == 1 and sim.arm.steps == 1, r.value
    assert ctl.sensors().sensor.simulated_time == 0.0
    assert ctl.step(control(0.3, 1.0)).is_sensor() and sim.arm.steps == 2

    sim.arm.fault = gecko.click.BackendReset("the scene was reloaded")
    r = ctl.step(control(0.3, 1.0))
    assert r.is_reset(), r.value
    assert sim.arm.resets == 1 and sim.arm.steps == 2  # answered Reset, Backend.reset() not called again
    assert sim.server.status().simulation_resets == 1

    sim.arm.fault = RuntimeError("motor 2 overheated")
    r = ctl.step(control(0.3, 1.0))
    assert r.is_error() and r.error.reason == "motor 2 overheated" and sim.arm.steps == 2
    status = sim.server.status()
    assert status.refused_requests == 1 and status.backend_errors == 1
    assert ctl.step(control(0.3, 1.0)).is_sensor() and sim.arm.steps == 3  # the run goes on


def test_one_controller_at_a_time_and_error_ends_the_run(rig, serve):
    sim = serve()
    first, second = controller(rig, "first"), controller(rig, "second")
    first.handshake()
    assert first.step(control(0.3, 0.0)).is_sensor()

    r = second.sensors()
    assert r.is_error() and "is driven by controller '%s'" % first.id in r.error.reason, r.value
    with pytest.raises(gecko.Error) as e:
        second.handshake()
    assert e.value.code == "remote" and first.id in str(e.value)
    assert first.step(control(0.3, 0.0)).is_sensor()  # the one in charge goes on

    assert first.error("done")  # acknowledged: Ended
    assert sim.arm.ended_reasons == ["done"] and sim.server.status().controller == ""
    second.handshake()
    assert second.step(control(0.3, 0.0)).is_sensor() and sim.arm.steps == 3
    assert sim.server.status().controller == second.id
    r = first.sensors()
    assert r.is_error() and second.id in r.error.reason, r.value


def test_a_controller_whose_process_ended_or_that_went_silent_is_replaced(rig, serve):
    sim = serve(takeover_after=0)  # never by silence: only the end of its subscription frees it
    gone, other = controller(rig, "gone"), controller(rig, "other")
    gone.handshake()
    assert gone.step(control(0.3, 0.0)).is_sensor()
    assert other.sensors().is_error()
    gone.node.close()  # as if its process ended: its answer subscription closes
    eventually(lambda: other.sensors().is_sensor(), WAIT, "the next controller accepted")
    assert sim.server.status().controller == other.id

    serve(name="sim2", takeover_after=0.5)
    silent, late = controller(rig, "silent", "sim2"), controller(rig, "late", "sim2")
    started = time.monotonic()  # before the server hears from it: the silence is measured from its request
    silent.handshake()
    r = late.sensors()
    assert r.is_error() and silent.id in r.error.reason, r.value
    eventually(lambda: late.sensors().is_sensor(), WAIT, "a takeover after 0.5 s of silence")
    assert time.monotonic() - started >= 0.5


def test_duplicates_stale_requests_bad_controls_and_bad_requests(rig, serve):
    sim = serve()
    node = rig.node("raw")
    requests = node.publisher("sim/click/request", mc.Request)
    answers = node.subscriber("sim/click/answer", mc.Answer, depth=64)
    assert requests.wait_for_subscribers(1, WAIT)
    me = "raw-controller"

    def ask(rid, kind=None, payload=None, **body):
        """Sends request #rid (a Request, or raw bytes) and returns its answer."""
        if payload is None:
            payload = message.encode(mc.Request(controller_id=me, request_id=rid, kind=kind, **body))
        deadline = time.monotonic() + WAIT
        resend_at = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() >= resend_at:  # until the answer path is up, the first may be lost
                requests.publish_payload(payload)
                resend_at = time.monotonic() + 1.0
            a = answers.receive(0.05)
            if a is not None and a.controller_id == me and a.answers == rid:
                return a
        raise AssertionError("no answer to request #%d" % rid)

    def step(rid, values, obj="arm"):
        return ask(rid, mc.RequestKind.control, control=mc.Control(objects={obj: mc.ControlObject(values=values)}))

    assert ask(1, mc.RequestKind.handshake_init, handshake_init=mc.HandshakeInit()).kind == mc.AnswerKind.handshake
    first = step(2, [0.3, 1.0])
    assert first.kind == mc.AnswerKind.sensor and sim.arm.steps == 1
    dup_before = sim.server.status().duplicate_requests
    again = step(2, [0.3, 1.0])  # a re-send: the cached answer, no second step
    assert again == first and sim.arm.steps == 1
    assert sim.server.status().duplicate_requests > dup_before
    assert step(3, [0.3, 1.0]).kind == mc.AnswerKind.sensor and sim.arm.steps == 2
    late = step(2, [0.3, 1.0])
    assert late.kind == mc.AnswerKind.error and "older than its last one (#3)" in late.error.reason
    assert sim.arm.steps == 2 and sim.server.status().stale_requests >= 1

    # Controls the handshake does not allow: an Error each, nothing steps.
    for rid, values, obj, why in [(4, [0.1], "arm", "1 values for 2 controls"),
                                  (5, [0.1, 0.2], "leg", "'leg' is not in the handshake"),
                                  (6, [math.nan, 0.0], "arm", "not finite")]:
        a = step(rid, values, obj)
        assert a.kind == mc.AnswerKind.error and why in a.error.reason, a
    a = ask(7, mc.RequestKind.control)
    assert a.kind == mc.AnswerKind.error and "Control request without its message" in a.error.reason
    # A request that does not decode, but says who sent it.
    a = ask(8, payload=msgpack.packb({"controller_id": me, "request_id": 8, "kind": "Jump"}))
    assert a.kind == mc.AnswerKind.error and "request #8 did not decode" in a.error.reason, a
    assert sim.arm.steps == 2
    assert step(9, [0.3, 1.0]).kind == mc.AnswerKind.sensor and sim.arm.steps == 3  # the server goes on
    assert ask(10, mc.RequestKind.error, error=mc.Error(reason="bye")).kind == mc.AnswerKind.ended
    assert sim.thread.is_alive()


def test_the_watchdog_stops_the_actuators_and_says_so_once(rig, serve):
    sim = serve(watchdog=0.3)
    ctl = controller(rig)
    ctl.handshake()
    before = ctl.step(control(0.3, 1.0)).sensor
    stops = sim.arm.stops
    # The controller pauses: the watchdog trips (the event to wait for), the actuators are stopped.
    eventually(lambda: sim.server.status().watchdog_trips == 1, WAIT, "the watchdog trip")
    assert sim.arm.stops > stops and sim.arm.command == [0.3, 0.0]
    status = sim.server.status()
    assert status.state == "stop" and "watchdog" in status.stop_cause and status.controller == ""
    assert ctl.sensors().sensor.simulated_time == before.simulated_time  # reading still works, nothing moved

    r = ctl.step(control(0.3, 1.0))
    assert r.is_error() and r.is_watchdog_refusal() and not r.is_paused_refusal(), r.value
    assert gecko.click.WATCHDOG_REFUSAL_MARKER + ctl.id + "' within 300 ms" in r.error.reason
    assert isinstance(gecko.spine.spine_error(r.error.reason), gecko.spine.WatchdogStop)
    assert sim.arm.steps == 1  # not applied
    r = ctl.step(control(0.3, 1.0))  # the next one starts the simulation again
    assert r.is_sensor() and r.sensor.simulated_time == pytest.approx(before.simulated_time + 0.01)
    assert sim.arm.steps == 2 and sim.server.status().controller == ctl.id


def test_a_spine_agent_drives_it(rig, serve):
    sim = serve()
    with gecko.spine.Agent(rig.node("agent"), "sim", timeout=WAIT, connect_timeout=WAIT) as agent:
        assert agent.start().simulated_time == 0.0
        for _ in range(10):
            obs = agent.step({"arm": [0.2, -1.0]})
        assert obs.simulated_time == pytest.approx(0.1)
        now = agent.observe()  # nothing moves
        assert (now.simulated_time, now.objects) == (obs.simulated_time, obs.objects)
        assert sim.arm.steps == 10
    assert sim.arm.ended_reasons == ["agent stopped"] and sim.server.status().controller == ""


def test_shutdown_sends_the_stop_cycles(rig, serve):
    sim = serve(stop_cycles=3)
    ctl = controller(rig)
    ctl.handshake()
    assert ctl.step(control(0.3, 1.0)).is_sensor()  # started: no stop commands while it runs
    stops = sim.arm.stops
    sim.stop()
    assert sim.arm.stops - stops == 3
    status = sim.server.status()
    assert status.state == "over" and not sim.server.spin_once(0.01)


def test_exit_on_error_ends_run_after_the_stop_cycles(rig, serve):
    sim = serve(exit_on_error=True, stop_cycles=2)
    ctl = controller(rig)
    ctl.handshake()
    assert ctl.step(control(0.3, 1.0)).is_sensor()
    assert ctl.error("one-shot run done")
    sim.thread.join(WAIT)
    assert not sim.thread.is_alive() and sim.server.status().state == "over"
    assert sim.arm.ended_reasons == ["one-shot run done"]


def test_a_backend_missing_a_method_is_refused_at_construction(rig):
    class Incomplete:
        def handshake(self):
            return mc.Handshake()

    class NoStop(Arm):
        stop_actuators = gecko.click.Backend.stop_actuators

    node = rig.node("py-sim")
    with pytest.raises(TypeError) as e:
        gecko.click.SimulationServer(node, "sim", Incomplete())
    assert "apply" in str(e.value) and "stop_actuators" in str(e.value)
    with pytest.raises(TypeError) as e:
        gecko.click.SimulationServer(node, "sim", NoStop())
    assert "has no method stop_actuators" in str(e.value)
