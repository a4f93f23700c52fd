# SPDX-License-Identifier: Apache-2.0
"""`pip install ./python` and `pip install -e ./python` without network
(python/README.md's install step): the in-tree build backend
(python/build_backend/) makes the wheel; the package then imports from
outside the source tree."""

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
