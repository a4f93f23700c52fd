# SPDX-License-Identifier: Apache-2.0
"""python3 -m gecko list|echo|pub: the C++ `gecko` tool's commands for a
machine without it, with its arguments and flags:

    python3 -m gecko list --key K
    python3 -m gecko echo --key K TOPIC [--count N] [--json] [--type NAME]
    python3 -m gecko echo --key K 'arm1/*'    (a glob: every topic it matches, each message under its topic)
    python3 -m gecko pub  --key K TOPIC 'JSON' --type NAME [--rate HZ] [--count N]

Exit codes as the C++ tool: 0 ok, 1 runtime failure, 2 usage error.
"""

import argparse
import base64
import json
import math
import socket
import sys
import time

import msgpack
import zmq

from . import args as gargs
from . import discovery as disc
from . import message, runtime
from .errors import Error
from .msgs import by_name
from .names import is_glob
from ._core_security import core_security_mismatch
from ._datagram_seal import SealedSearch
from .security import KeySecurity
from ._core_security import HANDSHAKE_EVENTS, count_handshake_failures, handshake_refusal
from ._transport import secure

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


# ---- asking the core ----------------------------------------------------------------------

def find_core(o, timeout, security=None, found=None):
    """The endpoint of the core of o.key: by multicast, else at o.core (a
    core or a host door, which redirects). Raises Error("discovery"), or
    Error("security") when the core heard is secured and `security`
    (gecko.security.KeySecurity) has no secret, or the other way round. With
    the secret, queries are sealed and only authentic answers count; a plain
    core's answer, or one sealed with another secret, is the error when no
    authentic one came within o.find_timeout (docs/SECURITY.md §6). A dict
    `found` gets the fingerprint the core's datagram names ("fp")."""
    deadline = time.monotonic() + timeout
    secured = security is not None and security.secured
    if o.multicast_enabled:
        search = SealedSearch(o.key, security, runtime.logger("gecko_py"), o.find_timeout) if secured else None
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            s.bind(("0.0.0.0", 0))
            s.settimeout(0.1)
            wait_until = time.monotonic() + (o.find_timeout if o.core else timeout)
            while time.monotonic() < min(wait_until, deadline):
                if search is not None and search.verdict(time.monotonic()):
                    raise Error("security", search.why)
                s.sendto(disc.query_msg(o.key, "gecko_py", socket.gethostname(), 0, security), (o.group, o.port))
                try:
                    data, (addr, sender_port) = s.recvfrom(disc.MAX_DATAGRAM)
                except socket.timeout:
                    continue
                m = disc.parse(data)
                if m and m["t"] == "core" and m.get("key") == o.key and isinstance(m.get("endpoint"), str):
                    if search is not None:
                        if not search.admit(data, m, "%s:%d" % (addr, sender_port), time.monotonic()):
                            continue
                    else:
                        why = core_security_mismatch(o.key, m, security)
                        if why:
                            raise Error("security", why)
                    host, port = disc.split_tcp(m["endpoint"])
                    if port:
                        if found is not None and isinstance(m.get("fp"), str):
                            found["fp"] = m["fp"]
                        return "tcp://%s:%d" % (addr, port) if disc.is_wildcard(host) else m["endpoint"]
        except OSError:
            pass
        finally:
            s.close()
        if search is not None and search.why:  # only refused answers: say why rather than "no answer"
            raise Error("security", search.why)
    explicit = disc.normalize_core_address(o.core)
    if not explicit:
        raise Error("discovery", "no geckocore for key '%s' answered by multicast, and no --core / GECKO_CORE is set"
                    % o.key)
    return explicit


