#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a key's secret costs (docs/SECURITY.md, issue 29's targets): the same
benchmark programs run plain and secured, alternating, in one window.

Secured means the processes find a secret for their key (GECKO_SECRET_FILE,
written here with `gecko keygen`): their tcp and ipc links are CurveZMQ with
the ZAP handler, their datagrams sealed. Plain means no secret anywhere (an
empty XDG_CONFIG_HOME). Rows, each the median of --runs runs per mode:

  tcp latency p50, 64 B        gecko_bench --only latency --transport tcp --size 64
  tcp throughput 64 B, 1 MiB   gecko_bench --only throughput --transport tcp --size ...
                               (64 B also with --send-queue 10000)
  time to first message        gecko_discovery_bench --only ttfm (multicast, tcp-only publisher; GECKO_CORE)
  shm latency p50, 64 B        gecko_bench --only latency --transport ipc --size 64 (its shm table)

The raw ZeroMQ columns come from the same runs: gecko_bench's raw side is
CurveZMQ with the same ZAP handler when its key has a secret, so they show
what libzmq's crypto costs by itself.

Usage: security_bench.py [--bin build/bin] [--runs 5] [--markdown]
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def number(text):
    """'425.3 k' -> 425300.0, '2.86 M' -> 2860000.0, '86.1' -> 86.1."""
    parts = text.split()
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(parts[1], 1.0) if len(parts) > 1 else 1.0
    return float(parts[0]) * scale


def row_after(output, heading, first_cells):
    """The cells of the first Markdown row (after `heading`, if given) whose leading cells are `first_cells`."""
    seen = heading is None
    for line in output.splitlines():
        if not seen:
            seen = line.startswith(heading)
            continue
        if line.startswith("|"):
            c = cells(line)
            if c[:len(first_cells)] == first_cells:
                return c
    raise RuntimeError("no row %s%s in:\n%s" % (first_cells, " after '%s'" % heading if heading else "", output))


class Row:
    """One figure: `pick` reads Gecko's value from the program's output, `pick_raw` (if any) the raw ZeroMQ
    side's of the same run, which is CurveZMQ too when secured: what the crypto alone costs."""

    def __init__(self, name, unit, command, pick, better, target, pick_raw=None):
        self.name, self.unit, self.command, self.pick, self.better, self.target = name, unit, command, pick, better, target
        self.pick_raw = pick_raw
        self.values = {"plain": [], "secured": []}
        self.raw = {"plain": [], "secured": []}


def rows(bin_dir, tries):
    bench = os.path.join(bin_dir, "gecko_bench")
    discovery = os.path.join(bin_dir, "gecko_discovery_bench")
    lat = lambda t: [bench, "--only", "latency", "--transport", t, "--size", "64", "--reps", "1", "--markdown"]
    thr = lambda size: [bench, "--only", "throughput", "--transport", "tcp", "--size", str(size), "--reps", "1", "--markdown"]
    ttfm = [discovery, "--only", "ttfm", "--tries", str(tries), "--markdown"]
    return [
        Row("tcp latency p50, 64 B", "µs", lat("tcp"), lambda o: number(row_after(o, None, ["tcp", "64 B"])[3]),
            "lower", ("diff", 15.0, "≤ +15 µs"), lambda o: number(row_after(o, None, ["tcp", "64 B"])[4])),
        Row("tcp throughput, 64 B (received)", "msg/s", thr(64), lambda o: number(row_after(o, None, ["tcp", "64 B"])[2]),
            "higher", ("ratio_min", 0.5, "≥ 0.5×"), lambda o: number(row_after(o, None, ["tcp", "64 B"])[3])),
        # The same with a send queue ten times Gecko's default: a queue that holds back neither side's plain
        # rate as much, so the secured/plain ratio shows what CurveZMQ's boxing costs at 64 B.
        Row("tcp throughput, 64 B, send queue 10,000 (received)", "msg/s", thr(64) + ["--send-queue", "10000"],
            lambda o: number(row_after(o, None, ["tcp", "64 B"])[2]), "higher", ("ratio_min", 0.5, "≥ 0.5×"),
            lambda o: number(row_after(o, None, ["tcp", "64 B"])[3])),
        Row("tcp throughput, 1 MiB (received)", "msg/s", thr(1 << 20),
            lambda o: number(row_after(o, None, ["tcp", "1 MiB"])[2]), "higher", ("ratio_min", 0.8, "≥ 0.8×"),
            lambda o: number(row_after(o, None, ["tcp", "1 MiB"])[3])),
        Row("time to first message, multicast, tcp-only publisher", "ms", ttfm,
            lambda o: number(row_after(o, None, ["gecko Node + subscriber, multicast discovery, tcp-only publisher"])[1]),
            "lower", ("ratio_max", 2.0, "≤ 2×")),
        Row("time to first message, GECKO_CORE", "ms", ttfm,
            lambda o: number(row_after(o, None, ["gecko Node + subscriber, GECKO_CORE (no multicast, picks ipc)"])[1]),
            "lower", ("ratio_max", 2.0, "≤ 2×")),
        Row("shm latency p50, 64 B", "µs", lat("ipc"),
            lambda o: number(row_after(o, "### One-way latency on one host", ["64 B"])[2]), "lower",
            ("ratio_max", 1.05, "≤ 1.05×")),
    ]


