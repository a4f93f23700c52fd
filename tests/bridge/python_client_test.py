# SPDX-License-Identifier: Apache-2.0
# gecko-bridge from a Python program (docs/BRIDGE.md, "From Python or
# JavaScript"): Debian's python3-websockets and nothing of Gecko's Python
# package speak the Foxglove WebSocket protocol to the real program, with
# geckocore, pub_imu and add_server on loopback: serverInfo, the channels of
# pub_imu's key, JSON messages checked against the advertised schema, a
# publish a C++ subscriber (gecko echo) receives, a refused publish's status,
# the add service, and examples/python/bridge_client.py. Run by ctest
# (tests/bridge/CMakeLists.txt), which sets the programs' paths.
import asyncio
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

try:
    import websockets
except ImportError as err:
    sys.exit(f"FAIL: this test needs the websockets package (Debian 12: python3-websockets, installed by "
             f"scripts/install-deps) in {sys.executable}: {err}")

SUBPROTOCOL = "foxglove.websocket.v1"


def program(variable):
    path = os.environ.get(variable)
    if not path:
        sys.exit(f"FAIL: {variable} is not set: run this test through ctest (tests/bridge/CMakeLists.txt)")
    return path


class Child:
    """A process whose output lines (stdout and stderr) are kept as they come."""

    def __init__(self, args, env):
        self.name = os.path.basename(args[0])
        self.lines = []
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if os.environ.get("GECKO_TEST_VERBOSE"):
                print(f"[{self.name}] {line}", end="", file=sys.stderr)

    def line(self, text, seconds=20):
        """The first line holding `text`, waiting up to `seconds` for it."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = next((l for l in list(self.lines) if text in l), None)
            if found is not None:
                return found
            if self.proc.poll() is not None and not any(text in l for l in self.lines):
                break
            time.sleep(0.02)
        raise AssertionError(f"{self.name} did not print '{text}' within {seconds} s; it printed:\n" + "\n".join(self.lines))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Key:
    """A key with its own geckocore on loopback, and the programs started on it."""

    def __init__(self):
        self.key = f"bridge-py-{os.getpid()}"
        self.dir = tempfile.mkdtemp(prefix="gecko-bridge-py-")
        base = {k: v for k, v in os.environ.items() if not k.startswith("GECKO_")}
        self.children = []
        self.core = Child([program("GECKOCORE_PATH"), "--key", self.key, "--listen", "tcp://127.0.0.1:*",
                           "--no-multicast", "--door", "0"], base)
        port = self.core.line("listening on").split("tcp://127.0.0.1:")[1].split()[0].rstrip(",;)")
        self.env = {**base, "GECKO_KEY": self.key, "GECKO_CORE": f"127.0.0.1:{port}", "GECKO_NO_MULTICAST": "1",
                    "GECKO_IPC_DIR": self.dir}

    def run(self, args):
        child = Child(args, self.env)
        self.children.append(child)
        return child

    def stop(self):
        for child in reversed(self.children):
            child.stop()
        self.core.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


async def until(check, what, seconds=20):
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        await asyncio.sleep(0.02)


class Client:
    """A Foxglove WebSocket client written from the protocol's specification,
    recording everything the bridge says."""

    def __init__(self, ws):
        self.ws = ws
        self.server_info = None
        self.channels = {}
        self.services = {}
        self.statuses = []
        self.messages = []   # (subscription, receive time ns, payload)
        self.responses = []  # (service, call, encoding, payload)
        self.failures = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        async for frame in self.ws:
            if isinstance(frame, str):
                msg = json.loads(frame)
                op = msg["op"]
                if op == "serverInfo":
                    self.server_info = msg
                elif op == "advertise":
                    self.channels.update({c["id"]: c for c in msg["channels"]})
                elif op == "unadvertise":
                    for id in msg["channelIds"]:
                        self.channels.pop(id, None)
                elif op == "advertiseServices":
                    self.services.update({s["id"]: s for s in msg["services"]})
                elif op == "status":
                    self.statuses.append(msg)
                elif op == "serviceCallFailure":
                    self.failures.append(msg)
            elif frame[0] == 0x01:  # MessageData: u32 subscription, u64 receive time, payload
                subscription, stamp = struct.unpack_from("<IQ", frame, 1)
                self.messages.append((subscription, stamp, bytes(frame[13:])))
            elif frame[0] == 0x03:  # ServiceCallResponse: u32 service, u32 call, u32 encoding length, encoding, payload
                service, call, length = struct.unpack_from("<III", frame, 1)
                encoding = frame[13:13 + length].decode()
                self.responses.append((service, call, encoding, bytes(frame[13 + length:])))

    def channel(self, topic, encoding):
        return next((c for c in self.channels.values() if c["topic"] == topic and c["encoding"] == encoding), None)

    def service(self, name):
        return next((s for s in self.services.values() if s["name"] == name), None)

    async def send_json(self, msg):
        await self.ws.send(json.dumps(msg))


def conforms(schema, value, path=""):
    """'' when `value` has the types `schema` says, recursively; else what differs."""
    if "anyOf" in schema:
        errors = [conforms(s, value, path) for s in schema["anyOf"]]
        return "" if "" in errors else errors[0]
    types = schema.get("type", [])
    types = types if isinstance(types, list) else [types]
    kind = ("null" if value is None else "boolean" if isinstance(value, bool) else "integer" if isinstance(value, int)
            else "number" if isinstance(value, float) else "string" if isinstance(value, str)
            else "array" if isinstance(value, list) else "object")
    if types and kind not in types and not (kind == "integer" and "number" in types):
        return f"{path or '(top)'} is {kind}, the schema says {'|'.join(types)}"
    if kind == "object":
        for name, sub in schema.get("properties", {}).items():
            if name not in value:
                return f"{path}{name} is missing"
            why = conforms(sub, value[name], f"{path}{name}.")
            if why:
                return why
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            why = conforms(schema["items"], item, f"{path}[{i}].")
            if why:
                return why
    return ""


def ok(what):
    print(f"ok - {what}", flush=True)


async def check_channels_and_json(client, key):
    info = client.server_info
    for capability in ("clientPublish", "services", "connectionGraph"):
        assert capability in info["capabilities"], info
    assert info["supportedEncodings"] == ["json", "msgpack"], info
    assert info["metadata"]["key"] == key.key, info
    imu = await until(lambda: client.channel("imu", "json"), "pub_imu's imu json channel")
    assert client.channel("imu", "msgpack"), "the imu msgpack channel"
    assert imu["schemaName"] == "gecko.msgs.Imu" and imu["schemaEncoding"] == "jsonschema", imu
    schema = json.loads(imu["schema"])
    assert "x" in schema["properties"]["accel"]["properties"], schema
    ok("serverInfo first, with its capabilities and key; imu advertised as json (with a JSON Schema) and msgpack")

    await client.send_json({"op": "subscribe", "subscriptions": [{"id": 7, "channelId": imu["id"]}]})
    mine = lambda: [m for m in client.messages if m[0] == 7]
    await until(lambda: len(mine()) >= 5, "5 imu messages")
    now_ns = time.time_ns()
    for _, stamp, payload in mine():
        message = json.loads(payload)
        assert conforms(schema, message) == "", (conforms(schema, message), message)
        assert 0 < stamp < now_ns + 60 * 10**9, stamp
    await client.send_json({"op": "unsubscribe", "subscriptionIds": [7]})
    ok(f"{len(mine())} imu messages decoded as JSON, each matching the advertised schema, with receive times in ns")


async def check_publish(client, key):
    echo = key.run([program("GECKO_CLI_PATH"), "echo", "imu_in", "--json", "--count", "1"])
    await client.send_json({"op": "advertise", "channels": [
        {"id": 3, "topic": "imu_in", "encoding": "json", "schemaName": "gecko.msgs.Imu"}]})
    publish = lambda msg: client.ws.send(struct.pack("<BI", 0x01, 3) + json.dumps(msg).encode())
    # The wrong shape first: had it gone through, echo (count 1) would print it.
    await publish({"stamp_ns": 1, "acel": {"x": 1.0, "y": 2.0, "z": 3.0}})
    refused = await until(lambda: next((s for s in client.statuses if s["level"] == 2 and "acel" in s["message"]), None),
                          "the refusal of a message with a field imu_in's type does not have")
    assert "imu_in" in refused["message"] and "nothing was published" in refused["message"], refused
    ok(f"a message of the wrong shape is refused: {refused['message']}")

    # Then a good one, again until the subscriber's link is up and it arrives.
    async def arrived():
        await publish({"stamp_ns": 42, "frame_id": "from-python", "accel": {"x": 1.5, "y": 0.0, "z": 9.81}})
        try:
            await until(lambda: any("from-python" in l for l in echo.lines), "", seconds=0.2)
            return True
        except AssertionError:
            return False
    deadline = time.monotonic() + 20
    while not await arrived():
        assert time.monotonic() < deadline, "gecko echo did not print the published message within 20 s:\n" + \
            "\n".join(echo.lines)
    line = next(l for l in echo.lines if l.startswith("{"))
    assert "from-python" in line and "9.81" in line, line
    ok(f"a published message reaches a C++ subscriber (gecko echo): {line}")


async def check_service(client):
    add = await until(lambda: client.service("add"), "the add service")
    assert add["type"] == "examples.AddRequest->examples.AddReply", add
    assert "a" in json.loads(add["request"]["schema"])["properties"], add

    def call(call_id, request):
        encoding = b"json"
        return client.ws.send(struct.pack("<BIII", 0x02, add["id"], call_id, len(encoding)) + encoding +
                              json.dumps(request).encode())
    await call(1, {"a": 2.0, "b": 3.5})
    _, _, encoding, payload = await until(lambda: next((r for r in client.responses if r[1] == 1), None), "the reply")
    assert encoding == "json" and json.loads(payload)["sum"] == 5.5, (encoding, payload)
    await call(2, {"a": 1.0, "c": 2.0})
    failure = await until(lambda: next((f for f in client.failures if f["callId"] == 2), None), "a wrong request's failure")
    assert "'c'" in failure["message"], failure
    ok(f"the add service answers 2 + 3.5 = 5.5; a wrong request fails: {failure['message']}")


def check_example(bridge_url):
    example = program("BRIDGE_PY_EXAMPLE")
    done = subprocess.run([sys.executable, example, "--url", bridge_url, "--topic", "imu", "--count", "3"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all("accel" in json.loads(l) for l in lines), done.stdout
    ok(f"examples/python/bridge_client.py prints 3 imu messages: {lines[0][:80]}...")


async def main():
    key = Key()
    try:
        key.run([program("PUB_IMU_PATH")])
        key.run([program("ADD_SERVER_PATH")])
        bridge = key.run([program("GECKO_BRIDGE_PATH"), "--listen", "127.0.0.1:0"])
        port = bridge.line("serving").split("http://127.0.0.1:")[1].split("/")[0]
        url = f"ws://127.0.0.1:{port}"
        async with websockets.connect(url, subprotocols=[SUBPROTOCOL], max_size=None) as ws:
            assert ws.subprotocol == SUBPROTOCOL, ws.subprotocol
            client = Client(ws)
            await until(lambda: client.server_info, "serverInfo")
            await check_channels_and_json(client, key)
            await check_publish(client, key)
            await check_service(client)
            client.reader.cancel()
        await asyncio.get_running_loop().run_in_executor(None, check_example, url)
    finally:
        key.stop()


if __name__ == "__main__":
    asyncio.run(main())
    print("all passed")
