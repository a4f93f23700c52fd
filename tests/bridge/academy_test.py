# SPDX-License-Identifier: Apache-2.0
# gecko-bridge's RoboticsAcademy endpoints (docs/ACADEMY.md) against the real
# programs on loopback: geckocore, gecko-bridge --academy (whose manager's
# open starts gecko-sim), gecko-controller, and the brain runner the bridge
# starts. The pages are WebSocket clients of Debian's python3-websockets; the
# simulation's state is read back through its own services and topics with
# Gecko's Python package. Every acknowledgement is checked to come after its
# effect. Run by ctest (tests/bridge/CMakeLists.txt), which sets the paths.
import asyncio
import json
import os
import shlex
import sys
import time

from python_client_test import Key, program, until

try:
    import websockets
except ImportError as err:
    sys.exit(f"FAIL: this test needs the websockets package (Debian 12: python3-websockets) in {sys.executable}: {err}")

import gecko
from gecko.msgs.sim import ControlReply, ControlRequest

WAIT = 30  # s: a hang guard, not a speed claim
# Frames per second a 10 Hz GUI feed must reach: each frame is a 640x480 JPEG
# made by instrumented code under the sanitizers, beside other tests on 2 cores.
GUI_RATE_LOW = 5.0 if os.environ.get("GECKO_TEST_SANITIZED") == "1" else 8.0


class Page:
    """One WebSocket client of an academy endpoint; keeps what it was sent."""

    def __init__(self, ws):
        self.ws = ws
        self.seen = []

    async def send(self, message):
        await self.ws.send(message if isinstance(message, str) else json.dumps(message))

    async def expect(self, matches, what, seconds=WAIT):
        """The first message (kept or new) for which matches() is true; those before it are dropped."""
        deadline = time.monotonic() + seconds
        while True:
            for i, m in enumerate(self.seen):
                if matches(m):
                    del self.seen[: i + 1]
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {what} within {seconds} s; got: {self.seen[-10:]}")
            try:
                self.seen.append(await asyncio.wait_for(self.ws.recv(), left))
            except asyncio.TimeoutError:
                pass


def order_answer(command):
    def matches(m):
        try:
            j = json.loads(m)
        except ValueError:
            return False
        return j.get("data", {}).get("command") == command
    return matches


async def order(page, command, data=None, seconds=WAIT):
    """Sends a manager order; returns its answer (PingDone or error) as JSON."""
    await page.send({"command": command, "data": data or {}})
    return json.loads(await page.expect(order_answer(command), f"answer to {command}", seconds))


def starts(prefix):
    return lambda m: m.startswith(prefix)


class Sim:
    """The simulation as the test sees it: its status service."""

    def __init__(self, node):
        self.status_client = node.client("sim/control/status", ControlRequest, ControlReply)

    def status(self):
        return self.status_client.call(ControlRequest(requester="academy_test"), timeout=20.0).status


