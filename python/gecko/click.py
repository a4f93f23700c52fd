# SPDX-License-Identifier: Apache-2.0
"""The controller side of the Click lockstep protocol over Gecko topics, as
C++ gecko::click::Controller (gecko/click/include/gecko/click/controller.hpp).

    node = gecko.Node("demo", "controller")
    ctl = gecko.click.Controller(node, "sim")     # topics sim/click/request, sim/click/answer
    hs = ctl.handshake()                          # what the scene offers
    control = ctl.make_control()                  # every object, values zeroed
    control.objects["robot1"].values = [0.3, -0.2]
    result = ctl.step(control)                    # exactly one simulation step
    if result.is_sensor(): use(result.sensor)
    elif result.is_reset(): restart()             # the simulation was reset and is paused
    else: fail(result.error.reason)

Porting a pclick controller: pclick's `client.send(handshake_init)` /
`recv()` pairs become handshake(), sensors(), step(), reset() and error();
the messages carry the same fields, in snake_case (gecko.msgs.click).

Every request names the controller and a request id growing by one; the
answer repeats both. While waiting, the controller re-sends the same request
now and then: the simulation answers a re-sent request from its cache
without stepping again, so a lost message costs time, never a double step.
"""

import math
import time
import uuid

from . import message
from .errors import Error
from .msgs import click as mc


# The start of the reason of a Control refused because the simulation is paused (C++ paused_refusal_prefix).
PAUSED_REFUSAL_PREFIX = "paused: "
# What the reason of a Control refused because the watchdog had stopped the simulation holds (C++ watchdog_refusal_marker).
WATCHDOG_REFUSAL_MARKER = "watchdog: no Control from controller '"


class StepResult:
    """The outcome of a Control or a SensorRequest: a Sensor, a Reset or an Error."""
    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        self.kind = kind  # "sensor", "reset" or "error"
        self.value = value

    def is_sensor(self):
        return self.kind == "sensor"

    def is_reset(self):
        return self.kind == "reset"

    def is_error(self):
        return self.kind == "error"

    def is_paused_refusal(self):
        """An Error that says the simulation was paused and did not apply the
        Control (held longer than the server's paused_control_hold): send it
        again to wait anew."""
        return self.kind == "error" and (self.value.reason or "").startswith(PAUSED_REFUSAL_PREFIX)

    def is_watchdog_refusal(self):
        """An Error that says the simulation's watchdog had stopped it (no
        Control for too long): not applied; the next Control starts it again."""
        return self.kind == "error" and WATCHDOG_REFUSAL_MARKER in (self.value.reason or "")

    @property
    def sensor(self):
        if self.kind == "sensor":
            return self.value
        if self.kind == "error":
            raise Error("remote", "expected a Sensor, the simulation answered with an Error: " + _reason(self.value))
        raise Error("protocol", "expected a Sensor, the simulation answered with a Reset (it was reset and is "
                                "paused until the next Control)")

    @property
    def reset(self):
        if self.kind == "reset":
            return self.value
        raise Error("protocol", "expected a Reset, the simulation answered with " + self.kind)

    @property
    def error(self):
        if self.kind == "error":
            return self.value
        raise Error("protocol", "expected an Error, the simulation answered with " + self.kind)


def _reason(e):
    return e.reason or "(no reason given)"


def check_control(handshake, control):
    """None if `control` fits `handshake` (as C++ gecko::click::check_control), else why not."""
    for name, obj in control.objects.items():
        announced = handshake.objects.get(name)
        if announced is None:
            return "object '%s' is not in the handshake (known: %s)" % (name, ", ".join(sorted(handshake.objects)))
        sets = [(f, getattr(obj, f)) for f in ("values", "angles", "angular_velocities", "torques") if getattr(obj, f)]
        if len(sets) > 1:
            return "object '%s' sets %s: at most one of values, angles, angular_velocities, torques" % (
                name, " and ".join(f for f, _ in sets))
        n = len(announced.controls_in_order)
        if sets:
            field, values = sets[0]
            if len(values) != n:
                return "object '%s' has %d %s for %d controls" % (name, len(values), field, n)
            need = {"angles": mc.ValueType.angle, "angular_velocities": mc.ValueType.angular_velocity_1d,
                    "torques": mc.ValueType.torque_1d}.get(field)
            if need is not None and any(t != need for t in announced.control_types_in_order):
                return "object '%s' uses deprecated '%s' but not every control is %s" % (name, field, need.wire)
            for v in values:
                if not math.isfinite(v):
                    return "object '%s' has a value that is not finite" % name
        for event in obj.control_events:
            if event not in announced.control_events:
                return "object '%s' has no control event '%s'" % (name, event)
    return None


