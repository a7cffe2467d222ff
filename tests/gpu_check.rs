//! `scripts/gpu-check --fake`: the GPU check that runs on real hardware, run here against the scripted GPU
//! (`GPUMODEL_FAKE_GPU=1`) with the stand-ins of `scripts/gpu-check.d/fake` for nvidia-smi, nvcc and ncu,
//! so that the script cannot rot between the rare runs on a GPU. Every step must be in the summary; the
//! steps the scripted GPU can serve must say ok, and the others (the injection library's kernel totals,
//! which need the real CUDA driver, and the scrapes of `serve`, whose scripted node has processes of its
//! own) must say why they did not succeed.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every step of the script, in the order it runs them.
const STEPS: [&str; 17] = [
    "gpu-facts",
    "doctor",
    "build",
    "collect-mem",
    "collect-compute",
    "ncu",
    "import-ncu",
    "predict-mem",
    "predict-compute",
    "kernel-totals",
    "suite",
    "train",
    "power-mem",
    "power-compute",
    "calibrate",
    "serve",
    "corun",
];

/// Steps that need a real GPU (or its driver) even under `--fake`: the injection library's kernel totals,
/// and the scrapes of `serve` (the scripted node's processes are not the program's).
const NEED_A_GPU: [&str; 3] = ["kernel-totals", "serve", "corun"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A bundle as `scripts/gpu-bundle` lays it out, with the test's own debug binary (and the injection
/// library when cargo built it beside the binary).
fn bundle(dir: &Path) -> PathBuf {
    let b = dir.join("bundle");
    std::fs::create_dir_all(&b).unwrap();
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_gpumodel"));
    std::os::unix::fs::symlink(&exe, b.join("gpumodel")).unwrap();
    let inject = exe.with_file_name("libgpumodel_inject.so");
    if inject.is_file() {
        std::os::unix::fs::symlink(&inject, b.join("libgpumodel_inject.so")).unwrap();
    }
    b
}

fn figure<'a>(summary: &'a Value, name: &str, kernel: Option<&str>) -> &'a Value {
    summary["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == name && kernel.is_none_or(|k| f["kernel"] == k))
        .unwrap_or_else(|| panic!("no figure '{name}' ({kernel:?}) in {:#}", summary["figures"]))
}

