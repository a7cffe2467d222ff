//! `gpumodel validate --from`: a GPU's kernel times predicted from another GPU's profiles (counters and
//! measured time), against the measured time scaled by the GPUs' throughput ratio.

mod common;
use common::gpumodel;

fn validate(args: &[&str]) -> std::process::Output {
    gpumodel().arg("validate").args(args).arg("-q").output().unwrap()
}

/// `validate` of the P100's rows from GPU `from`'s rows, with `extra` flags.
fn p100_from(from: &str, extra: &[&str]) -> std::process::Output {
    let data = format!("nvdvfs-{from}");
    let mut args = vec!["--data", "nvdvfs-p100", "--arch", "p100", "--from", &data, "--from-arch", from];
    args.extend_from_slice(extra);
    validate(&args)
}

/// The P100's times from the GTX 1080 Ti's profiles: the timing model on the P100's constants beats the
/// 1080 Ti's measured times scaled by the bottleneck's throughput ratio, and every kernel of the table is
/// scored for both.
#[test]
fn a_gpu_from_another_s_profiles_beats_the_scaled_measured_time() {
    let o =
        p100_from("gtx1080ti", &["--baseline", "scaled", "--baseline", "model-scaled", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kernels"], 30);
    let ours = v["model_mape_pct"].as_f64().unwrap();
    let b = v["baselines"].as_array().unwrap();
    let scaled = b.iter().find(|b| b["name"] == "scaled").unwrap()["mape_pct"].as_f64().unwrap();
    assert!(ours < scaled, "ours {ours}% against scaled {scaled}%");
    assert!(b.iter().any(|b| b["name"] == "model-scaled" && b["mape_pct"].as_f64().unwrap().is_finite()));
    assert!(
        v["method"].as_array().unwrap().iter().any(|m| m.as_str().unwrap().starts_with("profiles from "))
    );
}

/// A baseline that starts from a measured time needs the GPU it was measured on; a file of another problem
/// size (the GTX 980's small workload) is refused with the kernels both files launch alike; a kernel the
/// other GPU lacks is named.
#[test]
fn what_cannot_be_compared_is_refused_in_one_line() {
    let o = validate(&["--data", "nvdvfs-p100", "--arch", "p100", "--baseline", "scaled"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("give --from DATA --from-arch ARCH") && e.lines().count() == 1, "{e}");

    let o = p100_from("gtx980", &[]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("another problem size") && e.contains("histogram"), "{e}");

    let o = p100_from("v100", &[]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("not measured on v100: dxtc"), "{e}");

    let o = validate(&["--data", "nvdvfs-p100", "--arch", "p100", "--from", "nvdvfs-v100"]);
    assert!(!o.status.success());
}
