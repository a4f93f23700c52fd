#!/usr/bin/env bash
# Runs examples/click_python/click_client.py as its opening comment says:
# geckocore, gecko-sim and gecko-click-gateway, then the Python client through
# the gateway; checks that it stepped 100 times and ended the run cleanly.
# Usage: run_example.sh PYTHON PB_DIR BIN_DIR EXAMPLE (paths may contain spaces).
# The gateway's endpoint and the nodes' ipc sockets are in the scratch directory.
set -euo pipefail
python=$1 pb_dir=$2 bin=$3 example=$4
key="click-example-$$-$RANDOM"
source "$(dirname "$0")/../../support/processes.sh"
dir=$scratch

background core "$bin/geckocore" --key "$key" --listen "tcp://127.0.0.1:*" --door 0  # any free port, no host door
background sim "$bin/gecko-sim" --key "$key"
background gateway "$bin/gecko-click-gateway" --key "$key" --bind "ipc://$dir/click"

# The client's REQ socket queues until the gateway binds; its own receive
# timeout (10 s) and this one bound the wait.
if ! PYTHONPATH="$pb_dir" timeout 60 "$python" "$example" "ipc://$dir/click" >"$dir/client.out" 2>&1; then
    echo "FAIL: click_client.py did not finish:"; cat "$dir/client.out"
    echo "--- gateway:"; cat "$dir/gateway.log"; echo "--- sim:"; cat "$dir/sim.log"; exit 1
fi
cat "$dir/client.out"
grep -qE '^time step [0-9.e-]+ s, controls: \{.+\}$' "$dir/client.out" || { echo "FAIL: no handshake line"; exit 1; }
steps=$(grep -cE '^step +[0-9]+: simulated time [0-9.]+ s, .+ = [-+][0-9.]+ rad$' "$dir/client.out" || true)
[[ $steps == 5 ]] || { echo "FAIL: expected 5 step lines, got $steps"; exit 1; }
grep -qE '^step 100: simulated time ' "$dir/client.out" || { echo "FAIL: did not reach step 100"; exit 1; }
grep -qE '^server: ' "$dir/client.out" || { echo "FAIL: the server did not answer the closing ErrorMessage"; exit 1; }
echo "ok: click_client.py drove gecko-sim 100 steps through gecko-click-gateway"
