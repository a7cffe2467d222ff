#!/usr/bin/env bash
# Kernel time with a profile from documents alone (`gpumodel arch new`), as a user of a GPU without a
# built-in profile would get it: each NV-DVFS GPU's profile written from its compute capability, its
# board's SMs, boost clock, memory clock, bandwidth and TDP (vendor specifications), and latencies carried
# over from another GPU's built-in profile (never its own), then `validate` beside Wang & Chu's general
# form, on all kernels (30; the V100's 29) and on Wang & Chu's 20. The built-in profiles' figures are in the kernel-time
# sections of BENCHMARKS.md. Deterministic.
#
# Usage: benches/arch_new_nvdvfs.sh [path/to/gpumodel]   (default: target/release/gpumodel, built if missing)
# Needs GPUMODEL_DATA_DIR (or ../shared/datasets).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${CARGO_TARGET_DIR:-target}/release/gpumodel}
[ -x "$bin" ] || cargo build --release --locked
export GPUMODEL_DATA_DIR=${GPUMODEL_DATA_DIR:-../shared/datasets}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# name | cc | SMs | boost MHz | memory MHz | GB/s | TDP W | display name | latencies from
boards=(
  "p100|6.0|56|1480|715|732|300|NVIDIA Tesla P100 (SXM2)|gtx1080ti"
  "gtx1080ti|6.1|28|1582|5505|484|250|NVIDIA GeForce GTX 1080 Ti|p100"
  "gtx980|5.2|16|1126|3505|224|165|NVIDIA GeForce GTX 980|titanx"
  "v100|7.0|80|1530|877|900|300|NVIDIA Tesla V100 (SXM2)|p100"
)
for b in "${boards[@]}"; do
  IFS='|' read -r name cc sms core mem bw tdp display like <<<"$b"
  "$bin" arch new --cc "$cc" --sms "$sms" --core-mhz "$core" --mem-mhz "$mem" --bandwidth-gbs "$bw" \
    --tdp-w "$tdp" --display-name "$display" --name "$name" --like "$like" -o "$out/$name.toml"
  for set in all wangchu20; do
    kernels=()
    [ "$set" = wangchu20 ] && kernels=(--kernels datasets/examples/kernel-sets/wangchu20.txt)
    echo "== $name from documents (latencies from $like), kernels: $set =="
    "$bin" validate --data "nvdvfs-$name" --arch "$out/$name.toml" --baseline wang-chu-2018 -q "${kernels[@]}" |
      grep -E '^(kernel time MAPE|baseline|ours -|E.* optimum)'
  done
done
