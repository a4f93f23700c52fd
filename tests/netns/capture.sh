#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a secured key shows on the wire (docs/SECURITY.md): in a network
# namespace of its own (only `lo`), geckocore, `gecko pub` and `gecko echo`
# run over tcp while tcpdump captures every packet on that loopback. Run twice:
#
#   plain:   the topic name, the type name and the payload are in the capture
#            (so the check below can fail);
#   secured: the same programs with the key's secret (`gecko keygen`): none of
#            the three appears anywhere in the capture.
#
# Usage: capture.sh GECKOCORE GECKO_CLI
# Exit: 0 pass, 1 fail, 77 skipped (not root, or no `ip netns`).
set -u

GECKOCORE=${1:?usage: capture.sh GECKOCORE GECKO_CLI}
GECKO=${2:?}

skip() { echo "SKIP: $*"; exit 77; }
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }
log()  { echo "[$(date +%T.%3N)] $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "no ip (iproute2)"
# tcpdump is installed by scripts/install-deps: missing, it is a failure, not a skip.
command -v tcpdump >/dev/null || { echo "FAIL: no tcpdump (scripts/install-deps installs Debian's tcpdump)"; exit 1; }
for b in "$GECKOCORE" "$GECKO"; do
    [ -x "$b" ] || { echo "FAIL: not an executable file: $b"; exit 1; }
done

NS="gk-cap-$$-$RANDOM"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gecko-capture-XXXXXX")
PIDS=()
TOPIC="capture/topic-name-$$"
TYPE="capture.TypeName$$"
PAYLOAD="payload-plaintext-$$"

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    ip netns del "$NS" 2>/dev/null
    if [ "$FAILED" != 0 ]; then
        for f in "$WORK"/*/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "$NS" 2>/dev/null || skip "ip netns add failed (no permission or no netns support)"
ip -n "$NS" link set lo up

# in_ns NAME SECONDS DIR -- PROGRAM ARGS...: runs PROGRAM in the namespace,
# bounded, in the background, with the run's environment; output in DIR/NAME.log.
in_ns() {
    local name=$1 secs=$2 dir=$3; shift 4
    timeout -k 2 "$secs" ip netns exec "$NS" env -u GECKO_CORE -u GECKO_KEY -u GECKO_SECRET_FILE \
        -u GECKO_MULTICAST -u GECKO_INTERFACE -u GECKO_NO_MULTICAST \
        XDG_CONFIG_HOME="$dir/config" HOME="$dir" GECKO_IPC_DIR="$dir" GECKO_TRANSPORTS=tcp "$@" \
        >"$dir/$name.log" 2>&1 &
    PIDS+=("$!")
    LAST_PID=$!
}
# wait_for FILE PATTERN SECONDS: true once FILE has a line matching PATTERN.
wait_for() {
    local deadline=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$deadline" ]; do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# count_in FILE TEXT: how many times TEXT appears in the (binary) capture.
count_in() { grep -a -o -F -- "$2" "$1" | wc -l; }

# run MODE: one capture of the whole exchange; leaves $WORK/MODE/capture.pcap.
run() {
    local mode=$1 dir="$WORK/$1" key="cap$$$1"
    mkdir -p "$dir/config"
    if [ "$mode" = secured ]; then
        XDG_CONFIG_HOME="$dir/config" HOME="$dir" "$GECKO" keygen --key "$key" >"$dir/keygen.log" 2>&1 ||
            { fail "$mode: gecko keygen failed: $(tail -n 1 "$dir/keygen.log")"; return; }
    fi
    # The capture goes to stdout, written by this shell: tcpdump may drop its
    # privileges (or be confined) and then could not write into $WORK itself.
    timeout -k 2 60 ip netns exec "$NS" tcpdump -i lo --immediate-mode -U -n -s 0 -w - >"$dir/capture.pcap" 2>"$dir/tcpdump.log" &
    PIDS+=("$!")
    local dump=$!
    wait_for "$dir/tcpdump.log" "listening on lo" 20 || { fail "$mode: tcpdump did not start"; return; }
    in_ns geckocore 60 "$dir" -- "$GECKOCORE" --key "$key" --door 0
    wait_for "$dir/geckocore.log" "listening on " 20 || { fail "$mode: geckocore did not start"; return; }
    if [ "$mode" = secured ]; then
        grep -q "secured (secret " "$dir/geckocore.log" || fail "$mode: geckocore does not say it is secured"
    fi
    in_ns echo 60 "$dir" -- "$GECKO" echo "$TOPIC" --key "$key" --count 5 --json
    local echo_pid=$LAST_PID
    in_ns pub 60 "$dir" -- "$GECKO" pub "$TOPIC" --key "$key" --type "$TYPE" --rate 20 --count 400 \
        "{\"text\": \"$PAYLOAD\"}"
    local pub_pid=$LAST_PID
    wait "$echo_pid"
    local status=$?
    [ "$status" = 0 ] || fail "$mode: gecko echo did not receive 5 messages (exit $status)"
    grep -q -F "$PAYLOAD" "$dir/echo.log" || fail "$mode: gecko echo printed no payload"
    kill -TERM "$pub_pid" 2>/dev/null
    wait "$pub_pid" 2>/dev/null
    kill -INT "$dump" 2>/dev/null  # tcpdump writes out what it holds and exits
    wait "$dump" 2>/dev/null
    [ -s "$dir/capture.pcap" ] || fail "$mode: the capture is empty"
    log "$mode: captured $(stat -c %s "$dir/capture.pcap") bytes"
}

run plain
run secured
for text in "$TOPIC" "$TYPE" "$PAYLOAD"; do
    plain=$(count_in "$WORK/plain/capture.pcap" "$text")
    secured=$(count_in "$WORK/secured/capture.pcap" "$text")
    log "'$text': $plain times in the plain capture, $secured in the secured one"
    [ "$plain" -gt 0 ] || fail "'$text' is not in the plain capture: the check cannot tell anything"
    [ "$secured" = 0 ] || fail "'$text' appears $secured times in clear in the secured capture"
done

if [ "$FAILED" = 0 ]; then echo "PASS"; exit 0; fi
exit 1
