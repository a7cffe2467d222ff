#!/usr/bin/env python3
"""Where a power model's held-out error sits: each application's level, or its response to the clocks.

A diagnostic, not a procedure (the power twin of the timing model's diagnostic). It reads the per-row predictions of `gpumodel train --format json` (`rows`, the headline protocol:
held-out when the run has a test set; the first seed's artifact for networks) and, for each application
and model, multiplies the predictions over all the application's clock pairs by one factor: the median of
measured / predicted over its rows, an *oracle* that looks at the application's own measurements. What is
left is the error in how the application's power moves with the core and memory clocks; what the oracle
removed is the error in its level (what its utilizations say it draws). Prints, per model, the MAPE as
it is and with the oracle level, and the applications with the largest level errors.

Usage: gpumodel train --seeds 5 --format json > train.json
       python3 benches/power_level_diagnostic.py train.json [--models a,b,c] [--top 5]
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict


def mape(pairs):
    return 100.0 * statistics.fmean(abs(p - m) / m for p, m in pairs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("train_json")
    ap.add_argument("--models", default=None, help="comma-separated (default: every model in the rows)")
    ap.add_argument("--top", type=int, default=5, help="how many of the largest level errors to list per model")
    a = ap.parse_args()
    with open(a.train_json) as f:
        doc = json.load(f)
    rows = doc.get("rows") or []
    if not rows:
        sys.exit(f"{a.train_json}: no per-row predictions: re-run `gpumodel train --format json`")
    names = a.models.split(",") if a.models else sorted({m for r in rows for m in r["predicted_w"]})
    chosen = (doc.get("selection") or {}).get("chosen")
    print(f"rows: {doc.get('rows_protocol')} ({len(rows)} rows); default model: {chosen}")
    print("| model | MAPE % | with each application's level set by the oracle | share of the error that is level |")
    print("|---|---|---|---|")
    tops = {}
    for name in names:
        by_app = defaultdict(list)
        for r in rows:
            if name not in r["predicted_w"]:
                sys.exit(f"model '{name}' has no prediction on some rows")
            by_app[r["kernel"]].append((r["predicted_w"][name], r["measured_w"]))
        as_is = mape(pr for app in by_app.values() for pr in app)
        levelled, levels = [], []
        for app, pairs in by_app.items():
            k = statistics.median(m / p for p, m in pairs)
            levelled.extend((k * p, m) for p, m in pairs)
            levels.append((app, k, mape(pairs)))
        left = mape(levelled)
        print(f"| {name} | {as_is:.2f} | {left:.2f} | {100 * (1 - left / as_is):.0f}% |")
        tops[name] = sorted(levels, key=lambda t: -abs(t[1] - 1))[: a.top]
    for name, top in tops.items():
        print(f"\n{name}: largest level errors (measured ÷ predicted, median over the application's rows; its MAPE)")
        for app, k, e in top:
            print(f"- {app}: {k:.3f}, {e:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
