# SPDX-License-Identifier: Apache-2.0
"""Gecko for Python: speaks Gecko's wire protocol (ZeroMQ + msgpack) natively."""

from .errors import Error, DecodeError
from .message import define, encode, decode, enum_type
from . import wire, msgs

__version__ = "0.2.0"
