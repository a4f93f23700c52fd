# SPDX-License-Identifier: Apache-2.0
"""Services across languages with real processes: a C++ server (add_server)
called from Python, a Python server called by C++ (add_client, and
`gecko call`), and the errors a caller gets (remote failure, no server,
timeout, a request that does not decode: the same answer from both)."""

import json

import msgpack
import pytest

from conftest import bin_path

import gecko
from gecko.message import F64, define

AddRequest = define("examples.AddRequest", [("a", F64), ("b", F64)])
AddReply = define("examples.AddReply", [("sum", F64)])


def test_python_calls_cpp_server(rig):
    rig.spawn([bin_path("add_server"), "--key", rig.key])
    node = rig.node("py_caller")
    add = node.client("add", AddRequest, AddReply)
    assert add.wait_for_server(10.0), "add_server never became reachable"
    for i in range(20):
        assert add.call(AddRequest(a=i, b=0.5), timeout=2.0) == AddReply(sum=i + 0.5)
    reply, info = add.call({"a": 1, "b": 2}, timeout=2.0, with_info=True)
    assert reply.sum == 3.0 and info.type_name == "examples.AddReply"


def test_cpp_calls_python_server(rig):
    node = rig.node("py_adder")

    def handler(req):
        if req.a < 0:
            raise ValueError("negative numbers are not served here")
        return AddReply(sum=req.a + req.b)

    srv = node.service("add", AddRequest, AddReply, handler)
    node.spin_in_background()
    client = rig.spawn([bin_path("add_client"), "--key", rig.key])
    assert client.wait(20) == 0, client.err
    assert client.out == ["1 + 0.5 = 1.5", "2 + 0.5 = 2.5", "3 + 0.5 = 3.5"]
    call = rig.spawn([bin_path("gecko"), "call", "--key", rig.key, "add", '{"a": 2, "b": 40}', "--json"])
    assert call.wait(20) == 0, call.err
    assert json.loads(call.out[-1]) == {"sum": 42.0}
    bad = rig.spawn([bin_path("gecko"), "call", "--key", rig.key, "add", '{"a": -1, "b": 1}'])
    assert bad.wait(20) == 1
    assert "negative numbers are not served here" in "\n".join(bad.err)
    assert srv.requests == 4 and srv.rejected == 1


def test_python_caller_errors(rig):
    node = rig.node("py_errors")
    srv_node = rig.node("py_slow")
    srv = srv_node.service("fail", AddRequest, AddReply, lambda r: 1 / 0)
    cli = node.client("fail", AddRequest, AddReply)
    assert cli.wait_for_server(10.0)
    # the server's node does not spin yet: the call times out
    with pytest.raises(gecko.Error) as e:
        cli.call(AddRequest(), timeout=0.3)
    assert e.value.code == "timeout"
    srv_node.spin_in_background()
    with pytest.raises(gecko.Error) as e:
        cli.call(AddRequest(), timeout=5.0)
    assert e.value.code == "remote" and "division by zero" in str(e.value)
    nobody = node.client("nobody", AddRequest, AddReply)
    with pytest.raises(gecko.Error) as e:
        nobody.call(AddRequest(), timeout=5.0)
    assert e.value.code == "no_peer"


# PROTOCOL.md 5: a request that does not decode into the request type has its own answer, the same from both
NOT_A_REQUEST = msgpack.packb({"a": "x", "b": 1.0})
COULD_NOT_DECODE = ("service 'add' could not decode the request: examples.AddRequest: field 'a' has msgpack type "
                    "str, expected a number")


def remote_error(client, payload):
    with pytest.raises(gecko.Error) as e:
        client.call(payload, timeout=10.0)
    assert e.value.code == "remote"
    return str(e.value)


def test_an_undecodable_request_to_a_cpp_server(rig):
    rig.spawn([bin_path("add_server"), "--key", rig.key])
    add = rig.node("py_caller").client("add", AddRequest, AddReply)
    assert add.wait_for_server(10.0), "add_server never became reachable"
    assert remote_error(add, NOT_A_REQUEST) == COULD_NOT_DECODE


def test_an_undecodable_request_to_a_python_server(rig):
    node = rig.node("py_adder")
    srv = node.service("add", AddRequest, AddReply, lambda r: AddReply(sum=r.a + r.b))
    node.spin_in_background()
    add = rig.node("py_caller").client("add", AddRequest, AddReply)
    assert add.wait_for_server(10.0)
    assert remote_error(add, NOT_A_REQUEST) == COULD_NOT_DECODE
    assert add.call(AddRequest(a=1, b=2), timeout=10.0) == AddReply(sum=3.0)
    assert (srv.requests, srv.rejected) == (1, 1)


def test_a_python_handler_failing_or_refusing_the_request(rig):
    node = rig.node("py_picky")

    def handler(req):
        if req.a < 0:
            raise gecko.Error("decode", "a negative 'a' is no AddRequest here")
        raise ValueError("nothing is served here")

    node.service("picky", AddRequest, AddReply, handler)
    untyped = node.service("any", "examples.Opaque", "examples.Opaque", lambda r: r)
    node.spin_in_background()
    caller = rig.node("py_caller")
    picky = caller.client("picky", AddRequest, AddReply)
    assert picky.wait_for_server(10.0)
    assert remote_error(picky, AddRequest(a=-1)) == ("service 'picky' could not decode the request: a negative 'a' "
                                                    "is no AddRequest here")
    assert remote_error(picky, AddRequest(a=1)) == "service 'picky' failed: nothing is served here"
    anything = caller.client("any", "examples.Opaque", "examples.Opaque")
    assert anything.wait_for_server(10.0)
    assert anything.call({"x": 1}, timeout=10.0) == {"x": 1}
    assert remote_error(anything, b"\x80\x00") == ("service 'any' could not decode the request: examples.Opaque: "
                                                   "the message is followed by 1 byte of trailing data")
    assert untyped.rejected == 1
