# SPDX-License-Identifier: Apache-2.0
"""Checks a brain's Python code for the manager's evaluate (docs/ACADEMY.md):
reads the code on stdin and writes a JSON list of problems on stdout, each
{"line": N, "column": C, "message": TEXT}; [] when none. Uses pyflakes
(Debian 12: pyflakes3) when it is importable, else Python's own compile(),
which finds syntax errors only. HAL and GUI count as defined, as the runner
defines them.

    echo 'print(x)' | python3 -m gecko.academy.check     # [{"line": 1, ...undefined name 'x'}]
"""

import ast
import json
import sys

BRAIN_NAMES = {"HAL", "GUI"}


def check(code, filename="<brain>"):
    """The problems of `code`: a list of {"line", "column", "message"}."""
    try:
        tree = ast.parse(code, filename)
    except SyntaxError as e:
        return [{"line": e.lineno or 0, "column": e.offset or 0, "message": "syntax error: %s" % e.msg}]
    try:
        from pyflakes import checker
    except ImportError:  # compile() found what it can: the syntax is right
        return []
    found = checker.Checker(tree, filename=filename, builtins=BRAIN_NAMES)
    return [{"line": m.lineno, "column": getattr(m, "col", 0), "message": m.message % m.message_args}
            for m in sorted(found.messages, key=lambda m: m.lineno)]


def main():
    json.dump(check(sys.stdin.read()), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
