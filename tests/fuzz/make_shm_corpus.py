#!/usr/bin/env python3
"""Writes the seed corpus of gecko_fuzz_shm (tests/fuzz/corpus_shm): programs
for the hostile publisher of fuzz_shm.cpp. Run from anywhere; rewrites the
files it names and leaves others alone."""
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_shm")

CONNECT, TAKE, TAKE_KEEP, CLEAR, WAIT, DISCONNECT = b"\x03", 4, 28, b"\x06", b"\x08", b"\x09"


def patch(word_index, value):
    return b"\x00" + struct.pack("<I", word_index)[:3] + struct.pack("<Q", value)


def queue(chunk, size):
    return b"\x01" + bytes([chunk]) + struct.pack("<H", size)


def take(n, keep=False):
    return bytes([TAKE_KEEP if keep else TAKE, n])


def head_tail(tail, value):
    return b"\x02" + bytes([0 if tail else 1]) + struct.pack("<H", value)


def desc(chunk, value, size=True):
    return bytes([22 if size else 10, chunk]) + struct.pack("<I", value)


def state(value):
    return b"\x0b" + struct.pack("<Q", value)


def planned(slots, ring, classes):
    return bytes([1, slots - 1, ring - 1, classes])


def raw_segment():
    """A valid tiny segment, byte for byte: 1 slot, a ring of 1, one 64-byte chunk."""
    header_size, slots_offset, ring, interest_words = 4096, 4096, 1, 8
    slot_size = (256 + ring * 8 + interest_words * 8 + 63) // 64 * 64
    desc_offset = slots_offset + slot_size
    class_offset = (desc_offset + 64 + 4095) // 4096 * 4096
    total = (class_offset + 64 + 4095) // 4096 * 4096
    words = [0x4d48534f4b434547, 1, header_size, total, 0, 0, 0, 0, 1, 1, slot_size, slots_offset, ring, interest_words,
             1, desc_offset, 1, 64, 1, 0, class_offset]
    data = bytearray(total)
    struct.pack_into("<%dQ" % len(words), data, 0, *words)
    return bytes(data)


def raw(segment, ops=b""):
    return b"\x00" + struct.pack("<H", len(segment)) + segment + ops


SEEDS = {
    "take.bin": planned(2, 8, 0x05) + CONNECT + queue(0, 100) + take(1) + queue(1, 64) + queue(0, 40) + take(4, True)
    + CLEAR + WAIT + DISCONNECT + CONNECT + queue(2, 200) + take(2),
    "held.bin": planned(1, 16, 0x15) + CONNECT + b"".join(queue(c, 120) for c in range(6)) + take(8, True)
    + queue(0, 60) + take(2) + CLEAR + take(2),
    "size.bin": planned(1, 4, 0x01) + CONNECT + queue(0, 100) + desc(0, 5000) + take(1) + CONNECT + queue(1, 50)
    + desc(1, 0, size=False) + take(1),
    "indices.bin": planned(3, 4, 0x02) + CONNECT + queue(0, 80) + head_tail(True, 900) + take(1) + CONNECT
    + head_tail(False, 3) + take(1) + CONNECT + queue(9, 10) + take(1),
    "state.bin": planned(1, 8, 0x00) + CONNECT + queue(0, 64) + state(0x1234) + WAIT + take(1) + CONNECT + take(1),
    "header.bin": planned(2, 8, 0x05) + patch(11, (1 << 64) - 64) + CONNECT + patch(11, 4096) + patch(15, (1 << 64) - 4096)
    + CONNECT + take(1),
    "interests.bin": planned(1, 2, 0xc0) + bytes([7, 200, 7, 63, 7, 1]) + CONNECT + bytes([7, 90]) + queue(0, 70) + take(1),
    "raw.bin": raw(raw_segment(), queue(0, 64) + take(1) + queue(0, 65) + take(1)),
}

os.makedirs(HERE, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
