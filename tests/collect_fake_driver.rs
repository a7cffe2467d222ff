//! `gpumodel collect` through its real hardware path (not GPUMODEL_FAKE_GPU) on a machine without a GPU:
//! stand-ins for `libnvidia-ml.so` (collect/tests/fake_nvml, loaded through GPUMODEL_NVML_LIB and
//! nvml-wrapper's library-path option) and `libcuda.so` (collect/tests/fake_cuda, found by cudarc through
//! LD_LIBRARY_PATH), built here with `cc`. The binary then opens NVML, asks the CUDA driver for device 0's
//! PCI bus id, finds that GPU in NVML under another index, samples its power while the program runs and
//! writes the trace — the code a real GPU would run, minus CUPTI (`--no-counters`). With the stand-in CUPTI
//! as well (collect/tests/fake_cupti), `--pm-passes all` samples every counter group and the DCGM
//! profiling fields through CUPTI's documented calls.

mod common;

use common::cc;
use std::path::{Path, PathBuf};

/// The stand-in NVML and CUDA driver, built in a folder.
struct Driver {
    nvml: PathBuf,
    cuda_dir: PathBuf,
}

impl Driver {
    fn new(dir: &Path) -> Driver {
        let nvml = dir.join("libnvidia-ml.so.1");
        cc("collect/tests/fake_nvml/fake_nvml.c", &nvml, &["-DSCENARIO=0"]);
        let cuda_dir = dir.join("cuda");
        std::fs::create_dir_all(&cuda_dir).unwrap();
        cc("collect/tests/fake_cuda/fake_cuda.c", &cuda_dir.join("libcuda.so"), &[]);
        Driver { nvml, cuda_dir }
    }

    /// `gpumodel` on the real hardware path, over these libraries.
    fn gpumodel(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"));
        c.env_remove("GPUMODEL_FAKE_GPU")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .env("GPUMODEL_NVML_LIB", &self.nvml)
            .env("LD_LIBRARY_PATH", &self.cuda_dir);
        c
    }
}

/// The JSON sidecar of the trace `out`.
fn sidecar(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap()
}

#[test]
fn real_collect_path_matches_cuda_and_nvml_by_bus_id_and_writes_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let driver = Driver::new(dir.path());
    let out = dir.path().join("t.csv");
    let o = driver
        .gpumodel()
        .args([
            "collect",
            "--no-counters",
            "--idle-seconds",
            "0.05",
            "--min-seconds",
            "0",
            "--device",
            "0",
            "-o",
        ])
        .arg(&out)
        .args(["/bin/sleep", "0.2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let meta = sidecar(&out);
    assert_eq!(meta["status"], "complete");
    // CUDA's 0000:65:00.0 is NVML's device 1 ("Fake NVIDIA GPU 1", 654.321 W instantaneous).
    assert_eq!(meta["gpu"], "Fake NVIDIA GPU 1");
    assert_eq!(meta["pci_bus_id"], "00000000:65:00.0");
    let mean = meta["summary"]["mean_power_w"].as_f64().unwrap();
    assert!((mean - 654.321).abs() < 1e-9, "{mean}");
    assert_eq!(meta["summary"]["energy_source"], "energy_counter");
    let rows = std::fs::read_to_string(&out).unwrap().lines().count() - 1;
    assert!(rows >= 3, "{rows}");
}

/// A CUDA ordinal the driver does not have: one line naming what CUDA sees, nothing written.
#[test]
fn a_missing_cuda_device_is_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let driver = Driver::new(dir.path());
    let out = dir.path().join("t.csv");
    let o = driver
        .gpumodel()
        .args(["collect", "--no-counters", "--device", "3", "-o"])
        .arg(&out)
        .arg("/bin/true")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no GPU with index 3") && err.contains("CUDA sees 1 device(s)"), "{err}");
    assert!(!out.exists() && !out.with_extension("json").exists());
}

