#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stock Python Click client drives a Gecko simulation through gecko-click-gateway.

Starts geckocore and gecko-click-gateway, each bound to tcp://127.0.0.1:* with
the port read back from its startup line (as tests/support/ports.hpp does for
the C++ tests: nothing picks a port number), and gecko-sim, then talks
to the gateway as Click's own Python client does: one zmq REQ socket, one frame
per message, messages built with the classes protoc generates from
click_gateway/proto/click.proto (click_pb2), replies decoded as `Message` first
and then as the type that `messageType` names. Unlike the stock client, every
receive has a timeout, so a missing reply fails the test instead of hanging it.

Plain Python, no pytest. Exit 0 on success, 1 with the reason on failure.

  click_client_test.py --geckocore PATH --gecko-sim PATH --gateway PATH --pb-dir DIR
"""
import argparse
import math
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

try:
    import zmq
except ImportError as e:
    sys.exit(f"FAIL: the Click client needs pyzmq (Debian 12: python3-zmq): {e}")


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def endpoint_after(line, marker):
    """The endpoint written after `marker` in `line`, up to the next space or comma."""
    check(marker in line, f"no {marker!r} in {line!r}")
    rest = line[line.index(marker) + len(marker):]
    return rest.replace(",", " ").split(" ", 1)[0]


class Child:
    """A program run by the test: stdout and stderr merged and read line by line
    on a thread of its own, so that every wait for a line has a deadline."""

    def __init__(self, name, argv, env, stdin=False):
        self.name = name
        self.lines = []
        self._queue = queue.Queue()
        self.proc = subprocess.Popen(argv, env=env, text=True, bufsize=1,
                                     stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)  # end of file

    def wait_for_line(self, needle, timeout):
        """The next line containing `needle`; fails after `timeout` s or at end of output."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise Failure(f"{self.name}: no line containing {needle!r} within {timeout} s") from None
            if line is None:
                self._queue.put(None)
                try:
                    code = self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    code = "none yet"
                raise Failure(f"{self.name} ended its output (exit code {code}) "
                              f"without a line containing {needle!r}")
            if needle in line:
                return line

    def write_line(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"{self.name} still running {timeout} s after it was asked to stop") from None

    def stop(self):
        """Kills the program if it still runs, and reaps it (bounded)."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            print(f"warning: {self.name} (pid {self.proc.pid}) did not die after SIGKILL", file=sys.stderr)

    def output(self):
        return "\n".join(self.lines)


class ClickClient:
    """Click's Python client (pclick Client + MessageFactory + MessageSerializer), with timeouts."""

    def __init__(self, pb, endpoint):
        self.pb = pb
        self.types = {pb.HandshakeInitMessageType: pb.HandshakeInitMessage,
                      pb.HandshakeMessageType: pb.HandshakeMessage,
                      pb.ControlMessageType: pb.ControlMessage,
                      pb.SensorMessageType: pb.SensorMessage,
                      pb.ResetMessageType: pb.ResetMessage,
                      pb.ErrorMessageType: pb.ErrorMessage,
                      pb.SensorRequestMessageType: pb.SensorRequestMessage}
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.REQ)
        self.socket.setsockopt(zmq.RCVTIMEO, 10000)
        self.socket.setsockopt(zmq.SNDTIMEO, 5000)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)

    def create(self, mtype):
        """As MessageFactory does: the message class for `mtype`, with messageType (and version) set."""
        message = self.types[mtype]()
        if hasattr(message, "version"):
            message.version = self.pb.CURRENT_VERSION
        message.messageType = mtype
        return message

    def ask(self, request):
        """Sends a message (or raw bytes) and returns the one reply, decoded."""
        data = request if isinstance(request, bytes) else request.SerializeToString()
        try:
            self.socket.send(data)
            reply = self.socket.recv()
        except zmq.Again:
            raise Failure("no reply from the gateway within 10 s (a stock Click client would hang here)") from None
        check(not self.socket.getsockopt(zmq.RCVMORE), "the reply has more than one frame")
        header = self.pb.Message()
        header.ParseFromString(reply)
        check(header.messageType in self.types, f"reply with unknown messageType {header.messageType}")
        message = self.types[header.messageType]()
        message.ParseFromString(reply)
        return message

    def expect(self, request, mtype):
        reply = self.ask(request)
        if reply.messageType != mtype:
            name = self.pb.MessageType.Name
            detail = f": {reply.errormessage}" if reply.messageType == self.pb.ErrorMessageType else ""
            raise Failure(f"expected {name(mtype)}, got {name(reply.messageType)}{detail}")
        return reply

    def handshake(self):
        return self.expect(self.create(self.pb.HandshakeInitMessageType), self.pb.HandshakeMessageType)

    def sensors(self):
        return self.expect(self.create(self.pb.SensorRequestMessageType), self.pb.SensorMessageType)

    def control(self, handshake, value):
        """A ControlMessage with `value` for every control of every object the handshake lists."""
        control = self.create(self.pb.ControlMessageType)
        for name, obj in handshake.objects.items():
            if obj.controlsInOrder:
                control.objects[name].values.extend([value] * len(obj.controlsInOrder))
        return control

    def step(self, handshake, value):
        return self.expect(self.control(handshake, value), self.pb.SensorMessageType)

    def reset(self):
        self.expect(self.create(self.pb.ResetMessageType), self.pb.ResetMessageType)

    def error_for(self, request):
        return self.expect(request, self.pb.ErrorMessageType).errormessage

    def close(self):
        self.context.destroy(linger=0)


