#!/usr/bin/env python3
"""Turns what scripts/gpu-check left in its work folder into summary.json and summary.md.

Run after every step, so a run cut short still leaves a summary of the steps it finished. Reads
steps.tsv (name, exit status or `skip`, seconds, note) and each step's saved output; writes:
  summary.json: the GPU's facts, every step (ok / failed / skipped, with its one-line error), every
                measured figure beside its prediction or target, and the doctor and calibrate results whole;
  summary.md:   the same as tables.
Standard library only (the GPU machine may have nothing else).
"""
import argparse
import csv
import glob
import json
import math
import os
import re
import statistics

KERNELS = {"mem": "stream_triad", "compute": "fma_chain"}
# What the figures are held to (the targets of the GPU check).
MIN_RATE_HZ = 50.0
MAX_ENERGY_GAP_PCT = 2.0


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_json(path):
    text = read(path)
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        # A command that printed notes before its JSON: take the outermost object.
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(text[start : end + 1])
            except ValueError:
                return None
        return None


def steps_of(work):
    rows = []
    text = read(os.path.join(work, "steps.tsv")) or ""
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 4:
            continue
        name, rc, seconds, note = parts[:4]
        if rc == "skip":
            status = "skipped"
        elif rc == "0":
            status = "ok"
        else:
            status = "failed"
        error = None
        if status == "skipped":
            error = note
        elif status == "failed":
            error = note or error_line(work, name, rc)
        rows.append({"step": name, "status": status, "seconds": int(seconds or 0), "error": error})
    return rows


def error_line(work, name, rc):
    """The one line that says why step `name` failed."""
    if name == "doctor":
        report = read_json(os.path.join(work, "doctor.out"))
        if report and "checks" in report:
            missing = [c["id"] for c in report["checks"] if c.get("status") == "missing"]
            first = next((c for c in report["checks"] if c.get("status") == "missing"), None)
            if first:
                return f"not ready: missing {', '.join(missing)}; first: {first['id']}: {first.get('found', '')}"[:400]
    err = read(os.path.join(work, f"{name}.err")) or ""
    lines = [line.strip() for line in err.splitlines() if line.strip() and not line.startswith("==PROF==")]
    for line in lines:
        if "error" in line.lower():
            return line[:400]
    if lines:
        return lines[-1][:400]
    out = read(os.path.join(work, f"{name}.out")) or ""
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if lines and "error" in lines[-1].lower():
        return lines[-1][:400]
    return f"exit status {rc}"


def gpu_facts(work):
    """Fields of `nvidia-smi -q`, by section: a key is matched with the section it sits in."""
    text = read(os.path.join(work, "gpu-facts.out"))
    if not text:
        return None
    flat = {}
    stack = []  # (indent, section name)
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip())
        line = raw.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if " : " in line or line.endswith(":"):
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if value:
                path = "/".join([s for _, s in stack] + [key])
                flat.setdefault(path, value)
                continue
            stack.append((indent, key))
        else:
            stack.append((indent, line))

    def find(*suffixes):
        for suffix in suffixes:
            for path, value in flat.items():
                if path == suffix or path.endswith("/" + suffix):
                    return value
        return None

    return {
        "name": find("Product Name"),
        "architecture": find("Product Architecture"),
        "driver": find("Driver Version"),
        "cuda": find("CUDA Version"),
        "sm_clock": find("Clocks/SM"),
        "memory_clock": find("Clocks/Memory"),
        "applications_clocks": join(find("Applications Clocks/Graphics"), find("Applications Clocks/Memory")),
        "max_clocks": join(find("Max Clocks/SM"), find("Max Clocks/Memory")),
        "power_limit": find("GPU Power Readings/Current Power Limit", "Power Readings/Power Limit",
                            "Current Power Limit"),
        "power_draw": find("GPU Power Readings/Instantaneous Power Draw", "GPU Power Readings/Power Draw",
                           "Power Readings/Power Draw"),
        "mig_mode": find("MIG Mode/Current"),
        "persistence": find("Persistence Mode"),
        "performance_state": find("Performance State"),
    }


def join(a, b):
    return f"{a} / {b}" if a and b else (a or b)


def program_lines(text):
    """The program's own lines: {kernel: (launches, mean seconds per launch)}."""
    out = {}
    for m in re.finditer(r"^kernel (\S+) launches (\d+) mean_launch_s (\S+)", text or "", re.M):
        try:
            out[m.group(1)] = (int(m.group(2)), float(m.group(3)))
        except ValueError:
            pass
    return out