async def manager_tests(key, manager, code, sim_node):
    # Before open: refused, and said why.
    a = await order(manager, "stop")
    assert a["command"] == "error" and "open" in a["data"]["message"], a
    await code.send("#play")
    m = await code.expect(starts("#erro"), "#play refused before open")
    assert "open" in m, m
    a = await order(manager, "Ping")
    assert a["command"] == "PingDone" and a["data"]["simulation_open"] is False, a
    await manager.send({"command": "Ping", "id": 7})
    a = json.loads(await manager.expect(order_answer("Ping"), "an answer to Ping with an id"))
    assert a["id"] == 7, a

    # Bad input: every one answered with an error naming it; the bridge goes on.
    a = await order(manager, "fly")
    assert a["command"] == "error" and "unknown command 'fly'" in a["data"]["message"], a
    await manager.send("this is not JSON")
    a = json.loads(await manager.expect(order_answer(""), "error for a non-JSON order"))
    assert a["command"] == "error" and "JSON object" in a["data"]["message"], a
    a = await order(manager, "evaluate", {"source": "x"})
    assert a["command"] == "error" and "code" in a["data"]["message"], a

    # evaluate: pyflakes (or compile) finds the problems, with their lines.
    a = await order(manager, "evaluate", {"code": "import HAL\nx = 1\nHAL.set_joint_targets([x, x])\n"})
    assert a["command"] == "PingDone" and a["data"]["errors"] == [], a
    a = await order(manager, "evaluate", {"code": "x = 1\ny = (x +\n"})
    assert a["command"] == "PingDone" and len(a["data"]["errors"]) == 1, a
    assert a["data"]["errors"][0]["line"] >= 2 and "syntax" in a["data"]["errors"][0]["message"], a
    a = await order(manager, "evaluate", {"code": "x = 1\nprint(y)\n"})
    errors = a["data"]["errors"]
    assert a["command"] == "PingDone" and [e["line"] for e in errors] == [2] and "'y'" in errors[0]["message"], a

    # open starts the configured gecko-sim and answers once its services do.
    a = await order(manager, "open")
    assert a["command"] == "PingDone", a
    sim = Sim(sim_node)
    assert sim.status().simulation == "sim"

    # Something steps it: a controller.
    controller = key.run([program("GECKO_CONTROLLER_PATH"), "--steps", "0", "--rate", "100"])
    await until(lambda: sim.status().steps > 20, "gecko-controller stepping the simulation", WAIT)

    # stop: after its PingDone no step is taken (500 ms).
    a = await order(manager, "stop")
    assert a["command"] == "PingDone" and a["data"]["status"]["state"] == "paused", a
    held = sim.status().steps
    assert held == a["data"]["status"]["steps"], (held, a)
    await asyncio.sleep(0.5)  # the claim is about a span of time: it is the measurement
    assert sim.status().steps == held, "the simulation stepped after stop's PingDone"

    a = await order(manager, "resume")
    assert a["command"] == "PingDone" and a["data"]["status"]["state"] == "running", a
    await until(lambda: sim.status().steps > held + 20, "steps after resume", WAIT)

    # reset: after its PingDone, simulated time is 0 (and it is paused).
    a = await order(manager, "reset")
    assert a["command"] == "PingDone" and a["data"]["status"]["simulated_time"] == 0, a
    s = sim.status()
    assert s.simulated_time == 0 and s.state.wire == "paused", s
    resets = s.resets

    # A flood of resets: each one done after the one before (never interleaved),
    # or refused while too many wait; the bridge answers every one.
    for _ in range(8):
        await manager.send({"command": "reset", "data": {}})
    answers = [json.loads(await manager.expect(order_answer("reset"), "an answer to each reset")) for _ in range(8)]
    done = [a for a in answers if a["command"] == "PingDone"]
    refused = [a for a in answers if a["command"] == "error"]
    assert len(done) + len(refused) == 8 and len(done) >= 2, answers
    assert all("busy" in a["data"]["message"] for a in refused), refused
    counts = [a["data"]["status"]["resets"] for a in done]
    assert counts == list(range(resets + 1, resets + 1 + len(done))), counts
    assert all(a["data"]["status"]["simulated_time"] == 0 for a in done), done

    a = await order(manager, "resume")
    assert a["command"] == "PingDone", a
    controller.stop()  # the brain drives it from here on
    a = await order(manager, "Ping")
    assert a["command"] == "PingDone" and a["data"]["simulation_open"] is True, a


# Each target is a fifth of the way from where the joints are: the arm ends
# at the target only if the brain reads its angles (zeros would stop it at a fifth).
ARM_BRAIN = """\
import HAL
target = [0.6, -0.4]
while True:
    angles = HAL.get_joint_angles()
    HAL.set_joint_targets([a + 0.2 * (t - a) for a, t in zip(angles, target)])
"""


