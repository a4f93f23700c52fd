# SPDX-License-Identifier: Apache-2.0
"""The rig of the Python package's tests: the programs of the build (from
GECKO_BIN_DIR, set by tests/python/CMakeLists.txt), a geckocore of a test's
own (its own key, an ephemeral port read from its "listening on" line, no
multicast, no host door), a short ipc directory of the test's own, and child
processes whose output lines can be awaited. Every wait has a deadline;
nothing sleeps to synchronise."""

import logging
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import gecko  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_sealing_core: needs a geckocore that seals its discovery datagrams "
                                       "(docs/SECURITY.md §6, C++ side); fails, saying so, with an older one")


def bin_path(name):
    d = os.environ.get("GECKO_BIN_DIR") or os.path.join(ROOT, "build", "bin")
    p = os.path.join(d, name)
    if not os.access(p, os.X_OK):
        pytest.skip("%s is not built (GECKO_BIN_DIR=%s)" % (name, d))
    return p


def child_env(key, **extra):
    """The environment of a child process of key `key`: no GECKO_ variable of
    this one's (but the speedups switch), the package from the source tree,
    and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GECKO_") or k == "GECKO_PYTHON_SPEEDUPS"}
    path = [os.path.join(ROOT, "python")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update(GECKO_KEY=key, PYTHONPATH=os.pathsep.join(path))
    env.update(extra)
    return env


def python_exe():
    return os.environ.get("GECKO_PYTHON") or sys.executable


class Proc:
    """A child process whose stdout (and stderr) lines are collected by threads."""

    def __init__(self, args, env=None, stdin=False):
        self.args = args
        self.lines = queue.Queue()
        self.out = []
        self.err = []
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, env=env, text=True,
                                  start_new_session=True)
        self._t = [threading.Thread(target=self._read, args=(self.p.stdout, self.out, True), daemon=True),
                   threading.Thread(target=self._read, args=(self.p.stderr, self.err, False), daemon=True)]
        for t in self._t:
            t.start()

    def _read(self, f, store, forward):
        for line in f:
            store.append(line.rstrip("\n"))
            if forward:
                self.lines.put(line.rstrip("\n"))
        if forward:
            self.lines.put(None)

    def wait_line(self, pattern, timeout=10.0):
        """The first (next) stdout line matching `pattern`; fails the test after `timeout` s."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            if rx.search(line):
                return line
        raise AssertionError("%s: no line matching %r within %.1f s\nstdout:\n%s\nstderr:\n%s" % (
            os.path.basename(self.args[0]), pattern, timeout, "\n".join(self.out), "\n".join(self.err)))

    def wait(self, timeout=10.0):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("%s did not exit within %.1f s\nstdout:\n%s\nstderr:\n%s" % (
                self.args[0], timeout, "\n".join(self.out), "\n".join(self.err)))
        for t in self._t:
            t.join(2)
        return rc

    def stop(self, sig=signal.SIGTERM, timeout=5.0):
        if self.p.poll() is None:
            try:
                self.p.send_signal(sig)
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        for t in self._t:
            t.join(2)
        for f in (self.p.stdout, self.p.stderr, self.p.stdin):
            if f:
                f.close()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(5)


def private_multicast():
    return "239.255.%d.%d:%d" % (random.randint(1, 254), random.randint(1, 254), random.randint(20000, 60000))


class Core:
    """A geckocore of the test's own on 127.0.0.1:<ephemeral>."""

    def __init__(self, key, multicast=None, listen="tcp://127.0.0.1:*", extra=()):
        self.key = key
        args = [bin_path("geckocore"), "--key", key, "--listen", listen, "--door", "0"] + list(extra)
        args += ["--multicast", multicast] if multicast else ["--no-multicast"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("GECKO_")}
        self.proc = Proc(args, env=env)
        line = self.proc.wait_line("listening on", 10)
        self.endpoint = re.search(r"listening on (tcp://[0-9.]+:\d+)", line).group(1)
        self.address = self.endpoint[len("tcp://"):]
        self.port = int(self.address.rsplit(":", 1)[1])

    def stop(self, sig=signal.SIGTERM):
        self.proc.stop(sig)


class Rig:
    """One key with its own core, and what points nodes and children at it."""

    def __init__(self, multicast=False):
        self.key = "py%d_%06x" % (os.getpid(), random.getrandbits(24))
        self.multicast = private_multicast() if multicast else None
        self.ipc_dir = tempfile.mkdtemp(prefix="gk")
        self.core = Core(self.key, self.multicast)
        self.procs = []
        self.nodes = []

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GECKO_") or k == "GECKO_PYTHON_SPEEDUPS"}
        # the package from this tree; the rest of the test's path (the compiled helper's directory, if any)
        path = [os.path.join(ROOT, "python")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env.update(GECKO_KEY=self.key, GECKO_IPC_DIR=self.ipc_dir, PYTHONPATH=os.pathsep.join(path))
        if self.multicast:
            env["GECKO_MULTICAST"] = self.multicast
        else:
            env.update(GECKO_CORE=self.core.address, GECKO_NO_MULTICAST="1")
        env.update(extra)
        return env

    def node(self, name="pytest", **kw):
        opts = dict(ipc_directory=self.ipc_dir)
        if self.multicast:
            opts["multicast"] = self.multicast
        else:
            opts.update(core=self.core.address, multicast_enabled=False)
        opts.update(kw)
        n = gecko.Node(self.key, name, **opts)
        self.nodes.append(n)
        return n

    def spawn(self, args, env=None, stdin=False):
        p = Proc(args, env=env or self.env(), stdin=stdin)
        self.procs.append(p)
        return p

    def close(self):
        for n in self.nodes:
            n.close()
        for p in self.procs:
            p.stop()
        self.core.stop()
        shutil.rmtree(self.ipc_dir, ignore_errors=True)


@pytest.fixture
def rig():
    r = Rig()
    yield r
    r.close()


@pytest.fixture
def mrig():
    """A rig whose core is found by multicast on a group of the test's own."""
    r = Rig(multicast=True)
    yield r
    r.close()


def eventually(predicate, timeout=10.0, what="condition"):
    """Polls a cheap predicate (a state another process changes, with no event
    to wait on) until true; fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


class LogLines(logging.Handler):
    """The gecko logger's lines, as (level name, text) (it does not propagate
    to pytest's caplog)."""

    def __init__(self):
        super().__init__()
        self.lines = []
        logging.getLogger("gecko").addHandler(self)

    def emit(self, record):
        self.lines.append((record.levelname, record.getMessage()))

    def close(self):
        logging.getLogger("gecko").removeHandler(self)
        super().close()


@pytest.fixture
def log_lines():
    h = LogLines()
    yield h.lines
    h.close()
