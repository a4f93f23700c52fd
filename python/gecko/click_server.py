# SPDX-License-Identifier: Apache-2.0
"""The simulation side of the Click lockstep protocol over Gecko topics, as
C++ gecko::click::SimulationServer (gecko/click/include/gecko/click/simulation.hpp,
whose doc comment is the specification): a simulation written in Python (a
PyBullet or MuJoCo loop, say) answers gecko.click.Controller, gecko.spine.Agent,
gecko-controller and any C++ gecko::click::Controller exactly as gecko-sim does.

    class Arm(gecko.click.Backend):               # handshake(), apply(), step(), sensors(), ...
        ...
    gecko.install_signal_handlers()
    with gecko.Node("demo", "my-sim") as node:
        server = gecko.click.SimulationServer(node, "sim", Arm(), watchdog=0.5)
        server.run()                              # until SIGINT; stop cycles before it returns

Protocol, on SIM/click/request and SIM/click/answer:

    request        answer     what the server does
    HandshakeInit  Handshake  (re)starts the session: stop commands, then start; nothing steps
    SensorRequest  Sensor     Backend.sensors(); nothing steps
    Control        Sensor     checked against the handshake, then apply() and exactly one step()
    Reset          Reset      stop commands, Backend.reset(): paused until the next Control
    Error          Ended      the run ends (stop commands); the controller slot is free again

- A Control the handshake does not allow is answered with an Error; nothing steps.
- request_reset() (the simulation side) resets at once; the controller's
  next request, whatever it is except Error, is answered with a Reset.
- One controller at a time: another one gets an Error naming the one in
  charge until that one sends Error, its watchdog trips, its answer
  subscription closes (its process ended), or it was silent for
  `takeover_after` s.
- Duplicates: per controller, the last request id and its answer are kept;
  the same id again gets the same answer without stepping, an older id is
  never acted on and gets an Error saying so.
- Watchdog: once a Control stepped (since the last handshake or reset), no
  Control within `watchdog` s stops the simulation: Backend.stop_actuators()
  every cycle. The next Control of the controller in charge is answered
  with an Error in the spine's words that holds
  gecko.click.WATCHDOG_REFUSAL_MARKER (StepResult.is_watchdog_refusal();
  gecko.spine.Agent raises WatchdogStop) and is not applied; the Control
  after it starts the simulation again.
- A backend's step(), apply() or sensors() raising BackendReset (the
  simulation reset itself) answers that request with a Reset and restarts
  paused, without calling Backend.reset(); any other exception of the
  backend becomes an Error answer carrying its text.
- Interrupt (gecko.ok() false after SIGINT/SIGTERM with
  gecko.install_signal_handlers(), shutdown(), or the node closed):
  stop_actuators() `stop_cycles` times, then run() returns.

As in C++, the spine's stop discipline holds: while stopped, every cycle
(`idle_cycle`, 10 ms, when no request comes) calls stop_actuators(), and a
start waits until `stop_cycles` of them went out since the stop.

Differs from C++: the spine's state machine is not a separate object (the
same transitions, inline); there are no control services (SIM/control/pause,
resume, stop, start, reset, status), no SIM/status topic, no paused state
(so no held Controls, no `paused:` refusals) and no report_brain_frequency().
status() gives the counters in-process.
"""

import dataclasses
import threading
import time

from . import message, runtime
from .errors import DecodeError
from .msgs import click as mc

__all__ = ["Backend", "BackendReset", "SimulationServer", "SimulationStatus"]

_MIN_QUEUE_DEPTH = 1024     # no request is overwritten while the server steps
_MAX_CACHED_CONTROLLERS = 256


class BackendReset(Exception):
    """Raised by a Backend's apply(), step() or sensors() when the simulation
    reset itself meanwhile (C++ gecko::click::SimulationReset): the server
    answers the request with a Reset, as Click does, and restarts paused
    until the next Control, without calling Backend.reset() again.

    Not gecko.spine.SimulationReset, which an Agent raises on the controller
    side when it receives such a Reset."""


