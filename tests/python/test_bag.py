# SPDX-License-Identifier: Apache-2.0
"""gecko.bag: MCAP files read and written in pure Python, with the C++ side
(`gecko record`, `gecko bag`, `gecko play`) and MCAP's own TypeScript
reader (tests/bag/npm, as the C++ tests run it) as the other ends."""

import json
import os
import shutil
import signal
import struct
import subprocess
import zlib

import pytest

import gecko
from gecko import bag, _mcap
from gecko.message import define, I64, STR, List, F64
from gecko.msgs import Imu, JointState, Vector3

from conftest import bin_path, eventually, ROOT

Reading = define("test.Reading", [("n", I64), ("label", STR), ("values", List(F64))])

T0 = 1_700_000_000_000_000_000


def imu(i):
    return Imu(stamp_ns=i, frame_id="imu_link", accel=Vector3(x=0.5 * i, z=9.81))


def write_sample(path, n=50, **options):
    with bag.Writer(path, **options) as w:
        ch = w.add_channel("imu", Imu)
        js = w.add_channel("arm/joints", JointState)
        rd = w.add_channel("reading", Reading)
        tw = w.add_channel("/json/reading", message_encoding="json",
                           schema_id=w.add_schema("test.Reading", "jsonschema", b'{"type":"object"}'))
        for i in range(n):
            t = T0 + i * 1_000_000
            w.write(ch, imu(i), log_time=t, publish_time=t - 10)
            w.write(js, JointState(stamp_ns=i, names=["a"], position=[0.1 * i]), log_time=t)
            w.write(rd, Reading(n=i, label="r%d" % i, values=[1.5, -2.0]), log_time=t)
            w.write(tw, json.dumps({"n": i}).encode(), log_time=t)
        w.add_metadata("gecko", {"key": "py", "recorder": "test"})
        w.add_attachment("notes.txt", b"hello", media_type="text/plain")


@pytest.mark.parametrize("compression", ["", "lz4", "zstd"])
def test_round_trip_typed_by_index_and_by_stream(tmp_path, compression):
    path = str(tmp_path / "a.mcap")
    write_sample(path, compression=compression, chunk_size=2048)
    for use_index in (True, False):
        with bag.Reader(path, types=[Reading], use_index=use_index) as r:
            assert r.has_summary == use_index
            got = list(r.messages())
            assert r.problems == []
            assert len(got) == 200
            imus = [m for m in got if m.topic == "imu"]
            assert [m.decode() for m in imus] == [imu(i) for i in range(50)]
            assert [m.sequence for m in imus] == list(range(1, 51))
            assert imus[3].log_time == T0 + 3_000_000 and imus[3].publish_time == T0 + 3_000_000 - 10
            assert [m.decode().n for m in got if m.topic == "reading"] == list(range(50))
            assert [m.decode()["n"] for m in got if m.topic == "/json/reading"] == list(range(50))
            assert r.metadata() == [bag.Metadata("gecko", {"key": "py", "recorder": "test"})]
            ch = next(c for c in r.channels.values() if c.topic == "imu")
            assert ch.message_encoding == "msgpack" and ch.schema_id == 0
            assert bag.type_name_of(ch) == "gecko.msgs.Imu"
            assert ch.metadata[bag.keys.type_hash] == "%016x" % gecko.wire.type_hash("gecko.msgs.Imu")
            assert bag.schema_of(ch) == gecko.schema_of(Imu)
        if use_index:
            assert r.statistics.message_count == 200 and len(r.chunk_indexes) > 5
            assert {ci.compression for ci in r.chunk_indexes} == {compression}
    with bag.Reader(path) as r:  # without the class: the msgpack as Python values, as a key-wide subscriber gives it
        m = next(m for m in r.messages(topics=["read*"]))
        assert m.decode() == {"n": 0, "label": "r0", "values": [1.5, -2.0]}
        window = list(r.messages(topics=["imu"], start=T0 + 10_000_000, end=T0 + 12_000_000))
        assert [m.decode().stamp_ns for m in window] == [10, 11, 12]


def test_without_compression_libraries_the_writer_writes_uncompressed_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(_mcap, "_zstd", None)
    monkeypatch.setattr(_mcap, "_lz4", None)
    path = str(tmp_path / "plain.mcap")
    write_sample(path, n=3)
    with bag.Reader(path) as r:
        assert {ci.compression for ci in r.chunk_indexes} == {""}
        assert len(list(r.messages())) == 12
    with pytest.raises(gecko.Error) as e:
        bag.Writer(str(tmp_path / "z.mcap"), compression="zstd")
    assert e.value.code == "invalid_argument" and "'zstd' is not available" in str(e.value)


