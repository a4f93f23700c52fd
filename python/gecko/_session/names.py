# SPDX-License-Identifier: Apache-2.0
"""Entity and session ids; the checks of names (gecko.names, re-exported
for the entities)."""

import random

from ..names import check_printable, check_topic, check_type

__all__ = ["new_id", "check_printable", "check_topic", "check_type"]

_rng = random.SystemRandom()


def new_id():
    """A random nonzero 64-bit id (a session, an entity)."""
    while True:
        v = _rng.getrandbits(64)
        if v:
            return v
