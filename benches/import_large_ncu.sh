#!/usr/bin/env bash
# Import speed and memory of `gpumodel import ncu` on ~100 MB exports, long (`--page details`) and wide
# (`--page raw`) layouts, made by repeating the real A100 export's launch (../shared/profiles) with new IDs.
# Usage: bash benches/import_large_ncu.sh [path/to/gpumodel] [DIR]   (from the repository root)
# With DIR, the generated exports are kept there (and reused when present), and so are the tables the
# import writes (`DIR/<layout>.table.csv`), so two builds' outputs can be compared.
set -euo pipefail
bin=${1:-target/release/gpumodel}
src=../shared/profiles/ncu-long_a100_conv2d.csv
if [ -n "${2:-}" ]; then
  work=$2
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
[ -s "$work/long.csv" ] && [ -s "$work/wide.csv" ] || python3 - "$src" "$work" <<'PY'
import csv, io, sys
src, work = sys.argv[1], sys.argv[2]
lines = open(src, encoding="utf-8").read().splitlines()
start = next(i for i, l in enumerate(lines) if '"Kernel Name"' in l)
rows = list(csv.reader(lines[start:]))
header, body = rows[0], [r for r in rows[1:] if len(r) >= 12]
target = 100 * 1000 * 1000

def q(cells):
    return ",".join('"' + c.replace('"', '""') + '"' for c in cells) + "\n"

# Long layout: the launch's rows again and again, each copy with its own ID.
with open(f"{work}/long.csv", "w", encoding="utf-8") as f:
    f.write(q(header))
    n, size = 0, 0
    while size < target:
        for r in body:
            r = list(r)
            r[0] = str(n)
            line = q(r)
            f.write(line)
            size += len(line)
        n += 1
# Wide layout: one column per metric, a units row, one row per launch.
ident = header[:8]
metrics = [(r[9], r[10], r[11]) for r in body]
with open(f"{work}/wide.csv", "w", encoding="utf-8") as f:
    f.write(q(ident + [m for m, _, _ in metrics]))
    f.write(q([""] * len(ident) + [u for _, u, _ in metrics]))
    first = body[0][:8]
    n, size = 0, 0
    while size < target:
        r = list(first)
        r[0] = str(n)
        line = q(r + [v for _, _, v in metrics])
        f.write(line)
        size += len(line)
        n += 1
PY
for layout in long wide; do
  f="$work/$layout.csv"
  echo "== $layout: $(du -m "$f" | cut -f1) MB, $(($(wc -l <"$f") - 1)) rows"
  /usr/bin/time -v "$bin" import ncu "$f" --out "$work/$layout.table.csv" --format json 2>"$work/time.txt" >/dev/null
  grep -E "Elapsed \(wall clock\)|Maximum resident set size" "$work/time.txt"
done
