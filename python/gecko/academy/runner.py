# SPDX-License-Identifier: Apache-2.0
"""The brain runner: the process gecko-bridge starts for its code endpoint
(docs/ACADEMY.md). It loads a page's brain, runs it on its main thread at the
asked frequency, and speaks JSON lines with the bridge (bridge/src/academy/
brain_runner.hpp): orders on stdin, events on stdout. What the brain prints
goes to stderr, the bridge's log.

    python3 -m gecko.academy.runner --simulation sim     # key and core from GECKO_* variables

Stopping: an order that must interrupt the brain (stop, reset, load) sends
this process's main thread SIGUSR1, whose handler raises BrainInterrupted:
it ends a loop that never returns and a sleep alike. A brain that catches
it anyway is killed with its runner by the bridge.
"""

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback

from .split import split_brain

FILENAME = "<brain>"


class BrainInterrupted(BaseException):
    """Raised in the brain when the bridge stops it (not an Exception: a
    brain's `except Exception` does not swallow it)."""


class Runner:
    def __init__(self, simulation, events):
        self.simulation = simulation
        self._events = events
        self._write_lock = threading.Lock()
        self.orders = queue.Queue()
        self.period = 0.1
        self.target_hz = 10.0
        self.measured_hz = 0.0  # iterations per second over the last second of play
        self.code = None        # BrainCode
        self.globals = None
        self.setup_done = False
        self.in_brain = False
        self._node = None
        self._hal = None
        self._gui = None
        self.image_topic = "academy/image"

    # ---- the bridge

    def emit(self, **event):
        with self._write_lock:
            self._events.write(json.dumps(event) + "\n")
            self._events.flush()

    def read_orders(self):
        """On its own thread: orders from stdin, queued for the main thread;
        the ones that must not wait for the brain interrupt it."""
        for line in sys.stdin:
            try:
                order = json.loads(line)
                op = order["op"]
            except (ValueError, KeyError, TypeError):
                print("brain runner: ignored a line that is no order: %r" % line[:200], file=sys.stderr)
                continue
            if op == "frequency":
                self.set_frequency(order.get("hz"))
                continue
            self.orders.put(order)
            if op in ("stop", "reset", "load"):
                self.interrupt_brain()
        self.orders.put({"op": "exit"})
        self.interrupt_brain()

    def set_frequency(self, hz):
        try:
            hz = float(hz)
        except (TypeError, ValueError):
            return
        if 0 < hz <= 1000:
            self.target_hz = hz
            self.period = 1.0 / hz
        self.emit(event="frequency", brain=self.measured_hz, target=self.target_hz, rtf=self.rtf())

    def interrupt_brain(self):
        # Queued first, then in_brain read: the brain either sees the order
        # before it starts (play checks the queue) or is running and signalled.
        if self.in_brain:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)

    def on_signal(self, signum, frame):
        if self.in_brain:
            raise BrainInterrupted()

    # ---- the robot

    def hal(self):
        if self._hal is None:
            from .. import Node
            from .gui import Gui
            from .hal import Hal
            self._node = Node(name="brain_runner")
            self._hal = Hal(self._node, self.simulation,
                            log=lambda text: print("brain runner: " + text, file=sys.stderr, flush=True))
            self._gui = Gui(self._node, self.image_topic)
        return self._hal

    def rtf(self):
        return self._hal.real_time_factor() if self._hal is not None else 0.0

    # ---- orders

    def load(self, code):
        self.code = None
        try:
            compiled = split_brain(code, FILENAME)
        except SyntaxError as e:
            self.emit(event="error", phase="load", line=e.lineno or 0, message="%s: %s" % (type(e).__name__, e.msg))
            return
        except ValueError as e:  # e.g. a NUL byte in the source
            self.emit(event="error", phase="load", line=0, message="ValueError: %s" % e)
            return
        self.code = compiled
        self.fresh_state()
        self.emit(event="loaded")

    def fresh_state(self):
        self.setup_done = False
        hal = self.hal()
        self.globals = {"__name__": "__brain__", "__builtins__": __builtins__, "HAL": hal, "GUI": self._gui}
        sys.modules["HAL"] = hal  # import HAL, import GUI, as in RoboticsAcademy
        sys.modules["GUI"] = self._gui

    def play(self):
        """Runs the brain until it is interrupted, raises or ends."""
        self.emit(event="playing")
        iterations, window_start, busy = 0, time.monotonic(), 0.0
        try:
            self.in_brain = True
            if not self.orders.empty():
                return
            if not self.setup_done:
                self.setup_done = True
                exec(self.code.setup, self.globals)
            if self.code.body is None:
                self.emit(event="stopped")
                return
            next_start = time.monotonic()
            while self.orders.empty():
                start = time.monotonic()
                exec(self.code.body, self.globals)
                now = time.monotonic()
                busy += now - start
                iterations += 1
                if now - window_start >= 1.0:
                    self.measured_hz = iterations / (now - window_start)
                    self.emit(event="frequency", brain=self.measured_hz, target=self.target_hz,
                              rtf=self.rtf(), iteration_ms=1000.0 * busy / iterations)
                    iterations, window_start, busy = 0, now, 0.0
                next_start += self.period
                if next_start < now:  # an iteration overran its period: no burst to catch up
                    next_start = now
                time.sleep(next_start - now)
        except BrainInterrupted:
            pass  # the order that interrupted it is in the queue
        except (Exception, SystemExit) as e:  # the brain's own error (or exit()): the page hears it, with its line
            line = 0
            for frame in traceback.extract_tb(e.__traceback__):
                if frame.filename == FILENAME:
                    line = frame.lineno
            self.setup_done = False
            self.emit(event="error", phase="run", line=line, message="%s: %s" % (type(e).__name__, e))
        finally:
            self.in_brain = False
            self.measured_hz = 0.0

    def run(self):
        signal.signal(signal.SIGUSR1, self.on_signal)
        threading.Thread(target=self.read_orders, name="orders", daemon=True).start()
        while True:
            try:
                order = self.orders.get()
                op = order["op"]
                if op == "exit":
                    break
                if op == "load":
                    self.load(str(order.get("code", "")))
                elif op == "play":
                    if self.code is None:
                        self.emit(event="error", phase="play", line=0, message="no code is loaded")
                    else:
                        self.play()
                elif op == "stop":
                    self.emit(event="stopped")
                elif op == "reset":
                    if self.code is not None:
                        self.fresh_state()
                    self.emit(event="reset")
            except BrainInterrupted:
                continue  # a stop that came as the brain ended: its order is queued
            except Exception as e:  # the runner's own trouble (no core, no key): said, and it goes on
                traceback.print_exc()
                self.code = None
                self.emit(event="error", phase="runner", line=0, message="%s: %s" % (type(e).__name__, e))
        if self._hal is not None:
            self._hal.close()
        if self._node is not None:
            self._node.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m gecko.academy.runner",
                                     description="runs RoboticsAcademy-style brains for gecko-bridge")
    parser.add_argument("--simulation", default="sim", help="the simulation's name (default sim)")
    parser.add_argument("--image-topic", default="academy/image", help="where GUI.show_image publishes")
    args = parser.parse_args(argv)
    events = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the brain's print() goes to the log, never into the events
    sys.stdout = sys.stderr
    runner = Runner(args.simulation, events)
    runner.image_topic = args.image_topic
    runner.run()


if __name__ == "__main__":
    main()