async def code_tests(key, manager, code, sim_node):
    # Bad input first: nothing is loaded by code that does not compile.
    await code.send("#code" + "x = 1\nwhile True:\n    y = (x +\n")
    m = await code.expect(starts("#erro"), "#erro for a syntax error")
    e = json.loads(m[5:])
    assert e["phase"] == "load" and e["line"] >= 3 and "SyntaxError" in e["message"], e
    await code.send("#play")
    m = await code.expect(starts("#erro"), "#erro: #play with nothing loaded")
    assert "no code" in m, m
    await code.send("#fly")
    assert "unknown message" in await code.expect(starts("#erro"), "#erro for an unknown message")
    await code.send("#xyzé")  # its first five bytes end inside a character
    assert "unknown message" in await code.expect(starts("#erro"), "#erro for a name cut inside a character")
    await code.send("#code" + "x = 1\0\n")
    e = json.loads((await code.expect(starts("#erro"), "#erro for code with a NUL byte"))[5:])
    assert e["phase"] == "load", e
    await code.send('#freq{"brain": -3}')
    assert "frequenc" in await code.expect(starts("#erro"), "#erro for a negative frequency")

    # A brain that drives the arm to its target at 50 Hz.
    joints = sim_node.subscriber("sim/joint_states", gecko.msgs.JointState, latest_only=True)
    await code.send("#code" + ARM_BRAIN)
    await code.expect(lambda m: m == "#exec", "#exec")
    await code.send('#freq{"brain": 50, "gui": 10}')
    m = await code.expect(starts("#freq"), "#freq report")
    assert json.loads(m[5:])["brain_target"] == 50, m
    await code.send("#play")
    await code.expect(lambda m: m == "#play", "#play acknowledged")
    reports = []
    while len(reports) < 5:  # the first second's report includes the start; the later ones are steady
        reports.append(json.loads((await code.expect(starts("#freq"), "#freq reports while playing"))[5:]))
    steady = sorted(reports[1:], key=lambda r: r["brain"])[len(reports[1:]) // 2]  # the median second
    assert abs(steady["brain"] - 50) <= 2.5, reports
    assert steady["rtf"] > 0, reports

    def reached():
        js = joints.receive(timeout=0.2)
        return js is not None and all(abs(p - t) < 0.02 for p, t in zip(js.position, [0.6, -0.4]))
    await until(reached, "the arm at its target [0.6, -0.4]", WAIT)

    t0 = time.monotonic()
    await code.send("#stop")
    await code.expect(lambda m: m == "#stop", "#stop acknowledged")
    print(f"arm brain: {steady['brain']:.2f} Hz (target 50), stopped {1000 * (time.monotonic() - t0):.0f} ms after #stop")

    # A brain that raises: the page hears its error with its line, and it stops.
    await code.send("#code" + "import HAL\nn = 0\nwhile True:\n    n += 1\n    if n == 3:\n        n = 1 / 0\n")
    await code.expect(lambda m: m == "#exec", "#exec")
    await code.send("#play")
    m = await code.expect(starts("#erro"), "#erro from a brain that raises")
    e = json.loads(m[5:])
    assert e["phase"] == "run" and e["line"] == 6 and "ZeroDivisionError" in e["message"], e
    await code.send("#stop")
    await code.expect(lambda m: m == "#stop", "#stop of a brain that already stopped")
    await code.send("#code" + "import sys\nwhile True:\n    sys.exit(3)\n")  # its runner stays
    await code.expect(lambda m: m == "#exec", "#exec")
    await code.send("#play")
    e = json.loads((await code.expect(starts("#erro"), "#erro from a brain that exits"))[5:])
    assert e["phase"] == "run" and e["line"] == 3 and "SystemExit" in e["message"], e

    # A brain that sleeps forever, and one that never returns from its loop:
    # #stop ends each at once, and the bridge answers others meanwhile.
    for name, brain in (("sleeps", "import time\nwhile True:\n    time.sleep(1000)\n"),
                        ("spins", "while True:\n    while True:\n        pass\n")):
        await code.send('#freq{"brain": 10}')
        await code.send("#code" + brain)
        await code.expect(lambda m: m == "#exec", "#exec")
        await code.send("#play")
        await code.expect(lambda m: m == "#play", "#play")
        await asyncio.sleep(0.3)  # inside its endless iteration (the claim is about a brain already stuck)
        a = await order(manager, "Ping", seconds=5)
        assert a["command"] == "PingDone", a
        t0 = time.monotonic()
        await code.send("#stop")
        await code.expect(lambda m: m == "#stop", f"#stop of a brain that {name}")
        print(f"brain that {name}: stopped {1000 * (time.monotonic() - t0):.0f} ms after #stop")
        # Interrupted, not killed with its runner (what a brain that swallows the
        # interruption gets, below): its code is still loaded and plays again.
        await code.send("#play")
        await code.expect(lambda m: m == "#play", f"#play again of the brain that {name}")
        await code.send("#stop")
        await code.expect(lambda m: m == "#stop", f"#stop again of the brain that {name}")

    # A brain that swallows the interruption: its runner is killed, the page
    # hears #stop, and the code must be sent again.
    await code.send("#code" + "while True:\n    while True:\n        try:\n            while True:\n                pass\n"
                              "        except BaseException:\n            pass\n")
    await code.expect(lambda m: m == "#exec", "#exec")
    await code.send("#play")
    await code.expect(lambda m: m == "#play", "#play")
    await asyncio.sleep(0.3)  # inside its endless iteration
    t0 = time.monotonic()
    await code.send("#stop")
    await code.expect(lambda m: m == "#stop", "#stop of a brain that swallows its interruption")
    print(f"brain that swallows its interruption: stopped (runner killed) {1000 * (time.monotonic() - t0):.0f} ms after #stop")
    await code.send("#play")
    assert "no code" in await code.expect(starts("#erro"), "#erro: the killed runner's code is gone")

    # #rest: the brain starts over (its setup runs again on the next #play).
    await code.send("#code" + ARM_BRAIN)
    await code.expect(lambda m: m == "#exec", "#exec")
    await code.send("#rest")
    await code.expect(lambda m: m == "#rest", "#rest acknowledged")


GUI_BRAIN = """\
import os
import GUI
W, H = 640, 480
noise = os.urandom(W * H * 3)  # incompressible: each JPEG is large, so a page that does not read fills its socket
n = 0
while True:
    n += 1
    GUI.show_image(noise, width=W, height=H)
    GUI.show_text("iteration %d" % n)
"""


def jpeg_size(data):
    """(height, width) from a JPEG's SOF header."""
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9", "not a whole JPEG"
    i = 2
    while i < len(data):
        marker, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            return int.from_bytes(data[i + 5:i + 7], "big"), int.from_bytes(data[i + 7:i + 9], "big")
        i += 2 + length
    raise AssertionError("no SOF marker in the JPEG")


def small_socket(port):
    """A connected socket whose receive buffer stays small (no autotuning):
    a page that does not read is then seen by the bridge after a few frames."""
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 128 * 1024)
    s.connect(("127.0.0.1", port))
    return s


