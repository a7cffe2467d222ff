#!/usr/bin/env bash
# Import time of a one-hour `dcgmi dmon` log at 1 s on an 8-GPU node (3,600 samples x 8 GPUs = 28,800
# lines, the header repeated every 100 lines as dcgmi prints it), end to end through the binary: read,
# check, average per GPU, write the profile CSV. Prints the best and median wall time of 10 runs.
#
# Usage: benches/dcgm_import.sh [path/to/gpumodel]   (default: target/release/gpumodel, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${CARGO_TARGET_DIR:-target}/release/gpumodel}
[ -x "$bin" ] || cargo build --release --locked
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk 'BEGIN {
  srand(1);
  for (s = 0; s < 3600; s++) {
    if (s % 100 == 0) {
      print "#Entity   GRACT  SMACT  SMOCC  TENSO  DRAMA  FP64A  FP32A  FP16A  PCITX      PCIRX      POWER    TOTEC          SMCLK  MMCLK";
      print "ID                                                                                 W        mJ";
    }
    for (g = 0; g < 8; g++)
      printf "GPU %d     %.3f  %.3f  %.3f  %.3f  %.3f  %.3f  %.3f  %.3f  %d  %d  %.3f  %d  1380  877\n",
        g, 0.9 + 0.1 * rand(), 0.8 * rand(), 0.5 * rand(), 0.2 * rand(), 0.7 * rand(), 0.0, 0.4 * rand(), 0.0,
        int(1e7 * rand()), int(1e7 * rand()), 150 + 100 * rand(), 307252100911 + s * 200000, 1380, 877;
  }
}' > "$dir/dmon.txt"
echo "$(wc -l < "$dir/dmon.txt") lines, $(du -h "$dir/dmon.txt" | cut -f1)"
python3 - "$bin" "$dir" <<'PY'
import subprocess, sys, time, statistics
bin, d = sys.argv[1], sys.argv[2]
runs = []
for _ in range(10):
    t = time.perf_counter()
    subprocess.run([bin, "import", "dcgm", f"{d}/dmon.txt", "--out", f"{d}/p.csv"], check=True, stdout=subprocess.DEVNULL)
    runs.append(time.perf_counter() - t)
print(f"import dcgm, 1 h x 8 GPUs: best {min(runs)*1e3:.1f} ms, median {statistics.median(runs)*1e3:.1f} ms (10 runs)")
PY
echo "profiles written: $(($(wc -l < "$dir/p.csv") - 1))"
