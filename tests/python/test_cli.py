# SPDX-License-Identifier: Apache-2.0
"""python3 -m gecko list|echo|pub against C++ nodes and the C++ tool."""

import json
import sys

from conftest import bin_path, python_exe


def gecko_py(rig, *args):
    return rig.spawn([python_exe(), "-m", "gecko"] + list(args))


def test_list_and_echo_a_cpp_publisher(rig):
    rig.spawn([bin_path("pub_imu"), "--key", rig.key])
    echo = gecko_py(rig, "echo", "--key", rig.key, "imu", "--count", "2", "--json")
    assert echo.wait(20) == 0, echo.err
    msgs = [json.loads(l) for l in echo.out]
    assert len(msgs) == 2 and msgs[0]["frame_id"] == "imu_link" and msgs[0]["accel"]["z"] == 9.81
    ls = gecko_py(rig, "list", "--key", rig.key)
    assert ls.wait(20) == 0, ls.err
    assert any(l.startswith("imu ") and "gecko.msgs.Imu" in l and "imu_driver@" in l for l in ls.out), ls.out
    text = gecko_py(rig, "echo", "--key", rig.key, "imu", "--count", "1")
    assert text.wait(20) == 0 and "frame_id: imu_link" in text.out


def test_pub_to_cpp_echo(rig):
    echo = rig.spawn([bin_path("gecko"), "echo", "--key", rig.key, "cmd", "--count", "2", "--json"])
    pub = gecko_py(rig, "pub", "--key", rig.key, "cmd", '{"data": 1}', "--type", "gecko.msgs.Float64",
                   "--rate", "20", "--count", "200")
    assert echo.wait(20) == 0, echo.err
    assert [json.loads(l) for l in echo.out] == [{"data": 1.0}, {"data": 1.0}]
    pub.stop()


def test_usage_errors_exit_2(rig):
    bad = gecko_py(rig, "pub", "--key", rig.key, "cmd", '{"dta": 1}', "--type", "gecko.msgs.Float64")
    assert bad.wait(20) == 2 and "has no field 'dta'" in "\n".join(bad.err)
    notjson = gecko_py(rig, "pub", "--key", rig.key, "cmd", "{", "--type", "gecko.msgs.Float64")
    assert notjson.wait(20) == 2
    nokey = rig.spawn([python_exe(), "-m", "gecko", "list"], env={k: v for k, v in rig.env().items()
                                                                  if k != "GECKO_KEY"})
    assert nokey.wait(20) == 2


def test_echo_refuses_a_map_with_a_key_twice(rig):
    # PROTOCOL.md 3: untyped reading refuses it, naming the field; the next message is printed
    talker = rig.node("py_doubled")
    pub = talker.publisher("doubled", "examples.Doubled")
    echo = gecko_py(rig, "echo", "--key", rig.key, "doubled", "--count", "1", "--json")
    assert pub.wait_for_subscribers(1, 20)
    pub.publish_payload(b"\x81\xa3top\x82\xa4data\x01\xa4data\x02")  # {"top": {"data": 1, "data": 2}}
    pub.publish_payload(b"\x81\xa3top\x81\xa4data\x03")
    assert echo.wait(20) == 1, echo.err
    assert [json.loads(l) for l in echo.out] == [{"top": {"data": 3}}]
    err = "\n".join(echo.err)
    assert ("subscriber of 'doubled' could not decode a message: examples.Doubled: field 'top.data' appears twice "
            "in the map (further ones are counted in stats().decode_errors)") in err, err
    assert "gecko echo: 1 message of 'doubled' not shown" in err, err
