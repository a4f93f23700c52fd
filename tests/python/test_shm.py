# SPDX-License-Identifier: Apache-2.0
"""A Python node reads shared-memory links (PROTOCOL.md 7.1): C++ publishers
on the same host reach it through their segments, not ipc; a corrupt segment
drops the link with an error and a counter and the node goes on over ipc; a
killed publisher's link goes, its successor's comes; GECKO_SHM=off keeps to
ipc. Real processes: a geckocore, C++ publishers (pub_camera_loaned, gecko
pub), the Python node in the test."""

import os
import signal
import struct
import subprocess
import time

import pytest
from conftest import bin_path, eventually, python_exe

from gecko import shm
from gecko.msgs import Image, String

pytestmark = pytest.mark.skipif(shm.UNAVAILABLE != "", reason="no shared memory for Python: " + shm.UNAVAILABLE)


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
    eventually(lambda: any("died" in text for _, text in log_lines), 5, "a log line saying it died")
    before = node.shm_info()["frames"]
    chatter_publisher(rig)
    eventually(lambda: node.shm_info()["links"] == 1 and node.shm_info()["frames"] > before, 10,
               "frames from the successor over shared memory")
    assert node.shm_info()["corrupt"] == 0


def slot_states(segment):
    """The state (low byte) of each subscriber slot of a segment."""
    with open(segment, "rb") as f:
        head = f.read(4096)
    count, size, at = struct.unpack_from("<3Q", head, 72)
    with open(segment, "rb") as f:
        return [struct.unpack("<Q", os.pread(f.fileno(), 8, at + i * size))[0] & 0xff for i in range(count)]


def test_closing_gives_the_slot_back_and_leaves_no_doorbell(rig):
    node = rig.node("py_tidy")
    node.subscriber("chatter", String)
    pub = chatter_publisher(rig)
    eventually(lambda: node.shm_info()["links"] == 1, 10, "a shared-memory link")
    [segment] = segments_of(pub.p.pid)
    assert slot_states(segment).count(shm.ACTIVE) == 1
    bell = node._shm.bell_path
    assert os.path.exists(bell)
    node.close()
    assert not os.path.exists(bell)
    # leaving -> departed at once (nothing held); the publisher frees the slot
    eventually(lambda: set(slot_states(segment)) == {shm.FREE}, 5, "the publisher freeing the slot")


def test_a_killed_python_subscriber_s_slot_comes_back(rig):
    """kill -9 of a Python subscriber (python3 -m gecko echo) reading over
    shared memory: the C++ publisher frees its slot, and its doorbell is
    swept as a dead process's."""
    pub = chatter_publisher(rig)
    echo = rig.spawn([python_exe(), "-m", "gecko", "echo", "--key", rig.key, "chatter", "--count", "1000000"])
    echo.wait_line("data: over shm", 10)  # a message received
    assert [n for n in os.listdir("/dev/shm") if n.startswith("gecko-in-") and "-%d-" % echo.p.pid in n]
    [segment] = segments_of(pub.p.pid)
    eventually(lambda: slot_states(segment).count(shm.ACTIVE) == 1, 10, "the echo's slot")
    echo.p.send_signal(signal.SIGKILL)
    echo.p.wait(5)
    eventually(lambda: set(slot_states(segment)) == {shm.FREE}, 10, "the publisher taking the dead slot back")
    assert pub.p.poll() is None
    # Its doorbell is named as C++ names them: the publisher, which found it
    # from the slot's identity, removed it with the slot (else geckocore's sweep would).
    eventually(lambda: not [n for n in os.listdir("/dev/shm") if n.startswith("gecko-in-") and
                            "-%d-" % echo.p.pid in n], 15, "the dead subscriber's doorbell removed")


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


# ---- the reader against segments this test writes itself (the publisher's side by hand) ----

SLOTS, RING, INTEREST_WORDS, CHUNK, CHUNKS = 2, 16, 64, 1024, 4
SLOT_SIZE = 256 + RING * 8 + INTEREST_WORDS * 8        # 896, a multiple of 64
SLOTS_AT, DESC_AT, CHUNKS_AT = 4096, 4096 + SLOTS * SLOT_SIZE, 8192
TOTAL = CHUNKS_AT + CHUNK * CHUNKS


