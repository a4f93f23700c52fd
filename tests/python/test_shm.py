# SPDX-License-Identifier: Apache-2.0
"""A Python node reads shared-memory links (PROTOCOL.md 7.1): C++ publishers
on the same host reach it through their segments, not ipc; a corrupt segment
drops the link with an error and a counter and the node goes on over ipc; a
killed publisher's link goes, its successor's comes; GECKO_SHM=off keeps to
ipc. Real processes: a geckocore, C++ publishers (pub_camera_loaned, gecko
pub), the Python node in the test."""

import logging
import os
import signal
import struct

import pytest
from conftest import bin_path, eventually

from gecko import shm
from gecko.msgs import Image, String

pytestmark = pytest.mark.skipif(shm.UNAVAILABLE != "", reason="no shared memory for Python: " + shm.UNAVAILABLE)


class Lines(logging.Handler):
    """The gecko logger's lines (it does not propagate to pytest's caplog)."""

    def __init__(self):
        super().__init__()
        self.lines = []
        logging.getLogger("gecko").addHandler(self)

    def emit(self, record):
        self.lines.append((record.levelname, record.getMessage()))

    def close(self):
        logging.getLogger("gecko").removeHandler(self)
        super().close()


@pytest.fixture
def log_lines():
    h = Lines()
    yield h.lines
    h.close()


def segments_of(pid, directory="/dev/shm"):
    """The segments (paths) whose header names `pid` as their owner."""
    out = []
    for name in os.listdir(directory):
        if not name.startswith("gecko-") or name.startswith("gecko-in-") or name.endswith(".bell"):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as f:
                head = f.read(40)
        except OSError:
            continue
        if len(head) == 40 and struct.unpack_from("<Q", head, 0)[0] == shm.MAGIC and \
                struct.unpack_from("<Q", head, 32)[0] == pid:
            out.append(path)
    return out


def chatter_publisher(rig, count=100000):
    return rig.spawn([bin_path("gecko"), "pub", "--key", rig.key, "chatter", "--type", "gecko.msgs.String",
                      '{"data": "over shm"}', "--rate", "200", "--count", str(count)])


