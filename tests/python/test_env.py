# SPDX-License-Identifier: Apache-2.0
"""The boolean GECKO_* variables (GECKO_NO_MULTICAST, GECKO_SHM_GROUP,
GECKO_DISCOVERY): one set of words, as C++ nodes and geckocore read them.
Trimmed, any case; 1/true/yes/on and 0/false/no/off; empty or unset: the
default; anything else: invalid_argument naming the variable and its value."""

import pytest

import gecko
from gecko import env

ON = ["1", "true", "yes", "on", "TRUE", "Yes", "oN", " on", "1 ", "\tyes\n"]
OFF = ["0", "false", "no", "off", "FALSE", "No", "OFF", " 0 ", "\toff\n"]
BAD = ["maybe", "2", "y", "n", "enable", "o n", "-1", "truee", "none",
       # C++ trims only " \t\n\r\f\v" and lowers only ASCII letters: other spaces are part of the value
       "\xa01", "on\u2003", "\x1c0", "\x85yes", "\u3000off", "\ufeff1", "\u212a"]
EXPECTED = "expected 1, true, yes or on; or 0, false, no or off"


@pytest.mark.parametrize("default", [False, True])
def test_the_words(default):
    for v in ON:
        assert env.parse_flag("GECKO_X", v, default) is True, v
    for v in OFF:
        assert env.parse_flag("GECKO_X", v, default) is False, v
    for v in ("", None, "  ", "\t"):
        assert env.parse_flag("GECKO_X", v, default) is default, repr(v)


def test_anything_else_is_an_error_naming_the_variable_and_value():
    for v in BAD:
        with pytest.raises(gecko.Error) as e:
            env.parse_flag("GECKO_NO_MULTICAST", v, False)
        assert e.value.code == "invalid_argument"
        assert str(e.value) == "GECKO_NO_MULTICAST='%s': %s" % (v, EXPECTED)


# (variable, the Options field, what the field is when the variable says on, the default)
VARIABLES = [("GECKO_NO_MULTICAST", "multicast_enabled", False, True),
             ("GECKO_SHM_GROUP", "shm_group", True, False),
             ("GECKO_DISCOVERY", "discovery", True, True)]


@pytest.mark.parametrize("name,field,when_on,default", VARIABLES)
def test_options_from_env(monkeypatch, name, field, when_on, default):
    for other, _, _, _ in VARIABLES:
        monkeypatch.delenv(other, raising=False)
    assert getattr(gecko.Options.from_env(), field) is default
    for v in ON:
        monkeypatch.setenv(name, v)
        assert getattr(gecko.Options.from_env(), field) is when_on, (name, v)
    for v in OFF:
        monkeypatch.setenv(name, v)
        assert getattr(gecko.Options.from_env(), field) is (not when_on), (name, v)
    monkeypatch.setenv(name, "")
    assert getattr(gecko.Options.from_env(), field) is default
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(gecko.Error, match="^%s='maybe': %s$" % (name, EXPECTED)):
        gecko.Options.from_env()


def test_a_node_refuses_a_bad_value(monkeypatch):
    monkeypatch.setenv("GECKO_SHM_GROUP", "sometimes")
    with pytest.raises(gecko.Error, match="GECKO_SHM_GROUP='sometimes'") as e:
        gecko.Node("envtest", "n", discovery=False)
    assert e.value.code == "invalid_argument"
