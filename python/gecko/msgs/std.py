# SPDX-License-Identifier: Apache-2.0
"""Single-value messages (C++ msgs/include/gecko/msgs/std.hpp): each wraps its value in `data`."""

from ..message import define, STR, F64, I64, BYTES

_M = __name__

String = define("gecko.msgs.String", [("data", STR)], module=_M, doc="A UTF-8 text.")
Float64 = define("gecko.msgs.Float64", [("data", F64)], module=_M, doc="A double (float64 on the wire, even when integral).")
Int64 = define("gecko.msgs.Int64", [("data", I64)], module=_M, doc="A signed 64-bit integer.")
Bytes = define("gecko.msgs.Bytes", [("data", BYTES)], module=_M, doc="An opaque byte payload (msgpack bin).")
Empty = define("gecko.msgs.Empty", [], module=_M, doc="No content (an empty map): a trigger or a heartbeat.")
