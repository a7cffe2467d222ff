//! `gpumodel calibrate` driven through the real binary: the no-GPU error on this machine, a profile from
//! the scripted GPU (`GPUMODEL_FAKE_GPU=1`) that the models crate's arch loader and `predict --arch` accept,
//! the DVFS sweep over clock pairs, and its bad input (`--clocks`, clocks that need root).

use assert_cmd::Command;
use gpumodel_collect::calibrate::TrueConstants;
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
            "l2_bandwidth_gbs",
            "shared_bytes_per_cycle",
            "cost_fp32",
            "cost_fp64",
            "cost_fp16",
            "cost_conversion64",
            "cost_int",
            "cost_sfu"
        ]
    );
    let a = ArchProfile::resolve(out.to_str().unwrap()).unwrap();
    assert_eq!(a.name, "mine");
    // The fake GPU's DRAM latency is 480 cycles (src/cli/calibrate.rs); the estimate is within its ±2 % noise.
    assert!((a.cyc_load.value - 480.0).abs() < 15.0, "{}", a.cyc_load.value);
    assert!(a.source_of(&a.out_warp_delay).contains("median of 5 repetitions"));
    // The throughput constants are in the profile, measured (not the a100 reference's), with the fake GPU's
    // true rates: 128 shared bytes per cycle; 64 FP32, 32 FP64, 256 FP16 (half2 counting two), 16
    // conversion, 64 integer and 16 special-function results per clock per SM, i.e. 0.5, 1, 0.25, 2, 0.5
    // and 2 cycles per warp instruction (the last two equal the Guide's, so the source is what tells).
    let t = TrueConstants::AMPERE_LIKE;
    for (field, v, want) in [
        ("shared_bytes_per_cycle", a.shared_bytes_per_cycle.as_ref(), t.shared_bytes_per_cycle),
        ("cost_fp32", Some(&a.cost_fp32), 32.0 / t.fp32_per_clock),
        ("cost_fp64", Some(&a.cost_fp64), 32.0 / t.fp64_per_clock),
        ("cost_fp16", a.cost_fp16.as_ref(), 64.0 / t.fp16_per_clock),
        ("cost_conversion64", a.cost_conversion64.as_ref(), 32.0 / t.conversion64_per_clock),
        ("cost_int", Some(&a.cost_int), 32.0 / t.int_per_clock),
        ("cost_sfu", Some(&a.cost_sfu), 32.0 / t.sfu_per_clock),
    ] {
        let v = v.unwrap_or_else(|| panic!("{field} missing from the profile"));
        assert!((v.value - want).abs() / want < 0.03, "{field}: {} for true {want}", v.value);
        let src = a.source_of(v);
        assert!(
            src.starts_with("measured on this GPU (") && src.contains("median of 5 repetitions"),
            "{src}"
        );
    }

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
/// which are looked up, and what the profile leaves out (read by hand when it changes). The fake GPU's
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
            .args(["calibrate", "--name", "mine", "--repeats", "9", "--out", "mine.toml", "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!((v["command"].as_str(), v["format_version"].as_u64()), (Some("calibrate"), Some(3)));
            insta::assert_json_snapshot!(name, v);
        } else {
            insta::assert_snapshot!(name, text);
        }
    }
}

/// At the current clocks only, the table says the DRAM fits were rejected and why (what users see when
/// they cannot set clocks).
#[test]
fn calibrate_current_clocks_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let o = gpumodel()
        .current_dir(dir.path())
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["calibrate", "--name", "mine", "--repeats", "3", "--out", "mine.toml", "--clocks", "current"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("calibrate_current_table", String::from_utf8_lossy(&o.stdout).into_owned());
}