class HandSegment:
    """A segment laid out as PROTOCOL.md 7.1 says, owned by this (live)
    process, that the test fills as a publisher would."""

    def __init__(self, directory, name="gecko-handmade", owner_pid=None):
        self.path = os.path.join(directory, name)
        self.locator = "shm://" + name
        words = [shm.MAGIC, 1, 4096, TOTAL, owner_pid or os.getpid(), shm.own_start_time() if owner_pid is None
                 else 0, shm.own_pid_namespace(), os.getuid(), 7, SLOTS, SLOT_SIZE, SLOTS_AT, RING, INTEREST_WORDS,
                 CHUNKS, DESC_AT, 1, CHUNK, CHUNKS, 0, CHUNKS_AT]
        with open(self.path, "wb") as f:
            f.truncate(TOTAL)
            f.write(struct.pack("<%dQ" % len(words), *words))
            f.seek(448)
            f.write(struct.pack("<Q", time.monotonic_ns()))  # the heartbeat
        self.fd = os.open(self.path, os.O_RDWR)
        self.tail = {}

    def word(self, offset, value=None):
        if value is None:
            return struct.unpack("<Q", os.pread(self.fd, 8, offset))[0]
        os.pwrite(self.fd, struct.pack("<Q", value), offset)

    def active_slot(self):
        for s in range(SLOTS):
            if self.word(SLOTS_AT + s * SLOT_SIZE) & 0xff == shm.ACTIVE:
                return s
        raise AssertionError("no subscriber claimed a slot")

    def queue(self, data, chunk=0, size=None):
        """Queues `data` in `chunk` for the subscriber's slot (ring entry, then tail)."""
        s = self.active_slot()
        os.pwrite(self.fd, data, CHUNKS_AT + chunk * CHUNK)
        self.word(DESC_AT + (chunk % CHUNKS) * 64 + 8, len(data) if size is None else size)
        self.word(DESC_AT + (chunk % CHUNKS) * 64, 1 << s)
        slot = SLOTS_AT + s * SLOT_SIZE
        tail = self.word(slot + 64)
        self.word(slot + 256 + (tail % RING) * 8, chunk)
        self.word(slot + 64, tail + 1)

    def owners(self, chunk=0):
        return self.word(DESC_AT + chunk * 64)

    def close(self):
        os.close(self.fd)


@pytest.fixture
def hand(tmp_path):
    notices = []
    port = shm.ShmInPort(str(tmp_path), notice=lambda level, reason, text: notices.append((level, text)))
    seg = HandSegment(str(tmp_path))
    yield port, seg, notices
    port.close()
    seg.close()


def test_the_reader_takes_a_frame_and_gives_its_chunk_back(hand):
    port, seg, _ = hand
    assert port.connect(seg.locator) == ""
    frame = bytes(range(200))
    seg.queue(frame)
    assert seg.owners() != 0
    assert port.take() == [frame]
    assert seg.owners() == 0, "the chunk was not released"
    assert port.take() == [] and port.info()["frames"] == 1


@pytest.mark.parametrize("damage, says", [
    ("chunk", "names chunk 9 of 4"),
    ("size", "says 5000 bytes in 1024"),
    ("tail", "ring indices out of range"),
    ("magic", "header was overwritten"),
    ("truncate", "truncated to 4096 bytes"),
])
def test_a_damaged_segment_drops_the_link_counted_and_said(hand, damage, says):
    port, seg, notices = hand
    assert port.connect(seg.locator) == ""
    if damage == "chunk":
        seg.queue(b"x" * 64, chunk=9)
    elif damage == "size":
        seg.queue(b"x" * 64, size=5000)
    elif damage == "tail":
        slot = SLOTS_AT + seg.active_slot() * SLOT_SIZE
        seg.word(slot + 64, 1 << 40)
    elif damage == "magic":
        seg.word(0, 0x6167617262616765)
    else:
        os.truncate(seg.path, 4096)
    port.check_links(force=True)
    assert port.take() == []
    info = port.info()
    assert (info["links"], info["links_dropped"], info["corrupt"]) == (0, 1, 1)
    assert port.dropped_locators == [seg.locator]
    assert any(level == "error" and says in text for level, text in notices), notices


def test_the_reader_refuses_what_it_cannot_use(tmp_path):
    port = shm.ShmInPort(str(tmp_path))
    try:
        assert "no shared-memory segment" in port.connect("shm://gecko-nobody")
        assert "not a shared-memory segment name" in port.connect("shm://../etc/passwd")
        dead = subprocess.Popen(["true"])
        dead.wait()
        seg = HandSegment(str(tmp_path), "gecko-dead-owner", owner_pid=dead.pid)
        assert "is dead" in port.connect(seg.locator)
        seg.close()
        with open(os.path.join(str(tmp_path), "gecko-short"), "wb") as f:
            f.write(b"GECKOSHM")
        assert "shorter than a segment header" in port.connect("shm://gecko-short")
        assert port.info()["links"] == 0
    finally:
        port.close()