class Controller:
    """Drives one simulation (or robot) that serves Click lockstep on its paired
    topics under the node's key. Not thread-safe: use it from one thread.

    timeout: longest wait for one answer (re-sends included), s.
    connect_timeout: longest wait, at the first request, for the simulation.
    resend_after: re-send an unanswered request after this long (sooner, from
    5 ms doubling, until the first answer proved the path); 0: never.
    spin_us: while it waits for an answer, the controller busy-polls the
    shared-memory link from a simulation on this host this long before it
    sleeps. An answer often comes within that, and a thread that did not
    sleep need not be woken: on 2 vCPUs, ~5,000 steps/s become ~10,000
    (docs/BENCHMARKS.md, "Python"). At most this much CPU per step is spent
    on it; 0: sleep at once."""

    def __init__(self, node, simulation="sim", timeout=5.0, connect_timeout=5.0, resend_after=0.25,
                 controller_id=None, spin_us=50):
        self.node = node
        self.simulation = simulation
        self.topics = mc.lockstep_topics(simulation)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.resend_after = resend_after
        self.id = controller_id or "%s-%s" % (node.name, uuid.uuid4().hex[:8])
        self._requests = node.publisher(self.topics[0], mc.Request)
        self._answers = node.subscriber(self.topics[1], mc.Answer, depth=1024, spin_us=spin_us)
        # One Request for every exchange (its id and body change): no message built per step.
        # answer_subscriber: while the simulation sees it connected, we are alive.
        self._request = mc.Request(controller_id=self.id, answer_subscriber=self._answers.id)
        self._last_id = 0
        self._peer_seen = False
        self._path_ok = False
        self._handshake = None
        self.stats = {"requests": 0, "resends": 0, "answers": 0, "ignored_answers": 0}

    def _exchange(self, kind, field, body, what):
        if not self._peer_seen:
            if not self._requests.wait_for_subscribers(1, self.connect_timeout):
                raise Error("no_peer", "no simulation '%s' subscribes to '%s' under key '%s' after %d ms: is it "
                                       "running with the same key?" % (self.simulation, self.topics[0],
                                                                       self.node.key, self.connect_timeout * 1000))
            self._peer_seen = True
        self._last_id += 1
        rid = self._last_id
        body.request_id = rid
        request = self._request
        request.request_id = rid
        request.kind = kind
        setattr(request, field, body)
        try:
            payload = message.encode(request)
        finally:
            setattr(request, field, None)  # holds no caller's message between exchanges
        self._requests.publish_payload(payload)
        self.stats["requests"] += 1
        start = time.monotonic()
        deadline = start + self.timeout
        interval = self.resend_after if self._path_ok else min(0.005, self.resend_after)
        resend_at = start + interval
        receive = self._answers.receive
        while True:
            now = time.monotonic()
            until = min(deadline, resend_at) if self.resend_after > 0 else deadline
            a = receive(max(0.0, until - now))
            if a is not None:
                if a.controller_id == self.id and a.answers == rid:
                    self.stats["answers"] += 1
                    self._path_ok = True
                    return a
                self.stats["ignored_answers"] += 1
                continue
            now = time.monotonic()
            if now >= deadline:
                raise Error("timeout", "no answer to %s #%d from simulation '%s' within %d ms (topic '%s', key '%s')"
                            % (what, rid, self.simulation, self.timeout * 1000, self.topics[1], self.node.key))
            if self.resend_after > 0 and now >= resend_at:
                if self._requests.subscriber_count() == 0:  # the simulation exited, or its link dropped
                    raise Error("no_peer", "simulation '%s' is gone: nothing subscribes to '%s' any more (it exited, "
                                           "or its link dropped) while %s #%d waited for its answer"
                                % (self.simulation, self.topics[0], what, rid))
                self._requests.publish_payload(payload)  # same id: answered from the cache if already served
                self.stats["resends"] += 1
                interval = min(interval * 2, self.resend_after)
                resend_at = now + interval

    @staticmethod
    def _result(a, what):
        if a.kind == mc.AnswerKind.sensor and a.sensor is not None:
            return StepResult("sensor", a.sensor)
        if a.kind == mc.AnswerKind.reset:
            return StepResult("reset", a.reset or mc.Reset())
        if a.kind == mc.AnswerKind.error:
            return StepResult("error", a.error or mc.Error())
        raise Error("protocol", "the simulation answered %s with %s" % (what, a.kind.wire))

    def handshake(self):
        """Sends a HandshakeInit and returns the Handshake (kept: last_handshake)."""
        for _ in range(2):  # a pending simulation-side reset answers the first one
            a = self._exchange(mc.RequestKind.handshake_init, "handshake_init", mc.HandshakeInit(), "HandshakeInit")
            if a.kind == mc.AnswerKind.handshake and a.handshake is not None:
                self._handshake = a.handshake
                return a.handshake
            if a.kind == mc.AnswerKind.reset:
                continue
            if a.kind == mc.AnswerKind.error:
                raise Error("remote", "simulation '%s' refused the handshake: %s" % (
                    self.simulation, _reason(a.error or mc.Error())))
            raise Error("protocol", "simulation '%s' answered a HandshakeInit with %s" % (self.simulation, a.kind.wire))
        raise Error("protocol", "simulation '%s' answered two HandshakeInits with Reset" % self.simulation)

    @property
    def last_handshake(self):
        if self._handshake is None:
            raise Error("protocol", "no handshake yet: call handshake() first")
        return self._handshake

    def sensors(self):
        """The sensors now, without stepping (a StepResult)."""
        return self._result(self._exchange(mc.RequestKind.sensor_request, "sensor_request", mc.SensorRequest(),
                                           "SensorRequest"), "a SensorRequest")

    def step(self, control):
        """Sends `control` and returns the outcome of exactly one step (a StepResult)."""
        if self._handshake is None:
            raise Error("protocol", "step() before handshake(): the controller checks controls against the "
                                    "handshake, call handshake() first")
        wrong = check_control(self._handshake, control)
        if wrong:
            raise Error("invalid_argument", "control refused before sending: " + wrong)
        return self._result(self._exchange(mc.RequestKind.control, "control", control, "Control"), "a Control")

    def reset(self):
        """Resets the simulation to its initial state; it pauses until the next Control."""
        a = self._exchange(mc.RequestKind.reset, "reset", mc.Reset(direction=mc.Direction.request), "Reset")
        if a.kind == mc.AnswerKind.reset:
            return
        if a.kind == mc.AnswerKind.error:
            raise Error("remote", "simulation '%s' refused the reset: %s" % (self.simulation,
                                                                            _reason(a.error or mc.Error())))
        raise Error("protocol", "simulation '%s' answered a Reset with %s" % (self.simulation, a.kind.wire))

    def error(self, reason):
        """Ends the run (the simulation frees itself for another controller).
        True if the simulation acknowledged. Never raises for lack of an answer."""
        try:
            a = self._exchange(mc.RequestKind.error, "error",
                               mc.Error(direction=mc.Direction.request, reason=reason), "Error")
            return a.kind == mc.AnswerKind.ended
        except Error as e:
            self.node.log.warning("Error request not acknowledged: %s", e)
            return False

    def make_control(self):
        """A Control with every object that has controls, its values zeroed."""
        hs = self.last_handshake
        return mc.Control(objects={name: mc.ControlObject(values=[0.0] * len(o.controls_in_order))
                                   for name, o in hs.objects.items() if o.controls_in_order})


# The simulation side of the protocol (click_server.py), under the same module as the controller.
from .click_server import Backend, BackendReset, SimulationServer, SimulationStatus  # noqa: E402,F401
