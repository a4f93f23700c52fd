# SPDX-License-Identifier: Apache-2.0
"""Services across languages with real processes: a C++ server (add_server)
called from Python, a Python server called by C++ (add_client, and
`gecko call`), and the errors a caller gets (remote failure, no server,
timeout)."""

import json

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
