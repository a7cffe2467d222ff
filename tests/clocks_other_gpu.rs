//! `predict --profile` on a GPU without a shipped clock model, as a new user runs it: the real H100 and V100
//! `dcgmi dmon` logs of ../shared/profiles/dcgm, with and without naming the GPU and its clocks.

use std::path::PathBuf;

mod common;
use common::gpumodel;

fn shared(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared").join(rel);
    assert!(p.exists(), "{} is missing: these tests read the shared public files", p.display());
    p
}

fn h100() -> PathBuf {
    shared("profiles/dcgm/dcgmi-dmon_GH100-baseline-LSTM-1785-0.txt")
}

fn v100() -> PathBuf {
    shared("profiles/dcgm/dcgmi-dmon_GV100-baseline-LSTM-1380-0.txt")
}

fn predict(file: &PathBuf, args: &[&str]) -> std::process::Output {
    gpumodel().args(["predict", "--profile"]).arg(file).args(args).output().unwrap()
}

fn json(file: &PathBuf, args: &[&str]) -> serde_json::Value {
    let o = predict(file, &[args, &["--format", "json"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The log's sample lines whose SMACT cell (the second field after "GPU 0") is a number above 0, read
/// here by splitting on whitespace, and their mean POWER (the 17th field), independent of the reader.
fn active_samples(file: &PathBuf) -> (usize, f64) {
    let text = std::fs::read_to_string(file).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|t| t.first() == Some(&"GPU") && t.len() == 19)
        .filter(|t| t[2..10].iter().all(|c| *c != "N/A"))
        .filter(|t| t[2].parse::<f64>().unwrap() > 0.0 || t[3].parse::<f64>().unwrap() > 0.0)
        .collect();
    let power = rows.iter().map(|t| t[16].parse::<f64>().unwrap()).sum::<f64>() / rows.len() as f64;
    (rows.len(), power)
}

#[test]
fn the_h100_log_is_a_job_even_though_its_gract_stays_zero() {
    let o = gpumodel().args(["import", "dcgm"]).arg(h100()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| row[header.iter().position(|h| *h == n).unwrap()];
    let (n, power) = active_samples(&h100());
    assert!(n > 10, "the log has SM activity in {n} samples");
    assert_eq!(col("samples"), n.to_string());
    assert_eq!(col("core_mhz"), "1785", "the log's SACLK");
    // The job's power is the energy counter's (TOTEC) rise over its rows per second, which the POWER
    // readings sample: the two agree closely on this log.
    assert!((col("power_w").parse::<f64>().unwrap() / power - 1.0).abs() < 0.01, "{text}");
    assert_eq!(col("GRACT"), "0");
}

#[test]
fn without_its_gpu_named_an_h100_log_says_to_name_it() {
    let o = predict(&h100(), &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("1785 MHz") && err.contains("--gpu") && err.contains("V100"), "{err}");
}

#[test]
fn an_h100_without_its_clocks_gets_its_measured_clock_and_what_is_missing() {
    let v = json(&h100(), &["--gpu", "H100"]);
    assert!(v["model_gpu"].is_null(), "no model answers: {v}");
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 1);
    assert_eq!(pts[0]["core_mhz"].as_f64(), Some(1785.0));
    assert_eq!(pts[0]["power_w"], v["profile"]["power_w"]);
    let caveats = v["caveats"].to_string();
    assert!(caveats.contains("models/arch/h100.toml") && caveats.contains("--core-clocks"), "{caveats}");
    // The table marks no optimum on a single measured clock.
    let o = predict(&h100(), &["--gpu", "H100"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("E, ED") && text.contains("no sweep"), "{text}");
}

#[test]
fn an_h100_with_its_clocks_gets_an_estimate_that_says_so() {
    let v = json(&h100(), &["--gpu", "H100", "--core-clocks", "1980,1785,1395,1005"]);
    let basis = v["basis"].as_str().unwrap();
    assert!(
        basis.contains("estimate") && basis.contains("V100") && basis.contains("not measured"),
        "{basis}"
    );
    let pts = v["points"].as_array().unwrap();
    let mhz: Vec<f64> = pts.iter().map(|p| p["core_mhz"].as_f64().unwrap()).collect();
    assert_eq!(mhz, vec![1005.0, 1395.0, 1785.0, 1980.0]);
    // Anchored on the measured run: the profiled clock gives back its own time and power.
    let own = &pts[2];
    assert_eq!(own["time_s"], v["profile"]["time_s"]);
    assert!((own["power_w"].as_f64().unwrap() - v["profile"]["power_w"].as_f64().unwrap()).abs() < 1e-9);
    let t: Vec<f64> = pts.iter().map(|p| p["time_s"].as_f64().unwrap()).collect();
    let w: Vec<f64> = pts.iter().map(|p| p["power_w"].as_f64().unwrap()).collect();
    assert!(t.windows(2).all(|x| x[0] >= x[1]) && w.windows(2).all(|x| x[0] <= x[1]), "{t:?} {w:?}");
}

#[test]
fn a_model_of_another_gpu_given_with_clock_model_is_refused() {
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/dvfs-trained/v100.json");
    let o = gpumodel()
        .args(["predict", "--profile"])
        .arg(h100())
        .args(["--gpu", "H100", "--clock-model"])
        .arg(&model)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("H100") && err.contains("V100") && err.contains("--clock-model"), "{err}");
}

/// `--model` is a power model's flag: with `--profile` it is refused in one line that names the clock
/// model's own flag, before any file is read; so are the other flags of a kernel prediction.
#[test]
fn kernel_flags_with_a_profile_are_refused_in_one_line() {
    for extra in
        [&["--model", "x.json"][..], &["--kernel", "reduction"], &["--sweep", "warps"], &["--warps", "8"]]
    {
        let o = gpumodel().args(["predict", "--profile"]).arg(h100()).args(extra).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(extra[0]) && err.contains("--profile"), "{err}");
    }
    let o =
        gpumodel().args(["predict", "--profile"]).arg(h100()).args(["--model", "x.json"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--clock-model"));
}

#[test]
fn the_v100_log_gets_the_shipped_model_with_or_without_its_gpu_named() {
    let named = json(&v100(), &["--gpu", "Tesla V100-SXM2-16GB"]);
    assert!(named["basis"].as_str().unwrap().contains("shipped clock model"), "{named}");
    assert_eq!(named["caveats"].as_array().unwrap().len(), 0);
    let unnamed = json(&v100(), &[]);
    assert_eq!(unnamed["points"], named["points"]);
    assert!(unnamed["caveats"].to_string().contains("does not name its GPU"), "{unnamed}");
    let (n, _) = active_samples(&v100());
    assert_eq!(unnamed["profile"]["samples"].as_u64(), Some(n as u64));
}