async def gui_tests(code, base, port):
    import base64
    async with websockets.connect(base + "/gui", max_size=None) as g, \
            websockets.connect(base + "/gui", max_size=None, max_queue=1, sock=small_socket(port)) as slow:
        gui = Page(g)
        await code.send('#freq{"brain": 10, "gui": 10}')
        await code.send("#code" + GUI_BRAIN)
        await code.expect(lambda m: m == "#exec", "#exec")
        await code.send("#play")
        await code.expect(lambda m: m == "#play", "#play")

        first = json.loads((await gui.expect(lambda m: m.startswith("#gui") and '"image"' in m, "a #gui frame with an image"))[4:])
        assert jpeg_size(base64.b64decode(first["image"])) == (480, 640), first["shape"]
        assert first["shape"] == [480, 640, 3], first["shape"]
        assert first["pose"]["names"] == ["arm/joint1", "arm/joint2"] and len(first["pose"]["position"]) == 2, first["pose"]
        # The GUI frequency: frames over 5 s at 10 Hz, while `slow` reads nothing.
        t0, frames = time.monotonic(), []
        while time.monotonic() - t0 < 5.0:
            frames.append(json.loads((await gui.expect(starts("#gui"), "#gui frames"))[4:]))
        rate = len(frames) / (time.monotonic() - t0)
        assert GUI_RATE_LOW <= rate <= 12.0, f"{rate:.1f} frames/s at a GUI frequency of 10 Hz"
        assert frames[-1]["text"].startswith("iteration "), frames[-1]["text"]
        # The code socket kept its reports while the loop above read frames:
        # the oldest may be from before the first frame (gui 0 under the
        # sanitizers). Read on to a current one, within the usual bound.
        deadline = time.monotonic() + WAIT
        report = json.loads((await code.expect(starts("#freq"), "#freq report"))[5:])
        while not GUI_RATE_LOW <= report["gui"] <= 12.0 and time.monotonic() < deadline:
            report = json.loads((await code.expect(starts("#freq"), "#freq report"))[5:])
        assert GUI_RATE_LOW <= report["gui"] <= 12.0, report

        # The slow page missed what it did not read: it catches up on the newest
        # frame after a few (those its socket held), not after every frame made.
        newest = frames[-1]["frame"]
        stale = 0
        while True:
            f = json.loads((await asyncio.wait_for(slow.recv(), WAIT))[4:])
            if f["frame"] >= newest:
                break
            stale += 1
        print(f"GUI: {rate:.1f} frames/s of {len(first['image']) // 1024} KiB; a page that read nothing for {newest} "
              f"frames got {stale} old ones, then the newest")
        assert stale < newest / 2, f"the slow page was sent {stale} of {newest} old frames"
        await code.send("#stop")
        await code.expect(lambda m: m == "#stop", "#stop")


