#!/usr/bin/env python3
"""Side by side: gpumodel's power models against scikit-learn, on every dataset in the registry and every
protocol, in one run.

Datasets and protocols:
  titanx     train guerreiro-titanx-micro (102 microbenchmarks), held-out guerreiro-titanx-real (35
             applications); grouped k-fold and random k-fold on the microbenchmarks.
  gtx1080ti  nvdvfs-gtx1080ti: grouped k-fold (whole kernels out) and random k-fold (no held-out file).
  gtx980     nvdvfs-gtx980: the same.
Inputs: Titan X = the 8 utilizations + core and memory clocks; NV-DVFS = the `nvdvfs-rates` feature set
(ten counters fixed a priori, as events per ms, + the two clocks). Standardized on each training side.

scikit-learn: MLPRegressor(hidden_layer_sizes=(4, 4), activation="logistic", max_iter=2000) (adam,
minibatch 200) — the paper's 10-4-4-1 — and LinearRegression on every input (MLR+).
Ours: `gpumodel train --format json` on the same data with the same k: `bpann` (10-4-4-1, full-batch Adam,
3 restarts; early stopping on a grouped validation split, or on a random split of rows under random
k-fold), `bpann-lbfgs` (the same network, full-batch L-BFGS), the peer's `physical` model and MLR+
(`--models`). **Same partitions**: `gpumodel train --folds-out FILE` writes the fold of every training row
under each protocol, and scikit-learn runs on exactly those folds (the script first checks that both
sides read the same rows in the same order and the same kernels). Fit time: ours = one seed's whole fit on the
full training set (all 3 restarts), median over --fit-repeats separate fits, once on all the CPUs the process
may use (the restarts run in parallel) and once pinned to one CPU; scikit-learn = one MLP fit (its process
CPU time printed beside it), median over seeds; ratio > 1 means ours is faster. A benchmark, not a test.

Needs scikit-learn (installed here if missing: `pip install scikit-learn`).

Usage: GPUMODEL_DATA_DIR=../shared/datasets python3 benches/sklearn_compare.py [--seeds 5] [--folds 10]
       [--datasets titanx,gtx1080ti,gtx980] [--gpumodel BIN] [--extra "more gpumodel train flags"]
"""
import argparse
import csv
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

try:
    import sklearn
except ImportError:
    subprocess.run([sys.executable, "-m", "pip", "install", "scikit-learn"], check=True)
    import sklearn

import numpy as np
from sklearn.compose import TransformedTargetRegressor
from sklearn.linear_model import LinearRegression
from sklearn.neural_network import MLPRegressor
from sklearn.preprocessing import StandardScaler

# scikit-learn warns on every MLP fit that stops at max_iter; the count of such fits is not the point here.
warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", module="sklearn")

# Process CPU seconds of every scikit-learn fit, in call order (fit_predict appends).
FIT_CPU = []

NVDVFS_RATES = ["gld_transactions", "gst_transactions", "inst_executed", "cf_executed",
                "shared_load_transactions", "shared_store_transactions", "tex_cache_transactions",
                "l2_read_transactions", "dram_read_transactions", "dram_write_transactions"]


def load_guerreiro(path):
    """Guerreiro format: 4 header lines, then name,power,core,mem,utils... → X (utils + clocks), y, groups."""
    with open(path) as f:
        lines = f.read().splitlines()
    rows = [l.split(",") for l in lines[4:] if l.strip()]
    y = np.array([float(r[1]) for r in rows])
    x = np.array([[float(v) for v in r[4:]] + [float(r[2]), float(r[3])] for r in rows])
    return x, y, np.array([r[0] for r in rows])


def load_nvdvfs(path):
    """NV-DVFS: counters as events per ms + the clocks; a kernel = (appName, argNo, kernel)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    t = np.array([float(r["time/ms"]) for r in rows])
    x = np.column_stack([np.array([float(r[c]) for r in rows]) / t for c in NVDVFS_RATES]
                        + [np.array([float(r["coreF"]) for r in rows]), np.array([float(r["memF"]) for r in rows])])
    y = np.array([float(r["power/W"]) for r in rows])
    g = np.array([f"{r['appName']}|{r['argNo']}|{r['kernel']}" for r in rows])
    return x, y, g


def mape(p, y):
    return 100.0 * float(np.mean(np.abs((p - y) / y)))


def load_dataset(data, name):
    """A benchmark dataset by its short name: (registry name, x, y, kernel groups, held-out (x, y) or None).
    The one place that maps the short names to the registry and the files under GPUMODEL_DATA_DIR."""
    if name == "titanx":
        d = os.path.join(data, "guerreiro-titanx")
        x, y, g = load_guerreiro(os.path.join(d, "titanx_micro_names_peak_idle_HPCAandCF.csv"))
        xv, yv, _ = load_guerreiro(os.path.join(d, "titanx_real_allFsPower_HPCAandCF.csv"))
        return "guerreiro-titanx-micro", x, y, g, (xv, yv)
    f = {"gtx1080ti": "gtx1080ti-dvfs-real-Performance-Power.csv",
         "gtx980": "gtx980-high-dvfs-real-small-workload-Performance-Power.csv"}[name]
    x, y, g = load_nvdvfs(os.path.join(data, "nvdvfs", f))
    return f"nvdvfs-{name}", x, y, g, None


def setup(gpumodel):
    """The data directory (exported as GPUMODEL_DATA_DIR for the runs of `gpumodel`) and our binary:
    `gpumodel` if given, else target/release or target/debug of this repository."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data = os.environ.get("GPUMODEL_DATA_DIR", os.path.join(root, "..", "shared", "datasets"))
    os.environ["GPUMODEL_DATA_DIR"] = data
    exe = gpumodel or next((p for p in (os.path.join(root, "target", d, "gpumodel") for d in ("release", "debug"))
                            if os.path.exists(p)), None)
    if exe is None:
        sys.exit("no gpumodel binary: build it (cargo build --bin gpumodel) or pass --gpumodel BIN")
    return data, exe


