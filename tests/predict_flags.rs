//! What `predict` flags beside its numbers, in every output format: counters measured on another GPU
//! (the GPU read from the export, or stated with `import --gpu`) and inputs outside what the power model
//! was trained on.

mod common;

use common::{Import, gpumodel, profiler_fixture, real_export as real};
use std::path::{Path, PathBuf};

const FORMATS: [&str; 4] = ["table", "json", "csv", "markdown"];

/// `predict --kernel FILE --arch ARCH --format F` for every format: the outputs, each checked to succeed.
fn predict_all_formats(kernel: &Path, arch: &str, extra: &[&str]) -> Vec<(&'static str, String)> {
    FORMATS
        .iter()
        .map(|f| {
            let o = gpumodel()
                .args(["predict", "--arch", arch, "--format", f])
                .arg("--kernel")
                .arg(kernel)
                .args(extra)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{f}: {stderr}");
            (*f, String::from_utf8_lossy(&o.stdout).into_owned())
        })
        .collect()
}

/// The profiles `import ncu|nvprof FILE [flags]` writes, sorted by name.
fn import_profiles(tool: &str, file: &Path, dir: &Path, flags: &[&str]) -> Vec<PathBuf> {
    let mut i = Import::new(tool, file).profiles(dir).out(&dir.join("t.csv"));
    for f in flags {
        i = i.arg(f);
    }
    i.ok();
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

/// A GA102 export (its `CC` column says 8.6, its `Device` column is only an index) predicted on a Titan X:
/// the note that the counters come from another GPU is in every format.
#[test]
fn a_ga102_ncu_profile_on_a_titan_x_says_it_was_measured_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = import_profiles("ncu", &profiler_fixture("ncu_raw_ga102.csv"), dir.path(), &[]);
    for (f, out) in predict_all_formats(&profiles[0], "titanx", &[]) {
        assert!(out.contains("sm_86"), "{f}: the GPU is not named:\n{out}");
        match f {
            "json" => {
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                assert_eq!(v["context"]["measured_on"], "sm_86", "{out}");
            }
            "csv" => {
                let mut lines = out.lines();
                let header: Vec<&str> = lines.next().unwrap().split(',').collect();
                let col = header.iter().position(|h| *h == "measured_on").expect("a measured_on column");
                let row = lines.next().unwrap();
                assert!(row.contains(",titanx,sm_86,") && col == 2, "{out}");
            }
            _ => assert!(out.contains("counters measured on another GPU (sm_86)"), "{f}:\n{out}"),
        }
    }
}

/// A GPU known only by its compute capability is not "another GPU" for an architecture of the same
/// capability (the A100 is 8.0): no note; on an 8.6 export there is one.
#[test]
fn a_compute_capability_alone_matches_an_architecture_of_that_capability() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(profiler_fixture("ncu_raw_ga102.csv")).unwrap();
    let sm80 = dir.path().join("sm80.csv");
    std::fs::write(&sm80, text.replace("\"8.6\"", "\"8.0\"")).unwrap();
    let profiles = import_profiles("ncu", &sm80, &dir.path().join("p80"), &[]);
    let table = &predict_all_formats(&profiles[0], "a100", &[])[0].1;
    assert!(!table.contains("measured on another GPU"), "{table}");
    let ga = import_profiles("ncu", &profiler_fixture("ncu_raw_ga102.csv"), &dir.path().join("p86"), &[]);
    let table = &predict_all_formats(&ga[0], "a100", &[])[0].1;
    assert!(table.contains("measured on another GPU (sm_86)"), "{table}");
}

/// The real A100 ncu export names no GPU: with `--gpu a100` its profile says so, and a prediction on a
/// Titan X carries the note in every format; without it, no GPU is claimed.
#[test]
fn the_real_a100_export_takes_its_gpu_from_the_gpu_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = real("ncu-long_a100_conv2d.csv");
    let stated = import_profiles("ncu", &file, &dir.path().join("stated"), &["--gpu", "a100"]);
    let p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stated[0]).unwrap()).unwrap();
    assert_eq!(p["arch"], "a100");
    for (f, out) in predict_all_formats(&stated[0], "titanx", &[]) {
        assert!(out.contains("a100"), "{f}: no note of the A100:\n{out}");
    }
    let unstated = import_profiles("ncu", &file, &dir.path().join("unstated"), &[]);
    let p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&unstated[0]).unwrap()).unwrap();
    assert!(p["arch"].is_null(), "{p}");
}

