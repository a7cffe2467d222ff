//! Utilization profiles through the real binary: `import dcgm` on real `dcgmi dmon` logs
//! (../shared/profiles/dcgm), `predict --profile` on the shipped example, and `train` on the V100 DCGM
//! datasets, scored beside DSO's published parameters (../shared/papers/dso_published).

use std::path::PathBuf;

mod common;
use common::{data_dir, gpumodel};

fn shared(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared").join(rel);
    assert!(p.exists(), "{} is missing: these tests read the shared public files", p.display());
    p
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/examples/dcgm/v100-job.dmon.txt")
}

#[test]
fn a_real_v100_dmon_log_imports_to_one_profile_of_its_active_seconds() {
    let out = gpumodel()
        .args(["import", "dcgm"])
        .arg(shared("profiles/dcgm/dcgmi-dmon_GV100-baseline-LSTM-1380-0.txt"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(lines.next().is_none(), "one GPU, one profile: {text}");
    let col = |n: &str| row[header.iter().position(|h| *h == n).unwrap()];
    // The log's SACLK column reads 1230 MHz; power is in watts (idle about 24 W, busy more).
    assert_eq!(col("core_mhz"), "1230");
    let power: f64 = col("power_w").parse().unwrap();
    assert!(power > 24.0 && power < 300.0, "{power}");
    let samples: usize = col("samples").parse().unwrap();
    let total = std::fs::read_to_string(shared("profiles/dcgm/dcgmi-dmon_GV100-baseline-LSTM-1380-0.txt"))
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with("GPU"))
        .count();
    assert!(samples > 0 && samples < total, "only the active samples ({samples} of {total}) are the job");
    // The log was recorded about 50 ms apart, not at dmon's default 1 s: its energy counter (TOTEC, mJ)
    // rising over the rows divided by their summed POWER is the time between rows.
    let (mut rise_mj, mut power_sum) = (0.0, 0.0);
    let text =
        std::fs::read_to_string(shared("profiles/dcgm/dcgmi-dmon_GV100-baseline-LSTM-1380-0.txt")).unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("GPU"))
        .map(|l| l.split_whitespace().skip(16).take(2).map(|c| c.parse().unwrap()).collect())
        .collect();
    for w in rows.windows(2) {
        rise_mj += w[1][1] - w[0][1];
        power_sum += w[1][0];
    }
    let dt = rise_mj / 1000.0 / power_sum;
    let time: f64 = col("time_s").parse().unwrap();
    assert!((time / (samples as f64 * dt) - 1.0).abs() < 1e-6, "{time} s for {samples} samples of {dt} s");
}

#[test]
fn percentages_instead_of_ratios_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("pct.txt");
    std::fs::write(&src, "# Entity GRACT SMACT SMCLK\n Id\n GPU 0 99.0 93.5 1380\n").unwrap();
    let out = dir.path().join("p.csv");
    std::fs::write(&out, "kept").unwrap();
    let o = gpumodel().args(["import", "dcgm"]).arg(&src).arg("--out").arg(&out).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("outside [0, 1]") && err.trim().lines().count() == 1, "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept", "an earlier file is not touched");
}

