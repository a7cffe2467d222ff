#!/usr/bin/env bash
# Kernel time on one GPU from another GPU's profiles (`validate --from`): ours against the measured time
# scaled by the bottleneck's throughput ratio, the measured time scaled by our model's ratio, and Wang & Chu's
# general form fed the other GPU's counters. Pairs of the NV-DVFS GPUs that ran the same launches (the GTX 980
# file is a smaller workload: refused). Prints one markdown row per pair.
#   GPUMODEL_DATA_DIR=../shared/datasets bash benches/cross_gpu.sh [path/to/gpumodel]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-target/release/gpumodel}"
v100_set=datasets/examples/kernel-sets/nvdvfs-v100.txt
echo "| from → to | kernels | ours, model (median kernel) | scaled | model-scaled | Wang & Chu | ours − scaled (95% interval) | ours − Wang & Chu (95% interval) |"
echo "|---|---|---|---|---|---|---|---|"
for pair in gtx1080ti:p100 p100:gtx1080ti gtx1080ti:v100 v100:gtx1080ti p100:v100 v100:p100; do
    from="${pair%%:*}" to="${pair##*:}"
    set_args=()
    if [ "$from" = v100 ] || [ "$to" = v100 ]; then set_args=(--kernels "$v100_set"); fi
    "$bin" validate --data "nvdvfs-$to" --arch "$to" --from "nvdvfs-$from" --from-arch "$from" \
        --baseline scaled --baseline model-scaled --baseline wang-chu-2018 "${set_args[@]}" --format json -q |
        python3 -c '
import json, statistics, sys
v = json.load(sys.stdin)
b = {x["name"]: x for x in v["baselines"]}
med = statistics.median(k["model_mape_pct"] for k in v["per_kernel"])
f = lambda n: "%.1f%% (%.1f%%)" % (b[n]["mape_pct"], b[n]["median_kernel_mape_pct"])
d = lambda n: "%+.1f (%+.1f to %+.1f)" % (b[n]["model_vs"]["difference_pct"], b[n]["model_vs"]["ci95_pct"]["lo"],
                                         b[n]["model_vs"]["ci95_pct"]["hi"])
print("| %s | %d | %.1f%% (%.1f%%) | %s | %s | %s | %s | %s |" % (sys.argv[1], v["kernels"],
      v["model_mape_pct"], med, f("scaled"), f("model-scaled"), f("wang-chu-2018"), d("scaled"),
      d("wang-chu-2018")))
' "$from → $to"
done