def test_damaged_files_read_up_to_what_is_valid(tmp_path):
    path = str(tmp_path / "a.mcap")
    write_sample(path, n=40, compression="", chunk_size=1024)
    data = open(path, "rb").read()
    with bag.Reader(path) as r:
        chunks = sorted(r.chunk_indexes, key=lambda c: c.chunk_start_offset)

    not_mcap = tmp_path / "not.mcap"
    not_mcap.write_bytes(b"hello world, not mcap at all")
    with pytest.raises(gecko.Error) as e:
        bag.Reader(str(not_mcap))
    assert e.value.code == "decode" and "not an MCAP file" in str(e.value)

    cut = tmp_path / "cut.mcap"  # a recorder killed with -9: cut in the middle of the third chunk
    cut.write_bytes(data[:chunks[2].chunk_start_offset + 50])
    with bag.Reader(str(cut)) as r:
        assert not r.has_summary
        n = len(list(r.messages()))
        assert n > 0 and n < 160
        assert [p.fatal for p in r.problems] == [True]
        assert r.problems[0].offset == chunks[2].chunk_start_offset and r.problems[0].record == "Chunk"
        assert "cut short" in str(r.problems[0])

    bad_crc = bytearray(data)  # a byte of the second chunk's records flipped: that chunk skipped, the rest read
    bad_crc[chunks[1].chunk_start_offset + chunks[1].chunk_length - 5] ^= 0xFF
    (tmp_path / "crc.mcap").write_bytes(bytes(bad_crc))
    with bag.Reader(str(tmp_path / "crc.mcap")) as r:
        got = list(r.messages())
        assert 0 < len(got) < 160
        assert [(p.offset, p.record) for p in r.problems] == [(chunks[1].chunk_start_offset, "Chunk")]
        assert "CRC does not match" in r.problems[0].message

    # Unknown and private records are skipped; a chunk that claims 2 GiB is refused before anything is allocated.
    header_end = 8 + 9 + struct.unpack_from("<Q", data, 9)[0]
    extra = _mcap.record(0x80, b"private") + _mcap.record(0x42, b"future") + \
        _mcap.chunk_record(0, 0, 2 << 30, 0, "", b"tiny")
    (tmp_path / "plain.mcap").write_bytes(data[:chunks[-1].chunk_start_offset])
    (tmp_path / "odd.mcap").write_bytes(data[:header_end] + extra + data[header_end:chunks[-1].chunk_start_offset])
    with bag.Reader(str(tmp_path / "plain.mcap")) as plain, bag.Reader(str(tmp_path / "odd.mcap")) as r:
        assert len(list(r.messages())) == len(list(plain.messages())) > 100
        assert plain.problems == []
        assert [(p.offset, p.record) for p in r.problems] == [(header_end + 9 + 7 + 9 + 6, "Chunk")]
        assert "claims 2147483648 bytes uncompressed" in r.problems[0].message