/// `collect --pm-passes all` through CUPTI itself (collect/tests/fake_cupti, a GA102 whose metric database
/// holds the counters of the DCGM fields): the collector plans the fields with the host API — FP64A needs 3
/// hardware passes there, FP16A has no counter, one pass holds GRACT to DRAMA and FP32A needs a run of its
/// own — samples each run's metrics and writes each field as counter / (elapsed × peak), the fraction the
/// fake library's samples are built at.
#[test]
fn pm_passes_all_through_cupti_writes_the_dcgm_fields() {
    let dir = tempfile::tempdir().unwrap();
    let driver = Driver::new(dir.path());
    let cupti = common::fake_cupti(dir.path(), 0);
    let out = dir.path().join("t.csv");
    let o = driver
        .gpumodel()
        .env("GPUMODEL_CUDA_LIBS", &cupti)
        // Samples every 10 ms for as long as each pass runs: they overlap the program's rows however
        // late a busy host starts it (two samples at the start may all come before it).
        .env("FAKE_CUPTI_CONTINUOUS", "1")
        .args(["collect", "--pm-passes", "all", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
        .arg(&out)
        .args(["/bin/sleep", "0.2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let meta = sidecar(&out);
    assert_eq!(meta["chip"], "GA102");
    let passes = meta["replay"]["passes"].as_array().unwrap();
    // Six groups of the GA102 map, then the two runs of fields.
    assert_eq!(passes.len(), 8, "{passes:?}");
    assert_eq!(passes[6]["counters"], serde_json::json!(["GRACT", "SMACT", "SMOCC", "TENSO", "DRAMA"]));
    assert_eq!(passes[7]["counters"], serde_json::json!(["FP32A"]));
    let t = gpumodel_models::Table::read_csv(&out, "kernel").unwrap();
    for (name, v) in
        [("GRACT", 0.9), ("SMACT", 0.8), ("SMOCC", 0.4), ("TENSO", 0.1), ("DRAMA", 0.3), ("FP32A", 0.5)]
    {
        let col = t.column(name).unwrap_or_else(|| panic!("no column {name}"));
        let known: Vec<f64> = col.iter().copied().filter(|x| x.is_finite()).collect();
        assert!(!known.is_empty() && known.iter().all(|x| (x - v).abs() < 1e-9), "{name}: {col:?}");
    }
    assert!(t.column("FP64A").is_none() && t.column("FP16A").is_none());
}

/// Field → PM-sampling run (1-based) of `gpumodel counters --chip GA102 --format json` with the CUPTI of
/// `libs`, or `None` when that CUPTI cannot be loaded.
fn dcgm_runs(libs: &std::ffi::OsStr) -> Option<Vec<(String, Option<u64>)>> {
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .env("GPUMODEL_CUDA_LIBS", libs)
        .env("LD_LIBRARY_PATH", libs)
        .args(["counters", "--chip", "GA102", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    if !j["cupti_error"].is_null() {
        return None;
    }
    let fields = j["dcgm"].as_array().unwrap_or_else(|| panic!("no dcgm list: {j}"));
    Some(fields.iter().map(|f| (f["field"].as_str().unwrap().to_string(), f["run"].as_u64())).collect())
}

/// Both stand-ins plan the DCGM fields as CUPTI's own host library does for GA102: the fake CUPTI (through
/// `gpumodel counters`) and the scripted GPU of GPUMODEL_FAKE_GPU=1 (the runs of its trace). Needs the real
/// libraries (GPUMODEL_CUDA_LIBS); skipped without them unless GPUMODEL_REQUIRE_CUDA_LIBS=1.
#[test]
fn the_stand_ins_plan_the_dcgm_fields_as_cupti_does_for_ga102() {
    let real = std::env::var_os("GPUMODEL_CUDA_LIBS").and_then(|l| dcgm_runs(&l));
    let Some(real) = real else {
        assert!(
            !std::env::var("GPUMODEL_REQUIRE_CUDA_LIBS").is_ok_and(|v| v == "1"),
            "GPUMODEL_REQUIRE_CUDA_LIBS=1 but CUPTI does not load from GPUMODEL_CUDA_LIBS"
        );
        eprintln!("skipping: no CUPTI in GPUMODEL_CUDA_LIBS");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cupti = common::fake_cupti(dir.path(), 0);
    assert_eq!(dcgm_runs(cupti.as_os_str()).unwrap(), real, "fake CUPTI");

    let out = dir.path().join("t.csv");
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--pm-passes", "all", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
        .arg(&out)
        .arg("/bin/true")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let meta = sidecar(&out);
    let mut scripted: Vec<(String, Option<u64>)> = real.iter().map(|(f, _)| (f.clone(), None)).collect();
    for p in meta["replay"]["passes"].as_array().unwrap() {
        for c in p["counters"].as_array().unwrap() {
            if let Some(s) = scripted.iter_mut().find(|(f, _)| c == f.as_str()) {
                s.1 = p["pass"].as_u64();
            }
        }
    }
    assert_eq!(scripted, real, "scripted GPU");
}
