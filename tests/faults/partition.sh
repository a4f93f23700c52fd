#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 9, item 14: a partition between one publisher and the core, while the
# publisher and its subscriber still reach each other, must not stop the
# stream. Three "hosts" (network namespaces) on one bridge, as tests/netns:
#
#   A: geckocore --lease 1000     B: gecko_fault_victim pub (200 Hz)     C: gecko_fault_victim sub
#
# B cannot reach A (a blackhole route to A in B) for a few leases: the core
# expires B and tells C it is gone. C still hears B over tcp, so it must keep
# receiving (the longest gap between two messages stays short), and when B is
# heard again by the core the tables agree once more.
#
# Usage: partition.sh GECKOCORE GECKO_FAULT_VICTIM
# Exit: 0 pass, 1 fail, 77 skipped (not root, or no `ip netns`/veth/bridge).
set -u

GECKOCORE=${1:?usage: partition.sh GECKOCORE GECKO_FAULT_VICTIM}
VICTIM=${2:?}

skip() { echo "SKIP: $*"; exit 77; }
log()  { echo "[$(date +%T.%3N)] $*"; }
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v timeout >/dev/null || skip "no timeout (coreutils)"

ID="gkp-$$-$RANDOM"
declare -A ADDR=([a]=10.232.0.1 [b]=10.232.0.2 [c]=10.232.0.3)
KEY="partition$$"
PORT=7655
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gecko-partition-XXXXXX")
PIDS=()

cleanup() {
    local pid ns
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    for ns in "$ID-a" "$ID-b" "$ID-c" "$ID-br"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    if [ "$FAILED" != 0 ]; then
        for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 20 "$f"; }; done
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Namespaces of an earlier run that was killed (its PID gone).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^gkp-[0-9]+-[0-9]+-(a|b|c|br)$'); do
    old=${ns#gkp-}; old=${old%%-*}
    kill -0 "$old" 2>/dev/null || ip netns del "$ns" 2>/dev/null
done

ip netns add "$ID-br" 2>/dev/null || skip "ip netns add failed"
ip -n "$ID-br" link add br0 type bridge 2>/dev/null || skip "no bridge support in the kernel"
ip -n "$ID-br" link set br0 type bridge stp_state 0 forward_delay 0
ip -n "$ID-br" link set br0 up
for h in a b c; do
    ns="$ID-$h"
    ip netns add "$ns" || { echo "FAIL: ip netns add $ns"; exit 1; }
    ip -n "$ns" link add "veth$h" type veth peer name "port$h" netns "$ID-br" 2>/dev/null || skip "no veth support"
    ip -n "$ID-br" link set "port$h" master br0
    ip -n "$ID-br" link set "port$h" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "veth$h" up
    ip -n "$ns" addr add "${ADDR[$h]}/24" dev "veth$h"
done
for i in $(seq 50); do
    up=0
    for h in a b c; do ip -n "$ID-$h" link show "veth$h" | grep -q "state UP" && up=$((up + 1)); done
    [ "$up" = 3 ] && break
    sleep 0.1  # bounded wait (5 s) for carrier
done
[ "$up" = 3 ] || { echo "FAIL: veth links did not come up"; exit 1; }

# The victims read commands on stdin until it ends: a fifo held open by us keeps it open.
mkfifo "$WORK/stdin"
exec 3<>"$WORK/stdin"

NODE_ENV=(GECKO_KEY="$KEY" GECKO_CORE="${ADDR[a]}:$PORT" GECKO_NO_MULTICAST=1 GECKO_TRANSPORTS=tcp GECKO_LOG=info)
timeout -k 2 90 ip netns exec "$ID-a" env GECKO_LOG=info "$GECKOCORE" --key "$KEY" --no-multicast --door 0 \
    --listen "tcp://${ADDR[a]}:$PORT" --lease 1000 --log-period 10 >"$WORK/core.log" 2>&1 &
PIDS+=("$!")
timeout -k 2 90 ip netns exec "$ID-b" env "${NODE_ENV[@]}" "$VICTIM" pub --topic stream --rate 200 \
    <&3 >"$WORK/pub.log" 2>&1 &
PIDS+=("$!")
timeout -k 2 90 ip netns exec "$ID-c" env "${NODE_ENV[@]}" "$VICTIM" sub --topic stream --report-ms 100 \
    <&3 >"$WORK/sub.log" 2>&1 &
PIDS+=("$!")

# The subscriber's latest stats line, and one of its fields.
latest() { grep '^stats ' "$WORK/sub.log" | tail -n 1; }
field() { latest | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# wait_for SECONDS COMMAND...: true once COMMAND succeeds; false after SECONDS.
wait_for() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1  # poll interval of a bounded wait on another process's output
    done
}
delivered_at_least() { local d; d=$(field delivered); [ -n "$d" ] && [ "$d" -ge "$1" ]; }
core_says() { grep -q "$1" "$WORK/core.log"; }
# A line of the core's log after the first line matching $1 matches $2.
core_says_after() { sed -n "/$1/,\$p" "$WORK/core.log" | grep -q "$2"; }

wait_for 20 delivered_at_least 200 || { fail "the subscriber did not receive 200 messages before the partition"; exit 1; }
before=$(field delivered)
gap_before=$(field max_gap_ms)
log "stream up: $before delivered, longest gap $gap_before ms"

log "partition: B cannot reach the core"
ip -n "$ID-b" route add blackhole "${ADDR[a]}/32"
wait_for 10 core_says "victim_pub.*lease expired" || fail "the core did not expire the publisher (partition ineffective?)"
log "the core expired the publisher"
# Two more leases without the core, while the subscriber keeps its peer.
mid=$(field delivered)
wait_for 10 delivered_at_least $((mid + 400)) || true
ip -n "$ID-b" route del blackhole "${ADDR[a]}/32"
log "healed"
wait_for 15 core_says_after "victim_pub.*lease expired" "'victim_pub' joined" ||
    fail "the publisher did not register again after the partition"
end=$(field delivered)
wait_for 10 delivered_at_least $((end + 200)) || fail "the stream did not go on after the partition"
after=$(field delivered)
gap=$(field max_gap_ms)
log "after: $after delivered, longest gap $gap ms"
[ -n "$gap" ] && [ "$gap" -lt 1000 ] || fail "the stream stopped for $gap ms during the partition (publisher and subscriber could still talk)"
[ "$FAILED" = 0 ] && echo "PASS: longest gap $gap ms across a partition between the publisher and the core"
exit "$FAILED"