class Backend:
    """What the owner of the actuators implements. The server calls it from
    the thread that runs spin_once() / run(), never concurrently. A class
    need not derive from it: the six methods without a default are enough."""

    def handshake(self):
        """What the scene offers: a gecko.msgs.click.Handshake. Called at each
        HandshakeInit, and once at construction to check controls."""
        raise NotImplementedError

    def apply(self, control):
        """Takes the controls of a gecko.msgs.click.Control already checked
        against handshake(). Objects absent from it keep their previous controls."""
        raise NotImplementedError

    def step(self):
        """Advances the simulation by one time step (a real robot: one control period)."""
        raise NotImplementedError

    def sensors(self):
        """The sensors now: a gecko.msgs.click.Sensor (the server sets `answers`)."""
        raise NotImplementedError

    def reset(self):
        """Returns to the initial state (time, positions, controls)."""
        raise NotImplementedError

    def stop_actuators(self):
        """Makes every actuator safe: hold or zero, never a stale command.
        Called once per cycle while the simulation is stopped or shutting down."""
        raise NotImplementedError

    def ended(self, reason):
        """The controller ended the run with an Error request (`reason` is its text)."""

    def simulated_time(self):
        """Simulated seconds since the last reset, for status(); None: the
        server counts steps since the reset times the handshake's time_step."""
        return None


_REQUIRED = ("handshake", "apply", "step", "sensors", "reset", "stop_actuators")


@dataclasses.dataclass
class SimulationStatus:
    """What the server is doing (SimulationServer.status()), as C++ SimulationStatus."""
    state: str = "stop"             # "stop", "idle" (started), "shutdown" or "over"
    stop_cause: str = ""            # why it is in stop ("the watchdog stopped the spine: ...", ...)
    controller: str = ""            # the controller in charge; empty if none
    running: bool = False           # a Control stepped since the last handshake or reset
    reset_pending: bool = False     # a simulation-side reset awaits its Reset answer
    steps: int = 0                  # Backend.step() calls
    requests: int = 0               # requests handled (duplicates included)
    duplicate_requests: int = 0     # answered from the cache, nothing done
    stale_requests: int = 0         # older than the controller's last request: not acted on
    refused_requests: int = 0       # answered with an Error
    stop_commands: int = 0          # Backend.stop_actuators() calls
    watchdog_trips: int = 0         # times the watchdog stopped the actuators
    resets: int = 0                 # Backend.reset() calls
    simulation_resets: int = 0      # BackendReset raised by the backend, each answered with a Reset
    backend_errors: int = 0         # exceptions of the backend (each one an Error answer, or logged)
    simulated_time: float = 0.0     # s since the last reset (Backend.simulated_time(), else steps x time_step)


class _Cached:
    __slots__ = ("last_id", "run_ended", "payload", "seen")

    def __init__(self):
        self.last_id = 0
        self.run_ended = False  # the last request was an Error
        self.payload = b""      # the encoded answer to last_id
        self.seen = 0.0


def _text(e):
    return str(e) or type(e).__name__


