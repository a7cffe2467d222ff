#!/usr/bin/env python3
"""Cross-validation MAPE over several seeds, ours and (optionally) scikit-learn's MLP(4,4) on the same
folds: the figures an accuracy acceptance rule compares (BENCHMARKS.md, issue 15, session 8 fit time).

For each dataset and seed S: `gpumodel train --data D --models M --folds K --group-folds K --seed S
--seeds 1 --no-test --no-write --format json --folds-out F` (training data only), and, with --sklearn,
benches/sklearn_compare.py's MLPRegressor(4,4) (random_state = S) on exactly the folds in F. Prints the
per-seed figures, the median over seeds and SE = sd / sqrt(seeds) of each column; --json writes them.
scikit-learn's figures do not depend on our code, so --sklearn-cache keeps them between runs.

Needs scikit-learn (installed by sklearn_compare.py if missing).

Usage: GPUMODEL_DATA_DIR=../shared/datasets python3 benches/seed_medians.py [--datasets titanx,gtx1080ti,gtx980]
       [--seeds 1-5] [--models bpann,bpann-lbfgs] [--sklearn] [--sklearn-cache FILE] [--gpumodel BIN] [--json FILE]
       [--extra "more gpumodel train flags"]
"""
import argparse
import hashlib
import json
import os
import shlex
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sklearn_compare as sc  # noqa: E402

PROTOCOLS = ["group-kfold", "random-kfold"]


def run_ours(exe, reg, models, folds, seed, folds_out, extra):
    import subprocess
    cmd = [exe, "train", "--data", reg, "--models", models, "--folds", str(folds), "--group-folds", str(folds),
           "--seed", str(seed), "--seeds", "1", "--no-test", "--no-write", "--format", "json",
           "--folds-out", folds_out] + shlex.split(extra)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["models"]


def summary(values):
    med = statistics.median(values)
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return med, se


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="titanx,gtx1080ti,gtx980")
    ap.add_argument("--seeds", default="1-5", help="first-last")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--models", default="bpann,bpann-lbfgs")
    ap.add_argument("--sklearn", action="store_true", help="also scikit-learn's MLP(4,4) on the same folds")
    ap.add_argument("--sklearn-cache", default=None)
    ap.add_argument("--gpumodel", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--extra", default="", help="more `gpumodel train` flags, e.g. \"--l2 1\" (a recipe to compare)")
    a = ap.parse_args()
    data, exe = sc.setup(a.gpumodel)
    lo, hi = (int(v) for v in a.seeds.split("-"))
    seeds = list(range(lo, hi + 1))
    models = a.models.split(",")
    cache = {}
    if a.sklearn_cache and os.path.exists(a.sklearn_cache):
        with open(a.sklearn_cache) as f:
            cache = json.load(f)
    result = {}
    for name in a.datasets.split(","):
        reg, x, y, g, _ = sc.load_dataset(data, name)
        rows = {}
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                fpath = os.path.join(tmp, "folds.csv")
                m = run_ours(exe, reg, a.models, a.folds, seed, fpath, a.extra)
                fold_of = sc.read_folds(fpath, g)
            for model in models:
                for proto in PROTOCOLS:
                    rows.setdefault(f"{model} {proto}", []).append(m[model][proto]["mape_pct"])
            if a.sklearn:
                for proto in PROTOCOLS:
                    # Keyed by the fold assignment itself and scikit-learn's version, so a cached figure
                    # is never one of other folds (if our fold code changes) or of another scikit-learn.
                    folds_hash = hashlib.sha256(fold_of[proto].astype("int64").tobytes()).hexdigest()[:16]
                    key = f"{name} {proto} {seed} {folds_hash} sklearn-{sc.sklearn.__version__}"
                    if key not in cache:
                        cache[key] = sc.cv("mlp", x, y, fold_of[proto], seed)
                    rows.setdefault(f"sklearn-mlp {proto}", []).append(cache[key])
            print(f"{name} seed {seed}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in rows.items()), flush=True)
        result[name] = rows
        if a.sklearn_cache:
            with open(a.sklearn_cache, "w") as f:
                json.dump(cache, f, indent=1)
    print()
    print(f"| dataset | column | seeds {lo}–{hi} | median | SE |")
    print("|---|---|---|---|---|")
    for name, rows in result.items():
        for k, v in rows.items():
            med, se = summary(v)
            print(f"| {name} | {k} | {', '.join(f'{x:.2f}' for x in v)} | {med:.2f} | {se:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
