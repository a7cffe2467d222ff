//! `gpumodel collect --suite` driven through the real binary: the no-GPU error on this machine, and the
//! whole run loop on the scripted GPU (`GPUMODEL_FAKE_GPU=1`): table, metadata, resume, option errors.

use assert_cmd::Command;
use gpumodel_models::{Dataset, FeatureSet, Table};
use std::path::Path;

fn gpumodel() -> Command {
    let mut c = Command::cargo_bin("gpumodel").unwrap();
    c.env_remove("GPUMODEL_FAKE_GPU");
    c
}

fn fake() -> Command {
    let mut c = gpumodel();
    c.env("GPUMODEL_FAKE_GPU", "1");
    c
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// This machine has no NVIDIA driver: the suite must stop before any work with one clear line.
#[test]
fn without_a_gpu_the_suite_fails_with_one_clear_line() {
    if Path::new("/proc/driver/nvidia").exists() {
        return; // a machine with a driver cannot test the no-driver path
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("suite.csv");
    let o = gpumodel().args(["collect", "--suite", "--out"]).arg(&out).output().unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("gpumodel: error: no NVIDIA driver"), "{err}");
    assert!(err.contains("run on a machine with an NVIDIA GPU and its driver installed"), "{err}");
    assert!(!out.exists(), "nothing is written when no GPU can run the suite");
}

/// The fake GPU's table is one row per kernel × clock pair, has the columns the paper's model needs, and
/// turns into a dataset with the ten inputs plus clocks (what `train --import table` builds).
#[test]
fn the_fake_gpu_suite_writes_a_trainable_table_with_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("suite.csv");
    let o = fake()
        .args([
            "collect",
            "--suite",
            "--clocks",
            "1410:1215,1095:1215",
            "--kernels",
            "shared_conflict,fp64_fma,idle",
        ])
        .args(["--min-seconds", "0.5", "--format", "json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["command"], "collect-suite");
    assert_eq!((report["rows_written"].as_u64(), report["rows_kept"].as_u64()), (Some(20), Some(0)));
    assert!(report["train_command"].as_str().unwrap().contains("--import table --features"), "{report}");
    let t = Table::read_csv(&out, "kernel").unwrap();
    assert_eq!(t.n_rows(), 2 * (6 + 3 + 1));
    assert_eq!(t.distinct_groups().len(), 10);
    assert_eq!(t.distinct_values("core_mhz"), vec![1095.0, 1410.0]);
    let p = t.column("power_w").unwrap();
    assert!(p.iter().all(|w| *w > 0.0 && w.is_finite()));
    let fs = FeatureSet::from_toml_file(&dir.path().join("suite.csv.features.toml")).unwrap();
    // Only the counters these three patterns drive vary, and mem_mhz was not swept: the rest are left out
    // (constant columns make the regressions singular) and the file says so.
    assert_eq!(fs.inputs, ["inst_per_s", "fp64_per_s", "shared_per_s", "core_mhz"]);
    let text = std::fs::read_to_string(dir.path().join("suite.csv.features.toml")).unwrap();
    assert!(text.contains("# Left out, constant in this table: fp32_per_s, int_per_s"), "{text}");
    let mut derived = t.clone();
    gpumodel_models::features::derive_columns(&mut derived, &fs.inputs).unwrap();
    let ds = Dataset::from_table(&derived, &fs).unwrap();
    assert_eq!(ds.n_rows(), 20);
    assert_eq!(ds.group_rows().len(), 10);
    // Bank conflicts drive S_access: the 32-way kernel has a higher rate than the 1-way one.
    let s = t.column("S_access").unwrap();
    let time = t.column("time_s").unwrap();
    let at = |k: &str| t.groups.iter().position(|g| g == k).unwrap();
    let (hi, lo) = (at("shared_conflict_32way"), at("shared_conflict_1way"));
    assert!(s[hi] / time[hi] > s[lo] / time[lo]);

    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("suite.csv.json")).unwrap()).unwrap();
    assert!(meta["gpu"]["name"].as_str().unwrap().contains("A100"));
    assert_eq!(meta["gpu"]["chip"], "GA100");
    assert_eq!(meta["gpu"]["driver"], "550.54.15");
    assert_eq!(meta["kernels"].as_array().unwrap().len(), 10);
    assert_eq!(meta["interrupted"], false);
}

