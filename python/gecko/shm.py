"""Reading shared-memory links: the in-port of a Python node for the `shm://`
locators C++ publishers on the same host offer (docs/PROTOCOL.md 7.1).

A C++ out-port's segment is a file in /dev/shm holding, per subscriber, a
slot: its identity, its interests (what it subscribes to, as announcements)
and a ring of chunk indices the publisher queues frames into. This port maps
the segment, claims a slot, writes its interests there, and takes frames off
its ring: the same bytes a ZeroMQ link would carry, copied out of the chunk at
once (so the publisher gets every chunk back at once, and Python never holds
a view into memory another process may unmap).

Where two processes meet, the protocol needs atomic 64-bit operations: a
compare-and-swap to claim a slot and to take a ring entry, a fetch-and to
give a chunk back. Pure Python has none, so they come from libatomic (GCC's
runtime, /usr/lib/*/libatomic.so.1, which implements them with the same
lock-free instructions the C++ side compiles to) through ctypes. Without it
the node does not read shared memory and uses ipc, saying why once.

Plain loads of aligned words (head, tail, sizes) are memoryview reads, one
8-byte load each: atomic, and acquire-ordered on x86-64 (TSO). On other
machines every shared load goes through libatomic too.

Every number read from the segment is checked before it is used: the header
against the file's size, ring indices against the ring, chunk indices and
sizes against the layout. Anything out of range drops the link with an
error, counted in `info()`; the node keeps running."""

import ctypes
import errno
import hashlib
import hmac
import mmap
import os
import platform
import random
import stat
import struct
import time

from . import wire

MAGIC = 0x4d48534f4b434547  # "GECKOSHM"
LAYOUT_VERSION = 1
HEADER_BYTES = 4096
MAX_SLOTS, MAX_CLASSES = 64, 8
MAX_TOTAL, MAX_RING, MAX_INTEREST_WORDS, MAX_SLOT_SIZE = 1 << 40, 1 << 16, 1 << 17, 1 << 24
MAX_CHUNK_SIZE, MAX_CHUNK_COUNT, MAX_CHUNK_TOTAL = 1 << 32, 1 << 16, 1 << 20
MAX_ANNOUNCEMENT = wire.MAX_ANNOUNCEMENT

FREE, CLAIMING, ACTIVE, LEAVING, DEPARTED = range(5)
WILDCARD = 1   # interest record flag
OVERFLOW = 1   # slot flag: the interests did not fit, send everything

# Header words (byte offset / 8).
H_MAGIC, H_CLOSED, H_CHANGES, H_HEARTBEAT = 0, 57, 58, 56
_HEADER_FIELDS = struct.Struct("<17Q")  # magic .. class count, then 8 classes of 4 words
_CLASS = struct.Struct("<4Q")
_HEADER_READ = 472  # through `changes`
_SEALED = slice(8, 392)  # what a header's seal covers: `version` through the classes (then the segment's name)
_SEAL = slice(392, 424)
# Slot words (from the slot's start, / 8), and where its ring starts.
S_STATE, S_START, S_PIDNS, S_BELL, S_HEARTBEAT, S_IVERSION, S_IUSED, S_FLAGS = range(8)
S_TAIL, S_DROPPED, S_HEAD, S_ARMED = 8, 9, 16, 24
RING_OFFSET = 256
DESC_SIZE = 64  # a chunk's descriptor: owners, size

_RELAXED, _ACQUIRE, _RELEASE, _ACQ_REL, _SEQ_CST = 0, 2, 3, 4, 5
_MASK = (1 << 64) - 1
_TSO = platform.machine() in ("x86_64", "AMD64")

CHECK_INTERVAL = 0.1     # the publisher's health, our heartbeat
SIZE_CHECK_INTERVAL = 0.001
LEASE_NS = 3_000_000_000  # a publisher in another pid namespace: dead when its heartbeat is this old