def test_loaned_images_reach_python_through_shared_memory(rig):
    node = rig.node("py_camera_viewer")
    sub = node.subscriber("camera", Image, depth=4)
    rig.spawn([bin_path("pub_camera_loaned"), "--key", rig.key])
    for _ in range(3):
        image = sub.receive(timeout=10.0)
        assert image is not None, "no image from pub_camera_loaned within 10 s"
        assert (image.width, image.height, image.encoding) == (640, 480, "rgb8")
        assert len(image.data) == 640 * 480 * 3
        n = image.data[0]  # pixel i holds i / 3 + n (mod 256): the whole frame arrived as written
        for i in (1, 3, 1000, 640 * 3 * 240 + 7, len(image.data) - 1):
            assert image.data[i] == (i // 3 + n) & 0xff, i
    info = node.shm_info()
    assert info["links"] == 1 and info["frames"] >= 3 and info["corrupt"] == 0
    assert any(scheme == "shm" for _, scheme in node._links_report())


def test_shared_memory_off_keeps_to_ipc(rig):
    node = rig.node("py_no_shm", shared_memory="off")
    sub = node.subscriber("chatter", String)
    chatter_publisher(rig)
    assert sub.receive(timeout=10.0) == String(data="over shm")
    assert node.shm_info() is None
    eventually(lambda: [s for _, s in node._links_report()] == ["ipc"], 5, "one ipc link")


def test_a_corrupt_segment_drops_the_link_and_ipc_takes_over(rig, log_lines):
    node = rig.node("py_corrupt")
    sub = node.subscriber("chatter", String, depth=1000)
    pub = chatter_publisher(rig)
    assert sub.receive(timeout=10.0) is not None
    eventually(lambda: node.shm_info()["frames"] > 0, 5, "frames over shared memory")
    [segment] = segments_of(pub.p.pid)
    fd = os.open(segment, os.O_WRONLY)
    try:
        os.pwrite(fd, b"garbage!", 0)  # the magic number
    finally:
        os.close(fd)
    eventually(lambda: node.shm_info()["corrupt"] == 1, 5, "the link dropped as corrupt")
    info = node.shm_info()
    assert info["links"] == 0 and info["links_dropped"] == 1
    assert any(level == "ERROR" and "header was overwritten" in text and segment.split("/")[-1] in text
               for level, text in log_lines), log_lines
    # The node goes on: the publisher's frames come over ipc now.
    while sub.receive(timeout=0):
        pass
    assert sub.receive(timeout=10.0) == String(data="over shm")
    eventually(lambda: [s for _, s in node._links_report()] == ["ipc"], 5, "the link over ipc")
    assert pub.p.poll() is None, "the publisher died of its corrupt segment"


def test_a_killed_publisher_goes_and_its_successor_comes(rig, log_lines):
    node = rig.node("py_successor")
    sub = node.subscriber("chatter", String, depth=1000)
    first = chatter_publisher(rig)
    assert sub.receive(timeout=10.0) is not None
    eventually(lambda: node.shm_info()["links"] == 1, 5, "a shared-memory link")
    first.p.send_signal(signal.SIGKILL)
    first.p.wait(5)
    eventually(lambda: node.shm_info()["links_dropped"] >= 1, 5, "the dead publisher's link dropped")
    assert any("died" in text for _, text in log_lines), log_lines
    before = node.shm_info()["frames"]
    chatter_publisher(rig)
    eventually(lambda: node.shm_info()["links"] == 1 and node.shm_info()["frames"] > before, 10,
               "frames from the successor over shared memory")
    assert node.shm_info()["corrupt"] == 0


def test_closing_leaves_no_doorbell(rig):
    node = rig.node("py_tidy")
    node.subscriber("chatter", String)
    chatter_publisher(rig)
    eventually(lambda: node.shm_info()["links"] == 1, 10, "a shared-memory link")
    bell = node._shm.bell_path
    assert os.path.exists(bell)
    node.close()
    assert not os.path.exists(bell)


def test_header_validation_refuses_what_does_not_add_up():
    good = {"magic": shm.MAGIC, "version": 1, "header_size": 4096, "total": 1 << 20, "slot_count": 2,
            "slot_size": 4096, "slots_offset": 4096, "ring_capacity": 16, "interest_words": 64, "chunk_total": 4,
            "desc_offset": 12288, "class_count": 1, "classes": [(1024, 4, 0, 16384)] + [(0, 0, 0, 0)] * 7}
    assert shm.validate(good, 1 << 20) == [(1024, 4, 0, 16384)]
    bad = [("magic", 0), ("version", 2), ("total", 1 << 21), ("slot_count", 65), ("ring_capacity", 0),
           ("slot_size", 100), ("slots_offset", 64), ("desc_offset", 4096), ("chunk_total", 5),
           ("classes", [(1024, 4, 1, 16384)]), ("classes", [(1024, 4, 0, 1 << 20)]), ("class_count", 9)]
    for field, value in bad:
        h = dict(good)
        h[field] = value
        with pytest.raises(ValueError, match="bad segment header"):
            shm.validate(h, 1 << 20)
    with pytest.raises(ValueError):
        shm.validate(good, (1 << 20) - 1)  # the file is shorter than the header says


def test_shared_memory_options_are_checked(monkeypatch):
    import gecko
    with pytest.raises(gecko.Error, match="expected auto, off or require"):
        gecko.Options(shared_memory="sometimes")
    with pytest.raises(gecko.Error, match="microseconds"):
        gecko.Options(spin=-1)
    monkeypatch.setenv("GECKO_SHM", "bogus")
    with pytest.raises(gecko.Error, match="GECKO_SHM='bogus'"):
        gecko.Options.from_env()
    monkeypatch.setenv("GECKO_SHM", "require")
    monkeypatch.setenv("GECKO_SPIN_US", "20")
    o = gecko.Options.from_env()
    assert (o.shared_memory, o.spin) == ("require", 20)
