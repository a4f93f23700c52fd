# SPDX-License-Identifier: Apache-2.0
"""A log line once per reason: what a peer keeps doing wrong is said once,
then counted where it happens (stats(), shm_info())."""


class Notices:
    def __init__(self, log):
        self._log = log
        self._said = {}

    def say(self, level, reason, text):
        """Logs `text` at `level` ("info", "warning", "error") unless `reason` was said before."""
        if reason in self._said:
            return
        self._said[reason] = True
        getattr(self._log, level)(text)
