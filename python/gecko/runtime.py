# SPDX-License-Identifier: Apache-2.0
"""Process-wide pieces: ok() and signal handling, time, Rate, logging."""

import logging
import os
import signal
import threading
import time

_shutdown = threading.Event()
_wake_fds = []  # write ends of pipes that shutdown wakes
_wake_lock = threading.Lock()


def ok():
    """False once shutdown was requested (SIGINT/SIGTERM after
    install_signal_handlers(), or shutdown())."""
    return not _shutdown.is_set()


def shutdown():
    """Asks every loop of the process to end: ok() turns false, waits return."""
    _shutdown.set()
    with _wake_lock:
        fds = list(_wake_fds)
    for fd in fds:
        try:
            os.write(fd, b"x")
        except OSError:
            pass


def reset_shutdown():
    """ok() true again (tests, or a program that runs several sessions)."""
    _shutdown.clear()


def _register_wake(fd):
    with _wake_lock:
        _wake_fds.append(fd)


def _unregister_wake(fd):
    with _wake_lock:
        if fd in _wake_fds:
            _wake_fds.remove(fd)


def install_signal_handlers(signals=(signal.SIGINT, signal.SIGTERM)):
    """SIGINT and SIGTERM request shutdown (ok() turns false) instead of
    killing the process; a second SIGINT raises KeyboardInterrupt as usual.
    Call from the main thread."""

    def handler(signum, frame):
        if _shutdown.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        shutdown()

    for s in signals:
        signal.signal(s, handler)


def now_ns():
    """ns since the Unix epoch (the clock of the frames' send time)."""
    return time.time_ns()


class Rate:
    """Sleeps to keep a loop at `hz` without drift (a late iteration does not
    push the next ones back; after a long stall it starts over).

        rate = gecko.Rate(100)
        while gecko.ok():
            ...
            rate.sleep()
    """

    def __init__(self, hz):
        if not hz > 0:
            raise ValueError("Rate needs a positive frequency, not %r" % (hz,))
        self.period = 1.0 / hz
        self._next = time.monotonic() + self.period

    def sleep(self):
        """Sleeps until the next tick; returns False if it was already late."""
        now = time.monotonic()
        late = now >= self._next
        if not late:
            _shutdown.wait(self._next - now)
        self._next += self.period
        if time.monotonic() - self._next > self.period:  # far behind: do not try to catch up
            self._next = time.monotonic() + self.period
        return not late

    def reset(self):
        self._next = time.monotonic() + self.period


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "warning": logging.WARNING,
           "error": logging.ERROR}
_configured = False


def logger(name):
    """A logger under "gecko", writing to stderr at GECKO_LOG's level (default info)."""
    global _configured
    root = logging.getLogger("gecko")
    if not _configured:
        _configured = True
        level = _LEVELS.get(os.environ.get("GECKO_LOG", "info").strip().lower(), logging.INFO)
        root.setLevel(level)
        if not root.handlers:
            h = logging.StreamHandler()
            h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(name)s] %(message)s"))
            root.addHandler(h)
        root.propagate = False
    return logging.getLogger("gecko." + name if name else "gecko")
