//! `scripts/gpu-check --fake`: the GPU check that runs on real hardware, run here against the scripted GPU
//! (`GPUMODEL_FAKE_GPU=1`) with the stand-ins of `scripts/gpu-check.d/fake` for nvidia-smi, nvcc and ncu,
//! so that the script cannot rot between the rare runs on a GPU. Every step must be in the summary; the
//! steps the scripted GPU can serve must say ok, and the others (the injection library's kernel totals,
//! which need the real CUDA driver, and the scrape of `serve`, whose scripted node has processes of its
//! own) must say why they did not succeed.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every step of the script, in the order it runs them.
const STEPS: [&str; 16] = [
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
];

/// Steps that need a real GPU (or its driver) even under `--fake`: the injection library's kernel totals,
/// and the scrape of `serve` (the scripted node's processes are not the program's).
const NEED_A_GPU: [&str; 2] = ["kernel-totals", "serve"];

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
