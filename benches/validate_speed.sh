#!/usr/bin/env bash
# Wall and CPU time of `gpumodel validate --data DATASET --arch GPU --format json` on each NV-DVFS file (the
# timing model's nested calibration over the file's kernels dominates), three runs each; prints one markdown
# row per file with the rows, the median wall time and the median CPU time.
#   GPUMODEL_DATA_DIR=../shared/datasets bash benches/validate_speed.sh [path/to/gpumodel]
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GPUMODEL_DATA_DIR:?set GPUMODEL_DATA_DIR to the folder holding nvdvfs/}"
bin="${1:-target/release/gpumodel}"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "| dataset | rows | wall s (median of 3) | CPU s (median of 3) |"
echo "|---|---|---|---|"
for pair in p100:p100-dvfs-real-Performance-Power v100:v100-dvfs-real-Performance-Power \
    gtx1080ti:gtx1080ti-dvfs-real-Performance-Power gtx980:gtx980-high-dvfs-real-small-workload-Performance-Power; do
    arch="${pair%%:*}"
    rows=$(($(wc -l <"$GPUMODEL_DATA_DIR/nvdvfs/${pair#*:}.csv") - 1))
    walls=()
    cpus=()
    for _ in 1 2 3; do
        /usr/bin/time -f "%e %U %S" -o "$tmp" "$bin" validate --data "nvdvfs-$arch" --arch "$arch" --format json \
            >/dev/null 2>&1
        read -r wall user sys <"$tmp"
        walls+=("$wall")
        cpus+=("$(echo "$user + $sys" | bc)")
    done
    echo "| nvdvfs-$arch | $rows | $(printf '%s\n' "${walls[@]}" | median) | $(printf '%s\n' "${cpus[@]}" | median) |"
done
