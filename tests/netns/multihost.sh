#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Multi-host discovery test: three "hosts" (network namespaces A, B, C, each
# with its own UTS namespace, i.e. its own hostname) on one Linux bridge that
# lives in a fourth namespace, so the machine's own network is never touched.
#
#   A: geckocore --key K          B: pub_imu --key K          C: sub_imu --key K
#
#   1. multicast works, no address anywhere: C receives from B, over tcp
#      across the bridge (checked with ss: an established tcp connection C -> B).
#   2. the bridge drops every multicast frame (ports with mcast_flood off, no
#      querier): without GECKO_CORE the subscriber gets nothing and its warning
#      names what was tried; with GECKO_CORE=<A>:7651 on B and C it works again.
#   3. (information) B and C share the machine's hostname (as network namespaces
#      do): the subscriber takes B for its own host and picks B's ipc:// socket,
#      which works only because the filesystem is shared. Printed, not checked.
#   4. same hostname but B and C each have a mount namespace of their own with
#      a private IPC directory (a tmpfs mounted over the same per-test path,
#      passed as GECKO_IPC_DIR), like containers on the host network or two
#      machines both called "raspberrypi": B's ipc:// socket does not exist for
#      C, so C must receive over tcp, since the library compares host ids (boot
#      id + mount namespace), not hostnames. See tests/netns/README.md.
#
# A program that cannot be started (not found, not executable, hidden by a
# mount) or that ends early is reported as such ("could not start X: ..."),
# never as a discovery failure. Paths may contain spaces.
#
# Usage: multihost.sh GECKOCORE PUB_IMU SUB_IMU
# Exit: 0 pass, 1 fail, 77 skipped (not root, or no `ip netns`/veth/bridge/unshare).
set -u

