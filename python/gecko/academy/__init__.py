# SPDX-License-Identifier: Apache-2.0
"""RoboticsAcademy-style brains on Gecko (docs/ACADEMY.md).

gecko-bridge's code endpoint (/academy/code) hands a page's Python code to
the brain runner (``python3 -m gecko.academy.runner``), which splits it at its
first ``while True:`` as RoboticsAcademy does: the part before runs once, the
loop body runs at the frequency the page asks for. The code reaches the robot
through ``HAL`` (gecko.academy.hal.Hal: read joints, set joint targets), which
the runner puts in the code's globals and makes importable (``import HAL``).

``python3 -m gecko.academy.check`` checks code for the manager's evaluate.
"""

__all__ = ["check", "hal", "runner", "split"]
