# SPDX-License-Identifier: Apache-2.0
"""A brain's code split as RoboticsAcademy splits it: at its first
``while True:`` at the left margin, into the part that runs once and the
loop's body, which runs at the brain's frequency. Both are compiled with
the line numbers of the whole code, so that an error names the user's line.
In the body, break and continue end the iteration (the next one still comes)."""

import re

_LOOP = re.compile(r"^while\s+(True|1)\s*:(.*)$")


class BrainCode:
    """Compiled parts: `setup` (runs once), `body` (each iteration; None when
    the code has no loop)."""
    __slots__ = ("setup", "body")

    def __init__(self, setup, body):
        self.setup = setup
        self.body = body


def split_brain(code, filename="<brain>"):
    """Compiles `code` as a brain. Raises SyntaxError (with the whole code's
    line number) when it does not compile."""
    compile(code, filename, "exec")  # the whole first: its errors carry the user's lines
    lines = code.splitlines()
    for i, line in enumerate(lines):
        m = _LOOP.match(line)
        if not m:
            continue
        setup = "\n".join(lines[:i])
        # The body inside a loop of one pass, on the line of the while: its
        # lines keep their numbers, and break or continue end the iteration.
        once = "for _brain_iteration in (0,):"
        inline = m.group(2)
        if inline.split("#", 1)[0].strip():  # while True: step()
            body = "\n" * i + once + inline
        else:
            block = []
            for rest in lines[i + 1:]:
                if rest.strip() and not rest[0].isspace():
                    break  # back at the margin: after a loop that never ends, never run
                block.append(rest)
            body = "\n" * i + once + "\n" + "\n".join(block)
        return BrainCode(compile(setup, filename, "exec"), compile(body, filename, "exec"))
    return BrainCode(compile(code, filename, "exec"), None)
