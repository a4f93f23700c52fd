# SPDX-License-Identifier: Apache-2.0
"""An agent's action/observation loop against a spine, after Upkie's agents:
a C++ process owns the actuators (gecko-sim, or any
gecko::click::SimulationServer), runs the spine's state machine
(gecko/spine/include/gecko/spine.hpp) and serves Click lockstep; the agent
starts it, acts and observes one cycle at a time, and stops it.

    with gecko.Node("demo", "agent") as node, gecko.spine.Agent(node, "sim") as agent:
        obs = agent.start()                      # spine: stop -> start -> idle; the first observation
        while gecko.ok():
            obs = agent.step({"arm1": [0.1, 0.0, -0.2]})   # one action, one cycle, its observation
        # leaving the block stops the spine (stop commands) and frees it for the next agent

Observations are Click Sensor messages (gecko.msgs.click.Sensor), actions a
dict {object: [one value per control]} or a Click Control. How the requests
map onto the spine (gecko/click/src/simulation.cpp):

    start()   HandshakeInit   stop (if idle) -> start -> idle; nothing moves
    observe() SensorRequest   observation; nothing moves
    step(a)   Control         action: apply, exactly one simulation step
    reset()   Reset           stop -> start with the initial state -> idle
    stop()    Error           stop: stop commands; another agent may start it

A refusal that comes from the spine's state machine ("spine: request
'action' is invalid in state 'stop': ...") is raised as SpineError, with the
state it names; one caused by the spine's watchdog as WatchdogStop. Any other
refusal is a plain gecko.Error (code "remote"). A reset from the
simulation's side answers the next request with SimulationReset.

The Click server starts the spine by itself on the first Control. When its
watchdog stopped the spine (no action for --watchdog-ms, 1000 ms by default
in gecko-sim), the next step() raises WatchdogStop and its action is not
applied; the step() after it starts the spine again from where the robot
stood (start() and reset() do too).
"""

import re

from . import click
from .errors import Error
from .msgs import click as mc

__all__ = ["Agent", "SpineError", "WatchdogStop", "SimulationReset", "spine_error"]


class SpineError(Error):
    """The spine's state machine refused a request. `reason` is the spine's own
    sentence, `state` the state it names ("stop", "idle", "shutdown", ...; None
    if it names none), `request` the refused request ("action", "start", ...)."""

    def __init__(self, reason, state=None, request=None, simulation=""):
        where = "simulation '%s': " % simulation if simulation else ""
        super().__init__("remote", where + reason)
        self.reason = reason
        self.state = state
        self.request = request


class WatchdogStop(SpineError):
    """The spine's watchdog stopped the actuators: no action came for too long.
    start() (or reset()) starts it again."""


class SimulationReset(Error):
    """The simulation was reset from its side (e.g. gecko-sim's `reset`
    command): the request was not served; observe() and go on."""

    def __init__(self, message):
        super().__init__("remote", message)


_SPINE = re.compile(r"\bspine: request '.*")
_STATE = re.compile(r"state '(\w+)'")
_REQUEST = re.compile(r"request '(\w+)'")


def spine_error(text, simulation=""):
    """The SpineError (or WatchdogStop) that `text` (an Error answer's reason,
    possibly wrapped) reports, or None if the spine is not what refused."""
    m = _SPINE.search(text or "")
    if not m:
        return None
    reason = m.group(0)
    state, request = _STATE.search(reason), _REQUEST.search(reason)
    kind = WatchdogStop if "watchdog" in reason else SpineError
    return kind(reason, state and state.group(1), request and request.group(1), simulation)


class Agent:
    """The agent side of a spine served over Click lockstep on the topics
    SIMULATION/click/request and SIMULATION/click/answer under the node's key.
    Keyword arguments go to gecko.click.Controller (timeout, connect_timeout,
    ...). Not thread-safe: use it from one thread."""

    def __init__(self, node, simulation="sim", **controller_options):
        self.controller = click.Controller(node, simulation, **controller_options)
        self.simulation = simulation
        self.handshake = None   # what the spine offers (gecko.msgs.click.Handshake), set by start()
        self.started = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _refused(self, e):
        """Re-raises a remote refusal as SpineError when the spine refused."""
        wrapped = spine_error(str(e), self.simulation) if e.code == "remote" else None
        if wrapped is not None:
            raise wrapped from e
        raise e

    def start(self):
        """Starts the spine (stop commands first if it ran) and returns the
        first observation. Nothing moves."""
        try:
            self.handshake = self.controller.handshake()
        except Error as e:
            self._refused(e)
        self.started = True
        return self.observe()

    def observe(self):
        """The observation now, without stepping."""
        return self._sensor(self.controller.sensors(), "an observation")

    def step(self, action):
        """Applies `action` for exactly one step and returns the observation
        after it. `action`: {object: [values in controls_in_order]} or a Control."""
        if not self.started:
            raise Error("protocol", "step() before start(): start the spine first (it checks actions against "
                                    "what start() learns)")
        if not isinstance(action, mc.Control):
            control = mc.Control()
            for name, values in action.items():
                control.objects[name] = mc.ControlObject(values=[float(v) for v in values])
            action = control
        try:
            result = self.controller.step(action)
        except Error as e:
            self._refused(e)
        return self._sensor(result, "an action")

    def reset(self):
        """Returns the simulation to its initial state (the spine stops, then
        starts again) and returns the observation there."""
        if not self.started:
            self.start()
        try:
            self.controller.reset()
        except Error as e:
            self._refused(e)
        return self.observe()

    def stop(self):
        """Stops the spine (stop commands) and frees it for another agent.
        Never raises; a stopped agent may start() again."""
        if self.started:
            self.started = False
            self.controller.error("agent stopped")

    def _sensor(self, result, what):
        if result.is_sensor():
            return result.sensor
        if result.is_reset():  # reset from the simulation's side: the action was not applied
            raise SimulationReset("simulation '%s' was reset from its side, %s was not served: observe() and go on "
                                  "from its initial state" % (self.simulation, what))
        reason = result.error.reason or "(no reason given)"
        raise spine_error(reason, self.simulation) or Error(
            "remote", "simulation '%s' refused %s: %s" % (self.simulation, what, reason))