def request(endpoint, msg, timeout, security=None, peer_fingerprint="", given=False):
    """The answer of `endpoint` to `msg`, a request that names a key. With
    the key's secret the request is a CURVE client's. `given`: the address
    came from --core / GECKO_CORE, so no datagram said what it is. Then the
    request goes over a plain connection too, for a host door (plain:
    docs/SECURITY.md §5; the answer is marked "_plain"), and a refused
    handshake is the error rather than "no answer"."""
    secured = security is not None and security.secured
    accepted = security.curve.accepted_fingerprint if secured else ""
    requests = [_Request(endpoint, msg, security, peer_fingerprint, watch=given)]
    if given and secured:
        requests.append(_Request(endpoint, msg, watch=True))
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            poller = zmq.Poller()
            for r in requests:
                poller.register(r.socket, zmq.POLLIN)
            ready = dict(poller.poll(int(min(0.1, max(0.0, deadline - time.monotonic())) * 1000)))
            for r in requests:
                if r.socket in ready:
                    m = disc.parse(r.socket.recv())
                    if m is None:
                        raise Error("protocol", "the answer from %s is not a discovery message" % endpoint)
                    if r.plain and secured:
                        m["_plain"] = True
                    return m
            if not given or requests[0].failures() < 3:
                continue
            if not secured:
                raise Error("security", handshake_refusal(msg.get("key"), endpoint, security, who="program"))
            if accepted and requests[0].fingerprint != accepted:  # during a rotation the core may use it
                requests[0].close()
                requests[0] = _Request(endpoint, msg, security, accepted, watch=True)
            elif requests[1].failures() >= 3:  # a plain connection is refused too: a secured core
                raise Error("security", handshake_refusal(msg.get("key"), endpoint, security, True, "program"))
        raise Error("discovery", "no answer from %s within %d ms" % (endpoint, timeout * 1000))
    finally:
        for r in requests:
            r.close()


class _Request:
    """One REQ socket that sent `msg` to `endpoint`: a CURVE client's with
    `security` (expecting the server key of `fingerprint`), else plain; with
    `watch`, its handshake events are read (failures())."""

    def __init__(self, endpoint, msg, security=None, fingerprint="", watch=False):
        self.plain = security is None or not security.secured
        self.fingerprint = fingerprint
        self.socket = zmq.Context.instance().socket(zmq.REQ)
        self.socket.setsockopt(zmq.LINGER, 0)
        if not self.plain:
            secure(self.socket, security.curve, server=False, peer_fingerprint=fingerprint)
        self.monitor = self.socket.get_monitor_socket(HANDSHAKE_EVENTS) if watch else None
        self._failures = 0
        self.socket.connect(endpoint)
        self.socket.send(msgpack.packb(msg))

    def failures(self):
        if self.monitor is not None:
            self._failures = count_handshake_failures(self.monitor, self._failures)
        return self._failures

    def close(self):
        if self.monitor is not None:
            self.socket.disable_monitor()
            self.monitor.close(0)
        self.socket.close()


def query(o, timeout=3.0):
    """The core's `list` answer for o.key (following a host door's redirect).
    With the key's secret, the query is a CURVE client (docs/SECURITY.md §5)."""
    security = KeySecurity.find(o.key)
    found = {}
    endpoint = find_core(o, timeout, security, found)
    core_secret = found.get("fp", "")  # during a rotation, the core may use the accepted secret
    explicit = endpoint == disc.normalize_core_address(o.core) if o.core else False
    for _ in range(2):
        # Given GECKO_CORE, a secured query asks it as a host door too (the door is plain and only redirects).
        m = request(endpoint, {"v": disc.VERSION, "t": "list", "key": o.key}, timeout, security, core_secret,
                    given=explicit)
        explicit = False
        if m.get("_plain") and m["t"] == "list":
            raise Error("security", "geckocore for key '%s' at %s is not secured, but this machine has the key's "
                        "secret (%s): a secured program never talks to a plain core" % (o.key, endpoint, security.path))
        if m["t"] == "redirect":
            host, port = disc.split_tcp(m.get("endpoint", ""))
            door_host, _ = disc.split_tcp(endpoint)
            endpoint = "tcp://%s:%d" % (door_host, port) if disc.is_wildcard(host) else m["endpoint"]
            continue
        if m["t"] == "error":
            raise Error("discovery", str(m.get("message", m.get("code"))))
        # Answered over a CURVE link made with the secret: the key is secured with it.
        m["_secured_fingerprint"] = (core_secret or security.fingerprint) if security.secured else ""
        return m
    raise Error("protocol", "the host door redirected twice")


# ---- msgpack <-> JSON, as the C++ tool maps them ------------------------------------------------

def to_json_value(v):
    if isinstance(v, bytes):
        return {"$bin": base64.b64encode(v).decode()}
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {(k if isinstance(k, str) else json.dumps(to_json_value(k))): to_json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json_value(x) for x in v]
    if isinstance(v, msgpack.ExtType):
        return {"$ext": v.code, "$data": base64.b64encode(v.data).decode()}
    return v


def from_json_value(v):
    if isinstance(v, dict):
        if list(v) == ["$bin"] and isinstance(v["$bin"], str):
            return base64.b64decode(v["$bin"])
        return {k: from_json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json_value(x) for x in v]
    return v