/// nvprof names its GPU (`Device` column): a contradicting `--gpu` is refused on one line, and nothing is
/// written; the GTX 1080 Ti profile predicted on a Titan X carries the note.
#[test]
fn nvprof_names_its_gpu_and_a_contradicting_flag_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = real("nvprof-metrics_gtx1080ti_matrixMul.csv");
    let out = dir.path().join("refused");
    let o =
        Import::new("nvprof", &metrics).profiles(&out).out(&out.join("t.csv")).arg("--gpu").arg("a100").run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("gtx1080ti") && err.contains("--gpu"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!out.join("t.csv").exists());
    let trace = real("nvprof-gputrace_gtx1080ti_matrixMul.csv");
    let profiles = import_profiles(
        "nvprof",
        &metrics,
        &dir.path().join("ok"),
        &["--gpu-trace", trace.to_str().unwrap()],
    );
    for (f, out) in predict_all_formats(&profiles[0], "titanx", &[]) {
        assert!(out.contains("gtx1080ti"), "{f}:\n{out}");
    }
}

/// A kernel whose special-function share is far beyond anything the Titan X power model was trained on
/// (its SFU input is ~0.02 ± 0.06 in training) is predicted, and flagged in every format.
#[test]
fn a_power_model_input_outside_the_training_data_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = import_profiles("ncu", &profiler_fixture("ncu_raw_ga102.csv"), dir.path(), &[]);
    let mut p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(profiles.last().unwrap()).unwrap()).unwrap();
    let inst = p["counters"]["inst_executed"].as_f64().unwrap();
    p["counters"]["inst_special"] = serde_json::json!(inst * 0.6);
    let sfu = dir.path().join("sfu.json");
    std::fs::write(&sfu, serde_json::to_string(&p).unwrap()).unwrap();
    for (f, out) in predict_all_formats(&sfu, "titanx", &[]) {
        assert!(out.contains("power-model input SFU") && out.contains("extrapolated"), "{f}:\n{out}");
    }
    // The same kernel as measured is within the training data: nothing flagged.
    let table = &predict_all_formats(profiles.last().unwrap(), "titanx", &[])[0].1;
    assert!(!table.contains("extrapol"), "{table}");
}

/// A clock beyond the architecture's table is also a power-model input beyond its training data: both
/// are said, in every format.
#[test]
fn a_clock_outside_the_table_is_flagged_as_table_and_model_extrapolation() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = import_profiles("ncu", &profiler_fixture("ncu_raw_ga102.csv"), dir.path(), &[]);
    for (f, out) in predict_all_formats(&profiles[0], "titanx", &["--core-mhz", "2000"]) {
        assert!(out.contains("outside the core clocks of titanx"), "{f}:\n{out}");
        assert!(out.contains("power-model input core_mhz"), "{f}:\n{out}");
    }
}

/// `--gpu` takes the GPUs gpumodel knows: a misspelt one is refused on one line naming the closest known
/// GPU, before anything is read or written; an unknown GPU passes with its compute capability, which the
/// kernel profiles record.
#[test]
fn a_misspelt_gpu_is_refused_with_the_closest_name_and_an_unknown_one_needs_its_capability() {
    let dir = tempfile::tempdir().unwrap();
    let file = real("ncu-long_a100_conv2d.csv");
    let out = dir.path().join("refused");
    let o =
        Import::new("ncu", &file).profiles(&out).out(&out.join("t.csv")).arg("--gpu").arg("Tesla V10").run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("did you mean \"NVIDIA Tesla V100 (SXM2)\"") && err.contains("--gpu-cc"), "{err}");
    assert!(!out.exists(), "nothing is written");

    let o = gpumodel()
        .args(["predict", "--profile", "datasets/examples/dcgm/v100-job.dmon.txt", "--gpu", "RTX 9090"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("\"RTX 9090\" is no GPU gpumodel knows"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let stated = import_profiles(
        "ncu",
        &file,
        &dir.path().join("cc"),
        &["--gpu", "NVIDIA GeForce RTX 4090", "--gpu-cc", "8.9"],
    );
    let p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stated[0]).unwrap()).unwrap();
    assert_eq!(p["arch"], "NVIDIA GeForce RTX 4090 (sm_89)");
}
