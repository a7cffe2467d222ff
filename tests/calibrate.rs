//! `gpumodel calibrate` driven through the real binary: the no-GPU error on this machine, and a profile
//! from the scripted GPU (`GPUMODEL_FAKE_GPU=1`) that the models crate's arch loader accepts.

use assert_cmd::Command;
use gpumodel_models::arch::ArchProfile;
use std::path::Path;

fn gpumodel() -> Command {
    let mut c = Command::cargo_bin("gpumodel").unwrap();
    c.env_remove("GPUMODEL_FAKE_GPU");
    c
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn without_a_gpu_calibrate_fails_with_one_clear_line() {
    if Path::new("/proc/driver/nvidia").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mine.toml");
    let o = gpumodel().args(["calibrate", "--out"]).arg(&out).output().unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("gpumodel: error: no NVIDIA driver"), "{err}");
    assert!(!out.exists());
}

#[test]
fn the_fake_gpu_profile_loads_as_an_architecture() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mine.toml");
    let o = gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["calibrate", "--name", "mine", "--repeats", "5", "--format", "json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let est: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let fields: Vec<&str> =
        est["measured"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(
        fields,
        [
            "cyc_load",
            "cyc_store",
            "cyc_s",
            "cyc_t",
            "cyc_r",
            "alu_latency",
            "in_warp_delay",
            "out_warp_delay",
            "l2_bandwidth_gbs"
        ]
    );
    let a = ArchProfile::resolve(out.to_str().unwrap()).unwrap();
    assert_eq!(a.name, "mine");
    // The fake GPU's DRAM latency is 480 cycles (src/cli/calibrate.rs); the estimate is within its ±2 % noise.
    assert!((a.cyc_load.value - 480.0).abs() < 15.0, "{}", a.cyc_load.value);
    assert!(a.source_of(&a.out_warp_delay).contains("median of 5 repetitions"));

    // A second run does not overwrite the profile without --force.
    let o = gpumodel().env("GPUMODEL_FAKE_GPU", "1").args(["calibrate", "--out"]).arg(&out).output().unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("exists: choose another --out or pass --force"), "{}", stderr(&o));
    assert_eq!(ArchProfile::from_file(&out).unwrap().name, "mine");
}

#[test]
fn bad_options_are_one_line_errors() {
    for (args, want) in [
        (vec!["--repeats", "0"], "--repeats 0"),
        (vec!["--steps", "2"], "--steps 2"),
        (vec!["--name", "my gpu"], "--name 'my gpu'"),
    ] {
        let o = gpumodel().env("GPUMODEL_FAKE_GPU", "1").arg("calibrate").args(&args).output().unwrap();
        assert!(!o.status.success());
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// What users see from `calibrate` on the scripted GPU, in every format: which constants were measured and
/// which are looked up, and what the profile leaves out (reviewed by hand when it changes). The fake GPU's
/// noise comes from a fixed seed, so the figures are reproducible.
#[test]
fn calibrate_output_snapshots() {
    for (format, name) in [
        ("table", "calibrate_table"),
        ("csv", "calibrate_csv"),
        ("markdown", "calibrate_markdown"),
        ("json", "calibrate_json"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = gpumodel()
            .current_dir(dir.path())
            .env("GPUMODEL_FAKE_GPU", "1")
            .args(["calibrate", "--name", "mine", "--repeats", "3", "--out", "mine.toml", "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!((v["command"].as_str(), v["format_version"].as_u64()), (Some("calibrate"), Some(2)));
            insta::assert_json_snapshot!(name, v);
        } else {
            insta::assert_snapshot!(name, text);
        }
    }
}

/// The output says which constants are measured and which are looked up, and that the DVFS memory
/// constants are neither measured nor written.
#[test]
fn calibrate_says_what_is_measured_and_what_is_looked_up() {
    let dir = tempfile::tempdir().unwrap();
    let o = gpumodel()
        .current_dir(dir.path())
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["calibrate", "--repeats", "3", "--out", "x.toml", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let measured: Vec<&str> =
        v["measured"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    let looked_up: Vec<&str> =
        v["looked_up"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert!(measured.contains(&"cyc_load") && !looked_up.contains(&"cyc_load"));
    assert!(looked_up.contains(&"sm_count"), "{looked_up:?}");
    assert!(v["not_measured"].to_string().contains("dvfs_memory"), "{}", v["not_measured"]);
}
