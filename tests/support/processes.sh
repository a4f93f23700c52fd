# Sourced by the shell tests: a scratch directory and background processes
# that are all killed, and the directory removed, when the test exits.
#   scratch          the test's own directory (mktemp -d)
#   background NAME CMD...   runs CMD in the background, output in $scratch/NAME.log
scratch=$(mktemp -d)
background_pids=()
background() {
    local name=$1; shift
    "$@" >"$scratch/$name.log" 2>&1 &
    background_pids+=($!)
}
stop_background() {
    for pid in "${background_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$scratch"
}
trap stop_background EXIT
