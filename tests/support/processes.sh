# shellcheck shell=bash
# Sourced by the shell tests: a scratch directory and background processes
# that are all stopped, and the directory removed, when the test exits.
#   scratch                  the test's own directory (mktemp -d)
#   background NAME CMD...   runs CMD in the background, output in "$scratch/NAME.log"
# GECKO_IPC_DIR is set to "$scratch": the nodes a test starts create their ipc
# sockets there, not in /tmp itself (which other runs and users may share).
# Paths are quoted throughout: a build directory may contain spaces.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gecko-test-XXXXXX")
export GECKO_IPC_DIR="$scratch"
background_pids=()
background() {
    local name=$1; shift
    "$@" >"$scratch/$name.log" 2>&1 &
    background_pids+=("$!")
}
# True while process $1 runs (a zombie, exited but not yet reaped, does not count).
running() {
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [[ -n $state && $state != Z* ]]
}
# SIGTERM to every background process, SIGKILL to any still running 5 s later
# (bounded: a program that ignores SIGTERM cannot hang the test), then reap.
stop_background() {
    local pid i alive
    for pid in "${background_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for ((i = 0; i < 50; i++)); do
        alive=0
        for pid in "${background_pids[@]}"; do running "$pid" && alive=1; done
        ((alive)) || break
        sleep 0.1  # poll interval of a bounded wait
    done
    for pid in "${background_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$scratch"
}
trap stop_background EXIT