async def own_ports_tests(bridge):
    """--academy-ports: each endpoint on a port of its own, on any path (RoboticsAcademy's frontend connects to
    ws://HOST:8765, :1905 and :2303)."""
    ports = {name: int(bridge.line(f"RoboticsAcademy {name} port at").rsplit(":", 1)[1].strip("/"))
             for name in ("manager", "code", "gui")}
    async with websockets.connect(f"ws://127.0.0.1:{ports['manager']}") as m, \
            websockets.connect(f"ws://127.0.0.1:{ports['code']}/") as c, \
            websockets.connect(f"ws://127.0.0.1:{ports['gui']}/", max_size=None) as g:
        a = await order(Page(m), "Ping")
        assert a["command"] == "PingDone", a
        code = Page(c)
        await code.send('#freq{"gui": 10}')
        assert json.loads((await code.expect(starts("#freq"), "#freq report on the code port"))[5:])["gui_target"] == 10
        await Page(g).expect(starts("#gui"), "#gui frames on the GUI port")


async def reopen_tests(manager, sim_node):
    """A second open ends the simulation the first started and starts it anew."""
    before = Sim(sim_node).status()
    assert before.resets > 0, before
    a = await order(manager, "open")
    assert a["command"] == "PingDone" and a["data"]["status"]["resets"] == 0, a


async def token_tests(key):
    """The token guards the academy endpoints as it guards the Foxglove one."""
    bridge = key.run([program("GECKO_BRIDGE_PATH"), "--listen", "127.0.0.1:0", "--academy", "--token", "s3cret",
                      "--academy-python", sys.executable])
    port = bridge.line("serving").split("http://127.0.0.1:")[1].split("/")[0]
    try:
        async with websockets.connect(f"ws://127.0.0.1:{port}/academy/manager"):
            raise AssertionError("an academy endpoint let a client without the token in")
    except websockets.exceptions.InvalidStatusCode as e:
        assert e.status_code == 401, e
    async with websockets.connect(f"ws://127.0.0.1:{port}/academy/manager?token=s3cret") as m:
        a = await order(Page(m), "Ping")
        assert a["command"] == "PingDone" and a["data"]["simulation_open"] is False, a
    bridge.stop()