GECKOCORE=${1:?usage: multihost.sh GECKOCORE PUB_IMU SUB_IMU}
PUB_IMU=${2:?}
SUB_IMU=${3:?}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; FAILED=1; }
log()  { echo "[$(date +%T.%3N)] $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
command -v ss >/dev/null || skip "no ss (iproute2)"
command -v timeout >/dev/null || skip "no timeout (coreutils)"
command -v ps >/dev/null || skip "no ps (procps)"
for b in "$GECKOCORE" "$PUB_IMU" "$SUB_IMU"; do
    [ -x "$b" ] || { echo "FAIL: could not start $(basename "$b"): not an executable file: $b"; exit 1; }
done

ID="gk-$$-$RANDOM"
NS_A="$ID-a"; NS_B="$ID-b"; NS_C="$ID-c"; NS_BR="$ID-br"
HOSTS=(a b c)
declare -A ADDR=([a]=10.231.0.1 [b]=10.231.0.2 [c]=10.231.0.3)
KEY="netns$$"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gecko-netns-XXXXXX")
# Case 4's private IPC directory: B and C each mount a tmpfs of their own over it.
PRIVATE_IPC="$WORK/private-ipc"
mkdir "$PRIVATE_IPC"
FAILED=0
PIDS=()

cleanup() {
    local pid ns
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    sleep 0.2
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    for ns in "$NS_A" "$NS_B" "$NS_C" "$NS_BR"; do
        # anything still running inside our own namespaces (all started by us)
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    if [ "$FAILED" != 0 ]; then
        for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 30 "$f"; }; done
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- topology ---------------------------------------------------------------
# Namespaces left by an earlier run that was killed (SIGKILL skips the trap):
# gk-PID-RAND-x whose PID is gone. Their processes end by their own timeouts.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^gk-[0-9]+-[0-9]+-(a|b|c|br)$'); do
    old=${ns#gk-}; old=${old%%-*}
    kill -0 "$old" 2>/dev/null || ip netns del "$ns" 2>/dev/null
done
ip netns add "$NS_BR" 2>/dev/null || skip "ip netns add failed (no permission or no netns support)"
ip -n "$NS_BR" link add br0 type bridge 2>/dev/null || skip "no bridge support in the kernel"
# No snooping, no querier: every multicast frame is flooded, subject to each
# port's mcast_flood flag (scenario 2 turns it off to block multicast).
ip -n "$NS_BR" link set br0 type bridge mcast_snooping 0 stp_state 0 forward_delay 0
ip -n "$NS_BR" link set br0 up
ip -n "$NS_BR" link set lo up
for h in "${HOSTS[@]}"; do
    ns="$ID-$h"
    ip netns add "$ns" || { echo "FAIL: ip netns add $ns"; exit 1; }
    # veth pair created directly between the host and the bridge namespaces.
    ip -n "$ns" link add "veth$h" type veth peer name "port$h" netns "$NS_BR" 2>/dev/null || skip "no veth support"
    ip -n "$NS_BR" link set "port$h" master br0
    ip -n "$NS_BR" link set "port$h" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "veth$h" multicast on up
    ip -n "$ns" addr add "${ADDR[$h]}/24" dev "veth$h"
    ip -n "$ns" route add 239.0.0.0/8 dev "veth$h"
done

# Wait (bounded, 5 s) for carrier on every veth.
for i in $(seq 50); do
    up=0
    for h in "${HOSTS[@]}"; do
        ip -n "$ID-$h" link show "veth$h" | grep -q "state UP" && up=$((up + 1))
    done
    [ "$up" = 3 ] && break
    sleep 0.1
done
[ "$up" = 3 ] || { echo "FAIL: veth links did not come up"; exit 1; }

# The last step inside every namespace, in sh: runs "$@", or says plainly that
# it could not (the path may not exist there, e.g. hidden by a mount) and exits
# 127. started_ok below turns that into "could not start NAME: ...".
START='[ -x "$1" ] || { echo "could not start $1: no executable file at this path in this namespace" >&2; exit 127; }
exec "$@"'

# run_on HOST NAME TIMEOUT [ENV=VALUE...] -- PROGRAM ARGS...: runs PROGRAM in
# HOST's network namespace with its own hostname gecko-HOST (UTS namespace),
# bounded by TIMEOUT seconds, in the background; output in $WORK/NAME.log.
run_on() {
    local h=$1 name=$2 secs=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 2 "$secs" ip netns exec "$ID-$h" env "${envs[@]}" GECKO_NETNS_HOSTNAME="gecko-$h" \
        unshare --uts sh -c 'echo "$GECKO_NETNS_HOSTNAME" > /proc/sys/kernel/hostname || exit 125
'"$START" sh "$@" \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=("$!")
    LAST_PID=$!
}
# Same without a hostname of its own (shares the machine's hostname).
run_on_shared_hostname() {
    local h=$1 name=$2 secs=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 2 "$secs" ip netns exec "$ID-$h" env "${envs[@]}" sh -c "$START" sh "$@" >"$WORK/$name.log" 2>&1 &
    PIDS+=("$!")
    LAST_PID=$!
}
# Shared hostname, but a mount namespace of its own in which a private tmpfs
# covers $PRIVATE_IPC (give the program GECKO_IPC_DIR=$PRIVATE_IPC), like
# containers on the host network: the ipc:// paths of one host do not exist
# on the other. Only that one directory is covered: the build, wherever it is
# (under /tmp too), stays visible.
run_on_private_ipc() {
    local h=$1 name=$2 secs=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 2 "$secs" ip netns exec "$ID-$h" env "${envs[@]}" \
        unshare --mount --propagation private sh -c 'dir=$1; shift
mount -t tmpfs gecko-netns-ipc "$dir" || { echo "could not start $1: cannot mount a private tmpfs on $dir" >&2; exit 125; }
'"$START" sh "$PRIVATE_IPC" "$@" \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=("$!")
    LAST_PID=$!
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# True while process $1 runs (a zombie, exited but not reaped yet, does not count).
running() {
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}
# started_ok NAME PID: true while the program started as NAME (background PID)
# runs. Otherwise a failure that says what happened: "could not start NAME: ..."
# (the wrapper could not run it, exit 125-127) or "NAME ended early ...", with
# the last line of its log; the caller then skips its own diagnosis.
declare -A REPORTED=()
started_ok() {
    local name=$1 pid=$2 status why
    running "$pid" && return 0
    [ -n "${REPORTED[$name]:-}" ] && return 1  # said once already
    REPORTED[$name]=1
    wait "$pid" 2>/dev/null
    status=$?
    why=$(grep -m1 "could not start" "$WORK/$name.log" 2>/dev/null)
    [ -n "$why" ] || why=$(tail -n 1 "$WORK/$name.log" 2>/dev/null)
    case "$status" in
        125|126|127) fail "could not start $name (exit $status): ${why:-no output}" ;;
        *) fail "$name ended early (exit $status): ${why:-no output}" ;;
    esac
    return 1
}

# wait_lines FILE PATTERN N SECONDS [PID...]: true once FILE has N lines
# matching PATTERN; false after SECONDS, or as soon as one of the PIDs (the
# programs the lines depend on) is no longer running, so that a program that
# could not start is reported at once (started_ok) rather than after the wait.
wait_lines() {
    local file=$1 pattern=$2 n=$3 deadline=$((SECONDS + $4)) pid
    shift 4
    while [ "$SECONDS" -lt "$deadline" ]; do
        [ "$(grep -c -- "$pattern" "$file" 2>/dev/null)" -ge "$n" ] && return 0
        for pid in "$@"; do running "$pid" || break 2; done
        sleep 0.1  # poll interval of a bounded wait
    done
    [ "$(grep -c -- "$pattern" "$file" 2>/dev/null)" -ge "$n" ]
}
# established tcp connections from host $1 to address $2
tcp_to() { ip netns exec "$ID-$1" ss -Htn state established dst "$2" 2>/dev/null | grep -c .; }
# established unix connections to a gecko ipc socket of this key counted in host
# $1's namespace (the kernel puts both ends in the connecting side's namespace)
ipc_conns() { ip netns exec "$ID-$1" ss -Hx state established 2>/dev/null | grep -c "gecko-$KEY"; }

# ipc sockets in our own directory (removed at the end); no GECKO_CORE etc. from the caller
ENV0=(GECKO_LOG=info GECKO_IPC_DIR="$WORK")
unset GECKO_CORE GECKO_NO_MULTICAST GECKO_INTERFACE GECKO_MULTICAST GECKO_KEY GECKO_DISCOVERY

# ---- 1. multicast discovery across hosts, data over tcp -------------------------
log "1. multicast on, no core address: core on A, publisher on B, subscriber on C"
run_on a core 110 "${ENV0[@]}" -- "$GECKOCORE" --key "$KEY"; CORE=$LAST_PID
if ! wait_lines "$WORK/core.log" "listening on" 1 5 "$CORE"; then
    started_ok core "$CORE" && fail "geckocore on A did not say 'listening on' within 5 s"
fi
run_on b pub1 60 "${ENV0[@]}" -- "$PUB_IMU" --key "$KEY"; PUB=$LAST_PID
run_on c sub1 25 "${ENV0[@]}" -- "$SUB_IMU" --key "$KEY" --count 1000; SUB=$LAST_PID
if wait_lines "$WORK/sub1.log" "^imu #" 5 20 "$PUB" "$SUB"; then
    log "   C received $(grep -c '^imu #' "$WORK/sub1.log") messages"
    n=$(tcp_to c "${ADDR[b]}")
    if [ "$n" -ge 1 ]; then log "   C has $n established tcp connection(s) to B (${ADDR[b]})"
    else fail "C receives but has no tcp connection to B: $(ip netns exec "$ID-c" ss -Htn state established)"; fi
elif started_ok pub1 "$PUB" && started_ok sub1 "$SUB"; then
    fail "subscriber on C received nothing within 20 s (multicast discovery across the bridge)"
fi
stop "$SUB"; stop "$PUB"

# ---- 2. multicast blocked by the network --------------------------------------
log "2. bridge drops multicast (mcast_flood off on every port)"
for h in "${HOSTS[@]}"; do bridge -n "$NS_BR" link set dev "port$h" mcast_flood off; done
CORE_ADDR="${ADDR[a]}:7651"

# 2a. the publisher (given the address) keeps publishing; a subscriber without
#     GECKO_CORE must get nothing and say what it tried.
run_on b pub2 60 "${ENV0[@]}" GECKO_CORE="$CORE_ADDR" -- "$PUB_IMU" --key "$KEY"; PUB=$LAST_PID
run_on c sub2a 4 "${ENV0[@]}" -- "$SUB_IMU" --key "$KEY" --count 1
wait "$LAST_PID" 2>/dev/null
status=$?
if [ "$status" -ge 125 ] && [ "$status" -le 127 ]; then
    fail "could not start sub2a (exit $status): $(tail -n 1 "$WORK/sub2a.log")"
fi
started_ok pub2 "$PUB"  # a publisher that did not start explains what follows
if grep -q "^imu #" "$WORK/sub2a.log"; then
    fail "multicast is supposed to be blocked, yet the subscriber without GECKO_CORE received"
fi
warning=$(grep -m1 "no geckocore for key '$KEY'" "$WORK/sub2a.log")
if [ -z "$warning" ]; then
    fail "no 'no geckocore for key' warning from the subscriber without GECKO_CORE"
else
    log "   warning: $warning"
    for word in "multicast 239.255.71.67:7650" "no answer" "GECKO_CORE"; do
        case "$warning" in *"$word"*) ;; *) fail "the warning does not mention '$word'";; esac
    done