def trace_stats(path):
    """Sample-interval jitter and the mean power of the middle 60 % of the rows (the kernel's steady state)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return None
    dts = [float(r["dt_s"]) for r in rows if r.get("dt_s") not in (None, "", "NaN")]
    power = [float(r["power_w"]) for r in rows if r.get("power_w") not in (None, "", "NaN")]
    if len(dts) < 3 or len(power) < 3:
        return None
    dts = dts[1:]  # the first interval runs from the start of the clock, not from a sample
    lo, hi = int(len(power) * 0.2), max(int(len(power) * 0.8), int(len(power) * 0.2) + 1)
    return {
        "interval_mean_ms": 1e3 * statistics.fmean(dts),
        "interval_std_ms": 1e3 * statistics.pstdev(dts),
        "steady_power_w": statistics.fmean(power[lo:hi]),
    }


def profile_of(work, kernel):
    paths = sorted(glob.glob(os.path.join(work, "profiles", f"{kernel}-*.json")))
    return read_json(paths[0]) if paths else None


def num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def pct(measured, predicted):
    if num(measured) is None or num(predicted) is None or measured == 0:
        return None
    return 100.0 * (predicted - measured) / measured


def model_note(prediction):
    """Which model predicted, and how many of its inputs lay outside its training data."""
    model = os.path.basename(str((prediction or {}).get("model")))
    outside = len((prediction or {}).get("extrapolation") or [])
    return f"model {model}" + (f", {outside} input(s) extrapolated" if outside else "")


def profile_constants(arch):
    """`field = { value = X, ... }` lines of the built-in profile models/arch/ARCH.toml: {field: X}."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "arch", f"{arch}.toml")
    out = {}
    for m in re.finditer(r"^(\w+)\s*=\s*\{\s*value\s*=\s*([-+0-9.eE]+)", read(path) or "", re.M):
        try:
            out[m.group(1)] = float(m.group(2))
        except ValueError:
            pass
    return out


