#!/usr/bin/env bash
# Calibrate a GPU and validate its node, in under 5 minutes.
#
#   calibration/run-gpu.sh [ORRERY_BINARY]
#
# With no argument it builds `cargo build --release --features cuda` first (needs a Rust
# toolchain, no CUDA toolkit). Given a prebuilt binary (built elsewhere with `--features cuda`)
# it only runs it: the GPU machine needs the NVIDIA driver and nothing else.
#
# Environment: DEVICE (default cuda:0), OUT (default calibration/<device>_<host>.toml, plot
# beside it), NODE_FILE and NODE (default calibration/gpu_node.orr, h200_single), QUICK=1 for
# the quick sweep, CAL_TIMEOUT seconds for the calibration (default 240).
#
# Exit status: the calibration's (0 ok, 2 no driver / no device / bad input); a validation
# mismatch is reported but does not fail the script (VALIDATE_STRICT=1 makes it exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-}
if [[ -z "$bin" ]]; then
    cargo build --release --features cuda
    bin=target/release/orrery
fi
if [[ ! -x "$bin" ]]; then
    echo "error: $bin is not an executable orrery binary" >&2
    exit 2
fi

device=${DEVICE:-cuda:0}
host=$(tr -c 'a-zA-Z0-9\n' '_' < /proc/sys/kernel/hostname | tr 'A-Z' 'a-z')
out=${OUT:-calibration/${device/:/}_${host}.toml}
node_file=${NODE_FILE:-calibration/gpu_node.orr}
node=${NODE:-h200_single}
quick=()
[[ "${QUICK:-0}" == 1 ]] && quick=(--quick)

echo "== orrery calibrate --device $device --out $out ${quick[*]}"
start=$(date +%s)
status=0
timeout "${CAL_TIMEOUT:-240}" "$bin" calibrate --device "$device" --out "$out" "${quick[@]}" || status=$?
echo "== calibrate finished in $(( $(date +%s) - start )) s with status $status"
if [[ $status -eq 124 ]]; then
    echo "error: calibration ran past ${CAL_TIMEOUT:-240} s; rerun with QUICK=1" >&2
fi

echo "== orrery validate $node_file --node $node"
vstatus=0
"$bin" validate "$node_file" --node "$node" || vstatus=$?
case $vstatus in
    0) echo "== node type $node agrees with this machine" ;;
    1) echo "== node type $node differs from this machine (see MISMATCH lines)" ;;
    *) echo "== validate could not run (status $vstatus)" ;;
esac
if [[ $status -ne 0 ]]; then
    exit "$status"
fi
if [[ "${VALIDATE_STRICT:-0}" == 1 && $vstatus -ne 0 ]]; then
    exit "$vstatus"
fi
exit 0
