# SPDX-License-Identifier: Apache-2.0
"""The Python message classes against the C++ definitions they mirror: every
struct of msgs/include/gecko/msgs/*.hpp and gecko/click/.../lockstep_msgs.hpp
is parsed from the header (type_name, fields in GECKO_MSG_FIELDS order, each
field's C++ type and default, the enums and their wire names) and compared
with gecko.msgs, so that a field added on one side fails here until the other
side has it too."""

import os
import re

import pytest

import gecko.msgs as gm
from gecko import message

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEADERS = [os.path.join(ROOT, "msgs", "include", "gecko", "msgs", f)
           for f in ("std.hpp", "geometry.hpp", "sensors.hpp", "click.hpp", "sim.hpp")] + [
    os.path.join(ROOT, "gecko", "click", "include", "gecko", "click", "lockstep_msgs.hpp")]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def split_top(text, sep=","):
    """Splits at `sep` outside <> () {}."""
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "<({":
            depth += 1
        elif c in ">)}":
            depth -= 1
        if c == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_headers():
    structs, enums, constants = {}, {}, {}
    for path in HEADERS:
        text = strip_comments(open(path, encoding="utf-8").read())
        for m in re.finditer(r"inline constexpr std::\w+ (\w+) = (-?\d+);", text):
            constants[m.group(1)] = int(m.group(2))
        for m in re.finditer(r"enum class (\w+)\s*:\s*[\w:]+\s*\{(.*?)\};", text, re.S):
            values, n = [], -1
            for item in split_top(m.group(2)):
                if "=" in item:
                    name, num = (x.strip() for x in item.split("="))
                    n = int(num)
                else:
                    name, n = item.strip(), n + 1
                values.append((name, n))
            enums[m.group(1)] = {"values": values, "wire": {v[0]: v[0] for v in values}}
        for m in re.finditer(r"GECKO_MSG_ENUM_NAMED\((\w+),(.*?)\)\s*\n", text, re.S):
            for pair in re.finditer(r"\((\w+),\s*\"([^\"]+)\"\)", m.group(2)):
                enums[m.group(1)]["wire"][pair.group(1)] = pair.group(2)
        for m in re.finditer(r"\nstruct (\w+) \{", text):
            depth, i = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = text[m.end():i - 1]
            tn = re.search(r'static constexpr const char\* type_name = "([^"]+)";', body)
            fm = re.search(r"GECKO_MSG_FIELDS\(([^)]*)\)", body)
            if not fm:
                continue  # not a message (LockstepTopics)
            order = [x.strip() for x in fm.group(1).split(",") if x.strip()]
            members = {}
            for line in body.split(";"):
                line = " ".join(line.split())
                if not line or line.startswith(("static", "bool operator", "GECKO_MSG_FIELDS", "return")) or "(" in line.split("{")[0].split("=")[0]:
                    continue
                dm = re.match(r"^(.*?)\s+(\w+)\s*(\{.*\}|=\s*.*)?$", line)
                if dm and dm.group(2) in order:
                    default = (dm.group(3) or "").strip()
                    default = default[1:-1].strip() if default.startswith("{") else default.lstrip("=").strip()
                    members[dm.group(2)] = (dm.group(1).strip(), default)
            structs[m.group(1)] = {"type_name": tn.group(1) if tn else None,
                                   "fields": [(f,) + members[f] for f in order]}
    return structs, enums, constants


STRUCTS, ENUMS, CONSTANTS = parse_headers()

PRIMITIVES = {"bool": "bool", "double": "float64", "float": "float32", "std::string": "str",
              "std::int8_t": "int8", "std::int16_t": "int16", "std::int32_t": "int32", "std::int64_t": "int64",
              "std::uint8_t": "uint8", "std::uint16_t": "uint16", "std::uint32_t": "uint32",
              "std::uint64_t": "uint64", "std::vector<std::uint8_t>": "bytes"}


def cpp_type(t):
    """The C++ field type written as gecko.message names its FieldTypes."""
    t = t.replace("msgs::click::", "").replace("gecko::", "")
    if t in PRIMITIVES:
        return PRIMITIVES[t]
    m = re.match(r"^std::(vector|optional|array|map)<(.*)>$", t)
    if m:
        args = split_top(m.group(2))
        if m.group(1) == "vector":
            return "list[%s]" % cpp_type(args[0])
        if m.group(1) == "optional":
            return "optional[%s]" % cpp_type(args[0])
        if m.group(1) == "array":
            return "array[%s, %s]" % (cpp_type(args[0]), args[1])
        assert args[0] == "std::string", t
        return "map[str, %s]" % cpp_type(args[1])
    if t in STRUCTS:
        return STRUCTS[t]["type_name"] or t
    if t in ENUMS:
        return t
    raise AssertionError("unknown C++ field type %r" % t)


def py_class(struct_name):
    info = STRUCTS[struct_name]
    if info["type_name"]:
        return gm.by_name(info["type_name"])
    return getattr(gm.click, struct_name)


def test_headers_parsed():
    assert len(STRUCTS) >= 25
    assert "Imu" in STRUCTS and "Answer" in STRUCTS and "SensorObject" in STRUCTS


@pytest.mark.parametrize("struct_name", sorted(STRUCTS))
def test_fields_match_cpp(struct_name):
    info = STRUCTS[struct_name]
    cls = py_class(struct_name)
    assert cls is not None, "no Python class for C++ %s (%s)" % (struct_name, info["type_name"])
    assert cls.__gecko_type__ == info["type_name"]
    py = [(name, ft.name) for name, ft in message.fields_of(cls)]
    cpp = [(name, cpp_type(t)) for name, t, _ in info["fields"]]
    assert py == cpp
    instance = cls()
    for name, t, default in info["fields"]:
        value = getattr(instance, name)
        if default == "" or default in ("0", "0.0", "false"):
            expected_zero = {"list": [], "map": {}, "optional": None, "str": "", "bytes": b"", "bool": False}
            kind = cpp_type(t).split("[")[0]
            if kind in expected_zero:
                assert value == expected_zero[kind], name
            elif cpp_type(t) in ENUMS:
                assert value.name == ENUMS[cpp_type(t)]["values"][0][0], name
            elif isinstance(value, message.Message):
                assert value == type(value)(), name
            else:
                assert value == 0, name
        elif "::" in default:
            assert value.name == default.split("::")[-1], name
        elif default in CONSTANTS:
            assert value == CONSTANTS[default], name
        else:
            assert value == float(default), name


@pytest.mark.parametrize("enum_name", sorted(ENUMS))
def test_enums_match_cpp(enum_name):
    cls = getattr(gm.click, enum_name, None) or getattr(gm.sim, enum_name)
    cpp = ENUMS[enum_name]
    assert [(m.name, m.value) for m in cls] == cpp["values"]
    assert {m.name: m.wire for m in cls} == cpp["wire"]


def test_every_named_type_is_listed():
    named = {s["type_name"] for s in STRUCTS.values() if s["type_name"]}
    assert named == set(gm.BY_NAME)