def to_text(v, indent=0):
    pad = "  " * indent
    if isinstance(v, dict):
        lines = []
        for k, x in v.items():
            if isinstance(x, dict) and x:
                lines.append("%s%s:" % (pad, k))
                lines.append(to_text(x, indent + 1))
            else:
                lines.append("%s%s: %s" % (pad, k, _scalar_text(x)))
        return "\n".join(lines)
    return pad + _scalar_text(v)


def _scalar_text(x):
    if isinstance(x, bytes):
        return "<%d bytes: %s%s>" % (len(x), x[:8].hex(" "), " ..." if len(x) > 8 else "")
    if isinstance(x, list):
        shown = x[:32]
        more = ", +%d more" % (len(x) - 32) if len(x) > 32 else ""
        return "[" + ", ".join(_scalar_text(e) for e in shown) + more + "]"
    if isinstance(x, dict):
        return json.dumps(to_json_value(x))
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return repr(x) if math.isfinite(x) else ("nan" if x != x else ("inf" if x > 0 else "-inf"))
    if x is None:
        return "null"
    return str(x)


# ---- the commands ----------------------------------------------------------------------------

def cmd_list(a, o):
    r = query(o, a.timeout)
    secured = r.get("_secured_fingerprint", "")
    print("key '%s': %d node%s, core %s (%s, pid %s)%s" % (
        r.get("key"), len(r.get("nodes", [])), "" if len(r.get("nodes", [])) == 1 else "s", r.get("endpoint"),
        r.get("host"), r.get("pid"),
        ", secured (secret %s): every tcp and ipc link is CurveZMQ" % secured if secured else ""))
    if a.names:
        for t in r.get("topics", []):
            print(t["name"])
        return EXIT_OK

    def who(lst):
        return ", ".join("%s@%s:%s" % (e.get("node"), e.get("host"), e.get("pid")) for e in lst) or "-"

    rows = [("TOPIC", "TYPE", "PUBLISHERS", "SUBSCRIBERS")]
    for t in r.get("topics", []):
        rows.append((t["name"], t.get("type", ""), who(t.get("publishers", [])), who(t.get("subscribers", []))))
    srows = [("SERVICE", "TYPE", "SERVERS", "CLIENTS")]
    for s in r.get("services", []):
        srows.append((s["name"], s.get("type", ""), who(s.get("servers", [])), who(s.get("clients", []))))
    for table in (rows, srows):
        if len(table) == 1:
            continue
        widths = [max(len(str(row[i])) for row in table) for i in range(4)]
        print()
        for row in table:
            print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    for c in r.get("conflicts", []):
        print("conflict: %s" % c.get("message"))
    return EXIT_OK


def cmd_echo(a, o):
    runtime.install_signal_handlers()
    from .node import Node
    glob = is_glob(a.topic)
    with Node(options=o) as node:
        if glob:  # every topic it matches, named by the key's directory
            sub = node.subscribe_all(topics=(a.topic,), types=(a.type or "*",), depth=1000)
        else:
            cls = by_name(a.type) if a.type else None
            sub = node.subscriber(a.topic, cls or (a.type or None), depth=1000)
        printed = 0
        while runtime.ok() and (a.count == 0 or printed < a.count):
            got = sub.receive(timeout=0.2, with_info=True)
            if got is None:
                continue
            msg, info = got
            value = message.to_dict(msg) if isinstance(msg, message.Message) else msg
            if a.json:
                if a.with_info:
                    value = {"topic": info.topic if glob else a.topic, "seq": info.sequence,
                             "publisher": "%016x" % info.publisher_id, "latency_ns": info.latency_ns,
                             "type": info.type_name, "size": info.wire_size, "message": value}
                print(json.dumps(to_json_value(value), separators=(",", ":"), allow_nan=False), flush=True)
            else:
                print("--- %s#%d from %016x (%s, %d B, latency %.3f ms)" % (
                    info.topic + " " if glob else "", info.sequence, info.publisher_id, info.type_name or "?",
                    info.wire_size, info.latency_ns / 1e6), flush=True)
                print(to_text(value), flush=True)
            printed += 1
        s = sub.stats()
        bad = (s.decode_errors + s.malformed + s.type_mismatches + s.oversized + s.unsupported_version
               + s.unlisted)
        if bad:
            sys.stderr.write("gecko echo: %d message%s of '%s' not shown (malformed, wrong type or undecodable)\n"
                             % (bad, "" if bad == 1 else "s", a.topic))
            return EXIT_FAILURE
    return EXIT_OK