fn fake_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let o = gpumodel()
        .current_dir(dir)
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["calibrate", "--out", "x.toml", "--force", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The output says which constants are measured (at the current clocks, and the DVFS ones at which clock
/// pairs) and which are looked up; with the default `auto` pairs every DVFS constant is fitted and written.
#[test]
fn calibrate_says_what_is_measured_at_which_clock_pairs_and_what_is_looked_up() {
    let dir = tempfile::tempdir().unwrap();
    let v = fake_json(dir.path(), &["--repeats", "9"]);
    let names = |key: &str, field: &str| -> Vec<String> {
        v[key].as_array().unwrap().iter().map(|e| e[field].as_str().unwrap().to_string()).collect()
    };
    let (measured, looked_up) = (names("measured", "field"), names("looked_up", "field"));
    assert!(measured.contains(&"cyc_load".into()) && !looked_up.contains(&"cyc_load".into()));
    assert!(looked_up.contains(&"sm_count".into()), "{looked_up:?}");
    // The integer and special-function costs are measured now, no longer the Guide's looked-up rates.
    for f in ["cost_int", "cost_sfu"] {
        assert!(measured.contains(&f.into()) && !looked_up.contains(&f.into()), "{f}: {looked_up:?}");
    }
    assert_eq!(
        names("dvfs_constants", "field"),
        [
            "l2_dram_bytes_per_core_cycle",
            "dvfs_memory.l2_latency",
            "dvfs_memory.l2_delay",
            "dvfs_memory.latency_a",
            "dvfs_memory.latency_b",
            "dvfs_memory.delay_a",
            "dvfs_memory.delay_b"
        ]
    );
    assert!(looked_up.iter().all(|f| !f.contains("dvfs") && !f.contains("l2_dram")), "{looked_up:?}");
    let pairs = v["clock_pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 12);
    assert!(pairs.iter().all(|p| p["set_by_calibrate"] == true));
    assert_eq!(v["not_measured"].as_array().unwrap().len(), 0, "{}", v["not_measured"]);
    for f in v["fits"].as_array().unwrap() {
        assert!(f["r2"].as_f64().unwrap() > 0.5, "{f}");
    }
    // The profile carries them, and `predict --arch FILE` runs on it.
    let a = ArchProfile::from_file(&dir.path().join("x.toml")).unwrap();
    assert!(a.dvfs_memory.is_some() && a.l2_dram_bytes_per_core_cycle.is_some());
    let o = gpumodel().current_dir(dir.path()).args(["predict", "--arch", "x.toml"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(fake) at 1410 / 1215 MHz"));
    // …and uses the measured issue costs: the same profile with the measured cost_fp32 made 8 times larger
    // predicts a much longer compute time for matrixMul (FP32-heavy).
    let compute_s = |arch: &str| -> f64 {
        let o = gpumodel()
            .current_dir(dir.path())
            .args(["predict", "--arch", arch, "--kernel", "matrixmul", "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let parts = v["prediction"]["detail"]["components"].as_array().unwrap().clone();
        parts.iter().find(|c| c["name"] == "compute").and_then(|c| c["time_s"].as_f64()).unwrap()
    };
    let text = std::fs::read_to_string(dir.path().join("x.toml")).unwrap();
    let slow = text
        .lines()
        .map(|l| match l.strip_prefix("cost_fp32 = { value = ") {
            Some(rest) => {
                let (v, tail) = rest.split_once(',').unwrap();
                format!("cost_fp32 = {{ value = {}, {tail}", 8.0 * v.parse::<f64>().unwrap())
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(slow, text.trim_end());
    std::fs::write(dir.path().join("slow.toml"), slow).unwrap();
    let (measured, slower) = (compute_s("x.toml"), compute_s("slow.toml"));
    assert!(slower > 2.0 * measured, "compute {measured} s with the measured cost_fp32, {slower} s with 8x");

    // At the current clocks only: one row, the DRAM fits rejected with the reason, no [dvfs_memory].
    let v = fake_json(dir.path(), &["--repeats", "3", "--clocks", "current"]);
    assert_eq!(v["clock_pairs"].as_array().unwrap().len(), 1);
    let not = v["not_measured"].to_string();
    assert!(not.contains("dvfs_memory.latency_a") && not.contains("needs 3 distinct"), "{not}");
    let a = ArchProfile::from_file(&dir.path().join("x.toml")).unwrap();
    assert!(a.dvfs_memory.is_none());
}

/// Bad `--clocks`, a pair the GPU does not support, and clocks that need root: one line each, saying
/// what to do, and no profile written.
#[test]
fn bad_clock_pairs_and_clocks_that_need_root_are_one_line_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.toml");
    for (args, env, want) in [
        (vec!["--clocks", "1410"], None, "'1410' is not CORE:MEM in MHz"),
        (vec!["--clocks", "fast"], None, "use auto, current or a list"),
        (vec!["--clocks", "1400:1215"], None, "does not support a core clock of 1400 MHz"),
        (vec!["--clocks", "1410:999"], None, "does not support a memory clock of 999 MHz"),
        (vec![], Some("denied"), "needs root"),
        (vec!["--clocks", "1410:1215,510:800"], Some("denied"), "--clocks current"),
    ] {
        let mut c = gpumodel();
        c.env("GPUMODEL_FAKE_GPU", "1").args(["calibrate", "--repeats", "1", "--out"]).arg(&out).args(&args);
        if let Some(e) = env {
            c.env("GPUMODEL_FAKE_CLOCKS", e);
        }
        let o = c.output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote a profile");
    }
    // Without root, the current clocks still work.
    let o = gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .env("GPUMODEL_FAKE_CLOCKS", "denied")
        .args(["calibrate", "--repeats", "1", "--clocks", "current", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.exists());
}

/// After each clock pair's launches, calibrate reads the idle board's power and writes it as the profile's
/// `idle_w` table: on the scripted GPU, whose idle power is 30 W + 0.02 W/MHz × core + 0.01 W/MHz × memory,
/// one entry per pair with that value, cited as measured; the profile then bounds a prediction from below.
#[test]
fn calibrate_writes_the_idle_power_of_each_clock_pair_and_predict_is_bounded_by_it() {
    let dir = tempfile::tempdir().unwrap();
    fake_json(dir.path(), &["--repeats", "3", "--clocks", "1410:1215,960:1215,510:800"]);
    let text = std::fs::read_to_string(dir.path().join("x.toml")).unwrap();
    let arch = gpumodel_models::arch::ArchProfile::from_toml_str(&text, "x.toml").unwrap();
    let idle = arch.idle_w.as_ref().expect("an idle table");
    assert!(arch.sources[&idle.src].contains("NVML power of the idle board"), "{}", arch.sources[&idle.src]);
    let law = |c: f64, m: f64| 30.0 + 0.02 * c + 0.01 * m;
    let mut entries = idle.value.clone();
    entries.sort_by(|a, b| a[0].total_cmp(&b[0]));
    assert_eq!(entries.len(), 3, "{entries:?}");
    for (e, (c, m)) in entries.iter().zip([(510.0, 800.0), (960.0, 1215.0), (1410.0, 1215.0)]) {
        assert_eq!((e[0], e[1]), (c, m));
        assert!((e[2] - law(c, m)).abs() < 0.051, "{e:?} against {}", law(c, m));
    }
    // At 1410 / 1215 MHz no kernel draws less than 70.3 W (70.35 rounded to 0.1 W).
    assert_eq!(arch.idle_floor(1410.0, 1215.0).map(|e| e[2]), Some(70.3));
    let out = gpumodel()
        .current_dir(dir.path())
        .args(["predict", "--arch", "x.toml", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let power = v["prediction"]["power_w"].as_f64().unwrap();
    let floor = arch.idle_floor(1410.0, 1215.0).unwrap()[2];
    let flagged =
        v["out_of_bounds"].as_array().is_some_and(|e| e.iter().any(|x| x.as_str().unwrap().contains("idle")));
    assert_eq!(flagged, power < floor, "{power} W against the floor {floor} W: {}", v["out_of_bounds"]);
}
