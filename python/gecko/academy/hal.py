# SPDX-License-Identifier: Apache-2.0
"""The robot as a brain sees it (docs/ACADEMY.md, "HAL"): the joints of a
gecko-sim arm, over the simulation's Click lockstep topics.

    HAL.joint_names()                 # ['joint1', 'joint2'] of the first robot
    HAL.get_joint_angles()            # [rad, ...], as of the last step
    HAL.set_joint_targets([0.6, -0.4])   # each joint's control (angle: rad; velocity: rad/s; torque: N m)
    HAL.get_tip_position()            # (x, y, z) of the arm's tip, m
    HAL.simulated_time()              # s since the simulation's last reset

A gecko-sim steps only when a controller sends a Control: the HAL is that
controller. Its own thread steps the simulation in real time (one step per
time step of the handshake, 10 ms by default) with the latest targets, so
the simulation moves on whatever the brain's frequency, as a simulator runs
beside a RoboticsAcademy brain. While the simulation is paused its Controls
are held (docs/SIMULATION_CONTROL.md) and the HAL's values stay as they were.
Every method takes `robot=` (a robot's name; default: the first).
"""

import threading
import time

from ..click import Controller
from ..errors import Error
from ..msgs.sim import Status


class Hal:
    def __init__(self, node, simulation="sim", log=None):
        self._node = node
        self._simulation = simulation
        self._log = log or (lambda text: None)
        self._lock = threading.Lock()
        self._targets = {}       # robot -> [value per control]
        self._sensor = None      # the last Sensor
        self._handshake = None
        self._status = node.subscriber(simulation + "/status", Status, latest_only=True)
        self._last_status = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._step_forever, name="hal-stepper", daemon=True)
        self._thread.start()

    # ---- for the brain

    def robots(self):
        """The robots' names, in the handshake's order."""
        return list(self._objects())

    def joint_names(self, robot=None):
        return list(self._objects()[self._robot(robot)].controls_in_order)

    def get_joint_angles(self, robot=None):
        """Each joint's angle (rad) as of the last step; zeros before the first."""
        name = self._robot(robot)
        with self._lock:
            s = self._sensor
        if s is None or name not in s.objects:
            return [0.0] * len(self.joint_names(name))
        return list(s.objects[name].angle_sensors)

    def set_joint_targets(self, values, robot=None):
        """Sets each joint's control for the steps to come (angle joints: the
        angle to hold, rad; velocity joints: rad/s; torque joints: N m)."""
        name = self._robot(robot)
        values = [float(v) for v in values]
        wanted = len(self.joint_names(name))
        if len(values) != wanted:
            raise ValueError("robot '%s' has %d joints, got %d values" % (name, wanted, len(values)))
        with self._lock:
            self._targets[name] = values

    def get_tip_position(self, robot=None):
        """The arm's tip (x, y, z), m, as of the last step."""
        name = self._robot(robot)
        with self._lock:
            s = self._sensor
        if s is None or name not in s.objects:
            return (0.0, 0.0, 0.0)
        for v in s.objects[name].sensors.get("tip", []):
            return tuple(v.value)
        return (0.0, 0.0, 0.0)

    def simulated_time(self):
        with self._lock:
            s = self._sensor
        return (s.simulated_time or 0.0) if s is not None else 0.0

    # ---- for the runner

    def real_time_factor(self):
        """Simulated s per wall s, from the simulation's status topic (0 before it says)."""
        while True:
            s = self._status.receive(timeout=0)
            if s is None:
                break
            self._last_status = s
        return self._last_status.real_time_factor if self._last_status is not None else 0.0

    def wait_ready(self, timeout):
        """True once the handshake is done (the robots are known)."""
        return self._ready.wait(timeout)

    def close(self):
        self._stop.set()
        self._thread.join(timeout=10)

    # ---- inside

    def _objects(self):
        if not self._ready.wait(30):
            raise Error("timeout", "no simulation '%s' answered a handshake within 30 s" % self._simulation)
        return self._handshake.objects

    def _robot(self, robot):
        objects = self._objects()
        if robot is None:
            robot = next((n for n, o in objects.items() if o.controls_in_order), None)
            if robot is None:
                raise ValueError("simulation '%s' has no robot with controls" % self._simulation)
        elif robot not in objects or not objects[robot].controls_in_order:
            raise ValueError("no robot '%s' (robots: %s)" % (robot, ", ".join(self.robots())))
        return robot

    def _step_forever(self):
        controller = None
        while not self._stop.is_set():
            try:
                if controller is None:
                    controller = Controller(self._node, self._simulation, timeout=10.0, connect_timeout=5.0)
                    hs = controller.handshake()
                    control = controller.make_control()
                    self._handshake = hs
                    period = hs.time_step or 0.01
                    self._ready.set()
                    next_step = time.monotonic()
                with self._lock:
                    for name, values in self._targets.items():
                        control.objects[name].values = list(values)
                result = controller.step(control)
                if result.is_sensor():
                    with self._lock:
                        self._sensor = result.sensor
                elif result.is_error() and not result.error.reason.startswith("paused:"):
                    self._log("the simulation refused a step: %s" % result.error.reason)
                    self._stop.wait(0.5)
                next_step = max(next_step + period, time.monotonic() - period)  # no burst to catch up
                self._stop.wait(max(0.0, next_step - time.monotonic()))
            except Error as e:
                self._log("stepping simulation '%s': %s; trying again" % (self._simulation, e))
                controller = None
                self._stop.wait(0.5)
        if controller is not None:
            controller.error("the brain runner ends")