def cmd_pub(a, o):
    try:
        value = from_json_value(json.loads(a.json))
    except ValueError as e:
        raise UsageError("the message is not JSON: %s" % e)
    cls = by_name(a.type)
    if cls is not None and not a.force:
        names = [n for n, _ in message.fields_of(cls)]
        unknown = [k for k in value if k not in names] if isinstance(value, dict) else []
        if unknown:
            raise UsageError("%s has no field '%s' (its fields: %s)" % (a.type, unknown[0], ", ".join(names)))
        try:
            payload = message.encode(message.from_dict(cls, _floats_for(cls, value)))
        except (Error, TypeError, ValueError) as e:
            fields = ", ".join(n for n, _ in message.fields_of(cls))
            raise UsageError("the JSON does not fit %s (fields: %s): %s" % (a.type, fields, e))
    else:
        payload = msgpack.packb(_json_floats(value), use_bin_type=True)
    runtime.install_signal_handlers()
    from .node import Node
    with Node(options=o) as node:
        pub = node.publisher(a.topic, a.type)
        pub.wait_for_subscribers(1, a.wait)
        rate = runtime.Rate(a.rate) if a.rate else None
        sent = 0
        while runtime.ok() and (a.count == 0 or sent < a.count):
            pub.publish_payload(payload)
            sent += 1
            if a.count and sent >= a.count:
                break
            if rate:
                rate.sleep()
            elif a.count == 0:
                break
        frame = len(payload) + 48
        print("published %d message%s on '%s' (%s, %d B payload, %d B on the wire)" % (
            sent, "" if sent == 1 else "s", a.topic, a.type, len(payload), frame))
    return EXIT_OK


def _json_floats(v):
    """Integers stay integers; every other number is float64 (as the C++ tool)."""
    if isinstance(v, dict):
        return {k: _json_floats(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_floats(x) for x in v]
    return v


def _floats_for(cls, v):
    return v


class UsageError(Exception):
    pass


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m gecko", description="look at and poke the topics of a key "
                                "(the C++ `gecko` tool's list, echo and pub)")
    sub = p.add_subparsers(dest="command", required=True)
    pl = sub.add_parser("list", help="topics, types, publishers, subscribers, services")
    pl.add_argument("--names", action="store_true", help="topic names only, one a line")
    pe = sub.add_parser("echo", help="prints each message of TOPIC (a glob such as 'arm1/*': of every topic it "
                                     "matches, each under its topic's name)")
    pe.add_argument("topic", metavar="TOPIC")
    pe.add_argument("--count", type=int, default=0, help="stop after N messages (default: until Ctrl-C)")
    pe.add_argument("--json", action="store_true", help="one JSON object per line")
    pe.add_argument("--with-info", action="store_true", help="with --json: wrap each message with its metadata")
    pe.add_argument("--type", metavar="NAME", help="read only messages of this type")
    pp = sub.add_parser("pub", help="publishes a message given as JSON")
    pp.add_argument("topic", metavar="TOPIC")
    pp.add_argument("json", metavar="JSON")
    pp.add_argument("--type", metavar="NAME", required=True, help="the message type, e.g. gecko.msgs.Float64")
    pp.add_argument("--rate", type=float, default=0.0, metavar="HZ", help="publish at HZ (with --count, or forever)")
    pp.add_argument("--count", type=int, default=1, metavar="N", help="messages to publish (0: until Ctrl-C)")
    pp.add_argument("--wait", type=float, default=1.0, metavar="S", help="wait up to S s for a subscriber first")
    pp.add_argument("--force", action="store_true", help="publish JSON that does not fit the gecko.msgs type")
    for sp in (pl, pe, pp):
        gargs.add_node_arguments(sp)
        sp.add_argument("--timeout", type=float, default=3.0, help="how long to wait for the core (s)")
    a = p.parse_args(argv)
    try:
        o = gargs.options_from_args(a, "gecko_py_" + a.command)
        if a.command == "echo" and a.count < 0 or a.command == "pub" and a.count < 0:
            raise UsageError("--count must be >= 0")
        return {"list": cmd_list, "echo": cmd_echo, "pub": cmd_pub}[a.command](a, o)
    except UsageError as e:
        sys.stderr.write("gecko %s: %s\n" % (a.command, e))
        return EXIT_USAGE
    except Error as e:
        sys.stderr.write("gecko %s: %s\n" % (a.command, e))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_OK