def fit_predict(kind, xt, yt, xv, seed):
    s = StandardScaler().fit(xt)
    # The target is standardized for the MLP as for ours (on raw watts its output bias alone needs more
    # than 2000 epochs on the small NV-DVFS files).
    m = (TransformedTargetRegressor(
        regressor=MLPRegressor(hidden_layer_sizes=(4, 4), activation="logistic", max_iter=2000, random_state=seed),
        transformer=StandardScaler()) if kind == "mlp" else LinearRegression())
    t0, c0 = time.perf_counter(), time.process_time()
    m.fit(s.transform(xt), yt)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    FIT_CPU.append(cpu)
    return m.predict(s.transform(xv)), dt


def read_folds(path, g):
    """gpumodel's fold assignment: {protocol: fold index per row}. Checks that it covers the same rows as
    our loader, in the same order, with the same kernels (each of its kernels within one of ours)."""
    out, names = {}, {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            out.setdefault(r["protocol"], []).append(int(r["fold"]))
            names.setdefault(r["protocol"], []).append(r["kernel"])
    for proto, kernels in names.items():
        if len(kernels) != len(g):
            raise SystemExit(f"{proto}: gpumodel has {len(kernels)} training rows, this loader {len(g)}")
        # Each gpumodel kernel must fall in exactly one of this loader's groups (gpumodel tells apart
        # kernels that share a name in Guerreiro's files as `name#1`, `name#2`, …, so it may be finer).
        pairs = set(zip(kernels, g))
        if len(pairs) != len(set(kernels)):
            raise SystemExit(f"{proto}: gpumodel's kernels and this loader's differ row by row")
    return {p: np.array(v) for p, v in out.items()}


def cv_predict(kind, x, y, fold, seed):
    """Out-of-fold predictions of every row."""
    pred = np.full(len(y), np.nan)
    for k in np.unique(fold):
        tr, te = np.where(fold != k)[0], np.where(fold == k)[0]
        pred[te], _ = fit_predict(kind, x[tr], y[tr], x[te], seed)
    return pred


def cv(kind, x, y, fold, seed):
    return mape(cv_predict(kind, x, y, fold, seed), y)


def ours(exe, data, folds, seeds, test, models, protocols, folds_out, extra=()):
    k = lambda p: str(folds) if p in protocols else "0"
    cmd = [exe, "train", "--data", data, "--models", models, "--folds", k("random-kfold"), "--group-folds", k("group-kfold"),
           "--seeds", str(seeds), "--format", "json", "--folds-out", folds_out] + list(extra)
    if not test:
        cmd.append("--no-test")
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    shown = [os.path.basename(c) if c == folds_out else c for c in cmd[1:]]
    return json.loads(out.stdout), time.perf_counter() - t0, " ".join(["gpumodel"] + shown)


def fit_seconds(exe, data, test, repeats, one_core=False, extra=()):
    """Our fit time, as `gpumodel train` reports it (one seed's whole fit on the full training set, all
    restarts), for bpann and bpann-lbfgs: the median over `repeats` runs, since one fit of a fraction of
    a second on a shared machine moves with whatever else runs. With `one_core`, the process is pinned to
    one CPU (its restarts then run one after another, as `gpumodel` sizes its threads by the CPUs it may
    use), for a comparison that does not lean on a second core."""
    cpu = min(os.sched_getaffinity(0))
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if one_core else None
    cmd = [exe, "train", "--data", data, "--models", "bpann,bpann-lbfgs", "--folds", "0", "--group-folds", "0",
           "--seeds", "1", "--format", "json"] + ([] if test else ["--no-test"]) + list(extra)
    runs = [json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True,
                                      preexec_fn=pin).stdout)["models"]
            for _ in range(repeats)]
    return {m: statistics.median(r[m]["fit_seconds"] for r in runs) for m in ("bpann", "bpann-lbfgs")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the held-out fits (CV: 1 seed)")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--datasets", default="titanx,gtx1080ti,gtx980")
    ap.add_argument("--protocols", default="held-out,group-kfold,random-kfold")
    ap.add_argument("--gpumodel", default=None)
    ap.add_argument("--fit-repeats", type=int, default=5,
                    help="our fit time is the median over this many separate fits (scikit-learn's: over its seeds)")
    ap.add_argument("--models", default="bpann,bpann-lbfgs,physical,mlrplus",
                    help="our models to run (the default of `gpumodel train` adds the physical-bpann candidates)")
    ap.add_argument("--extra", default="",
                    help="more `gpumodel train` flags for our side, e.g. \"--batch-size 200\" (a recipe to time and "
                         "score; they reach every run of ours, CV and fit time alike)")
    a = ap.parse_args()
    extra = shlex.split(a.extra)
    if a.fit_repeats < 1:
        ap.error("--fit-repeats must be at least 1")
    data, exe = setup(a.gpumodel)
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, {platform.machine()} "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| dataset | protocol | sklearn MLP(4,4) MAPE % | sklearn MLR+ | ours bpann | ours bpann-lbfgs "
          "| ours physical (peer form) | ours MLR+ | bpann-lbfgs ≤ MLP? |")
    print("|---|---|---|---|---|---|---|---|---|")
    fit_rows = []
    for name in a.datasets.split(","):
        reg, x, y, g, test = load_dataset(data, name)
        held = test is not None
        xv, yv = test if held else (None, None)
        with tempfile.TemporaryDirectory() as tmp:
            fpath = os.path.join(tmp, f"{name}-folds.csv")
            o, wall, cmd = ours(exe, reg, a.folds, a.seeds if held else 1, held, a.models, a.protocols.split(","),
                                fpath, extra)
            fold_of = read_folds(fpath, g)
        m = o["models"]

        def our(model, key):
            r = m.get(model, {})
            if key == "held-out" and r.get("held_out_median"):
                return r["held_out_median"]["mape_pct"]
            return r.get(key, {}).get("mape_pct", float("nan"))

        protos = (["held-out"] if held else []) + ["group-kfold", "random-kfold"]
        protos = [p for p in protos if p in a.protocols.split(",")]
        mlp_times, mlp_cpu = [], []
        for proto in protos:
            if proto == "held-out":
                ms = []
                for seed in range(1, a.seeds + 1):
                    p, dt = fit_predict("mlp", x, y, xv, seed)
                    ms.append(mape(p, yv))
                    mlp_times.append(dt)
                    mlp_cpu.append(FIT_CPU[-1])
                sk_mlp = statistics.median(ms)
                sk_lin = mape(fit_predict("lin", x, y, xv, 1)[0], yv)
            else:
                sk_mlp = cv("mlp", x, y, fold_of[proto], 1)
                sk_lin = cv("lin", x, y, fold_of[proto], 1)
            lb = our("bpann-lbfgs", proto)
            print(f"| {name} | {proto}{' (median of %d seeds)' % a.seeds if proto == 'held-out' else ''} | "
                  f"{sk_mlp:.2f} | {sk_lin:.2f} | {our('bpann', proto):.2f} | {lb:.2f} | {our('physical', proto):.2f} "
                  f"| {our('mlrplus', proto):.2f} | {'yes' if lb <= sk_mlp else '**no**'} |")
        if not mlp_times:
            for seed in range(1, 4):
                mlp_times.append(fit_predict("mlp", x, y, x, seed)[1])
                mlp_cpu.append(FIT_CPU[-1])
        ft = fit_seconds(exe, reg, held, a.fit_repeats, extra=extra)
        f1 = fit_seconds(exe, reg, held, a.fit_repeats, one_core=True, extra=extra)
        sk_cpu = statistics.median(mlp_cpu)
        fit_rows.append((name, statistics.median(mlp_times), sk_cpu, ft["bpann"], f1["bpann"], ft["bpann-lbfgs"],
                         f1["bpann-lbfgs"], wall, cmd))
    print()
    print(f"Fit time (wall, ms): scikit-learn's MLP median over its held-out seeds (Titan X) or 3 seeds (NV-DVFS), "
          f"with its process CPU time beside it (CPU ≈ wall: one thread); ours median over {a.fit_repeats} separate "
          f"fits of seed 1 (all 3 restarts), on all the CPUs it may use and pinned to one CPU. Ratio = scikit-learn's "
          f"wall time ÷ ours.")
    print("| dataset | sklearn MLP fit ms (CPU ms) | ours Adam ms | ratio | Adam, one CPU ms | ratio "
          "| ours L-BFGS ms | ratio | L-BFGS, one CPU ms | ratio | ours whole run s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, sk, skc, ad, ad1, lb, lb1, wall, _ in fit_rows:
        print(f"| {name} | {1e3 * sk:.1f} ({1e3 * skc:.1f}) | {1e3 * ad:.1f} | {sk / ad:.1f} | {1e3 * ad1:.1f} | "
              f"{sk / ad1:.1f} | {1e3 * lb:.1f} | {sk / lb:.1f} | {1e3 * lb1:.1f} | {sk / lb1:.1f} | {wall:.0f} |")
    print()
    for name, *_, cmd in fit_rows:
        print(f"ours ({name}): {cmd}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