#[test]
fn the_gpu_check_runs_every_step_on_the_scripted_gpu_and_summarizes_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = Command::new(repo().join("scripts/gpu-check"))
        .args(["--fake", "--bundle"])
        .arg(bundle(dir.path()))
        .arg("--out")
        .arg(&out)
        .args(["--seconds", "0.3", "--suite-min-seconds", "0.02", "--budget", "300"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let log = std::fs::read_to_string(out.join("log.txt")).unwrap_or_default();
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json"))
            .unwrap_or_else(|e| panic!("summary.json: {e}\n{stderr}")),
    )
    .unwrap();
    assert_eq!(summary["fake"], true);

    // Every step, in order; ok where the scripted GPU serves it, a reason where it does not.
    let steps = summary["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(names, STEPS, "{log}");
    for s in steps {
        let (name, status) = (s["step"].as_str().unwrap(), s["status"].as_str().unwrap());
        if NEED_A_GPU.contains(&name) {
            assert!(
                status == "ok" || s["error"].as_str().is_some_and(|e| !e.is_empty()),
                "{name} did not succeed and does not say why: {s}"
            );
        } else {
            assert_eq!(status, "ok", "{name}: {}\n{log}", s["error"]);
        }
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for name in STEPS {
        assert!(md.contains(&format!("| {name} |")), "summary.md lacks {name}:\n{md}");
    }
    assert_eq!(summary["gpu"]["name"], "NVIDIA H200 (stand-in)");
    assert_eq!(summary["gpu"]["mig_mode"], "Disabled");

    // The figures each step exists for.
    for kernel in ["stream_triad", "fma_chain"] {
        let k = Some(kernel);
        assert!(figure(&summary, "power sample rate", k)["measured"].as_f64().unwrap() > 0.0);
        let energy = figure(&summary, "energy counter vs integral of sampled power", k);
        // Present, not bounded: on the scripted GPU the gap measures this host's scheduling, not a GPU.
        assert!(energy["gap_pct"].as_f64().is_some_and(f64::is_finite), "{energy}");
        assert!(figure(&summary, "PM-sampling counters present", k)["measured"].as_u64().unwrap() > 0);
        for name in ["time per launch (timing model)", "time per launch (Nsight Compute)"] {
            let t = figure(&summary, name, k);
            assert!(t["measured"].as_f64().unwrap() > 0.0 && t["predicted"].as_f64().unwrap() > 0.0, "{t}");
        }
        let p = figure(&summary, "power (model trained on this GPU's suite)", k);
        assert!(p["measured"].as_f64().unwrap() > 0.0 && p["predicted"].as_f64().is_some(), "{p}");
    }
    let cyc_load = figure(&summary, "calibrated cyc_load", None);
    assert!(
        cyc_load["measured"].as_f64().is_some() && cyc_load["reference"].as_f64().is_some(),
        "{cyc_load}"
    );

    // At most 8 files come back from a GPU machine.
    let files: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    assert!(files.len() <= 8, "{files:?}");
    for f in ["summary.json", "summary.md", "log.txt", "suite.csv", "ncu.csv", "calibrated.toml"] {
        assert!(files.iter().any(|x| x == f), "{f} missing from {files:?}");
    }

    // The suite ran at the current clocks: no clock flag, so no row at a pair it set.
    let suite = std::fs::read_to_string(out.join("suite.csv")).unwrap();
    let mut rows = csv::Reader::from_reader(suite.as_bytes());
    let clocks = rows.headers().unwrap().iter().position(|h| h == "clocks").unwrap();
    let labels: Vec<String> = rows.records().map(|r| r.unwrap()[clocks].to_string()).collect();
    assert!(!labels.is_empty() && labels.iter().all(|c| c == "current"), "{labels:?}");
}

/// The script is read-only on a shared GPU: nvidia-smi is only ever asked `-q`, and neither the suite nor
/// calibrate is given clocks to set (`--clocks`, where given, is `current`).
#[test]
fn the_gpu_check_never_asks_for_a_settings_change() {
    let script = std::fs::read_to_string(repo().join("scripts/gpu-check")).unwrap();
    for (i, line) in script.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("");
        if let Some(at) = code.find("nvidia-smi") {
            let rest = code[at + "nvidia-smi".len()..].trim();
            assert!(rest.is_empty() || rest == "-q", "line {}: nvidia-smi {rest}", i + 1);
        }
        // The suite and calibrate take the same flag: only `current` sets nothing.
        for (at, _) in code.match_indices("--clocks") {
            assert!(code[at..].starts_with("--clocks current"), "line {}: {line}", i + 1);
        }
    }
}

#[test]
fn the_gpu_check_says_what_to_do_with_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(repo().join("scripts/gpu-check")).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        err
    };
    assert!(run(&["--out", "x"]).contains("--bundle DIR"));
    let empty = dir.path().to_str().unwrap();
    assert!(run(&["--bundle", empty, "--out", "x"]).contains("scripts/gpu-bundle"));
    assert!(run(&["--frobnicate"]).contains("unknown argument"));
}

