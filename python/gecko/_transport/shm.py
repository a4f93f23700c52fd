# SPDX-License-Identifier: Apache-2.0
"""Shared-memory links (shm://) behind the transport seam: gecko/shm.py's
reader of the segments C++ publishers on this host offer, with what the
seam asks of an in-port (_transport/__init__.py). Python nodes read shared
memory; they publish over ZeroMQ."""

from .. import shm, wire


class ShmPort(shm.ShmInPort):
    schemes = ("shm",)

    @property
    def handle(self):
        return self.fd  # the doorbell publishers ring once prepare_wait() armed the links

    def fired(self):
        self.drain_bell()

    def prepare_wait(self, spin=0.0):
        """Busy-polls the links up to `spin` s, then arms them (publishers
        ring the doorbell) and looks once more: False if frames are queued."""
        if not self.links:
            return True
        if spin and self.spin(spin):
            return False
        return super().prepare_wait()

    def take(self, limit):
        return super().take(limit) if self.links else ()

    def take_dropped(self):
        dropped, self.dropped_locators = self.dropped_locators, []
        return dropped


def open_port(options, log, segment_key=None):
    """(the port, "") or (None, why this node reads no shared memory).
    `segment_key` (subkey 4, in a secured key): only segments sealed with it
    are mapped (docs/SECURITY.md §8); a tuple of them during a rotation (§9)."""
    if options.shared_memory == "off":
        return None, "GECKO_SHM=off"
    try:
        return ShmPort(options.shm_directory, options.max_message_size + wire.HEADER_SIZE,
                       lambda level, reason, text: getattr(log, level)(text), options.shm_group, segment_key), ""
    except OSError as e:
        return None, "this node cannot read shared memory: %s" % (e.strerror or e)