#[test]
fn an_existing_table_is_kept_unless_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("suite.csv");
    let run = |extra: &[&str]| {
        fake()
            .args(["collect", "--suite", "--kernels", "integer", "--min-seconds", "0.2", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    assert!(run(&[]).status.success());
    let first = std::fs::read(&out).unwrap();
    let o = run(&[]);
    assert!(!o.status.success());
    assert_eq!(stderr(&o).lines().count(), 1);
    assert!(stderr(&o).contains("exists: pass --resume"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), first, "nothing already written is lost");
    let o = run(&["--resume"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The table's one row: the file, 0 rows written, 3 kept from the first run.
    let text = String::from_utf8_lossy(&o.stdout);
    let row = text.lines().find(|l| l.contains("suite.csv ")).unwrap_or_default();
    assert_eq!(row.split_whitespace().skip(1).take(3).collect::<Vec<_>>(), ["0", "3", "no"], "{text}");
    assert_eq!(std::fs::read(&out).unwrap(), first);
}

#[test]
fn bad_options_are_one_line_errors() {
    for (args, want) in [
        (vec!["--clocks", "fast"], "--clocks 'fast'"),
        (vec!["--kernels", "warp_shuffle"], "no suite kernel 'warp_shuffle'"),
        (vec!["--min-seconds", "0"], "--min-seconds 0"),
        (vec!["./a.out"], "takes no program"),
    ] {
        let o = fake().args(["collect", "--suite"]).args(&args).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn list_kernels_shows_every_pattern_and_its_counters() {
    let o = gpumodel().args(["collect", "--suite", "--list-kernels"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for k in [
        "global_load_s32",
        "shared_conflict_32way",
        "texture_hit_low",
        "fp64_fma_full",
        "local_spill_64",
        "idle_sleep",
    ] {
        assert!(text.contains(k), "{k} missing:\n{text}");
    }
    assert!(text.contains("l1_shared_bank_conflict") && text.contains("divergent_branch"));
}

/// Start to finish on the fake GPU: suite → train → calibrate → predict with both, the README's three
/// commands. `predict` reads the trained model's power inputs (`fp32_per_s`, …) from a kernel profile's
/// counter totals and its predicted time, as train read them from the suite table.
#[test]
fn suite_table_trains_a_model_that_predict_uses_with_a_calibrated_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = fake()
        .current_dir(d)
        .args(["collect", "--suite", "--clocks", "1410:1215,1095:1215,900:1215", "--out", "suite.csv"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let fs = FeatureSet::from_toml_file(&d.join("suite.csv.features.toml")).unwrap();
    assert_eq!(
        fs.inputs.len(),
        11,
        "all ten power inputs and core_mhz (mem_mhz was not swept): {:?}",
        fs.inputs
    );
    assert!(fs.inputs.contains(&"fp64_per_s".to_string()));
    assert!(
        !fs.mlr_base
            .iter()
            .any(|i| ["fp32_per_s", "fp64_per_s", "int_per_s", "sfu_per_s"].contains(&i.as_str())),
        "the MLR base leaves the instruction mix out (MLR+ has it)"
    );
    let o = gpumodel()
        .current_dir(d)
        .args(["train", "--data", "suite.csv", "--import", "table", "--features", "suite.csv.features.toml"])
        .args(["--models", "bpann", "--restarts", "1", "--epochs", "300", "--out-dir", "models"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fake().current_dir(d).args(["calibrate", "--name", "mine", "--repeats", "3"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let model = std::fs::read_dir(d.join("models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("bpann.json"))
        .expect("train wrote a BP-ANN artifact");
    std::fs::write(
        d.join("k.toml"),
        "name = \"k\"\n[launch]\ngrid = [432, 1, 1]\nblock = [256, 1, 1]\nregisters_per_thread = 32\n\
         [counters]\ngld_request = 2e5\nl1_global_load_hit = 1e5\nl1_global_load_miss = 1e5\n\
         global_store_transaction = 5e4\nlocal_load = 0\nlocal_store = 0\ninst_executed = 5e6\nbranch = 1e5\n\
         divergent_branch = 1e3\nshared_load = 1e5\nl1_shared_bank_conflict = 1e4\n\
         tex0_cache_sector_queries = 1e4\ntex0_cache_sector_misses = 1e3\ninst_fp_32 = 2e6\n\
         inst_fp_64 = 1e5\ninst_integer = 5e5\ninst_special = 1e4\ndram_read_bytes = 3e6\ndram_write_bytes = 1e6\n",
    )
    .unwrap();
    let o = gpumodel()
        .current_dir(d)
        .args(["predict", "--kernel", "k.toml", "--arch", "mine.toml", "--model"])
        .arg(&model)
        .args(["--warps", "32"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("power") && text.contains("time"), "{text}");
}
