# SPDX-License-Identifier: Apache-2.0
"""The PEP 517 build backend of the `gecko` Python package (pyproject.toml's
build-backend), so that `pip install ./python` and `pip install -e ./python`
need neither network nor setuptools: a wheel is a zip of gecko/ with its
dist-info; an editable install is a .pth file naming this directory.

Pure Python: the optional compiled helper (gecko_speedups, python/speedups/)
is built by the project's CMake into its build tree, never by pip."""

import base64
import hashlib
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/


def _project():
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    try:
        import tomllib  # Python 3.11
        return tomllib.loads(text)["project"]
    except ImportError:  # 3.9, 3.10: the few plain keys of [project] this file has
        section = text.split("[project]", 1)[1].split("\n[", 1)[0]
        project = {}
        for key, value in re.findall(r'^([a-z-]+)\s*=\s*(.+)$', section, re.M):
            value = value.strip()
            if value.startswith("["):
                project[key] = re.findall(r'"([^"]*)"', value)
            else:
                project[key] = value.strip('"')
        return project


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    lines += ["Requires-Dist: " + d for d in p.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _wheel_name(p):
    return "%s-%s-py3-none-any.whl" % (p["name"], p["version"])


def _sources():
    """(archive name, path) of the package's .py files, in a stable order."""
    out = []
    for d, dirs, files in os.walk(os.path.join(HERE, "gecko")):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(d, f)
                out.append((os.path.relpath(path, HERE).replace(os.sep, "/"), path))
    return out


def _write_wheel(directory, contents):
    """contents: [(archive name, bytes)]; adds WHEEL, METADATA and RECORD."""
    p = _project()
    info = _dist_info(p)
    contents = list(contents) + [
        (info + "/METADATA", _metadata(p).encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: gecko_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = []
    name = _wheel_name(p)
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in contents:
            z.writestr(zipfile.ZipInfo(arc, (2020, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
        record.append(info + "/RECORD,,")
        z.writestr(zipfile.ZipInfo(info + "/RECORD", (2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return name


# ---- PEP 517 ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(arc, open(path, "rb").read()) for arc, path in _sources()])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "build_backend/gecko_build.py"] + [a for a, _ in _sources()]:
            t.add(os.path.join(HERE, rel), arcname=base + "/" + rel)
    return name


# ---- PEP 660 (pip install -e) ----

def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("gecko_editable.pth", (HERE + "\n").encode())])
