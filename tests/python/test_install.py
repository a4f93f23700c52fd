# SPDX-License-Identifier: Apache-2.0
"""`pip install ./python` and `pip install -e ./python` without network, in
a venv with --system-site-packages (python/README.md's install step; Debian
12 refuses pip outside a venv, PEP 668): the in-tree build backend
(python/build_backend/) makes the wheel; the package then imports from
outside the source tree. And scripts/python-venv, which scripts/build runs:
build/venv, where `python3 -m gecko` works."""

import glob
import os
import subprocess

import pytest

from conftest import ROOT, python_exe


def _venv(tmp_path):
    venv = tmp_path / "venv"
    r = subprocess.run([python_exe(), "-m", "venv", "--system-site-packages", str(venv)], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        pytest.skip("no venv module: %s" % r.stderr.strip())
    return venv / "bin" / "python"


@pytest.mark.parametrize("editable", [False, True])
def test_pip_install_offline(tmp_path, editable):
    py = _venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL")}
    args = [str(py), "-m", "pip", "install", "--no-index", "--quiet"] + (["-e"] if editable else [])
    r = subprocess.run(args + [os.path.join(ROOT, "python")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(py), "-c", "import gecko, gecko.msgs.click; print(gecko.__file__)"], cwd=str(tmp_path),
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    where = os.path.realpath(r.stdout.strip())
    in_tree = where.startswith(os.path.realpath(os.path.join(ROOT, "python")) + os.sep)
    assert in_tree == editable, where


def _run(args, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL", "VIRTUAL_ENV")}
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=180, **kw)


def _speedups_dir():
    """The compiled helper's directory of this test run (on its PYTHONPATH), or None."""
    for d in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if d and glob.glob(os.path.join(d, "gecko_speedups*.so")):
            return d
    return None


def test_python_venv_script(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    helper = _speedups_dir()
    if helper:
        os.symlink(helper, str(build / "python"))  # as the CMake build lays it out: BUILD_DIR/python
    script = os.path.join(ROOT, "scripts", "python-venv")
    r = _run([script, str(build)])
    assert r.returncode == 0, r.stdout + r.stderr
    if "skipped" in r.stderr:
        pytest.skip(r.stderr.strip())
    py = str(build / "venv" / "bin" / "python3")
    # python3 -m gecko from anywhere, the package editable (from this tree), the helper found where built
    r = _run([py, "-m", "gecko", "--help"], cwd=str(tmp_path))
    assert r.returncode == 0 and "list" in r.stdout, r.stdout + r.stderr
    r = _run([py, "-c", "import gecko, gecko.node; print(gecko.__file__); print(gecko.node.speedups is not None)"],
             cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    where, loaded = r.stdout.splitlines()  # a path may hold spaces
    assert os.path.realpath(where).startswith(os.path.realpath(os.path.join(ROOT, "python")) + os.sep), where
    assert loaded == ("True" if helper and os.environ.get("GECKO_PYTHON_SPEEDUPS") != "0" else "False")
    # again: nothing to do, still there
    r = _run([script, str(build)])
    assert r.returncode == 0 and "has the gecko package" in r.stdout, r.stdout + r.stderr


def test_scripts_build_makes_the_venv():
    text = open(os.path.join(ROOT, "scripts", "build"), encoding="utf-8").read()
    assert "scripts/python-venv build" in text
