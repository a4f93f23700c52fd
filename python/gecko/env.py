# SPDX-License-Identifier: Apache-2.0
"""Boolean GECKO_* variables, read as C++ nodes and geckocore read them.

A value is trimmed of surrounding ASCII whitespace (space, tab, newline,
carriage return, form feed, vertical tab: no other character) and compared
case-insensitively: 1, true, yes, on mean on; 0, false, no, off mean off;
empty or unset means the default; anything else is a
gecko.Error("invalid_argument") that names the variable, its value and the
words it takes.
"""

import os

from .errors import Error

_SPACE = " \t\n\r\f\v"  # what C++ parse_flag trims; str.strip() would take Unicode spaces too
_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")
EXPECTED = "expected 1, true, yes or on; or 0, false, no or off"


def parse_flag(name, value, default):
    """`value` (a str or None) of variable `name` as a bool; `default` when empty or None."""
    word = (value or "").strip(_SPACE)
    if not word:
        return default
    if word.isascii():  # C++ lowers ASCII letters only: no other value can be one of the words
        word = word.lower()
    if word in _ON:
        return True
    if word in _OFF:
        return False
    raise Error("invalid_argument", "%s='%s': %s" % (name, value, EXPECTED))


def flag(name, default=False, environ=None):
    """Environment variable `name` (of `environ`, by default os.environ) as a bool."""
    return parse_flag(name, (os.environ if environ is None else environ).get(name), default)
