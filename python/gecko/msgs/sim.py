# SPDX-License-Identifier: Apache-2.0
"""Simulation control (C++ msgs/include/gecko/msgs/sim.hpp): the messages of
the control services a simulation offers under its name SIM
(SIM/control/start, resume, stop, pause, reset, status: ControlRequest ->
ControlReply, answered once the operation has taken effect) and of its
status topic SIM/status (Status)."""

from ..message import define, enum_type, BOOL, I64, U64, STR, F64

_M = __name__

SimulationState = enum_type("SimulationState", [("running", 0), ("paused", 1), ("resetting", 2), ("over", 3)])
SimulationState.__module__ = _M

Status = define("gecko.msgs.sim.Status", [
    ("stamp_ns", I64), ("simulation", STR), ("state", SimulationState), ("steps", U64), ("steps_per_s", F64),
    ("simulated_time", F64), ("real_time_factor", F64), ("controller", STR), ("controller_id", STR),
    ("brain_frequency", F64), ("resets", U64)], module=_M,
    doc="What a simulation is doing: its status topic's message, and the status in every control reply.")
ControlRequest = define("gecko.msgs.sim.ControlRequest", [("requester", STR)], module=_M,
                        doc="The request of every control service; `requester` is written in the simulation's log.")
ControlReply = define("gecko.msgs.sim.ControlReply", [("ok", BOOL), ("error", STR), ("status", Status)], module=_M,
                      doc="The reply of every control service, sent once the operation has taken effect.")
