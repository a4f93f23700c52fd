#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A Python Click server, written as pclick's are (a zmq REP socket, classes
protoc generates from click_gateway/proto/click.proto), offered on Gecko by
gecko-click-gateway --connect, and stepped by the Python gecko.click.Controller
through geckocore: handshake, a SensorRequest that does not step, Controls
that step once each, the controller's reset, a reset from the server's side,
an ErrorMessage from the server, the controller's end of run reaching the
server, and a server that dies and comes back (the controller hears why
within the gateway's timeout; the gateway starts a new session).

Plain Python, no pytest. Exit 0 on success, 1 with the reason on failure.

  reverse_gateway_test.py --geckocore PATH --gateway PATH --pb-dir DIR --python-dir DIR
"""
import argparse
import os
import sys
import threading
import time
import traceback

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from click_client_test import Child, Failure, check, endpoint_after  # noqa: E402


class ClickServer:
    """An arm of two angle joints; each Control steps it once. `reset_at` and
    `error_at` script the answer to the Control that reaches that step."""

    def __init__(self, pb, endpoint="tcp://127.0.0.1:*"):
        self.pb = pb
        self.steps = self.handshakes = self.resets = 0
        self.reset_at = self.error_at = 0
        self.ended_with = None
        self.context = zmq.Context()
        self.start(endpoint)

    def start(self, endpoint):
        self.socket = self.context.socket(zmq.REP)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind(endpoint)
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def stop(self):
        self.running = False
        self.thread.join(10)

    def reply(self, request):
        pb = self.pb
        m = pb.Message()
        m.ParseFromString(request)
        if m.messageType == pb.HandshakeInitMessageType:
            self.handshakes += 1
            h = pb.HandshakeMessage(messageType=pb.HandshakeMessageType, version=pb.CURRENT_VERSION)
            arm = h.objects["arm"]
            arm.controlsInOrder.extend(["j1", "j2"])
            arm.controlTypesInOrder.extend([pb.Angle, pb.Angle])
            arm.jointSensorsInOrder.extend(["j1", "j2"])
            arm.jointSensors.append(pb.Angle)
            h.simSettings.timeStep = 0.01
            return h
        if m.messageType == pb.ControlMessageType:
            self.steps += 1
            if self.steps == self.reset_at:
                self.steps = 0
                self.resets += 1
                return pb.ResetMessage(messageType=pb.ResetMessageType)
            if self.steps == self.error_at:
                return pb.ErrorMessage(messageType=pb.ErrorMessageType, errormessage=f"the solver diverged at step {self.steps}")
        if m.messageType in (pb.ControlMessageType, pb.SensorRequestMessageType):
            s = pb.SensorMessage(messageType=pb.SensorMessageType)
            s.objects["arm"].angleSensors.extend([0.1 * self.steps, -0.1 * self.steps])
            s.simVars.simulatedTime = 0.01 * self.steps
            return s
        if m.messageType == pb.ResetMessageType:
            self.steps = 0
            self.resets += 1
            return pb.ResetMessage(messageType=pb.ResetMessageType)
        if m.messageType == pb.ErrorMessageType:
            e = pb.ErrorMessage()
            e.ParseFromString(request)
            self.ended_with = e.errormessage
            return pb.ErrorMessage(messageType=pb.ErrorMessageType, errormessage="run ended")
        return pb.ErrorMessage(messageType=pb.ErrorMessageType, errormessage="not a request")

    def serve(self):
        while self.running:
            if not self.socket.poll(20):
                continue
            request = self.socket.recv()
            self.socket.send(self.reply(request).SerializeToString())
        self.socket.close(0)


def run(args):
    sys.path.insert(0, args.pb_dir)
    sys.path.insert(0, args.python_dir)
    import click_pb2 as pb
    import gecko
    from gecko import click

    key = f"reverse-gateway-py-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GECKO_")}
    children = []
    server = ClickServer(pb)
    try:
        core = Child("geckocore", [args.geckocore, "--key", key, "--no-multicast", "--door", "0",
                                   "--listen", "tcp://127.0.0.1:*"], env)
        children.append(core)
        core_endpoint = endpoint_after(core.wait_for_line("listening on ", 20), "listening on ")
        env.update(GECKO_CORE=core_endpoint, GECKO_NO_MULTICAST="1")
        gateway = Child("gecko-click-gateway", [args.gateway, "--key", key, "--connect", server.endpoint,
                                                "--timeout-ms", "1000", "--watchdog-ms", "0"], env)
        children.append(gateway)
        gateway.wait_for_line("is simulation 'sim'", 20)

        node = gecko.Node(key, "py_reverse", core=core_endpoint, multicast_enabled=False)
        ctl = click.Controller(node, "sim", timeout=10.0, connect_timeout=20.0)
        hs = ctl.handshake()
        check(list(hs.objects) == ["arm"] and hs.objects["arm"].controls_in_order == ["j1", "j2"],
              f"the handshake: {hs}")
        sensed = ctl.sensors()
        check(sensed.is_sensor() and server.steps == 0, "a SensorRequest stepped, or was not a Sensor")
        control = ctl.make_control()
        control.objects["arm"].values = [0.3, -0.3]
        for k in range(1, 6):
            r = ctl.step(control)
            check(r.is_sensor(), f"step {k}: {r.kind}")
            check(abs(r.sensor.simulated_time - 0.01 * k) < 1e-9, f"step {k}: time {r.sensor.simulated_time}")
        check(server.steps == 5, f"the server stepped {server.steps} times for 5 Controls")
        ctl.reset()
        check(server.steps == 0 and server.resets == 1, "the controller's reset did not reach the server")

        server.reset_at = 2
        check(ctl.step(control).is_sensor(), "step after the reset")
        check(ctl.step(control).is_reset(), "a reset from the server's side did not reach the controller as a Reset")
        server.reset_at = 0
        check(ctl.step(control).is_sensor(), "a step after the server's reset")

        server.error_at = 2
        failed = ctl.step(control)
        check(failed.is_error() and "the solver diverged at step 2" in failed.error.reason,
              f"the server's ErrorMessage: {failed.kind} {getattr(failed, 'error', None)}")
        server.error_at = 0

        server.stop()  # dies: the controller hears why within the gateway's timeout, not its own
        asked = time.monotonic()
        dead = ctl.step(control)
        check(dead.is_error() and "did not answer" in dead.error.reason, f"a dead server: {dead.kind}")
        check(time.monotonic() - asked < 8.0, "the controller waited for its own timeout")
        handshakes = server.handshakes
        server.start(server.endpoint)
        back = False
        for _ in range(10):  # each attempt is bounded by the gateway's 1 s timeout
            back = ctl.step(control).is_sensor()
            if back:
                break
        check(back, "the gateway did not reach the server again")
        check(server.handshakes == handshakes + 1, "the gateway did not start a new session (HandshakeInit)")

        check(ctl.error("brain done"), "the end of the run was not acknowledged")
        check(server.ended_with == "brain done", f"the server heard {server.ended_with!r}")
        node.close()
        print("PASS: a Python Click server stepped by the Python Controller through gecko-click-gateway --connect")
        return 0
    except Exception as f:  # a Failure, or an error of the Controller: either way, what the programs said
        print(f"FAIL: {f}" if isinstance(f, Failure) else f"FAIL: {traceback.format_exc()}")
        for c in children:
            print(f"--- {c.name} output:\n{c.output()}")
        return 1
    finally:
        server.running = False
        for c in reversed(children):
            c.stop()


def main():
    p = argparse.ArgumentParser()
    for a in ("--geckocore", "--gateway", "--pb-dir", "--python-dir"):
        p.add_argument(a, required=True)
    try:
        return run(p.parse_args())
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