fi

# 2b. with GECKO_CORE the subscriber finds the core and receives over tcp.
run_on c sub2b 25 "${ENV0[@]}" GECKO_CORE="$CORE_ADDR" -- "$SUB_IMU" --key "$KEY" --count 1000; SUB=$LAST_PID
if wait_lines "$WORK/sub2b.log" "^imu #" 5 20 "$PUB" "$SUB"; then
    log "   C received $(grep -c '^imu #' "$WORK/sub2b.log") messages with GECKO_CORE=$CORE_ADDR"
    [ "$(tcp_to c "${ADDR[b]}")" -ge 1 ] || fail "C receives but has no tcp connection to B"
elif started_ok pub2 "$PUB" && started_ok sub2b "$SUB"; then
    fail "subscriber on C with GECKO_CORE=$CORE_ADDR received nothing within 20 s"
fi
stop "$SUB"; stop "$PUB"
for h in "${HOSTS[@]}"; do bridge -n "$NS_BR" link set dev "port$h" mcast_flood on; done

# ---- 3. information: hosts that share the machine's hostname -------------------
log "3. (information) B and C keep the machine's hostname '$(hostname)'"
run_on_shared_hostname b pub3 30 "${ENV0[@]}" -- "$PUB_IMU" --key "$KEY"; PUB=$LAST_PID
run_on_shared_hostname c sub3 25 "${ENV0[@]}" -- "$SUB_IMU" --key "$KEY" --count 1000; SUB=$LAST_PID
if wait_lines "$WORK/sub3.log" "^imu #" 5 20 "$PUB" "$SUB"; then
    if [ "$(tcp_to c "${ADDR[b]}")" -ge 1 ]; then
        log "   C received over tcp (the library tells the hosts apart)"
    else
        log "   NOTE: C received, but over ipc:// (a Unix socket path on the shared filesystem), not tcp;"
        log "   (established ipc connections to gecko-$KEY-* sockets seen in C: $(ipc_conns c))"
    fi
