#!/usr/bin/env bash
# The clock model over (core, memory) clock pairs on the NV-DVFS nvprof data (GTX 1080 Ti: 30 kernels x
# 5 core x 4 memory clocks; GTX 980: 30 kernels x 5 x 5): leave-one-program-out regrets of the pair
# model's pick for E, E·D and E·D² beside the fixed pair chosen on the training folds, the core-only
# model at the reference memory clock, the reference pair and each kernel's measured best pair, and the
# pair model's time and power MAPE over every pair.
#
# Usage: GPUMODEL_DATA_DIR=<datasets folder> benches/clock_pairs.sh [--release]
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GPUMODEL_DATA_DIR:?set GPUMODEL_DATA_DIR to the folder holding nvdvfs/}"
profile=debug
if [[ "${1:-}" == "--release" ]]; then
  cargo build --release --bin gpumodel
  profile=release
else
  cargo build --bin gpumodel
fi
bin="target/$profile/gpumodel"
for data in nvdvfs-gtx1080ti nvdvfs-gtx980; do
  echo "## $data"
  echo
  echo "\`gpumodel train --data $data --profile-format nvdvfs-nvprof --format markdown\`"
  echo
  start=$(date +%s)
  "$bin" train --data "$data" --profile-format nvdvfs-nvprof --format markdown
  echo
  echo "($((($(date +%s) - start))) s, $profile build)"
  echo
done