def test_cpp_tools_and_mcap_core_read_a_python_file(tmp_path):
    path = str(tmp_path / "py.mcap")
    write_sample(path, n=30, compression="zstd", chunk_size=4096)
    gecko_cli = bin_path("gecko")
    info = subprocess.run([gecko_cli, "bag", "info", path, "--json"], capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    j = json.loads(info.stdout)
    assert j["messages"] == 120 and j["summary"] is True
    assert j["topics"]["imu"] == {"messages": 30, "type": "gecko.msgs.Imu", "encoding": "msgpack", "dropped": 0}
    echo = subprocess.run([gecko_cli, "bag", "echo", path, "imu", "--json", "--count", "2"], capture_output=True,
                          text=True, timeout=60)
    assert echo.returncode == 0, echo.stderr
    assert [json.loads(l)["accel"]["x"] for l in echo.stdout.splitlines()] == [0.0, 0.5]
    doctor = subprocess.run([gecko_cli, "bag", "doctor", path], capture_output=True, text=True, timeout=60)
    assert doctor.returncode == 0 and "0 errors, 0 warnings" in doctor.stdout, doctor.stdout

    node = shutil.which("node") or shutil.which("nodejs")
    npm = os.path.join(ROOT, "tests", "bag", "npm")
    assert node, "node is missing (Debian 12: nodejs, installed by scripts/install-deps)"
    assert os.path.exists(os.path.join(npm, "node_modules", "@mcap", "core", "package.json")), \
        "the npm packages of tests/bag/npm are missing: run scripts/install-deps"
    mc = subprocess.run([node, os.path.join(npm, "read_mcap.mjs"), path], capture_output=True, text=True, timeout=60)
    assert mc.returncode == 0, mc.stderr
    out = json.loads(mc.stdout)
    assert out["indexed"]["topics"] == {"imu": 30, "arm/joints": 30, "reading": 30, "/json/reading": 30}
    assert out["stream"]["messages"] == 120 and out["stream"]["done"] is True
    assert {"name": "gecko", "metadata": {"key": "py", "recorder": "test"}} in out["indexed"]["metadata"]


def test_python_reads_what_mcap_core_writes(tmp_path):
    node = shutil.which("node") or shutil.which("nodejs")
    npm = os.path.join(ROOT, "tests", "bag", "npm")
    assert node and os.path.exists(os.path.join(npm, "node_modules", "@mcap", "core", "package.json")), \
        "node or the npm packages of tests/bag/npm are missing: run scripts/install-deps"
    path = str(tmp_path / "ts.mcap")
    w = subprocess.run([node, os.path.join(npm, "write_mcap.mjs"), path, "40"], capture_output=True, text=True,
                       timeout=60)
    assert w.returncode == 0, w.stderr
    for use_index in (True, False):
        with bag.Reader(path, use_index=use_index) as r:
            counts = {}
            for m in r.messages():
                counts[m.topic] = counts.get(m.topic, 0) + 1
            assert r.problems == []
            assert counts == {"imu": 20, "odom": 20, "/json/imu": 4}
            assert [m.decode() for m in r.messages(topics=["odom"])][:2] == [{"n": 1}, {"n": 3}]
            assert next(r.messages(topics=["/json/*"])).decode() == {"n": 0}
            assert r.header.library == "mcap-ts write_mcap.mjs"
            assert any(s.encoding == "jsonschema" for s in r.schemas.values())
            assert r.metadata() == [bag.Metadata("gecko", {"key": "from-node"})]


def recorder(rig, path, *extra):
    rec = rig.spawn([bin_path("gecko"), "record", "-o", path] + list(extra))
    eventually(lambda: any("gecko record: recording" in l for l in rec.err), 20, "the recorder's start line")
    return rec


def test_reads_gecko_record_files_whole_and_cut(rig, tmp_path):
    path = str(tmp_path / "run.mcap")
    rec = recorder(rig, path, "--count", "60")
    talker = rig.node("py_sensors")
    pub = talker.publisher("imu", Imu)
    assert pub.wait_for_subscribers(1, 20)
    for i in range(60):
        pub.publish(imu(i))
    assert rec.wait(30) == 0, rec.err
    for use_index in (True, False):
        with bag.Reader(path, use_index=use_index) as r:
            got = list(r.messages())
            assert r.problems == []
            assert [m.decode() for m in got] == [imu(i) for i in range(60)]
            assert all(m.publish_time <= m.log_time + 10 ** 9 for m in got)
            assert got[0].channel.metadata[bag.keys.node] == "py_sensors"
            file_record = next(md for md in r.metadata() if md.name == bag.keys.file_record)
            assert file_record.metadata["key"] == rig.key
            drops = [md for md in r.metadata() if md.name == bag.keys.drops_record]
            assert drops[-1].metadata["total"] == "0" and drops[-1].metadata["final"] == "true"

    # Killed with -9: read by scanning up to its last chunk; `gecko bag recover` makes it whole again.
    cut = str(tmp_path / "cut.mcap")
    rec = recorder(rig, cut, "--chunk-size", "4k")

    def recorded():
        try:
            with bag.Reader(cut) as r:
                return len(list(r.messages()))
        except gecko.Error:
            return 0

    rate = gecko.Rate(1000)  # a 1 kHz sensor until the file holds 100 messages (the recorder closes a chunk a second)
    i = 0
    while i % 50 or recorded() < 100:
        pub.publish(imu(i))
        i += 1
        assert i < 60000, "the recorder's file never held 100 messages"
        rate.sleep()
    rec.p.send_signal(signal.SIGKILL)
    rec.p.wait(20)
    with bag.Reader(cut) as r:
        assert not r.has_summary
        stamps = [m.decode().stamp_ns for m in r.messages()]
        n = len(stamps)
        assert n >= 100
        # The new recorder may join the publisher a message or two after its start line: contiguous, not from 0.
        assert stamps == list(range(stamps[0], stamps[0] + n))
    fixed = str(tmp_path / "fixed.mcap")
    rc = subprocess.run([bin_path("gecko"), "bag", "recover", cut, "-o", fixed], capture_output=True, text=True,
                        timeout=60)
    assert rc.returncode == 0, rc.stderr
    with bag.Reader(fixed) as r:
        assert r.has_summary and r.statistics.message_count == n
        assert [m.decode().stamp_ns for m in r.messages()] == stamps


def test_gecko_play_publishes_a_python_file_typed(rig, tmp_path):
    path = str(tmp_path / "py.mcap")
    write_sample(path, n=20)
    listener = rig.node("py_listener")
    sub = listener.subscriber("imu", Imu, depth=100)
    play = rig.spawn([bin_path("gecko"), "play", path, "--topics", "imu", "--rate", "0", "--wait-subscribers", "1",
                      "--quiet"])
    got = []
    while len(got) < 20:
        m = sub.receive(timeout=10)
        assert m is not None, "gecko play delivered %d of 20" % len(got)
        got.append(m)
    assert got == [imu(i) for i in range(20)]
    assert play.wait(20) == 0


def test_data_section_and_summary_crcs_are_those_of_the_bytes(tmp_path):
    path = str(tmp_path / "a.mcap")
    write_sample(path, n=5)
    data = open(path, "rb").read()
    summary_start, offsets_start, crc = struct.unpack_from("<QQI", data, len(data) - 8 - 20)
    assert crc == zlib.crc32(data[summary_start:len(data) - 8 - 4])
    data_end = data.rfind(bytes([_mcap.DATA_END]) + struct.pack("<Q", 4), 0, summary_start)
    assert data_end > 0 and struct.unpack_from("<I", data, data_end + 9)[0] == zlib.crc32(data[:data_end])