def figures_of(work, arch):
    figs = []

    # `predicted` is a model's figure, with error_pct = (predicted − measured) / measured; `reference` is a
    # value the measurement is checked against (another sensor, a profile's constant), with
    # gap_pct = (measured − reference) / reference.
    def fig(figure, kernel, measured, predicted=None, reference=None, target=None, unit="", source=""):
        figs.append({
            "figure": figure,
            "kernel": kernel,
            "measured": num(measured),
            "predicted": num(predicted),
            "error_pct": pct(measured, predicted),
            "reference": num(reference),
            "gap_pct": pct(reference, measured),
            "target": target,
            "unit": unit,
            "source": source,
        })

    kt = read_json(os.path.join(work, "kernel-totals.out"))
    kt_profiles = []
    if kt and kt.get("kernel_totals"):
        path = kt["kernel_totals"].get("profiles")
        if path and not os.path.isabs(path):
            path = os.path.join(work, path)
        loaded = read_json(path) if path else None
        if isinstance(loaded, list):
            kt_profiles = loaded
        elif isinstance(loaded, dict):
            kt_profiles = loaded.get("profiles") or loaded.get("kernels") or []

    for key, kernel in KERNELS.items():
        # The run with counters, else the power-only run that replaced it.
        name = f"collect-{key}"
        report = read_json(os.path.join(work, f"{name}.out"))
        if not (report and report.get("summary")):
            name = f"collect-{key}-no-counters"
            report = read_json(os.path.join(work, f"{name}.out"))
        ran = program_lines(read(os.path.join(work, f"{name}.err")))
        steady = None
        if report and isinstance(report.get("summary"), dict):
            s = report["summary"]
            fig("power sample rate", kernel, s.get("achieved_rate_hz"), target=f">= {MIN_RATE_HZ:g}",
                unit="Hz", source="collect (achieved)")
            stats = trace_stats(os.path.join(work, f"trace-{key}.csv"))
            if stats:
                fig("sample interval jitter (std)", kernel, stats["interval_std_ms"],
                    target=f"mean interval {stats['interval_mean_ms']:.2f} ms", unit="ms",
                    source="trace dt_s")
                steady = stats["steady_power_w"]
            if s.get("energy_source") == "energy_counter":
                fig("energy counter vs integral of sampled power", kernel, s.get("energy_j"),
                    reference=s.get("power_integral_j"), target=f"within {MAX_ENERGY_GAP_PCT:g} %", unit="J",
                    source="measured: NVML energy counter delta; reference: sum of P*dt over the samples")
            else:
                fig("energy counter vs integral of sampled power", kernel, None,
                    reference=s.get("power_integral_j"), target=f"within {MAX_ENERGY_GAP_PCT:g} %", unit="J",
                    source=f"no energy counter read (energy source: {s.get('energy_source')})")
            meta = read_json(os.path.join(work, f"trace-{key}.json"))
            if meta:
                fig("PM-sampling counters present", kernel, len(meta.get("counters") or []),
                    target="> 0", unit="columns", source=str(meta.get("counter_source")))
            fig("mean power over the run", kernel, s.get("mean_power_w"), unit="W",
                source=f"collect: {fmt(num(s.get('duration_s')), 's')} run, idle {fmt(num(s.get('idle_power_w')), 'W')}")
        measured_time = ran.get(kernel, (None, None))[1]
        profile = profile_of(work, kernel)
        ncu_time = ((profile or {}).get("measured") or {}).get("time_s")
        pred = read_json(os.path.join(work, f"predict-{key}.out"))
        p = (pred or {}).get("prediction") or {}
        if measured_time is not None or p.get("time_s") is not None:
            fig("time per launch (timing model)", kernel, measured_time, predicted=p.get("time_s"), unit="s",
                source="measured: CUDA events during collect; predicted: predict --arch "
                + str((pred or {}).get("arch", "?")))
        if ncu_time is not None:
            fig("time per launch (Nsight Compute)", kernel, ncu_time, predicted=p.get("time_s"), unit="s",
                source="measured: ncu gpu__time_duration, one launch")
        for prof in kt_profiles:
            if isinstance(prof, dict) and kernel in str(prof.get("name", "")):
                t = (prof.get("measured") or {}).get("time_s")
                fig("time per launch (range profiler)", kernel, t, predicted=p.get("time_s"), unit="s",
                    source="measured: collect --kernel-totals, one launch")
                # The rows carry the SM clock during the kernel and the GPU's name, so predict --kernel
                # uses the measured time on this GPU.
                fig("SM clock during the kernel (range profiler)", kernel,
                    (prof.get("measured") or {}).get("core_mhz"), target="the clock nvidia-smi shows",
                    unit="MHz", source=f"sm__cycles_elapsed.avg.per_second; GPU named: {prof.get('arch')}")
                break
        measured_power = steady
        if p.get("power_w") is not None:
            fig("power (default model)", kernel, measured_power, predicted=p.get("power_w"), unit="W",
                source="measured: middle 60 % of the collect trace; " + model_note(pred))
        own = read_json(os.path.join(work, f"power-{key}.out"))
        q = (own or {}).get("prediction") or {}
        if q.get("power_w") is not None:
            fig("power (model trained on this GPU's suite)", kernel, measured_power, predicted=q.get("power_w"),
                unit="W", source="measured: middle 60 % of the collect trace; " + model_note(own))

    train = read_json(os.path.join(work, "train.out"))
    if train and isinstance(train.get("models"), dict):
        chosen = (train.get("selection") or {}).get("chosen")
        headline = train.get("headline") or "group-kfold"
        cv = (train["models"].get(chosen) or {}).get(headline) or {}
        fig(f"suite model cross-validation MAPE ({headline})", None, cv.get("mape_pct"), unit="%",
            source=f"train: default model {chosen}, worst kernel {cv.get('worst_kernel')}")

    cal = read_json(os.path.join(work, "calibrate.out"))
    if cal and isinstance(cal.get("measured"), list):
        profile = profile_constants(arch)
        for m in cal["measured"]:
            field = m.get("field")
            fig(f"calibrated {field}", None, m.get("median"), reference=profile.get(field),
                unit=m.get("unit") or "",
                source=f"calibrate: median of {m.get('n')}; reference: the {arch} profile's value")

    scrape = read(os.path.join(work, "serve.out"))
    if scrape:
        pid = re.search(r"kernel pid (\d+)", read(os.path.join(work, "serve.err")) or "")

        def series(prefix, *has):
            for line in scrape.splitlines():
                if line.startswith(prefix) and all(h in line for h in has):
                    try:
                        return num(float(line.rsplit(" ", 1)[-1]))
                    except ValueError:
                        return None
            return None

        board = series("gpumodel_gpu_energy_joules_total{")
        mine = series("gpumodel_process_energy_joules_total{", f'pid="{pid.group(1)}"', 'component="dynamic"') \
            if pid else None
        idle = series("gpumodel_gpu_idle_energy_joules_total{")
        fig("serve: the compute kernel's dynamic energy over one scrape", KERNELS["compute"], mine,
            reference=None if board is None else board - (idle or 0.0), unit="J",
            source="reference: the GPU's energy-counter increase less its idle part, same scrape")
    # Two programs alone, then together (corun-check): each one's share of the time-sliced GPU is its launch
    # time alone over its launch time together; its true dynamic energy over the co-run window is that
    # share × its dynamic power alone × the window. Both splits are scored against it.
    solo, corun, corun_gpu = {}, {}, None
    for line in (read(os.path.join(work, "corun.out")) or "").splitlines():
        f = line.split()
        try:
            fields = {f[i]: float(f[i + 1]) for i in range(2 if f[0] != "corun-gpu" else 1, len(f) - 1, 2)}
        except (ValueError, IndexError):
            continue
        if f[0] == "solo":
            solo[f[1]] = fields
        elif f[0] == "corun":
            corun[f[1]] = fields
        elif f[0] == "corun-gpu":
            corun_gpu = fields
    truths = []
    for kernel, co in corun.items():
        alone = solo.get(kernel)
        if not alone or not corun_gpu or not co.get("launch_s") or not alone.get("window_s"):
            continue
        share = alone["launch_s"] / co["launch_s"]
        dynamic_w = (alone["board_j"] - alone["idle_j"]) / alone["window_s"]
        truth = share * dynamic_w * corun_gpu["window_s"]
        truths.append(truth)
        note = (f"truth: GPU share {share:.3f} (launch {alone['launch_s'] * 1e3:.4g} ms alone, "
                f"{co['launch_s'] * 1e3:.4g} ms together) x {dynamic_w:.4g} W dynamic alone x "
                f"{corun_gpu['window_s']:g} s")
        fig("co-run: process dynamic energy, model split", kernel, truth, predicted=co.get("model_j"),
            unit="J", source=note)
        fig("co-run: process dynamic energy, SM-utilization ratio split", kernel, truth,
            predicted=co.get("ratio_j"), unit="J", source=note)
    if corun_gpu and len(truths) == 2:
        fig("co-run: GPU dynamic energy against the sum of the two truths", None,
            corun_gpu["board_j"] - corun_gpu["idle_j"], predicted=sum(truths), unit="J",
            source="measured: energy-counter increase less the idle part over the co-run window; "
                   f"unattributed {corun_gpu.get('unattributed_j', float('nan')):.4g} J")
    suite = read_json(os.path.join(work, "suite.out"))
    if suite:
        fig("suite rows", None, suite.get("rows_written"), unit="rows",
            source="warnings: " + ("; ".join(suite.get("warnings") or []) or "none"))
    return figs


