# SPDX-License-Identifier: Apache-2.0
"""Entity and session ids; the checks of names (gecko.names, re-exported
for the entities)."""

import random

from ..names import check_pattern, check_printable, check_topic, check_type, glob_match  # noqa: F401

_rng = random.SystemRandom()


def new_id():
    """A random nonzero 64-bit id (a session, an entity)."""
    while True:
        v = _rng.getrandbits(64)
        if v:
            return v
