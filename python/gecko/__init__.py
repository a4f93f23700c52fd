# SPDX-License-Identifier: Apache-2.0
"""Gecko for Python: speaks Gecko's wire protocol (ZeroMQ + msgpack) natively.

    import gecko
    from gecko.msgs import Imu, Vector3

    gecko.install_signal_handlers()
    with gecko.Node("dalek", "imu_driver") as node:       # finds the key's geckocore by itself
        imu = node.publisher("imu", Imu)
        rate = gecko.Rate(100)
        while gecko.ok():
            imu.publish(Imu(stamp_ns=gecko.now_ns(), accel=Vector3(z=9.81)))
            rate.sleep()

Modules: node (Node), options (Options), pubsub (Publisher, Subscriber),
service (Server, Client), keywide (KeyWideSubscriber: Node.subscribe_all), schema
(a type's fields as data), names (name rules, globs), click (lockstep Controller), spine (Agent), wire
(the frame), message (the codec, define()), msgs (the message types),
discovery (the core protocol), shm (reading shared memory), bag (MCAP recordings:
gecko record's files), security (the key's secret and what is derived from it); _session and
_transport are what a Node is made of.
"""

from .errors import Error, DecodeError
from .message import define, encode, decode, enum_type, to_dict, from_dict
from .runtime import ok, shutdown, install_signal_handlers, now_ns, Rate
from .options import Options
from .node import (Node, MessageInfo, SubscriberStats, KeyWideSubscriber, ChannelInfo, PublisherInfo, DirectoryEvent,
                   DirectoryWatch)
from .pubsub import Publisher, Subscriber
from .service import Server, Client
from .schema import Schema, schema_of
from . import wire, msgs, schema, bag, security

__version__ = "0.2.0"

__all__ = ["Error", "DecodeError", "define", "encode", "decode", "enum_type", "to_dict", "from_dict", "ok",
           "shutdown", "install_signal_handlers", "now_ns", "Rate", "Node", "Options", "Publisher", "Subscriber",
           "MessageInfo", "SubscriberStats", "KeyWideSubscriber", "ChannelInfo", "PublisherInfo", "DirectoryEvent",
           "DirectoryWatch", "Server", "Client", "Schema", "schema_of", "wire", "msgs", "schema", "bag",
           "security"]
