#!/usr/bin/env python3
"""Cross-validation MAPE over several seeds, ours and (optionally) scikit-learn's MLP(4,4) on the same
folds: the figures BENCHMARKS.md compares.

For each dataset and seed S: `gpumodel train --data D --models M --folds K --group-folds K --seed S
--seeds 1 --no-test --format json --folds-out F` (training data only), and, with --sklearn,
benches/sklearn_compare.py's MLPRegressor(4,4) (random_state = S) on exactly the folds in F. Prints the
per-seed figures, the median over seeds and SE = sd / sqrt(seeds) of each column; --json writes them.
scikit-learn's figures do not depend on our code, so --sklearn-cache keeps them between runs.

With --sklearn --paired N, each of our models is also compared with scikit-learn's MLP on grouped CV kernel
by kernel: both sides' out-of-fold predictions of every row (ours from the JSON's `rows`, the headline
protocol of a run without a test set), N resamples of the dataset's kernels with replacement, and on each
the difference of the two 5-seed medians of the MAPE. It prints the difference on the data as it is, its
95% percentile interval and the share of resamples in which ours is lower: how far a won or lost cell is
from what another draw of kernels could give. (It computes scikit-learn's grouped-CV predictions afresh and
checks them against the cached figure; the pairs are printed, not written to --json.)

Needs scikit-learn (installed by sklearn_compare.py if missing).

Usage: GPUMODEL_DATA_DIR=../shared/datasets python3 benches/seed_medians.py [--datasets titanx,gtx1080ti,gtx980]
       [--seeds 1-5] [--models bpann,bpann-lbfgs] [--sklearn] [--sklearn-cache FILE] [--gpumodel BIN] [--json FILE]
       [--extra "more gpumodel train flags"] [--paired 2000]
"""
import argparse
import hashlib
import json
import os
import shlex
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sklearn_compare as sc  # noqa: E402

PROTOCOLS = ["group-kfold", "random-kfold"]


def run_ours(exe, reg, models, folds, seed, folds_out, extra):
    import subprocess
    cmd = [exe, "train", "--data", reg, "--models", models, "--folds", str(folds), "--group-folds", str(folds),
           "--seed", str(seed), "--seeds", "1", "--no-test", "--format", "json",
           "--folds-out", folds_out] + shlex.split(extra)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def kernel_sums(pred, y, kernels, index):
    """Per kernel (in `index` order): the sum over its rows of |pred - y| / y."""
    e = np.zeros(len(index))
    np.add.at(e, [index[k] for k in kernels], np.abs((pred - y) / y))
    return e


def paired(ours, theirs, rows, resamples, seed=1):
    """Paired bootstrap over kernels of (median over seeds of our MAPE) - (theirs). `ours`, `theirs`:
    per seed, per-kernel error sums; `rows`: rows per kernel. Returns the difference on the data, the 95%
    percentile interval and the share of resamples with ours lower."""
    rng = np.random.default_rng(seed)
    k = len(rows)
    counts = np.stack([np.bincount(rng.integers(0, k, k), minlength=k) for _ in range(resamples)])

    def stat(sums, c):
        return np.median(100.0 * (c @ np.array(sums).T) / (c @ rows)[..., None], axis=-1)

    ones = np.ones(k)
    d = stat(ours, counts) - stat(theirs, counts)
    lo, hi = np.percentile(d, [2.5, 97.5])
    return float(stat(ours, ones) - stat(theirs, ones)), float(lo), float(hi), float(np.mean(d < 0))


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
    ap.add_argument("--extra", default="", help="more `gpumodel train` flags, e.g. \"--l2 1\"")
    ap.add_argument("--paired", type=int, default=0, metavar="N",
                    help="with --sklearn: paired bootstrap over kernels (N resamples) of each of our models "
                         "against scikit-learn's MLP on grouped CV")
    a = ap.parse_args()
    if a.paired and (not a.sklearn or a.paired < 100):
        ap.error("--paired N needs --sklearn and N >= 100")
    data, exe = sc.setup(a.gpumodel)
    lo, hi = (int(v) for v in a.seeds.split("-"))
    seeds = list(range(lo, hi + 1))
    models = a.models.split(",")
    cache = {}
    if a.sklearn_cache and os.path.exists(a.sklearn_cache):
        with open(a.sklearn_cache) as f:
            cache = json.load(f)
    result, pairs = {}, []
    for name in a.datasets.split(","):
        reg, x, y, g, _ = sc.load_dataset(data, name)
        rows = {}
        sums = {}
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                fpath = os.path.join(tmp, "folds.csv")
                doc = run_ours(exe, reg, a.models, a.folds, seed, fpath, a.extra)
                fold_of = sc.read_folds(fpath, g)
            m = doc["models"]
            if a.paired:
                r = doc["rows"]
                if doc["rows_protocol"] != "group-kfold" or len(r) != len(y) or any(
                        abs(q["measured_w"] - t) > 1e-9 * t for q, t in zip(r, y)):
                    sys.exit(f"{name}: gpumodel's rows are not this loader's grouped-CV rows in order")
                kernels = [q["kernel"] for q in r]
                index = {k: i for i, k in enumerate(dict.fromkeys(kernels))}
                n_rows = np.bincount([index[k] for k in kernels], minlength=len(index)).astype(float)
                for model in models:
                    p = np.array([q["predicted_w"][model] for q in r])
                    if abs(sc.mape(p, y) - m[model]["group-kfold"]["mape_pct"]) > 1e-6:
                        sys.exit(f"{name} {model}: the rows' MAPE is not the reported grouped-CV figure")
                    sums.setdefault(model, []).append(kernel_sums(p, y, kernels, index))
                sk = sc.cv_predict("mlp", x, y, fold_of["group-kfold"], seed)
                sums.setdefault("sklearn-mlp", []).append(kernel_sums(sk, y, kernels, index))
                sk_group_mape = sc.mape(sk, y)
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
                        fresh = a.paired and proto == "group-kfold"
                        cache[key] = sk_group_mape if fresh else sc.cv("mlp", x, y, fold_of[proto], seed)
                    if a.paired and proto == "group-kfold" and abs(cache[key] - sk_group_mape) > 1e-9:
                        sys.exit(f"{name} seed {seed}: scikit-learn's paired predictions are not its grouped-CV figure")
                    rows.setdefault(f"sklearn-mlp {proto}", []).append(cache[key])
            print(f"{name} seed {seed}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in rows.items()), flush=True)
        result[name] = rows
        if a.paired:
            for model in models:
                d, lo, hi, share = paired(sums[model], sums["sklearn-mlp"], n_rows, a.paired)
                pairs.append((name, model, len(n_rows), d, lo, hi, share))
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
    if pairs:
        print()
        print(f"Grouped CV, ours − scikit-learn MLP(4,4): the difference of the {len(seeds)}-seed medians, paired "
              f"bootstrap over kernels ({a.paired} resamples, numpy seed 1)")
        print("| dataset | model | kernels | difference (points) | 95% interval | share of resamples ours lower |")
        print("|---|---|---|---|---|---|")
        for name, model, k, d, lo, hi, share in pairs:
            print(f"| {name} | {model} | {k} | {d:+.2f} | {lo:+.2f} to {hi:+.2f} | {share:.3f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