class SimulationServer:
    """Serves the Click lockstep protocol for one backend on the topics
    NAME/click/request and NAME/click/answer under the node's key.

    watchdog: once running, the longest gap (s) between two Controls before
    the actuators are stopped; 0: no watchdog.
    stop_cycles: cycles of stop commands before a start is honoured and before exit.
    stop_cycle_period: shortest time (s) between two cycles of stop commands
    (a real robot: its bus period); 0: back to back.
    idle_cycle: how often (s) a cycle runs when no request comes (stop
    commands, watchdog check); also the poll granularity of run().
    takeover_after: another controller may take over once the one in charge
    has sent nothing for this long (s); 0: never (only its Error, its
    watchdog trip or its process ending frees the slot).
    exit_on_error: an Error request also ends run(), for one-shot simulations.
    spin_us: how long the request subscriber busy-polls shared memory for
    the next request before it sleeps (as the Controller's spin_us).

    spin_once() and run() belong to one thread; request_reset(), shutdown()
    and status() may be called from any."""

    def __init__(self, node, name, backend, watchdog=0.0, stop_cycles=5, takeover_after=10.0, exit_on_error=False,
                 stop_cycle_period=0.0, idle_cycle=0.01, spin_us=50):
        missing = [m for m in _REQUIRED if not callable(getattr(backend, m, None))
                   or getattr(type(backend), m, None) is getattr(Backend, m)]  # a subclass must define it
        if missing:
            raise TypeError("SimulationServer: the backend %r has no method %s (see gecko.click.Backend)"
                            % (type(backend).__name__, ", ".join(missing)))
        if int(stop_cycles) < 1:
            raise ValueError("SimulationServer: stop_cycles must be at least 1 (actuators would never receive a "
                             "stop command)")
        for what, value in (("watchdog", watchdog), ("takeover_after", takeover_after),
                            ("stop_cycle_period", stop_cycle_period)):
            if not value >= 0:
                raise ValueError("SimulationServer: %s must be >= 0 s, not %r" % (what, value))
        if not idle_cycle > 0:
            raise ValueError("SimulationServer: idle_cycle must be > 0 s, not %r" % (idle_cycle,))
        self.node = node
        self.name = name
        self.backend = backend
        self.topics = mc.lockstep_topics(name)
        self.watchdog = float(watchdog)
        self._watchdog_ms = int(round(self.watchdog * 1000))  # as the reasons say it
        self.stop_cycles = int(stop_cycles)
        self.takeover_after = float(takeover_after)
        self.exit_on_error = exit_on_error
        self.stop_cycle_period = float(stop_cycle_period)
        self.idle_cycle = float(idle_cycle)
        # gecko.click imports this module at its end, so its names are taken once both are loaded.
        from .click import WATCHDOG_REFUSAL_MARKER, check_control
        self._check_control = check_control
        self._watchdog_marker = WATCHDOG_REFUSAL_MARKER
        self._log = node.log
        self._description = self._checked_handshake(backend.handshake())
        self._requests = node.subscriber(self.topics[0], mc.Request, depth=_MIN_QUEUE_DEPTH, spin_us=spin_us)
        self._answers = node.publisher(self.topics[1], mc.Answer)

        # The spine's state: "stop", "idle", "shutdown" or "over".
        self._state = "stop"
        self._stop_count = 0            # stop commands since the last stop (or since shutdown began)
        self._stop_cause = ""
        self._armed = False             # a Control stepped since the last start: the watchdog watches
        self._last_action = 0.0
        self._cycles_since_action = 0
        self._last_stop_command = None  # paces stop cycles (stop_cycle_period)
        self._stop_failing = False      # stop_actuators() raised last time (said once, not every cycle)

        self._cache = {}                # controller id -> _Cached
        self._owner = ""
        self._owner_seen = 0.0
        self._owner_subscriber = 0      # the owner's answer subscriber id (0: not said)
        self._watchdog_notice = ""      # the controller the watchdog stopped, until its next Control learns of it
        self._running = False
        self._reset_pending = False
        self._steps_since_reset = 0
        self._cycle_error = None        # text of a backend exception during this request's cycles
        self._backend_reset = None      # text of a BackendReset during this request's cycles

        self._reset_requested = threading.Event()
        self._shutdown_requested = threading.Event()
        self._live = SimulationStatus()
        self._status_lock = threading.Lock()
        self._snapshot = SimulationStatus()
        self._sync_status()

    # ---- public API --------------------------------------------------------

    def spin_once(self, timeout=None):
        """Waits up to `timeout` s (at most idle_cycle; None: idle_cycle) for
        one request and serves it, or runs an idle cycle. Handles an
        interrupt by running the stop cycles. False once the simulation is
        over (the caller leaves its loop)."""
        if self._state == "over":
            return False
        if self._shutdown_requested.is_set() or not runtime.ok() or self.node.closed:
            self._interrupt()
            self._sync_status()
            return False
        self._simulation_side_reset()
        wait = self.idle_cycle if timeout is None else max(0.0, min(timeout, self.idle_cycle))
        payload = self._requests.receive_payload(wait)
        if payload is not None:
            self._simulation_side_reset()  # one asked for while we waited comes before this request
            self._receive(payload)
        else:
            self._idle_cycle()
        self._sync_status()
        return True

    def run(self):
        """Calls spin_once() until the simulation is over (after SIGINT,
        shutdown(), or an Error with exit_on_error)."""
        while self.spin_once():
            pass

    def request_reset(self):
        """Simulation-side reset (thread-safe): resets the backend at the next
        cycle; the controller's next request except Error is answered with a Reset."""
        self._reset_requested.set()

    def shutdown(self):
        """Like SIGINT, for this server only (thread-safe): stop cycles, then over."""
        self._shutdown_requested.set()

    def status(self):
        """A snapshot of the state (thread-safe): a SimulationStatus."""
        with self._status_lock:
            return dataclasses.replace(self._snapshot)

    # ---- the spine: stop, start, cycles -------------------------------------

    def _call(self, method, *args):
        """Calls a backend method inside a cycle: a BackendReset or another
        exception is kept for the request's answer. True if it returned."""
        try:
            method(*args)
            return True
        except BackendReset as e:
            self._backend_reset = str(e)
        except Exception as e:
            self._live.backend_errors += 1
            self._cycle_error = _text(e)
            self._log.error("backend: %s() raised: %s", method.__name__, self._cycle_error)
        return False

    def _stop_command(self):
        """One cycle of stop commands."""
        if self.stop_cycle_period > 0 and self._last_stop_command is not None:
            left = self._last_stop_command + self.stop_cycle_period - time.monotonic()
            if left > 0:
                time.sleep(left)  # the actuators' bus period: each cycle's commands must reach them
        try:
            self.backend.stop_actuators()
            self._stop_failing = False
        except Exception as e:
            self._live.backend_errors += 1
            self._cycle_error = _text(e)
            if not self._stop_failing:  # every cycle would say it again
                self._log.error("backend: stop_actuators() raised: %s (said once until it succeeds again)",
                                self._cycle_error)
            self._stop_failing = True
        self._last_stop_command = time.monotonic()
        self._live.stop_commands += 1
        self._stop_count += 1

    def _enter_stop(self, cause):
        self._state = "stop"
        self._stop_count = 0
        self._stop_cause = cause
        self._armed = False
        self._cycles_since_action = 0

    def _stop(self):
        """From idle: stop, with the stop cycle that takes it there."""
        if self._state == "idle":
            self._enter_stop("stopped by the agent")
            self._stop_command()

    def _restart(self, reset):
        """Stop (if started), stop commands until `stop_cycles` went out, then
        start: with `reset`, Backend.reset() on the way. Paused until the next Control."""
        self._stop()
        while self._stop_count < self.stop_cycles:
            self._stop_command()
        if reset and self._call(self.backend.reset):
            self._live.resets += 1
            self._steps_since_reset = 0
        self._state = "idle"
        self._stop_cause = ""
        self._running = False

    def _watchdog_expired(self, now):
        return (self._state == "idle" and self._armed and self.watchdog > 0
                and now - self._last_action >= self.watchdog)

    def _trip_watchdog(self, now):
        cause = "the watchdog stopped the spine: no action for %d cycles (%d ms)" % (
            self._cycles_since_action, (now - self._last_action) * 1000)
        self._enter_stop(cause)
        self._live.watchdog_trips += 1
        self._running = False
        self._log.warning("watchdog: no Control from controller '%s' within %d ms; actuators stopped (spine state "
                          "'stop': %s). Its next Control is answered with an Error saying so; the one after starts "
                          "the simulation again.", self._owner, self._watchdog_ms, cause)
        self._watchdog_notice = self._owner  # its next Control is refused, so that it learns of the stop
        self._owner = ""  # a controller that went silent no longer holds the simulation
        self._stop_command()

    def _idle_cycle(self):
        """A cycle without a request: the watchdog in idle, stop commands in stop."""
        now = time.monotonic()
        if self._watchdog_expired(now):
            self._trip_watchdog(now)
        elif self._state == "stop":
            self._stop_command()
        elif self._armed:
            self._cycles_since_action += 1

    def _interrupt(self):
        self._log.info("shutting down: %d cycles of stop commands", self.stop_cycles)
        self._state = "shutdown"
        self._stop_count = 0
        self._sync_status()
        for _ in range(self.stop_cycles):
            self._stop_command()
        self._state = "over"
        self._running = False

    def _simulation_side_reset(self):
        if not self._reset_requested.is_set():
            return
        self._reset_requested.clear()
        self._log.info("simulation-side reset of '%s'", self.name)
        self._cycle_error = self._backend_reset = None
        self._restart(True)
        if self._cycle_error is not None:
            self._log.error("simulation-side reset failed: %s", self._cycle_error)
        self._reset_pending = True
        self._sync_status()

    # ---- requests ----------------------------------------------------------

    def _receive(self, payload):
        try:
            r = message.decode(mc.Request, payload)
        except DecodeError as e:
            self._undecodable(payload, e)
            return
        now = time.monotonic()
        try:
            self._handle(r, now)
        except Exception as e:  # a bug must cost one answer, never the server loop
            self._log.exception("serving request #%s of controller '%s'", r.request_id, r.controller_id)
            payload = self._encoded(r, self._error(r, "the simulation could not serve request #%d: %s"
                                                   % (r.request_id, _text(e))))
            self._publish(payload)
            self._remember(r, payload, now)  # a re-send must not be served twice either

    def _undecodable(self, payload, e):
        """Answers a request that did not decode, if it says who sent it."""
        try:
            tree = message.unpack(payload)
            cid, rid = tree.get("controller_id"), tree.get("request_id")
        except Exception:
            cid = rid = None
        if not isinstance(cid, str) or not isinstance(rid, int) or isinstance(rid, bool) or not 0 <= rid < 1 << 64:
            self._log.warning("dropped a request that is not a gecko.msgs.click.Request: %s", e)
            return
        self._live.requests += 1
        r = mc.Request(controller_id=cid, request_id=rid)
        self._log.warning("request #%d of controller '%s' did not decode: %s", rid, cid, e)
        self._publish(self._encoded(r, self._error(r, "request #%d did not decode: %s" % (rid, e))))

    def _handle(self, r, now):
        self._live.requests += 1
        cid = r.controller_id
        cached = self._cache.get(cid)
        if cached is not None and cached.run_ended and r.request_id == 1 and cached.last_id > 1:
            # It ended its run (Error), and a controller with the same id starts a new one.
            del self._cache[cid]
            cached = None
        if cached is not None:
            if r.request_id == cached.last_id:
                self._live.duplicate_requests += 1
                cached.seen = now
                self._publish(cached.payload)
                return
            if r.request_id < cached.last_id:
                # Never acted on. Its own controller has moved on and ignores the answer;
                # one restarted with the same id learns what is wrong.
                self._live.stale_requests += 1
                why = "request #%d of controller '%s' is older than its last one (#%d)" % (
                    r.request_id, cid, cached.last_id)
                self._log.debug("dropped late %s", why)
                self._publish(self._encoded(r, self._error_reply(
                    r, why + ": a late message, or a controller restarted with the same id without ending its run "
                             "(leave Controller's controller_id unset for a unique one)")))
                return
        payload = self._encoded(r, self._serve(r, now))
        self._publish(payload)
        self._remember(r, payload, now)

    def _serve(self, r, now):
        cid = r.controller_id
        if not cid:
            return self._error(r, "request without a controller_id")

        # One controller at a time.
        if self._owner and self._owner != cid and self._owner_gone():
            self._log.info("controller '%s' is gone (its answer subscription closed): controller '%s' may drive "
                           "simulation '%s'", self._owner, cid, self.name)
            self._owner = ""
        if self._owner and self._owner != cid:
            silent = now - self._owner_seen
            if self.takeover_after > 0 and silent >= self.takeover_after:
                self._log.warning("controller '%s' takes over simulation '%s' from controller '%s', silent for %d ms",
                                  cid, self.name, self._owner, silent * 1000)
                self._owner = ""
            else:
                return self._error(r, "simulation '%s' is driven by controller '%s' (its last request was %d ms "
                                      "ago); it must end its run (Error) before another controller can drive this "
                                      "simulation" % (self.name, self._owner, silent * 1000))
        if not self._owner:
            self._owner = cid
            self._log.info("controller '%s' drives simulation '%s'", cid, self.name)
            if self._watchdog_notice != cid:
                self._watchdog_notice = ""  # another one drives: nobody to tell
        self._owner_seen = now
        self._owner_subscriber = r.answer_subscriber or 0

        # A simulation-side reset is reported to the next request, whatever it is, except Error.
        if self._reset_pending and r.kind != mc.RequestKind.error:
            self._reset_pending = False
            return self._reset(r)

        self._cycle_error = self._backend_reset = None
        kind = r.kind
        if kind == mc.RequestKind.handshake_init:
            return self._serve_handshake(r)
        if kind == mc.RequestKind.sensor_request:
            return self._serve_sensor_request(r, now)
        if kind == mc.RequestKind.control:
            return self._serve_control(r)
        if kind == mc.RequestKind.reset:
            self._watchdog_notice = ""
            self._restart(True)
            if self._cycle_error is not None:
                return self._error(r, self._cycle_error)
            return self._reset(r)
        if kind == mc.RequestKind.error:
            return self._serve_error(r)
        return self._error(r, "unknown request kind %r" % (kind,))

    def _serve_handshake(self, r):
        if r.handshake_init is None:
            return self._error(r, "HandshakeInit request without its message")
        self._watchdog_notice = ""  # a new session: the controller restarts knowingly
        self._restart(False)
        try:
            description = self._checked_handshake(self.backend.handshake())
        except Exception as e:
            self._live.backend_errors += 1
            return self._error(r, "the simulation could not describe itself: " + _text(e))
        self._description = description
        a = self._answer(r, mc.AnswerKind.handshake)
        a.handshake = description
        description.answers = r.request_id
        return a

    def _serve_sensor_request(self, r, now):
        if r.sensor_request is None:
            return self._error(r, "SensorRequest request without its message")
        if self._watchdog_expired(now):
            self._trip_watchdog(now)  # as an observation cycle of the spine does; reading moves nothing anyway
        elif self._armed:
            self._cycles_since_action += 1
        return self._sensor_answer(r)

    def _serve_control(self, r):
        control = r.control
        if control is None:
            return self._error(r, "Control request without its message")
        wrong = self._check_control(self._description, control)
        if wrong:
            return self._error(r, wrong)
        if self._state == "stop" and self._watchdog_notice:
            self._watchdog_notice = ""
            return self._watchdog_refusal(r)
        if self._state == "stop":
            self._restart(False)  # the first Control (also without a handshake, as Click allows)
        # The action cycle.
        self._armed = True
        self._cycles_since_action = 0
        self._last_action = time.monotonic()
        if self._call(self.backend.apply, control) and self._call(self.backend.step):
            self._live.steps += 1
            self._steps_since_reset += 1
        if self._backend_reset is not None:
            return self._backend_reset_answer(r)
        if self._cycle_error is not None:
            return self._error(r, self._cycle_error)
        self._running = True
        return self._sensor_answer(r)

    def _serve_error(self, r):
        reason = r.error.reason if r.error is not None else ""
        self._log.info("controller '%s' ended the run: %s", r.controller_id, reason or "(no reason)")
        self._stop()
        self._running = False
        self._owner = ""
        self._watchdog_notice = ""
        ended = getattr(self.backend, "ended", None)
        if callable(ended):
            try:
                ended(reason)
            except Exception as e:
                self._live.backend_errors += 1
                self._log.error("backend: ended() raised: %s", _text(e))
        if self.exit_on_error:
            self._shutdown_requested.set()
        return self._answer(r, mc.AnswerKind.ended)

    def _watchdog_refusal(self, r):
        """The first Control of the controller the watchdog stopped: an Error
        in the spine's words (it names the state and the watchdog), not applied."""
        reason = "spine: request 'action' is invalid in state 'stop': send 'start' first"
        if self._stop_cause:
            reason += " (%s)" % self._stop_cause
        self._stop_command()  # the cycle that refused it, in stop
        reason += (". %s%s' within %d ms; the simulation stopped its actuators and did not apply this Control. "
                   "The next Control starts it again" % (self._watchdog_marker, r.controller_id, self._watchdog_ms))
        self._log.info("told controller '%s' that the watchdog stopped the simulation", r.controller_id)
        return self._error(r, reason)

    def _backend_reset_answer(self, r):
        """The backend reset itself (BackendReset): restart paused, answer with a Reset."""
        why = self._backend_reset
        self._backend_reset = None
        self._log.info("the simulation reset itself%s; controller '%s' is answered with a Reset",
                       " (%s)" % why if why else "", r.controller_id)
        self._live.simulation_resets += 1
        self._steps_since_reset = 0
        self._cycle_error = None
        self._restart(False)
        return self._reset(r)

    # ---- answers -----------------------------------------------------------

    def _answer(self, r, kind):
        return mc.Answer(controller_id=r.controller_id, answers=r.request_id, kind=kind, simulation=self.name)

    def _error(self, r, reason):
        """A refusal: counted."""
        self._live.refused_requests += 1
        return self._error_reply(r, reason)

    def _error_reply(self, r, reason):
        a = self._answer(r, mc.AnswerKind.error)
        a.error = mc.Error(direction=mc.Direction.answer, answers=r.request_id, reason=reason)
        return a

    def _reset(self, r):
        a = self._answer(r, mc.AnswerKind.reset)
        a.reset = mc.Reset(direction=mc.Direction.answer, answers=r.request_id)
        return a

    def _sensor_answer(self, r):
        try:
            sensor = self.backend.sensors()
        except BackendReset as e:
            self._backend_reset = str(e)
            return self._backend_reset_answer(r)
        except Exception as e:
            self._live.backend_errors += 1
            self._log.error("backend: sensors() raised: %s", _text(e))
            return self._error(r, _text(e))
        if not isinstance(sensor, mc.Sensor):
            return self._error(r, "the simulation's sensors() returned %s, not a gecko.msgs.click.Sensor"
                               % type(sensor).__name__)
        sensor.answers = r.request_id
        a = self._answer(r, mc.AnswerKind.sensor)
        a.sensor = sensor
        return a

    @staticmethod
    def _checked_handshake(h):
        if not isinstance(h, mc.Handshake):
            raise TypeError("the backend's handshake() returned %s, not a gecko.msgs.click.Handshake"
                            % type(h).__name__)
        return h

    def _encoded(self, r, answer):
        """The answer's bytes; an Error saying why if it does not encode (a malformed Sensor, say)."""
        try:
            return message.encode(answer)
        except Exception as e:
            self._log.error("the answer to request #%d of controller '%s' does not encode: %s", r.request_id,
                            r.controller_id, _text(e))
            return message.encode(self._error(r, "the simulation's %s answer does not encode: %s"
                                              % (answer.kind.wire, _text(e))))

    def _publish(self, payload):
        self._sync_status()  # before the answer: whoever reads it then sees the new status
        try:
            self._answers.publish_payload(payload)
        except Exception as e:  # the node closed under us: the next spin_once() shuts down
            self._log.warning("could not send an answer: %s", _text(e))

    def _remember(self, r, payload, now):
        entry = self._cache.get(r.controller_id)
        if entry is None:
            entry = self._cache[r.controller_id] = _Cached()
        entry.last_id = r.request_id
        entry.run_ended = r.kind == mc.RequestKind.error
        entry.payload = payload
        entry.seen = now
        if len(self._cache) > _MAX_CACHED_CONTROLLERS:
            oldest = min(self._cache, key=lambda c: self._cache[c].seen)
            if oldest != self._owner:
                del self._cache[oldest]

    def _owner_gone(self):
        """True if the owner said which subscriber receives its answers and
        that subscriber is no longer connected: its process ended, however."""
        if not self._owner_subscriber:
            return False
        return all(a.id != self._owner_subscriber for a in self.node.subscribers_of(self._answers.channel))

    def _sync_status(self):
        s = self._live
        s.state = self._state
        s.stop_cause = self._stop_cause
        s.controller = self._owner
        s.running = self._running
        s.reset_pending = self._reset_pending
        t = None
        simulated_time = getattr(self.backend, "simulated_time", None)
        if callable(simulated_time):
            try:
                t = simulated_time()
            except Exception:
                t = None  # the status falls back to counting steps
        s.simulated_time = float(t) if t is not None else self._steps_since_reset * (
            self._description.time_step or 0.0)
        with self._status_lock:
            self._snapshot = dataclasses.replace(s)
