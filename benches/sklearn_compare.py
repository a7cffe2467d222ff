#!/usr/bin/env python3
"""Side-by-side: gpumodel's BP-ANN / MLR / MLR+ against scikit-learn on the same Titan X split.

Train on guerreiro-titanx-micro (102 microbenchmarks), test on guerreiro-titanx-real (35 applications),
inputs = the 8 utilizations + core and memory clocks (standardized), MLR = utilizations only.
scikit-learn: MLPRegressor(hidden_layer_sizes=(4, 4), activation="logistic", max_iter=2000) and
LinearRegression; ours: `gpumodel train --format json` with the same seeds count. Prints held-out MAPE
(median over seeds), fit time and predict throughput, and the ratios. A benchmark, not a test.

Usage: GPUMODEL_DATA_DIR=../shared/datasets python3 benches/sklearn_compare.py [--seeds 5] [--gpumodel BIN]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.neural_network import MLPRegressor
from sklearn.preprocessing import StandardScaler


def load(path):
    """Guerreiro format: 4 header lines, then name,power,core,mem,utils..."""
    with open(path) as f:
        lines = f.read().splitlines()
    names = lines[3].split(",")
    rows = [l.split(",") for l in lines[4:] if l.strip()]
    y = np.array([float(r[1]) for r in rows])
    clocks = np.array([[float(r[2]), float(r[3])] for r in rows])
    utils = np.array([[float(x) for x in r[4:]] for r in rows])
    return names, utils, clocks, y


def mape(p, y):
    return 100.0 * float(np.mean(np.abs((p - y) / y)))


def throughput(model, x):
    t0, rows = time.perf_counter(), 0
    while time.perf_counter() - t0 < 0.5:
        model.predict(x)
        rows += len(x)
    return rows / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--gpumodel", default=None)
    ap.add_argument("--features", default="titanx-utilizations")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data = os.environ.get("GPUMODEL_DATA_DIR", os.path.join(root, "..", "shared", "datasets"))
    d = os.path.join(data, "guerreiro-titanx")
    _, ut, ct, yt = load(os.path.join(d, "titanx_micro_names_peak_idle_HPCAandCF.csv"))
    _, uv, cv, yv = load(os.path.join(d, "titanx_real_allFsPower_HPCAandCF.csv"))
    if a.features == "titanx-clock-physics":
        # Same inputs as models/featuresets/titanx-clock-physics.toml: 7 core utilizations x core clock,
        # DRAM x memory clock, core_mhz^3, mem_mhz; MLR base = the 8 products.
        def phys(u, c):
            return np.hstack([u[:, :7] * c[:, :1], u[:, 7:8] * c[:, 1:2], c[:, :1] ** 3, c[:, 1:2]])
        xt, xv = phys(ut, ct), phys(uv, cv)
        ut, uv = xt[:, :8], xv[:, :8]
    elif a.features == "titanx-utilizations":
        xt, xv = np.hstack([ut, ct]), np.hstack([uv, cv])
    else:
        sys.exit(f"--features {a.features}: this script knows titanx-utilizations and titanx-clock-physics")
    sx = StandardScaler().fit(xt)
    zt, zv = sx.transform(xt), sx.transform(xv)
    su = StandardScaler().fit(ut)

    sk = {}
    mapes, times = [], []
    for seed in range(1, a.seeds + 1):
        m = MLPRegressor(hidden_layer_sizes=(4, 4), activation="logistic", max_iter=2000, random_state=seed)
        t0 = time.perf_counter()
        m.fit(zt, yt)
        times.append(time.perf_counter() - t0)
        mapes.append(mape(m.predict(zv), yv))
    sk["bpann"] = dict(mape=statistics.median(mapes), fit_s=statistics.median(times), rows_s=throughput(m, zv),
                       per_seed=mapes)
    for name, (tr, te) in {"mlr": (su.transform(ut), su.transform(uv)), "mlr+": (zt, zv)}.items():
        m = LinearRegression()
        t0 = time.perf_counter()
        m.fit(tr, yt)
        dt = time.perf_counter() - t0
        sk[name] = dict(mape=mape(m.predict(te), yv), fit_s=dt, rows_s=throughput(m, te), per_seed=[])

    exe = a.gpumodel
    if exe is None:
        for prof in ("release", "debug"):
            cand = os.path.join(root, "target", prof, "gpumodel")
            if os.path.exists(cand):
                exe = cand
                break
    cmd = [exe, "train", "--features", a.features, "--folds", "0", "--group-folds", "0", "--seeds", str(a.seeds),
           "--no-write", "--format", "json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, "GPUMODEL_DATA_DIR": data})
    wall = time.perf_counter() - t0
    ours = json.loads(out.stdout)["models"]

    print(f"scikit-learn {__import__('sklearn').__version__}, numpy {np.__version__}; ours: {' '.join(cmd)} "
          f"({wall:.1f} s wall for everything)")
    print(f"{'model':6} {'MAPE% sk':>9} {'MAPE% ours':>10} {'fit s sk':>9} {'fit s ours':>10} {'fit ratio':>9} "
          f"{'rows/s sk':>11} {'rows/s ours':>12} {'predict ratio':>13}")
    for name in ("bpann", "mlr", "mlr+"):
        o = ours[name]
        om = o.get("held_out_median", {}).get("mape_pct") if name == "bpann" and a.seeds > 1 else None
        om = om if om is not None else o["held-out"]["mape_pct"]
        s = sk[name]
        print(f"{name:6} {s['mape']:9.2f} {om:10.2f} {s['fit_s']:9.3f} {o['fit_seconds']:10.3f} "
              f"{s['fit_s'] / o['fit_seconds']:9.2f} {s['rows_s']:11.3e} {o['predict_rows_per_s']:12.3e} "
              f"{o['predict_rows_per_s'] / s['rows_s']:13.1f}")
    print("sklearn MLP per-seed MAPE %:", " ".join(f"{x:.2f}" for x in sk["bpann"]["per_seed"]))
    if "held_out_per_seed" in ours["bpann"]:
        print("ours BP-ANN per-seed MAPE %:", " ".join(f"{m['mape_pct']:.2f}" for m in ours["bpann"]["held_out_per_seed"]))
    print("fit ratio = sklearn time / ours (>1: ours faster); ours = one seed's fit incl. all restarts;"
          " sklearn = one MLP fit (median over seeds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