/// The co-run step's arithmetic, on stand-ins whose answers are known: a program that reports a launch
/// time twice as long together as alone (each held the GPU half the time), and a `serve` that gives the
/// board 600 J of dynamic energy with the memory kernel alone, 900 J with the compute kernel alone, and
/// splits the co-run's 750 J 280/470 (model) or 150/600 (ratio). The truths are then 0.5 × 600 = 300 J
/// and 0.5 × 900 = 450 J, and the summary scores both splits against them.
#[test]
fn the_co_run_step_scores_both_splits_against_the_time_sliced_truth() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    };
    // The program: invocations 1 and 2 run alone, 3 and 4 together; each leaves its PID and kind in
    // running/ while it runs. Each call adds a file of its own to calls/ and counts them, so two calls that
    // start at once both count at least 3 (a shared counter file rewritten by both could be read empty).
    let kernels = script(
        "kernels",
        &format!(
            r#"#!/usr/bin/env bash
dir={d}
mkdir -p "$dir/calls"; mktemp "$dir/calls/XXXXXX" > /dev/null; n=$(ls "$dir/calls" | wc -l)
mkdir -p "$dir/running"; echo "$1" > "$dir/running/$$"
sleep "$2"; rm -f "$dir/running/$$"
case "$1" in mem) name=stream_triad; t=0.0105 ;; *) name=fma_chain; t=0.0168 ;; esac
[ "$n" -gt 2 ] && t=$(awk -v t="$t" 'BEGIN {{ print 2 * t }}')
echo "kernel $name launches 100 mean_launch_s $t"
"#,
            d = d.display()
        ),
    );
    let gpumodel = script(
        "gpumodel",
        &format!(
            r#"#!/usr/bin/env bash
dir={d}
ratio=0; for a in "$@"; do [ "$a" = ratio ] && ratio=1; done
kinds=$(cat "$dir"/running/* 2>/dev/null | sort | tr '\n' ' ')
case "$kinds" in "compute mem ") board=1050 ;; "mem ") board=900 ;; *) board=1200 ;; esac
l='gpu="0",gpu_uuid="GPU-0",gpu_name="stand-in"'
echo "gpumodel_gpu_energy_joules_total{{$l}} $board"
echo "gpumodel_gpu_idle_energy_joules_total{{$l}} 300"
echo "gpumodel_gpu_unattributed_energy_joules_total{{$l}} 0"
for f in "$dir"/running/*; do
    [ -e "$f" ] || continue
    case "$(cat "$f")/$ratio" in mem/0) e=280 ;; mem/1) e=150 ;; compute/0) e=470 ;; *) e=600 ;; esac
    echo "gpumodel_process_energy_joules_total{{$l,pid=\"$(basename "$f")\",comm=\"kernels\",component=\"dynamic\"}} $e"
done
"#,
            d = d.display()
        ),
    );
    let work = d.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = Command::new(repo().join("scripts/gpu-check.d/corun-check"))
        .arg(&gpumodel)
        .arg(&kernels)
        .arg("1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(work.join("corun.out"), &o.stdout).unwrap();
    std::fs::write(work.join("steps.tsv"), "corun\t0\t12\t\n").unwrap();
    let s = Command::new("python3")
        .arg(repo().join("scripts/gpu-check.d/summarize.py"))
        .arg("--work")
        .arg(&work)
        .arg("--out")
        .arg(&work)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("summary.json")).unwrap()).unwrap();
    for (kernel, truth, model, ratio) in
        [("stream_triad", 300.0, 280.0, 150.0), ("fma_chain", 450.0, 470.0, 600.0)]
    {
        for (split, value) in [("model split", model), ("SM-utilization ratio split", ratio)] {
            let f = figure(&summary, &format!("co-run: process dynamic energy, {split}"), Some(kernel));
            let measured = f["measured"].as_f64().unwrap();
            assert!((measured - truth).abs() < 1e-6, "{kernel} {split}: {f}");
            assert_eq!(f["predicted"].as_f64(), Some(value), "{f}");
            let err = f["error_pct"].as_f64().unwrap();
            assert!((err - 100.0 * (value - truth) / truth).abs() < 1e-6, "{f}");
        }
    }
    let gpu = figure(&summary, "co-run: GPU dynamic energy against the sum of the two truths", None);
    assert!(
        (gpu["measured"].as_f64().unwrap() - 750.0).abs() < 1e-6
            && gpu["error_pct"].as_f64().unwrap().abs() < 1e-6
    );
}