def ok(what):
    print(f"ok: {what}", flush=True)


def run(args, pb, children, ipc_dir):
    key = f"click-python-{os.getpid()}"
    env = dict(os.environ)
    for name in ("GECKO_KEY", "GECKO_DISCOVERY", "GECKO_CORE", "GECKO_MULTICAST", "GECKO_INTERFACE"):
        env.pop(name, None)
    env.update(GECKO_NO_MULTICAST="1", GECKO_IPC_DIR=ipc_dir)

    # Unicast only, no host door, on a port the kernel picks: read it from
    # "geckocore: key 'K' instance N listening on tcp://127.0.0.1:PORT, ...".
    core = Child("geckocore", [args.geckocore, "--key", key, "--no-multicast", "--door", "0",
                               "--listen", "tcp://127.0.0.1:*"], env)
    children.append(core)
    core_endpoint = endpoint_after(core.wait_for_line("listening on ", 10), "listening on ")
    check(core_endpoint.startswith("tcp://127.0.0.1:") and not core_endpoint.endswith(":*"),
          f"geckocore listens on {core_endpoint!r}")
    env.update(GECKO_CORE=core_endpoint[len("tcp://"):])
    sim = Child("gecko-sim", [args.gecko_sim, "--key", key, "--watchdog-ms", "0"], env, stdin=True)
    children.append(sim)
    sim.wait_for_line("ready", 5)
    gateway = Child("gecko-click-gateway", [args.gateway, "--key", key, "--bind", "tcp://127.0.0.1:*",
                                            "--timeout-ms", "5000"], env)
    children.append(gateway)
    banner = gateway.wait_for_line("Click clients on ", 5)
    check(f"key '{key}'" in banner, f"the gateway's startup line does not name key '{key}': {banner}")
    # "... Click clients on tcp://127.0.0.1:PORT (REP, ...": the port ZeroMQ picked.
    endpoint = endpoint_after(banner, "Click clients on ")
    ok(f"gateway serves Click clients on {endpoint}")

    client = ClickClient(pb, endpoint)
    try:
        # Handshake: the demo scene.
        handshake = client.handshake()
        check(handshake.version == pb.CURRENT_VERSION, f"handshake version {handshake.version}")
        for name in ("robot1", "robot2", "box"):
            check(name in handshake.objects, f"the handshake does not list {name}: {list(handshake.objects)}")
        for name in ("robot1", "robot2"):
            robot = handshake.objects[name]
            check(list(robot.controlsInOrder) == ["joint1", "joint2"], f"{name} controls {list(robot.controlsInOrder)}")
            check(list(robot.controlTypesInOrder) == [pb.Angle, pb.Angle],
                  f"{name} control types {list(robot.controlTypesInOrder)}")
            check(list(robot.jointSensorsInOrder) == ["joint1", "joint2"],
                  f"{name} joint sensors {list(robot.jointSensorsInOrder)}")
        dt = handshake.simSettings.timeStep
        check(dt > 0, f"handshake timeStep {dt}")
        ok(f"handshake lists {sorted(handshake.objects)}, time step {dt} s")

        # A SensorRequest before any Control: time 0.
        initial = client.sensors()
        check(close(initial.simVars.simulatedTime, 0.0), f"initial time {initial.simVars.simulatedTime}")
        initial_angles = list(initial.objects["robot1"].angleSensors)
        check(len(initial_angles) == 2, f"robot1 angleSensors {initial_angles}")

        # Each Control steps exactly once.
        steps = 0
        for k in range(1, 6):
            sensor = client.step(handshake, 0.05 * k)
            steps += 1
            t = sensor.simVars.simulatedTime
            check(close(t, k * dt), f"after control {k}: simulated time {t}, expected {k * dt}")
            check(len(sensor.objects["robot1"].angleSensors) == 2, f"robot1 angleSensors after control {k}")
        moved = list(sensor.objects["robot1"].angleSensors)
        check(any(not close(a, b) for a, b in zip(moved, initial_angles)),
              f"robot1's angles {moved} did not move from {initial_angles} under 5 controls")
        ok(f"5 controls: simulated time {t} s, one time step each; robot1 angles {initial_angles} -> {moved}")

        # A SensorRequest does not step.
        for _ in range(2):
            t = client.sensors().simVars.simulatedTime
            check(close(t, 5 * dt), f"a SensorRequest moved time to {t}, expected {5 * dt}")
        sim.write_line("status")
        status = sim.wait_for_line("status:", 5)
        check("steps=5 " in status, f"gecko-sim says {status!r}, expected steps=5")
        ok(f"SensorRequests leave time at {5 * dt} s; gecko-sim: {status}")

        # Malformed bytes and a control the handshake does not allow: ErrorMessages; nothing steps.
        reason = client.error_for(b"\xff\xff\xff\xff")
        check("malformed" in reason, f"error for malformed bytes: {reason!r}")
        wrong = client.control(handshake, 0.1)
        wrong.objects["robot9"].values.append(1.0)
        reason = client.error_for(wrong)
        check("robot9" in reason, f"error for unknown object robot9: {reason!r}")
        t = client.sensors().simVars.simulatedTime
        check(close(t, 5 * dt), f"after the errors: simulated time {t}, expected {5 * dt}")
        ok(f"malformed bytes and an unknown object get ErrorMessages ({reason!r}); time unchanged")

        # Reset: back to the initial state, paused until the next Control.
        client.reset()
        after = client.sensors()
        check(close(after.simVars.simulatedTime, 0.0), f"after Reset: simulated time {after.simVars.simulatedTime}")
        angles = list(after.objects["robot1"].angleSensors)
        check(all(close(a, b) for a, b in zip(angles, initial_angles)) and len(angles) == len(initial_angles),
              f"after Reset robot1 angles {angles}, initially {initial_angles}")
        t = client.step(handshake, 0.1).simVars.simulatedTime
        steps += 1
        check(close(t, dt), f"first control after Reset: simulated time {t}, expected {dt}")
        ok("Reset brings time (and robot1's angles) back to the start; the next control steps once")

        # Error: the client ends its run; the gateway acknowledges with an ErrorMessage.
        end = client.create(pb.ErrorMessageType)
        end.errormessage = "client done"
        reason = client.error_for(end)
        check("the run ended" in reason, f"answer to the client's ErrorMessage: {reason!r}")
        sim.wait_for_line("ended the run: client done", 5)
        ok(f"the client's ErrorMessage is answered ({reason!r}) and reaches gecko-sim")
    finally:
        client.close()

    # SIGINT: a clean exit with a summary.
    gateway.proc.send_signal(signal.SIGINT)
    summary = gateway.wait_for_line("stopped after", 10)
    check(f"{steps} steps" in summary, f"gateway summary {summary!r}, expected {steps} steps")
    code = gateway.wait(10)
    check(code == 0, f"gateway exit code {code} after SIGINT")
    ok(f"gateway stops on SIGINT with exit code 0: {summary}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--geckocore", required=True)
    parser.add_argument("--gecko-sim", required=True)
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--pb-dir", required=True, help="directory holding the generated click_pb2.py")
    args = parser.parse_args()

    sys.path.insert(0, args.pb_dir)
    try:
        import click_pb2 as pb
    except ImportError as e:
        print(f"FAIL: cannot import click_pb2 from {args.pb_dir}: {e}", file=sys.stderr)
        return 1

    children = []
    # The nodes' ipc sockets go to a directory of this test's own, not /tmp itself.
    ipc_dir = tempfile.TemporaryDirectory(prefix="gecko-click-python-")
    try:
        run(args, pb, children, ipc_dir.name)
        print("PASS: a Python Click client drove gecko-sim through gecko-click-gateway")
        return 0
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
    except Exception:
        print("FAIL: unexpected exception", file=sys.stderr)
        traceback.print_exc()
    finally:
        for child in reversed(children):
            child.stop()
        ipc_dir.cleanup()
    for child in children:
        print(f"--- {child.name} output ---\n{child.output()}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