async def tls_tests(key):
    """Over TLS (--tls-cert, --tls-key) the academy endpoints are wss:// ones."""
    import ssl
    import subprocess
    cert, private = os.path.join(key.dir, "cert.pem"), os.path.join(key.dir, "key.pem")
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                           "/CN=127.0.0.1", "-keyout", private, "-out", cert], capture_output=True, text=True)
    assert made.returncode == 0, f"openssl (Debian's openssl package) made no certificate: {made.stderr}"
    bridge = key.run([program("GECKO_BRIDGE_PATH"), "--listen", "127.0.0.1:0", "--academy", "--tls-cert", cert,
                      "--tls-key", private, "--academy-python", sys.executable])
    port = bridge.line("serving https://127.0.0.1:").split("https://127.0.0.1:")[1].split("/")[0]
    assert "wss://" in bridge.line("RoboticsAcademy endpoints")
    context = ssl.create_default_context(cafile=cert)
    context.check_hostname = False
    async with websockets.connect(f"wss://127.0.0.1:{port}/academy/manager", ssl=context) as m:
        a = await order(Page(m), "Ping")
        assert a["command"] == "PingDone", a
    bridge.stop()


def children_of(pid):
    """The pids whose parent is `pid` (from /proc), with their command names."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == pid:
                out[int(entry)] = stat[stat.index("(") + 1:stat.rindex(")")]
    return out


def gone(pid):
    """Exited: no such process, or a zombie nobody reaped yet (PID 1 of a container may not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].split()[0] in ("Z", "X")


async def killed_bridge_tests(key):
    """A bridge killed with -9 cannot end the simulation it started: the simulation ends by itself."""
    sim_command = f"{shlex.quote(program('GECKO_SIM_PATH'))} --robots arm --joints 2"
    bridge = key.run([program("GECKO_BRIDGE_PATH"), "--listen", "127.0.0.1:0", "--academy-sim-command", sim_command,
                      "--academy-python", sys.executable])
    port = bridge.line("serving").split("http://127.0.0.1:")[1].split("/")[0]
    async with websockets.connect(f"ws://127.0.0.1:{port}/academy/manager") as m:
        a = await order(Page(m), "open")
        assert a["command"] == "PingDone", a
    sims = [pid for pid, name in children_of(bridge.proc.pid).items() if name.startswith("gecko-sim")]
    assert len(sims) == 1, children_of(bridge.proc.pid)
    bridge.proc.kill()
    bridge.proc.wait(WAIT)
    await until(lambda: gone(sims[0]), "the simulation to end with the bridge that started it", WAIT)


async def main():
    key = Key()
    sim_node = None
    try:
        # Quoted as a shell would: the clone's path may hold spaces.
        sim_command = f"{shlex.quote(program('GECKO_SIM_PATH'))} --robots arm --joints 2"
        bridge = key.run([program("GECKO_BRIDGE_PATH"), "--listen", "127.0.0.1:0", "--academy-sim-command", sim_command,
                          "--academy-python", sys.executable, "--academy-ports", "0,0,0"])
        port = bridge.line("serving").split("http://127.0.0.1:")[1].split("/")[0]
        bridge.line("RoboticsAcademy endpoints")
        core_port = key.env["GECKO_CORE"].split(":")[1]
        sim_node = gecko.Node(key.key, "academy_test", core=f"127.0.0.1:{core_port}", multicast_enabled=False,
                              ipc_directory=key.dir)
        base = f"ws://127.0.0.1:{port}/academy"
        async with websockets.connect(base + "/manager") as m, websockets.connect(base + "/code") as c:
            manager, code = Page(m), Page(c)
            await manager_tests(key, manager, code, sim_node)
            await code_tests(key, manager, code, sim_node)
            await gui_tests(code, base, int(port))
            await own_ports_tests(bridge)
            await reopen_tests(manager, sim_node)
        await token_tests(key)
        await tls_tests(key)
        await killed_bridge_tests(key)
        sim_node.close()
        sim_node = None
        bridge.proc.terminate()
        counters = json.loads(bridge.line("gecko-bridge: academy {").split("academy ", 1)[1])
        assert counters["gui_frames_replaced"] > 0 and counters["refused_orders"] > 0, counters
        print("PASS")
    finally:
        if sim_node is not None:
            sim_node.close()
        key.stop()


if __name__ == "__main__":
    asyncio.run(main())