def run(command, env, timeout=600):
    p = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s exited %d:\n%s" % (" ".join(command), p.returncode, p.stdout[-3000:]))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="build/bin", help="the build's bin folder (default build/bin)")
    ap.add_argument("--runs", type=int, default=5, help="runs per row and mode, alternating (default 5)")
    ap.add_argument("--tries", type=int, default=9, help="time-to-first-message tries per run (default 9)")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gecko-security-bench-") as tmp:
        plain_home, secured_home = os.path.join(tmp, "plain"), os.path.join(tmp, "secured")
        os.makedirs(plain_home)
        base = {k: v for k, v in os.environ.items() if not k.startswith("GECKO_")}
        envs = {"plain": dict(base, HOME=plain_home, XDG_CONFIG_HOME=os.path.join(plain_home, "config"))}
        keygen = subprocess.run([os.path.join(a.bin, "gecko"), "keygen", "--key", "security-bench"],
                                env=dict(base, HOME=secured_home, XDG_CONFIG_HOME=os.path.join(secured_home, "config")),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if keygen.returncode != 0:
            sys.exit("gecko keygen failed: " + keygen.stdout)
        secret = os.path.join(secured_home, "config", "gecko", "keys", "security-bench.secret")
        # GECKO_SECRET_FILE names the secret for every key: the benchmarks' own keys included.
        envs["secured"] = dict(base, HOME=secured_home, XDG_CONFIG_HOME=os.path.join(secured_home, "config"),
                               GECKO_SECRET_FILE=secret)
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        table = rows(a.bin, a.tries)
        outputs = {}
        for i in range(a.runs):
            order = ("plain", "secured") if i % 2 == 0 else ("secured", "plain")
            for mode in order:
                for r in table:
                    key = (mode, tuple(r.command))
                    if key not in outputs:  # rows that read one program's output share its run
                        outputs[key] = run(r.command, envs[mode])
                    r.values[mode].append(r.pick(outputs[key]))
                    if r.pick_raw:
                        r.raw[mode].append(r.pick_raw(outputs[key]))
                outputs.clear()
            print("run %d/%d done" % (i + 1, a.runs), file=sys.stderr)
    load = os.getloadavg()
    print("Measured %s on %d CPUs, Linux %s, load average %.2f %.2f %.2f; %d runs per mode, alternating"
          % (started, os.cpu_count(), platform.release(), load[0], load[1], load[2], a.runs))
    print()
    header = ["figure", "plain (median)", "secured (median)", "secured / plain", "target", "met", "secured / plain per run",
              "raw ZeroMQ: secured / plain", "secured: Gecko / raw"]
    lines = []
    misses = 0
    for r in table:
        p, s = statistics.median(r.values["plain"]), statistics.median(r.values["secured"])
        kind, bound, text = r.target
        ok = (s - p <= bound) if kind == "diff" else (s / p >= bound) if kind == "ratio_min" else (s / p <= bound)
        misses += 0 if ok else 1
        per_run = "–".join("%.2f" % x for x in (min(y / x for x, y in zip(r.values["plain"], r.values["secured"])),
                                                 max(y / x for x, y in zip(r.values["plain"], r.values["secured"]))))
        fmt = (lambda v: "%.1f %s" % (v, r.unit)) if r.unit != "msg/s" else (lambda v: "%.3g k%s" % (v / 1e3, r.unit))
        diff = " (%+.1f µs)" % (s - p) if kind == "diff" else ""
        raw, versus_raw = "-", "-"
        if r.pick_raw:
            rp, rs = statistics.median(r.raw["plain"]), statistics.median(r.raw["secured"])
            raw = "%s → %s = %.2f×%s" % (fmt(rp), fmt(rs), rs / rp, " (%+.1f µs)" % (rs - rp) if kind == "diff" else "")
            versus_raw = "%.2f×" % (s / rs)
        lines.append([r.name, fmt(p), fmt(s), "%.2f×%s" % (s / p, diff), text, "yes" if ok else "MISS", per_run, raw,
                      versus_raw])
    if a.markdown:
        print("| " + " | ".join(header) + " |")
        print("| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |")
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
        for l in [header] + lines:
            print("  ".join(c.ljust(w) for c, w in zip(l, widths)))
    print()
    print("%d of %d rows miss their target" % (misses, len(lines)))


if __name__ == "__main__":
    main()