elif started_ok pub3 "$PUB" && started_ok sub3 "$SUB"; then
    log "   NOTE: C received nothing with a shared hostname"
fi
stop "$SUB"; stop "$PUB"

log "4. shared hostname, a private IPC directory on B and on C (own mount namespaces): C must use tcp"
run_on_private_ipc b pub4 30 "${ENV0[@]}" GECKO_IPC_DIR="$PRIVATE_IPC" -- "$PUB_IMU" --key "$KEY"; PUB=$LAST_PID
run_on_private_ipc c sub4 12 "${ENV0[@]}" GECKO_IPC_DIR="$PRIVATE_IPC" -- "$SUB_IMU" --key "$KEY" --count 1000; SUB=$LAST_PID
if wait_lines "$WORK/sub4.log" "^imu #" 5 8 "$PUB" "$SUB"; then
    log "   C received (over tcp: $(tcp_to c "${ADDR[b]}") connection(s) to B)"
    [ "$(tcp_to c "${ADDR[b]}")" -ge 1 ] || fail "C receives but has no tcp connection to B"
elif started_ok pub4 "$PUB" && started_ok sub4 "$SUB"; then
    fail "C received nothing in 8 s though B and C both run: it may have picked B's ipc:// endpoint, which does not exist in C's private IPC directory (host ids should differ)"
fi
stop "$SUB"; stop "$PUB"
stop "$CORE"

if [ "$FAILED" != 0 ]; then echo "multihost: FAILED"; exit 1; fi
echo "multihost: passed"
exit 0
