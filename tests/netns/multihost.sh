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
#   4. same hostname but each host has a private /tmp (containers on the host
#      network, or two machines both called "raspberrypi"): C must receive over
#      tcp, since the library compares host ids (boot id + mount namespace),
#      not hostnames. See tests/netns/README.md.
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
for b in "$GECKOCORE" "$PUB_IMU" "$SUB_IMU"; do [ -x "$b" ] || { echo "FAIL: not executable: $b"; exit 1; }; done

ID="gk-$$-$RANDOM"
NS_A="$ID-a"; NS_B="$ID-b"; NS_C="$ID-c"; NS_BR="$ID-br"
HOSTS=(a b c)
declare -A ADDR=([a]=10.231.0.1 [b]=10.231.0.2 [c]=10.231.0.3)
KEY="netns$$"
WORK=$(mktemp -d "/tmp/gecko-netns-XXXXXX")
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

# run_on HOST NAME TIMEOUT [ENV=VALUE...] -- PROGRAM ARGS...: runs PROGRAM in
# HOST's network namespace with its own hostname gecko-HOST (UTS namespace),
# bounded by TIMEOUT seconds, in the background; output in $WORK/NAME.log.
run_on() {
    local h=$1 name=$2 secs=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 2 "$secs" ip netns exec "$ID-$h" env "${envs[@]}" GECKO_NETNS_HOSTNAME="gecko-$h" \
        unshare --uts sh -c 'echo "$GECKO_NETNS_HOSTNAME" > /proc/sys/kernel/hostname && exec "$@"' sh "$@" \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    LAST_PID=$!
}
# Same without a hostname of its own (shares the machine's hostname).
run_on_shared_hostname() {
    local h=$1 name=$2 secs=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 2 "$secs" ip netns exec "$ID-$h" env "${envs[@]}" "$@" >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    LAST_PID=$!
}
# Shared hostname, but a private /tmp (its own mount namespace), like containers
# on the host network: the ipc:// paths of one host do not exist on the other.
run_on_private_tmp() {
    local h=$1 name=$2 secs=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 2 "$secs" ip netns exec "$ID-$h" env "${envs[@]}" \
        unshare --mount --propagation private sh -c 'mount -t tmpfs gecko-netns /tmp && exec "$@"' sh "$@" \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    LAST_PID=$!
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# wait_lines FILE PATTERN N SECONDS: true once FILE has N lines matching PATTERN.
wait_lines() {
    local file=$1 pattern=$2 n=$3 deadline=$((SECONDS + $4))
    while [ "$SECONDS" -lt "$deadline" ]; do
        [ "$(grep -c -- "$pattern" "$file" 2>/dev/null)" -ge "$n" ] && return 0
        sleep 0.1
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
wait_lines "$WORK/core.log" "listening on" 1 5 || fail "geckocore did not start on A"
run_on b pub1 60 "${ENV0[@]}" -- "$PUB_IMU" --key "$KEY"; PUB=$LAST_PID
run_on c sub1 25 "${ENV0[@]}" -- "$SUB_IMU" --key "$KEY" --count 1000; SUB=$LAST_PID
if wait_lines "$WORK/sub1.log" "^imu #" 5 20; then
    log "   C received $(grep -c '^imu #' "$WORK/sub1.log") messages"
    n=$(tcp_to c "${ADDR[b]}")
    if [ "$n" -ge 1 ]; then log "   C has $n established tcp connection(s) to B (${ADDR[b]})"
    else fail "C receives but has no tcp connection to B: $(ip netns exec "$ID-c" ss -Htn state established)"; fi
else
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
if wait_lines "$WORK/sub2b.log" "^imu #" 5 20; then
    log "   C received $(grep -c '^imu #' "$WORK/sub2b.log") messages with GECKO_CORE=$CORE_ADDR"
    [ "$(tcp_to c "${ADDR[b]}")" -ge 1 ] || fail "C receives but has no tcp connection to B"
else
    fail "subscriber on C with GECKO_CORE=$CORE_ADDR received nothing within 20 s"
fi
stop "$SUB"; stop "$PUB"
for h in "${HOSTS[@]}"; do bridge -n "$NS_BR" link set dev "port$h" mcast_flood on; done

# ---- 3. information: hosts that share the machine's hostname -------------------
log "3. (information) B and C keep the machine's hostname '$(hostname)'"
run_on_shared_hostname b pub3 30 "${ENV0[@]}" -- "$PUB_IMU" --key "$KEY"; PUB=$LAST_PID
run_on_shared_hostname c sub3 25 "${ENV0[@]}" -- "$SUB_IMU" --key "$KEY" --count 1000; SUB=$LAST_PID
if wait_lines "$WORK/sub3.log" "^imu #" 5 20; then
    if [ "$(tcp_to c "${ADDR[b]}")" -ge 1 ]; then
        log "   C received over tcp (the library tells the hosts apart)"
    else
        log "   NOTE: C received, but over ipc:// (a Unix socket path on the shared filesystem), not tcp;"
        log "   (established ipc connections to gecko-$KEY-* sockets seen in C: $(ipc_conns c))"
    fi
else
    log "   NOTE: C received nothing with a shared hostname"
fi
stop "$SUB"; stop "$PUB"

log "4. shared hostname, private /tmp on B and C: C must use tcp"
run_on_private_tmp b pub4 30 "${ENV0[@]}" GECKO_IPC_DIR=/tmp -- "$PUB_IMU" --key "$KEY"; PUB=$LAST_PID
run_on_private_tmp c sub4 12 "${ENV0[@]}" GECKO_IPC_DIR=/tmp -- "$SUB_IMU" --key "$KEY" --count 1000; SUB=$LAST_PID
if wait_lines "$WORK/sub4.log" "^imu #" 5 8; then
    log "   C received (over tcp: $(tcp_to c "${ADDR[b]}") connection(s) to B)"
    [ "$(tcp_to c "${ADDR[b]}")" -ge 1 ] || fail "C receives but has no tcp connection to B"
else
    fail "C received nothing in 8 s: it picked B's ipc:// endpoint, which does not exist in C's /tmp (host ids should differ)"
fi
stop "$SUB"; stop "$PUB"
stop "$CORE"

if [ "$FAILED" != 0 ]; then echo "multihost: FAILED"; exit 1; fi
echo "multihost: passed"
exit 0