#[test]
fn the_example_profile_gives_a_sweep_with_its_optima_and_a_bounded_pick() {
    let o = gpumodel()
        .args(["predict", "--profile"])
        .arg(example())
        .args(["--gpu", "Tesla V100", "--max-slowdown", "5%", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pts = v["points"].as_array().unwrap();
    assert!(pts.len() >= 5, "{v}");
    // The profiled clock reproduces the profile's own time and power.
    let at = pts.iter().find(|p| p["core_mhz"] == 1380.0).unwrap();
    assert!((at["time_s"].as_f64().unwrap() - 10.0).abs() < 1e-9, "ten active seconds");
    let p_mean = v["profile"]["power_w"].as_f64().unwrap();
    assert!((at["power_w"].as_f64().unwrap() - p_mean).abs() < 1e-9);
    // Lower clocks draw less power; the pick within 5% is at most 5% slower than the fastest.
    let powers: Vec<f64> = pts.iter().map(|p| p["power_w"].as_f64().unwrap()).collect();
    assert!(powers.windows(2).all(|w| w[0] <= w[1] + 1e-9), "{powers:?}");
    let (b, i) = (
        v["optima"]["within_slowdown"][0].as_f64().unwrap(),
        v["optima"]["within_slowdown"][1].as_u64().unwrap(),
    );
    assert_eq!(b, 0.05);
    assert!(pts[i as usize]["slowdown"].as_f64().unwrap() <= 1.05 + 1e-12);
    // The shipped model's recommendations per objective come with the sweep.
    assert_eq!(v["policy"].as_array().unwrap().len(), 3, "{v}");
    let e = |k: &str| pts[v["optima"][k].as_u64().unwrap() as usize]["energy_j"].as_f64().unwrap();
    let emin = pts.iter().map(|p| p["energy_j"].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
    assert_eq!(e("energy"), emin);
}

#[test]
fn training_on_the_v100_microbenchmarks_scores_dso_as_its_authors_did() {
    let dir = tempfile::tempdir().unwrap();
    let peer = shared("papers/dso_published/v100-dvfs-real-params-dso.csv");
    let _ = data_dir();
    let o = gpumodel()
        .args(["train", "--data", "nvdvfs-dcgm-v100-micro", "--test", "nvdvfs-dcgm-v100-real"])
        .args(["--min-core-mhz", "700", "--format", "json", "--out-dir"])
        .arg(dir.path())
        .arg("--peer-params")
        .arg(&peer)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ev = &v["evaluation"];
    assert_eq!(ev["test_jobs"], 20);
    let methods = ev["methods"].as_array().unwrap();
    let row =
        |prefix: &str| methods.iter().find(|m| m["method"].as_str().unwrap().starts_with(prefix)).unwrap();
    // The authors' published figures (arXiv:2407.13096 parameters, their protocol): time 4.78%, power
    // 6.38%, energy regret median 4.44% / mean 4.10% — the scoring must reproduce them.
    let dso = row("DSO published");
    assert!((dso["time_mape"].as_f64().unwrap() - 4.78).abs() < 0.005, "{dso}");
    assert!((dso["power_mape"].as_f64().unwrap() - 6.38).abs() < 0.005, "{dso}");
    assert!((dso["energy_regret"][0].as_f64().unwrap() - 4.44).abs() < 0.005, "{dso}");
    assert!((dso["energy_regret"][1].as_f64().unwrap() - 4.10).abs() < 0.005, "{dso}");
    // The honest fixed clock is chosen on the training jobs: it is a measured clock of the data.
    let fixed = row("fixed clock");
    assert!(fixed["time_mape"].is_null());
    assert!(row("gpumodel clock model")["time_mape"].as_f64().unwrap() > 0.0);
    // The artifact written reads back as a clock model of the training data's GPU and clocks.
    let art: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("nvdvfs-dcgm-v100-micro-clock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(art["ref_core_mhz"], 1380.0);
    let lv: Vec<f64> =
        art["levels"].as_array().unwrap().iter().map(|l| l["core_mhz"].as_f64().unwrap()).collect();
    assert!(lv.iter().all(|m| *m > 700.0), "{lv:?}");
    // Each objective's recommendation is decided on the 138 training jobs, one program held out at a time;
    // the row that follows it takes each regret from the model or the fixed clock, as decided.
    let policy = art["policy"].as_array().unwrap();
    let objectives: Vec<&str> = policy.iter().map(|o| o["objective"].as_str().unwrap()).collect();
    assert_eq!(objectives, ["E", "ED", "ED2"]);
    let ours = row("gpumodel clock model");
    let chosen = row("gpumodel, each objective's pick");
    for (o, key) in policy.iter().zip(["energy_regret", "ed_regret", "ed2_regret"]) {
        assert_eq!(o["held_out_jobs"], 138);
        let (m, f) = (o["model_regret_pct"].as_f64().unwrap(), o["fixed_regret_pct"].as_f64().unwrap());
        assert_eq!(o["fixed_mhz"].is_null(), m <= f, "{o}");
        let from = if o["fixed_mhz"].is_null() { ours } else { fixed };
        assert_eq!(chosen[key], from[key], "{key}");
    }
}

/// A clock model trained from a DCGM-form file named by a relative path goes into --out-dir under the
/// file's own name (not beside the input, not under the relative path); flags of the power model are
/// refused in one line before any fit.
#[test]
fn a_clock_model_from_a_relative_file_lands_in_out_dir_and_power_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let src = data_dir().join("nvdvfs-dcgm/v100-dvfs-microbenchmark-profile.csv");
    std::fs::copy(&src, dir.path().join("data/micro.csv")).unwrap();
    let o = gpumodel()
        .current_dir(dir.path())
        .args([
            "train",
            "--data",
            "data/micro.csv",
            "--no-test",
            "--min-core-mhz",
            "700",
            "--out-dir",
            "models",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.path().join("models/micro-clock.json").is_file());
    assert!(!dir.path().join("data/micro.csv-clock.json").exists());
    let o = gpumodel()
        .current_dir(dir.path())
        .args(["train", "--data", "data/micro.csv", "--no-test", "--hidden", "8,8", "--install"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--hidden") && err.contains("--install") && err.contains("utilization-profile"),
        "{err}"
    );
    // And the clock model's own flags on power-model data.
    let o = gpumodel().args(["train", "--min-core-mhz", "700"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--min-core-mhz"));
}
