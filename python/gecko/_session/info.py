# SPDX-License-Identifier: Apache-2.0
"""MessageInfo: what came with a message (gecko.MessageInfo)."""

from .. import wire


class MessageInfo:
    """What came with a message: sequence, publisher, times, size, flags,
    its type's and topic's names; for a key-wide subscriber, `channel`: the
    directory's entry of its topic (a ChannelInfo: schema, publishers), or
    None (no directory to name it)."""
    __slots__ = ("sequence", "publisher_id", "send_time_ns", "receive_time_ns", "wire_size", "compressed",
                 "latched", "type_hash", "type_name", "topic", "channel")

    def __init__(self, h, receive_ns, size, type_name, topic, channel=None):
        self.sequence = h.sequence
        self.publisher_id = h.sender_id
        self.send_time_ns = h.send_time_ns
        self.receive_time_ns = receive_ns
        self.wire_size = size
        self.compressed = bool(h.flags & wire.FLAG_COMPRESSED)
        self.latched = bool(h.flags & wire.FLAG_LATCHED)
        self.type_hash = h.type_hash
        self.type_name = type_name
        self.topic = topic
        self.channel = channel

    @property
    def latency_ns(self):
        return self.receive_time_ns - self.send_time_ns

    def __repr__(self):
        return "MessageInfo(sequence=%d, publisher_id=%016x, latency_ns=%d, wire_size=%d)" % (
            self.sequence, self.publisher_id, self.latency_ns, self.wire_size)
