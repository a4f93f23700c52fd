#!/usr/bin/env bash
# Runs every C++ example the way its opening comment says, against a real
# geckocore found by multicast on this host, and checks what each prints.
# Usage: run_examples.sh BIN_DIR   (BIN_DIR holds geckocore, gecko and the examples;
# it may contain spaces). Nodes' ipc sockets go to the test's scratch directory.
set -euo pipefail
bin=$1
key="examples-$$-$RANDOM"  # a key of its own: parallel tests never see each other
source "$(dirname "$0")/../support/processes.sh"
logs=$scratch

# Runs a program that ends by itself (bounded by 20 s) and keeps its output.
run() {
    local name=$1; shift
    if ! timeout 20 "$@" >"$logs/$name.out" 2>"$logs/$name.err"; then
        echo "FAIL: '$*' did not exit 0 within 20 s"; cat "$logs/$name.out" "$logs/$name.err"; exit 1
    fi
}

# Fails unless FILE has exactly N lines matching the extended regex.
expect_lines() {
    local file=$1 n=$2 regex=$3 got
    got=$(grep -cE -e "$regex" "$logs/$file" || true)
    if [[ $got != "$n" ]]; then
        echo "FAIL: expected $n lines of $file to match /$regex/, got $got:"; cat "$logs/$file"; exit 1
    fi
}

# Any free port, and no host door: a geckocore already running on this machine
# keeps its default port and its door (7651).
background geckocore "$bin/geckocore" --key "$key" --listen "tcp://127.0.0.1:*" --door 0

# pub_imu + sub_imu: sub_imu --count 5 prints five readings and exits.
background pub_imu "$bin/pub_imu" --key "$key"
run sub_imu "$bin/sub_imu" --key "$key" --count 5
expect_lines sub_imu.out 5 '^imu #[0-9]+ accel=\([-0-9.]+, 0\.000, 9\.810\) m/s\^2  latency [0-9]+ us$'
echo "ok: pub_imu -> sub_imu, 5 readings"

# pub_imu --count N publishes N readings and exits by itself.
run pub_imu_count "$bin/pub_imu" --key "$key" --count 3
echo "ok: pub_imu --count 3 exits"

# add_server + add_client: three calls, three answers.
background add_server "$bin/add_server" --key "$key"
run add_client "$bin/add_client" --key "$key"
expect_lines add_client.out 1 '^1 \+ 0\.5 = 1\.5$'
expect_lines add_client.out 1 '^2 \+ 0\.5 = 2\.5$'
expect_lines add_client.out 1 '^3 \+ 0\.5 = 3\.5$'
echo "ok: add_server <- add_client, 3 calls"

# pub_lidar_compressed + gecko echo: one compressed 2,000-point sweep.
background pub_lidar "$bin/pub_lidar_compressed" --key "$key"
run echo_scan "$bin/gecko" echo --key "$key" scan --count 1
expect_lines echo_scan.out 1 '^--- scan #[0-9]+ from lidar_driver@.*\(gecko\.msgs\.Lidar, [0-9.]+ KiB payload, [0-9.]+ KiB on the wire compressed\)$'
expect_lines echo_scan.out 1 '^ranges: \[4\.0, .*\.\.\. \+1968 more\]$'
echo "ok: pub_lidar_compressed -> gecko echo, compressed sweep of 2000 points"

# pub_camera_loaned + gecko echo: a 640x480 image written in place, read over shared memory.
background pub_camera "$bin/pub_camera_loaned" --key "$key"
run echo_camera "$bin/gecko" echo --key "$key" camera --count 1
expect_lines echo_camera.out 1 '^--- camera #[0-9]+ from camera_driver@.*\(gecko\.msgs\.Image, 900 KiB payload, 900 KiB on the wire\)$'
expect_lines echo_camera.out 1 '^width: 640$'
expect_lines echo_camera.out 1 '^data: <921600 bytes: '
echo "ok: pub_camera_loaned -> gecko echo, a 900 KiB image"

# Usage: --help prints the node options and exits 0; no key is a usage error (2), said plainly.
run help "$bin/sub_imu" --help
expect_lines help.out 1 '^  -k, --key KEY '
set +e
env -u GECKO_KEY "$bin/sub_imu" >"$logs/nokey.out" 2>"$logs/nokey.err"
status=$?
set -e
[[ $status == 2 ]] || { echo "FAIL: sub_imu without a key exited $status, not 2"; cat "$logs/nokey.err"; exit 1; }
expect_lines nokey.err 1 'no key: give --key KEY or set GECKO_KEY'
echo "ok: --help exits 0, no key exits 2 with a clear message"

# Every program reads its options through the one parser: a malformed value
# is a usage error (exit 2) that names the option, never a silent default.
usage_error() {
    local name=$1 regex=$2; shift 2
    local status=0
    timeout 20 "$@" >"$logs/$name.out" 2>"$logs/$name.err" || status=$?
    [[ $status == 2 ]] || { echo "FAIL: '$*' exited $status, not 2 (a usage error)"; cat "$logs/$name.err"; exit 1; }
    expect_lines "$name.err" 1 "$regex"
}
bad_group=(--key "$key" --multicast 239.1.2.3:70000)
for program in pub_imu sub_imu add_server add_client pub_lidar_compressed pub_camera_loaned gecko-controller gecko-sim gecko-click-gateway; do
    [[ -x "$bin/$program" ]] || continue  # built only with the examples / the gateway
    usage_error "multicast_$program" "--multicast" "$bin/$program" "${bad_group[@]}"
done
usage_error multicast_geckocore '--multicast' "$bin/geckocore" "${bad_group[@]}"
usage_error multicast_gecko '--multicast' "$bin/gecko" list "${bad_group[@]}"
usage_error count_sub_imu '--count' "$bin/sub_imu" --key "$key" --count abc
usage_error unknown_pub_imu "unknown option '--bogus'" "$bin/pub_imu" --key "$key" --bogus
echo "ok: --multicast 239.1.2.3:70000, --count abc and unknown options are usage errors in every program"