def _load_atomics():
    """The libatomic functions, or (None, why)."""
    for name in ("libatomic.so.1", "libatomic.so"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            lib = None
    if lib is None:
        return None, "libatomic.so.1 (Debian: libatomic1) is not installed"
    p, u = ctypes.c_void_p, ctypes.c_uint64
    cas = lib.__atomic_compare_exchange_8
    cas.restype, cas.argtypes = ctypes.c_bool, [p, p, u, ctypes.c_int, ctypes.c_int]
    load = lib.__atomic_load_8
    load.restype, load.argtypes = u, [p, ctypes.c_int]
    store = lib.__atomic_store_8
    store.restype, store.argtypes = None, [p, u, ctypes.c_int]
    exchange = lib.__atomic_exchange_8
    exchange.restype, exchange.argtypes = u, [p, u, ctypes.c_int]
    fetch_and = lib.__atomic_fetch_and_8
    fetch_and.restype, fetch_and.argtypes = u, [p, u, ctypes.c_int]
    fetch_add = lib.__atomic_fetch_add_8
    fetch_add.restype, fetch_add.argtypes = u, [p, u, ctypes.c_int]
    return (cas, load, store, exchange, fetch_and, fetch_add), ""


_ATOMICS, UNAVAILABLE = _load_atomics()


def state_of(word):
    return word & 0xff


def generation_of(word):
    return (word >> 8) & 0xffffff


def make_state(pid, generation, state):
    return (pid << 32) | ((generation & 0xffffff) << 8) | state


def valid_name(name):
    """Whether `name` may name a segment (it comes from a peer's locator)."""
    if not name or len(name) > 200 or name[0] == "." or name.endswith(".bell"):
        return False
    return all(c.isascii() and (c.isalnum() or c in "-_.") for c in name)


def _read_stat(pid):
    """(state, start time) from /proc/PID/stat, or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()
    if len(fields) < 20:
        return None
    return fields[0].decode("ascii", "replace"), int(fields[19])  # fields 3 and 22


def own_start_time():
    s = _read_stat(os.getpid())
    return s[1] if s else 0


def own_pid_namespace():
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def process_alive(pid, start):
    if pid == 0 or pid > 0x3fffffff:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # EPERM: it exists
    s = _read_stat(pid)
    if s is None:
        return True
    return s[0] not in ("Z", "X") and (start == 0 or s[1] == start)


def validate(h, file_size):
    """The geometry of a header (a dict of its words), or raises ValueError."""
    def fail(what):
        raise ValueError("bad segment header: " + what)
    if h["magic"] != MAGIC:
        fail("no magic number (not a Gecko segment, or not initialised)")
    if h["version"] != LAYOUT_VERSION:
        fail("layout version %d, this reader reads %d" % (h["version"], LAYOUT_VERSION))
    if not _HEADER_READ <= h["header_size"] <= HEADER_BYTES:
        fail("header size %d" % h["header_size"])
    total = h["total"]
    if total > file_size or total > MAX_TOTAL:
        fail("it says %d bytes, the file has %d" % (total, file_size))
    if not 1 <= h["slot_count"] <= MAX_SLOTS:
        fail("slot count %d" % h["slot_count"])
    if not 1 <= h["ring_capacity"] <= MAX_RING:
        fail("ring capacity %d" % h["ring_capacity"])
    if not 1 <= h["interest_words"] <= MAX_INTEREST_WORDS:
        fail("interest words %d" % h["interest_words"])
    interest_offset = RING_OFFSET + h["ring_capacity"] * 8
    if h["slot_size"] % 64 or h["slot_size"] < interest_offset + h["interest_words"] * 8 or h["slot_size"] > MAX_SLOT_SIZE:
        fail("slot size %d" % h["slot_size"])
    if h["slots_offset"] % 64 or h["slots_offset"] < h["header_size"]:
        fail("slots offset %d" % h["slots_offset"])
    slots_end = h["slots_offset"] + h["slot_count"] * h["slot_size"]
    if slots_end > total:
        fail("the slots end past the segment")
    if not 1 <= h["class_count"] <= MAX_CLASSES:
        fail("class count %d" % h["class_count"])
    if not 1 <= h["chunk_total"] <= MAX_CHUNK_TOTAL:
        fail("chunk total %d" % h["chunk_total"])
    if h["desc_offset"] % 64 or h["desc_offset"] < slots_end:
        fail("descriptor offset %d" % h["desc_offset"])
    end = h["desc_offset"] + h["chunk_total"] * DESC_SIZE
    if end > total:
        fail("the chunk descriptors end past the segment")
    first, prev = 0, 0
    classes = []
    for k in range(h["class_count"]):
        size, count, cfirst, offset = h["classes"][k]
        if size < 64 or size > MAX_CHUNK_SIZE or size % 64 or size <= prev:
            fail("class %d: chunk size %d" % (k, size))
        if not 1 <= count <= MAX_CHUNK_COUNT:
            fail("class %d: count %d" % (k, count))
        if cfirst != first:
            fail("class %d: first chunk %d" % (k, cfirst))
        if offset % 64 or offset < end:
            fail("class %d: offset %d" % (k, offset))
        end = offset + size * count
        if end > total:
            fail("class %d: ends past the segment" % k)
        classes.append((size, count, cfirst, offset))
        first += count
        prev = size
    if first != h["chunk_total"]:
        fail("the classes hold %d chunks, not %d" % (first, h["chunk_total"]))
    return classes


def read_header(fd):
    """The header's words as a dict (pread: a truncated file cannot fault), or None if too short."""
    raw = os.pread(fd, _HEADER_READ, 0)
    if len(raw) < _HEADER_READ:
        return None
    w = _HEADER_FIELDS.unpack_from(raw, 0)
    names = ("magic", "version", "header_size", "total", "owner_pid", "owner_start", "owner_pidns", "owner_uid",
             "session", "slot_count", "slot_size", "slots_offset", "ring_capacity", "interest_words", "chunk_total",
             "desc_offset", "class_count")
    h = dict(zip(names, w))
    h["classes"] = [_CLASS.unpack_from(raw, 136 + 32 * k) for k in range(MAX_CLASSES)]
    h["heartbeat"], h["closed"] = struct.unpack_from("<2Q", raw, 448)
    h["sealed"], h["seal"] = raw[_SEALED], raw[_SEAL]
    return h


def check_seal(h, name, key):
    """"sealed", "unsealed" or "other secret": a header read by read_header()
    against subkey 4 of the key's secret (docs/SECURITY.md §8)."""
    if h["seal"] == bytes(32):
        return "unsealed"
    expected = hashlib.blake2b(h["sealed"] + name.encode(), digest_size=32, key=bytes(key)).digest()
    return "sealed" if hmac.compare_digest(expected, h["seal"]) else "other secret"


class _Link:
    """One mapped segment and the slot this port holds in it."""

    def __init__(self, locator, name):
        self.locator, self.name = locator, name
        self.fd = -1
        self.map = None
        self.words = None      # memoryview of the mapping as 64-bit words
        self.base = 0          # address of the mapping (for libatomic)
        self.bell = -1         # the publisher's doorbell
        self.slot = 0
        self.bit = 0
        self.word = 0          # our state word
        self.detached = True   # the slot is not (or no longer) ours to touch
        self.armed_by_us = False
        self.tail_seen = 0

    def close(self):
        if self.bell >= 0:
            os.close(self.bell)
            self.bell = -1
        if self.words is not None:
            self.words.release()
            self.words = None
        if self.map is not None:
            self.map.close()
            self.map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class ShmInPort:
    """Frames from the shared-memory segments of publishers on this host.

    Not thread-safe: the node calls it holding its in-port lock. `fd` is the
    doorbell to poll; call prepare_wait() before sleeping on it."""

    def __init__(self, directory="/dev/shm", max_frame=(64 << 20) + 48, notice=None, group_access=False,
                 seal_key=None):
        if _ATOMICS is None:
            raise OSError(UNAVAILABLE)
        (self._acas, self._aload, self._astore, self._exchange, self._fetch_and, self._fetch_add) = _ATOMICS
        self._expected = ctypes.c_uint64(0)
        self._expected_at = ctypes.addressof(self._expected)
        self.directory = directory
        self.max_frame = max_frame
        self._notice = notice or (lambda level, reason, text: None)
        self.pid = os.getpid()
        self.start = own_start_time()
        self.ns = own_pid_namespace()
        self.nonce = random.getrandbits(64)
        self.bell_path = os.path.join(directory, "gecko-in-%x-%d-%d-%016x" % (self.ns, self.pid, self.start, self.nonce))
        self.group_access = group_access
        # In a secured key: map only segments sealed with it (a tuple: with any of them, during a rotation).
        self.seal_key = seal_key
        mode = 0o660 if group_access else 0o600
        os.mkfifo(self.bell_path, mode)
        try:
            self.fd = os.open(self.bell_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            os.fchmod(self.fd, mode)
        except OSError:
            os.unlink(self.bell_path)
            raise
        self.links = []
        self.interests = []  # (channel, wildcard, announcement)
        self._bytes_possible = False
        self._next_size_check = 0.0
        self._next_live_check = 0.0
        self.dropped_locators = []  # links this port dropped, for the node to forget
        self.stats = {"links_dropped": 0, "corrupt": 0, "oversized": 0, "frames": 0, "unsealed": 0}

    # ---- atomics on a link's mapping ----

    def _load(self, l, word):
        return l.words[word] if _TSO else self._aload(l.base + word * 8, _ACQUIRE)

    def _store(self, l, word, value, order=_RELEASE):
        if _TSO and order != _SEQ_CST:
            l.words[word] = value
        else:
            self._astore(l.base + word * 8, value, order)

    def _cas(self, l, word, expected, desired):
        self._expected.value = expected
        return self._acas(l.base + word * 8, self._expected_at, desired, _ACQ_REL, _ACQUIRE)

    # ---- links ----

    def connect(self, locator, peer_fingerprint=""):
        """Maps the segment of `locator` and claims a slot in it: "" if linked,
        else why not. (`peer_fingerprint` is for CURVE links: a segment's seal
        is checked with every key this port accepts.)"""
        if not locator.startswith("shm://"):
            return "not a shared-memory locator"
        name = locator[6:]
        if not valid_name(name):
            return "'%s' is not a shared-memory segment name" % name
        if any(l.locator == locator for l in self.links):
            return ""
        l = _Link(locator, name)
        try:
            why = self._open(l)
        except OSError as e:
            why = "cannot use %s: %s" % (os.path.join(self.directory, name), e.strerror or e)
        if why:
            l.close()
            return why
        self.links.append(l)
        self._next_live_check = 0.0
        return ""

    def _open(self, l):
        path = os.path.join(self.directory, l.name)
        try:
            l.fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENOENT:
                return "no shared-memory segment %s (its publisher is gone, or runs in another container)" % path
            if e.errno == errno.EACCES:
                return ("no permission to open %s (another user's segment; users who share a group link over shared "
                        "memory when the publishing node sets GECKO_SHM_GROUP=1)" % path)
            return "cannot open %s: %s" % (path, e.strerror)
        st = os.fstat(l.fd)
        if not stat.S_ISREG(st.st_mode):
            return "%s is not a shared-memory segment" % path
        # Nobody but its owner (and the owner's group) may be able to write or
        # cut short what is mapped (docs/PROTOCOL.md 7.1).
        if st.st_uid != os.geteuid() and not (self.group_access and st.st_gid in (os.getegid(), *os.getgroups())):
            return "%s belongs to uid %d, not to this user%s: not mapped" % (
                path, st.st_uid, " or a group it is in" if self.group_access else "")
        if st.st_mode & stat.S_IWOTH:
            return "%s is writable by every user (mode %04o): not mapped" % (path, st.st_mode & 0o7777)
        h = read_header(l.fd)
        if h is None:
            return "%s is shorter than a segment header (%d bytes)" % (path, st.st_size)
        try:
            l.classes = validate(h, st.st_size)
        except ValueError as e:
            return "%s: %s" % (path, e)
        if h["closed"]:
            return "its publisher closed " + path
        if h["owner_uid"] != st.st_uid:
            return "%s says its owner is uid %d, the file's is %d" % (path, h["owner_uid"], st.st_uid)
        if self.seal_key is not None:
            keys = self.seal_key if isinstance(self.seal_key, tuple) else (self.seal_key,)
            check = check_seal(h, l.name, keys[0])
            for other in keys[1:]:
                if check == "other secret" and check_seal(h, l.name, other) == "sealed":
                    check = "sealed"
            if check != "sealed":
                self.stats["unsealed"] += 1
                return path + (" is not sealed: its publisher holds no secret of this key (docs/SECURITY.md §8): not mapped"
                               if check == "unsealed" else
                               " is sealed with another secret than this node's (docs/SECURITY.md §8): not mapped")
        l.owner_pid, l.owner_start, l.same_ns = h["owner_pid"], h["owner_start"], h["owner_pidns"] == self.ns
        if not self._publisher_alive(l, h["heartbeat"]):
            return "the publisher of %s (pid %d) is dead" % (path, h["owner_pid"])
        for key in ("total", "slot_count", "slot_size", "slots_offset", "ring_capacity", "interest_words",
                    "chunk_total", "desc_offset"):
            setattr(l, key, h[key])
        l.class_firsts = [c[2] for c in l.classes]
        l.map = mmap.mmap(l.fd, l.total, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        l.words = memoryview(l.map).cast("Q")
        l.base = ctypes.addressof(ctypes.c_char.from_buffer(l.map))
        # (the ctypes object pins the map's buffer only while it lives: taken the address, it goes)
        # Claim a free slot: the CAS writes our pid with the state.
        slot = None
        for i in range(l.slot_count):
            s0 = (l.slots_offset + i * l.slot_size) >> 3
            w = self._load(l, s0 + S_STATE)
            if state_of(w) != FREE:
                continue
            word = make_state(self.pid, generation_of(w) + 1, CLAIMING)
            if self._cas(l, s0 + S_STATE, w, word):
                slot = i
                break
        if slot is None:
            return "all %d subscriber slots of %s are taken" % (l.slot_count, path)
        l.slot, l.bit = slot, 1 << slot
        l.s0 = (l.slots_offset + slot * l.slot_size) >> 3
        l.ring0 = l.s0 + (RING_OFFSET >> 3)
        l.interest0 = l.ring0 + l.ring_capacity
        l.detached = False
        s0 = l.s0
        self._store(l, s0 + S_START, self.start)
        self._store(l, s0 + S_PIDNS, self.ns)
        self._store(l, s0 + S_BELL, self.nonce)
        self._store(l, s0 + S_HEARTBEAT, time.monotonic_ns())
        self._store(l, s0 + S_ARMED, 0)
        if self._load(l, s0 + S_HEAD) != self._load(l, s0 + S_TAIL):
            # A freed slot is empty: this one is not. Give it back for the publisher to clean.
            self._store(l, s0 + S_STATE, make_state(self.pid, generation_of(word), DEPARTED))
            l.detached = True
            return "%s: slot %d is free but not empty (corrupt segment)" % (path, slot)
        self._write_interests(l)
        l.word = make_state(self.pid, generation_of(word), ACTIVE)
        self._store(l, s0 + S_STATE, l.word)
        try:
            l.bell = os.open(path + ".bell", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
            if not stat.S_ISFIFO(os.fstat(l.bell).st_mode):
                os.close(l.bell)
                l.bell = -1
        except OSError:
            l.bell = -1
        self._changed(l)
        return ""

    def _changed(self, l):
        """Tells the publisher that our slot changed."""
        self._fetch_add(l.base + H_CHANGES * 8, 1, _ACQ_REL)
        if l.bell >= 0:
            try:
                os.write(l.bell, b"\1")
            except OSError:
                pass

    def disconnect(self, locator):
        for l in self.links:
            if l.locator == locator:
                self.links.remove(l)
                self._leave(l)
                return

    def _leave(self, l):
        """Gives the slot up. Frames are copied out when taken, so nothing is
        held: leaving, then departed at once (the publisher frees the slot)."""
        if not l.detached:
            leaving = make_state(self.pid, generation_of(l.word), LEAVING)
            if self._cas(l, l.s0 + S_STATE, l.word, leaving):
                self._store(l, l.s0 + S_ARMED, 0)
                departed = make_state(self.pid, generation_of(l.word), DEPARTED)
                self._cas(l, l.s0 + S_STATE, leaving, departed)
                self._changed(l)
        l.close()

    def _drop(self, l, level, why, corrupt, touch=True, publisher_gone=False):
        """publisher_gone: it closed or died, so no other locator of it would
        serve either; otherwise the node falls back to its next locator."""
        self.links.remove(l)
        # Logged before counted: whoever sees the counter move finds the reason.
        self._notice(level, "shm link corrupt" if corrupt else "shm link dropped",
                     "shared-memory link to %s dropped: %s" % (l.locator, why))
        self.stats["links_dropped"] += 1
        if corrupt:
            self.stats["corrupt"] += 1
        if not touch:
            l.detached = True
        if not publisher_gone:
            self.dropped_locators.append(l.locator)
        self._leave(l)

    def _publisher_alive(self, l, heartbeat):
        if l.same_ns:
            return process_alive(l.owner_pid, l.owner_start)
        now = time.monotonic_ns()
        return now <= heartbeat or now - heartbeat < LEASE_NS

    def check_links(self, force=False):
        """The publishers' health and the segments': closed, dead, truncated, garbage."""
        now = time.monotonic()
        size_due = force or now >= self._next_size_check
        live_due = force or now >= self._next_live_check
        if not size_due and not live_due:
            return
        if size_due:
            self._next_size_check = now + SIZE_CHECK_INTERVAL
        if live_due:
            self._next_live_check = now + CHECK_INTERVAL
        for l in list(self.links):
            try:
                size = os.fstat(l.fd).st_size
            except OSError:
                size = 0
            if size < l.total:
                self._drop(l, "error", "the segment was truncated to %d bytes (it had %d)" % (size, l.total), True, False)
                continue
            if l.words[H_MAGIC] != MAGIC:
                self._drop(l, "error", "its header was overwritten (no magic number)", True, False)
                continue
            head, tail = self._load(l, l.s0 + S_HEAD), self._load(l, l.s0 + S_TAIL)
            if self._load(l, H_CLOSED):
                if head != tail:
                    continue  # what it queued before closing is still ours to read
                self._drop(l, "debug", "its publisher closed it", False, publisher_gone=True)  # an ordinary exit
                continue
            if not live_due:
                continue
            if self._load(l, l.s0 + S_STATE) != l.word:
                self._drop(l, "warning", "the publisher took this subscriber's slot back", False, False)
                continue
            if not self._publisher_alive(l, self._load(l, H_HEARTBEAT)):
                self._drop(l, "warning", "its publisher (pid %d) died" % l.owner_pid, False, publisher_gone=True)
                continue
            self._store(l, l.s0 + S_HEARTBEAT, time.monotonic_ns(), _RELAXED)

    # ---- interests ----

    def subscribe(self, channel, wildcard, announcement):
        self.interests.append((channel, wildcard, bytes(announcement)))
        self._publish_interests()

    def unsubscribe(self, channel, wildcard, announcement):
        i = (channel, wildcard, bytes(announcement))
        if i in self.interests:
            self.interests.remove(i)
            self._publish_interests()

    def _publish_interests(self):
        for l in self.links:
            self._write_interests(l)
            self._changed(l)

    def _write_interests(self, l):
        """Rewrites our interests under the slot's seqlock (odd version while writing)."""
        s0, w0, capacity = l.s0, l.interest0, l.interest_words
        version = self._load(l, s0 + S_IVERSION)
        version += version & 1
        self._store(l, s0 + S_IVERSION, version + 1, _SEQ_CST)
        at, overflow = 0, False
        for channel, wildcard, announcement in self.interests:
            data = announcement[:MAX_ANNOUNCEMENT]
            n = len(data)
            words = 2 + (n + 7) // 8
            if at + words > capacity:
                overflow = True
                break
            padded = data + b"\0" * (-n & 7)
            record = (channel, (WILDCARD if wildcard else 0) | (n << 32)) + struct.unpack("<%dQ" % (len(padded) // 8), padded)
            l.words[w0 + at:w0 + at + words] = memoryview(struct.pack("<%dQ" % words, *record)).cast("Q")
            at += words
        self._store(l, s0 + S_IUSED, at)
        self._store(l, s0 + S_FLAGS, OVERFLOW if overflow else 0)
        self._store(l, s0 + S_IVERSION, version + 2, _SEQ_CST)
        if overflow:
            self._notice("warning", "shm interests overflow",
                         "shared memory %s: this node's %d subscriptions do not fit in a slot; the publisher sends it "
                         "everything, and some subscribers may go unannounced" % (l.name, len(self.interests)))

    # ---- frames ----

    def take(self, limit=1024):
        """Up to `limit` frames (bytes) from every link, oldest first per link."""
        out = []
        if not self.links:
            return out
        self.check_links()
        for l in list(self.links):
            why = self._take_link(l, out, limit - len(out))
            if why:
                self._drop(l, "error", why, True)
            if len(out) >= limit:
                break
        self.stats["frames"] += len(out)
        return out

    def _take_link(self, l, out, limit):
        """Pops entries of one ring into `out`; a reason if the link is corrupt."""
        words, cap = l.words, l.ring_capacity
        s_head = l.s0 + S_HEAD
        head_at = l.base + s_head * 8
        ring0, desc0, chunk_total = l.ring0, l.desc_offset >> 3, l.chunk_total
        mm, bit, notbit = l.map, l.bit, ~l.bit & _MASK
        load = self._load
        n = 0
        h = load(l, s_head)
        attempts = 0
        while n < limit and attempts < 64:
            if h < l.tail_seen:
                t = l.tail_seen
            else:
                t = l.tail_seen = load(l, l.s0 + S_TAIL)
            if h == t:
                break
            if t < h or t - h > cap:
                again = load(l, s_head)
                if again != h:
                    h = again
                    attempts += 1
                    continue
                return "ring indices out of range (head %d, tail %d)" % (h, t)
            e = words[ring0 + h % cap]
            self._expected.value = h
            if not self._acas(head_at, self._expected_at, h + 1, _ACQ_REL, _ACQUIRE):
                h = self._expected.value  # the publisher took entries back
                attempts += 1
                continue
            h += 1
            if e >= chunk_total:
                return "a queue entry names chunk %d of %d" % (e, chunk_total)
            d = desc0 + e * (DESC_SIZE >> 3)
            size = words[d + 1]
            k = 0
            while k + 1 < len(l.class_firsts) and e >= l.class_firsts[k + 1]:
                k += 1
            room, _, first, offset = l.classes[k]
            owners_at = l.base + d * 8
            if size < 8 or size > room or not words[d] & bit:
                self._fetch_and(owners_at, notbit, _ACQ_REL)
                return "chunk %d says %d bytes in %d%s" % (e, size, room, "" if size < 8 or size > room
                                                            else ", and is not ours")
            if size > self.max_frame:
                self._fetch_and(owners_at, notbit, _ACQ_REL)
                self.stats["oversized"] += 1
                continue
            at = offset + (e - first) * room
            out.append(mm[at:at + size])
            self._fetch_and(owners_at, notbit, _ACQ_REL)
            n += 1
        return ""

    def frames_queued(self):
        for l in self.links:
            if self._load(l, l.s0 + S_HEAD) != self._load(l, l.s0 + S_TAIL):
                return True
        return False

    def prepare_wait(self):
        """Arms every link (publishers ring the doorbell for the next frame),
        then looks once more: False if frames are already queued."""
        if not self.links:
            return True
        self.check_links()
        rung = self._bytes_possible
        for l in self.links:
            at = l.base + (l.s0 + S_ARMED) * 8
            # The publisher cleared our flag: it wrote (or is writing) a byte.
            if self._exchange(at, 1, _SEQ_CST) == 0 and l.armed_by_us:
                rung = True
            l.armed_by_us = True
        # Our stores of `armed` (sequentially consistent) come before our
        # reads of `tail`; the publisher stores `tail` before it reads `armed`.
        if rung:
            self.drain_bell()
        self._bytes_possible = False
        return not self.frames_queued()

    def spin(self, seconds):
        """Busy-polls the rings for up to `seconds` with the links disarmed
        (publishers need not ring meanwhile): True as soon as a frame is
        queued. Wins a lockstep exchange when both sides are awake, at the
        cost of CPU; prepare_wait() arms again before sleeping."""
        if not self.links:
            return False
        for l in self.links:
            at = l.base + (l.s0 + S_ARMED) * 8
            if self._exchange(at, 0, _SEQ_CST) == 0 and l.armed_by_us:
                self._bytes_possible = True  # a publisher took our flag: its byte may be in the FIFO
            l.armed_by_us = False
        until = time.perf_counter() + seconds
        queued = self.frames_queued
        clock = time.perf_counter
        while True:
            for _ in range(16):
                if queued():
                    return True
            if clock() >= until:
                return False

    def drain_bell(self):
        for _ in range(64):
            try:
                if len(os.read(self.fd, 256)) < 256:
                    return
            except BlockingIOError:
                return
            except InterruptedError:
                continue

    def info(self):
        d = dict(self.stats)
        d["links"] = len(self.links)
        return d

    def close(self):
        for l in list(self.links):
            self._leave(l)
        self.links = []
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            try:
                os.unlink(self.bell_path)
            except OSError:
                pass