def fmt(x, unit=""):
    if x is None:
        return "-"
    if isinstance(x, int):
        return str(x)
    if unit == "s":
        return f"{x * 1e3:.4g} ms"
    return f"{x:.4g}" + (f" {unit}" if unit else "")


def signed(x):
    return "-" if x is None else f"{x:+.1f}"


def cells(values):
    """One Markdown table row; a `|` inside a cell is escaped."""
    return "| " + " | ".join(str(v).replace("|", "\\|").replace("\n", " ") for v in values) + " |"


def markdown(summary):
    lines = ["# gpu-check" + (" (scripted GPU)" if summary["fake"] else ""), ""]
    gpu = summary.get("gpu") or {}
    if gpu:
        lines += ["| GPU fact | value |", "|---|---|"]
        lines += [cells([k, v]) for k, v in gpu.items() if v is not None]
        lines.append("")
    lines += ["| step | status | s | error |", "|---|---|---|---|"]
    for s in summary["steps"]:
        lines.append(cells([s["step"], s["status"], s["seconds"], s["error"] or ""]))
    lines.append("")
    if summary["figures"]:
        lines += ["| figure | kernel | measured | predicted | error % | reference | gap % | target | source |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for f in summary["figures"]:
            lines.append(cells([f["figure"], f["kernel"] or "", fmt(f["measured"], f["unit"]),
                                fmt(f["predicted"], f["unit"]), signed(f["error_pct"]),
                                fmt(f["reference"], f["unit"]), signed(f["gap_pct"]), f["target"] or "",
                                f["source"]]))
        lines.append("")
    ok = sum(1 for s in summary["steps"] if s["status"] == "ok")
    lines.append(f"{ok} of {len(summary['steps'])} steps ok.")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--arch", default="h100")
    ap.add_argument("--fake", default="0")
    a = ap.parse_args()
    summary = {
        "format": "gpu-check/1",
        "fake": a.fake == "1",
        "arch": a.arch,
        "gpu": gpu_facts(a.work),
        "steps": steps_of(a.work),
        "figures": figures_of(a.work, a.arch),
        "doctor": read_json(os.path.join(a.work, "doctor.out")),
        "calibrate": read_json(os.path.join(a.work, "calibrate.out")),
    }
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, sort_keys=False)
        f.write("\n")
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(markdown(summary))


if __name__ == "__main__":
    main()
