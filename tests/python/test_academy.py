# SPDX-License-Identifier: Apache-2.0
"""gecko.academy's pieces without a simulation: a brain split at its first
`while True:` with the user's line numbers, and the checker behind the
bridge's evaluate (pyflakes when importable, else compile). The runner and
the HAL are tested end to end by tests/bridge/academy_test.py."""

import json
import subprocess
import sys
import traceback

import pytest

from conftest import ROOT, python_exe

from gecko.academy.check import check
from gecko.academy.split import split_brain


def run_lines(code, iterations):
    """Runs a split brain: setup once, then the body; returns its globals."""
    brain = split_brain(code)
    g = {}
    exec(brain.setup, g)
    for _ in range(iterations):
        exec(brain.body, g)
    return g


def test_setup_runs_once_and_the_body_per_iteration():
    g = run_lines("n = 10\nseen = []\nwhile True:\n    n += 1\n    seen.append(n)\n", 3)
    assert g["seen"] == [11, 12, 13]


def test_break_and_continue_end_one_iteration():
    g = run_lines("n = 0\nwhile True:\n    n += 1\n    if n % 2:\n        continue\n    break\n", 4)
    assert g["n"] == 4


def test_a_one_line_loop():
    assert run_lines("n = 0\nwhile True: n += 2  # comment\n", 3)["n"] == 6


def test_code_after_the_loop_never_runs():
    g = run_lines("n = 0\nwhile True:\n    n += 1\nn = -100\n", 2)
    assert g["n"] == 2


def test_a_brain_without_loop_is_all_setup():
    brain = split_brain("x = 1\n")
    assert brain.body is None


def test_errors_carry_the_users_line():
    brain = split_brain("import math\nn = 0\nwhile True:\n\n    n += 1\n    x = 1 / (n - 2)\n")
    g = {}
    exec(brain.setup, g)
    exec(brain.body, g)
    with pytest.raises(ZeroDivisionError) as e:
        exec(brain.body, g)
    assert traceback.extract_tb(e.value.__traceback__)[-1].lineno == 6


def test_a_syntax_error_names_its_line():
    with pytest.raises(SyntaxError) as e:
        split_brain("x = 1\nwhile True:\n    y = x +\n")
    assert e.value.lineno == 3


def test_check_finds_syntax_errors_with_their_line():
    problems = check("a = 1\nb = (a +\n")
    assert len(problems) == 1 and problems[0]["line"] >= 2 and "syntax" in problems[0]["message"]


def test_check_accepts_HAL_and_GUI_and_clean_code():
    assert check("import HAL\nHAL.set_joint_targets([0, 0])\nGUI = None\n") == []


def test_check_reports_undefined_names_through_pyflakes():
    pytest.importorskip("pyflakes")  # Debian 12: pyflakes3 (scripts/install-deps)
    problems = check("x = 1\nprint(y)\n")
    assert [p["line"] for p in problems] == [2] and "'y'" in problems[0]["message"]


def test_check_as_a_program_reads_stdin_and_writes_json():
    out = subprocess.run([python_exe(), "-m", "gecko.academy.check"], input="1 +\n", capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=True)
    problems = json.loads(out.stdout)
    assert problems[0]["line"] == 1, problems
