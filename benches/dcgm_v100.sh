#!/usr/bin/env bash
# The V100 clock-model table: trained on the 138 microbenchmark configurations, scored once on the 20 real
# applications with DSO's protocol (core clocks above 700 MHz, MAPE per application then the mean over
# applications, energy regret of the clock picked by predicted time x power over the measured best), beside
# DSO's form fitted here, DSO's published parameters (DCGM + PTX, and DCGM only), the best fixed clock
# chosen on the training jobs and the highest clock. The fits are deterministic (no seed).
#
# Usage: benches/dcgm_v100.sh [path/to/gpumodel]   (default: target/release/gpumodel, built if missing)
# Needs GPUMODEL_DATA_DIR (or ../shared/datasets) and ../shared/papers/dso_published.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${CARGO_TARGET_DIR:-target}/release/gpumodel}
[ -x "$bin" ] || cargo build --release --locked
export GPUMODEL_DATA_DIR=${GPUMODEL_DATA_DIR:-../shared/datasets}
peer=../shared/papers/dso_published
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for variant in dso dynamic; do
  echo "== DSO published parameters: $variant =="
  "$bin" train --data nvdvfs-dcgm-v100-micro --test nvdvfs-dcgm-v100-real --min-core-mhz 700 \
    --peer-params "$peer/v100-dvfs-real-params-$variant.csv" --out-dir "$out" --format markdown
done
