//! `gpumodel doctor` through its real probes on stand-in libraries built here with `cc`: NVML
//! (collect/tests/fake_nvml, loaded through GPUMODEL_NVML_LIB), the CUDA driver (collect/tests/fake_cuda,
//! found through LD_LIBRARY_PATH) and CUPTI (collect/tests/fake_cupti, found through GPUMODEL_CUDA_LIBS,
//! with its SONAME so that cudarc's own lookup finds the copy loaded). NVRTC is the real one of the
//! nvidia-cuda-nvrtc-cu12 wheel when the test environment has it (scripts/test). One test per failure
//! row, each showing the failure text and its fix; and this machine's own path, with no driver at all.

mod common;

use common::{cc, fake_cupti};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The folder of the real NVRTC in this test's environment, if any.
fn nvrtc_dir() -> Option<PathBuf> {
    let dirs = std::env::var_os("GPUMODEL_CUDA_LIBS")?;
    std::env::split_paths(&dirs).find(|d| {
        std::fs::read_dir(d).is_ok_and(|mut it| {
            it.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libnvrtc.so")))
        })
    })
}

/// Whether the tests must not skip what needs NVRTC.
fn nvrtc_required() -> bool {
    std::env::var("GPUMODEL_REQUIRE_CUDA_LIBS").is_ok_and(|v| v == "1")
}

/// One machine made of stand-ins.
struct Machine {
    nvml_scenario: u32,
    cuda_version: u32,
    cupti_scenario: u32,
    nvrtc: bool,
}

impl Machine {
    fn healthy() -> Machine {
        Machine { nvml_scenario: 0, cuda_version: 12090, cupti_scenario: 0, nvrtc: true }
    }

    /// Runs `gpumodel doctor ARGS` on this machine; `None` when it needs NVRTC and the environment has none.
    fn doctor(&self, args: &[&str]) -> Option<Output> {
        let nvrtc = if self.nvrtc {
            match nvrtc_dir() {
                Some(d) => Some(d),
                None => {
                    assert!(
                        !nvrtc_required(),
                        "GPUMODEL_REQUIRE_CUDA_LIBS=1 but no NVRTC in GPUMODEL_CUDA_LIBS"
                    );
                    eprintln!("skipping: no NVRTC in GPUMODEL_CUDA_LIBS");
                    return None;
                }
            }
        } else {
            None
        };
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let nvml = d.join("libnvidia-ml.so.1");
        cc("collect/tests/fake_nvml/fake_nvml.c", &nvml, &[&format!("-DSCENARIO={}", self.nvml_scenario)]);
        let cuda = d.join("cuda");
        std::fs::create_dir_all(&cuda).unwrap();
        cc(
            "collect/tests/fake_cuda/fake_cuda.c",
            &cuda.join("libcuda.so"),
            &[&format!("-DCUDA_VERSION={}", self.cuda_version)],
        );
        let cupti = fake_cupti(d, self.cupti_scenario);
        let libs = std::env::join_paths(std::iter::once(cupti).chain(nvrtc)).unwrap();
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
            .env_remove("GPUMODEL_FAKE_GPU")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .env("GPUMODEL_NVML_LIB", &nvml)
            .env("LD_LIBRARY_PATH", &cuda)
            .env("GPUMODEL_CUDA_LIBS", libs)
            .arg("doctor")
            .args(args)
            .output()
            .unwrap();
        Some(out)
    }
}

/// The table row that names `id`, with the full texts of the notes it points to (`… [k]`: a text too
/// long for a 120-column table continues below it as note k, wrapped).
fn row_text(out: &str, id: &str) -> String {
    let line =
        out.lines().find(|l| l.contains(&format!(" {id} "))).unwrap_or_else(|| panic!("no row {id}: {out}"));
    let mut text = line.to_string();
    for (i, _) in line.match_indices("… [") {
        let k: String = line[i + "… [".len()..].chars().take_while(char::is_ascii_digit).collect();
        let head = format!("[{k}] ");
        let mut lines = out.lines().skip_while(|l| !l.starts_with(&head));
        let first = lines.next().unwrap_or_else(|| panic!("no note {k}: {out}"));
        text.push(' ');
        text.push_str(&first[head.len()..]);
        for more in lines.take_while(|l| l.starts_with(' ')) {
            text.push(' ');
            text.push_str(more.trim_start());
        }
    }
    text
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    })
}

/// The row `id` of a JSON report.
fn row<'a>(j: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {j}"))
}

/// The verdict for `command`, the sampling row set apart: that row measures how well this host keeps
/// the sampling rate, and a host loaded by other builds may degrade it (and with it `collect`). Its
/// rule is tested on scripted figures in the collector's unit tests; here a "degraded" caused by that
/// row alone reads as "ok".
fn verdict<'a>(j: &'a serde_json::Value, command: &str) -> &'a str {
    let v = j["verdict"].as_array().unwrap().iter().find(|v| v["command"] == command).unwrap();
    let status = v["status"].as_str().unwrap();
    if status == "degraded" && v["because"] == serde_json::json!(["sampling"]) { "ok" } else { status }
}

/// Every part answers: the real probes read the stand-ins' facts through the documented calls, the JSON
/// parses and the exit status is 0.
#[test]
fn a_working_machine_passes_every_row_and_its_json_carries_the_facts() {
    let Some(o) = Machine::healthy().doctor(&["--format", "json", "--rate", "50"]) else { return };
    let j = json(&o);
    assert!(o.status.success(), "{j}");
    assert_eq!(j["command"], "doctor");
    assert_eq!(j["ready"], true);
    let not_ok: Vec<&serde_json::Value> =
        j["checks"].as_array().unwrap().iter().filter(|c| c["status"] != "ok").collect();
    // Root may set clocks; any other user sees clocks_settable degraded (the fake restricts them). The
    // sampling row measures this machine's scheduler, which a loaded test host may slow.
    assert!(not_ok.iter().all(|c| c["id"] == "clocks_settable" || c["id"] == "sampling"), "{not_ok:?}");
    // CUDA ordinal 0 is on bus 0000:65:00.0, which is NVML's device 1.
    let f = &j["facts"];
    assert_eq!(f["nvml"]["index"], 1);
    assert_eq!(f["nvml"]["matched_by_pci_bus_id"], true);
    assert_eq!(f["nvml"]["driver_version"], "575.57.08");
    assert_eq!(f["nvml"]["power_limit_w"], 300.0);
    assert_eq!(f["cuda"]["driver_version"], 12090);
    assert_eq!(f["cupti"]["api_version"], 28);
    assert_eq!(f["pm_sampling"]["chip"], "GA102");
    assert_eq!(f["pm_sampling"]["samples"], 2);
    assert_eq!(f["pm_sampling"]["kernel_launched"], true);
    assert_eq!(f["range_profiler"]["value"], 1.0e6);
    assert_eq!(f["kernel"]["arch"], "sm_86");
    assert_eq!(f["kernel"]["kernel_ms"], 0.25);
    assert!(f["sampling"]["samples"].as_u64().unwrap() > 10, "{}", f["sampling"]);
    assert!((f["sampling"]["mean_power_w"].as_f64().unwrap() - 654.321).abs() < 1e-9);
}

/// ERR_NVGPUCTRPERM: the driver option and the root alternative; power-only collection still works.
#[test]
fn permission_denied_shows_the_driver_option() {
    let m = Machine { cupti_scenario: 1, ..Machine::healthy() };
    let Some(o) = m.doctor(&[]) else { return };
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = row_text(&out, "profiling_permission");
    assert!(line.contains("missing") && line.contains("restricted to admin users"), "{line}");
    assert!(line.contains("options nvidia NVreg_RestrictProfilingToAdminUsers=0"), "{line}");
    assert!(out.contains("not ready"), "{out}");
    let Some(o) = m.doctor(&["--format", "json"]) else { return };
    let j = json(&o);
    assert_eq!(verdict(&j, "collect"), "missing");
    assert_eq!(verdict(&j, "collect --no-counters"), "ok");
}

/// A driver for CUDA 12.4 under CUPTI 12.9: the CUPTI cannot run, the fix names the driver branch.
#[test]
fn an_old_driver_shows_the_driver_needed() {
    let m = Machine { nvml_scenario: 8, cuda_version: 12040, ..Machine::healthy() };
    let Some(o) = m.doctor(&["--format", "json"]) else { return };
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let c = row(&j, "cupti_driver");
    assert_eq!(c["status"], "missing");
    let found = c["found"].as_str().unwrap();
    assert!(found.contains("CUDA 12.4") && found.contains("CUDA 12.9"), "{found}");
    assert!(c["fix"].as_str().unwrap().starts_with("update the NVIDIA driver to 575 or newer"), "{c}");
    assert!(row(&j, "profiling_permission")["found"].as_str().unwrap().starts_with("not tried"));
    assert_eq!(j["facts"]["nvml"]["driver_version"], "550.54.15");
}

/// No NVRTC: the suite and calibrate cannot run, the fix is the pip / apt package; collect still can.
#[test]
fn no_nvrtc_shows_the_package_to_install() {
    let m = Machine { nvrtc: false, ..Machine::healthy() };
    let Some(o) = m.doctor(&["--format", "json"]) else { return };
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let c = row(&j, "nvrtc");
    assert_eq!(c["status"], "missing");
    assert!(c["found"].as_str().unwrap().contains("NVRTC (libnvrtc.so.12) not found"), "{c}");
    let fix = c["fix"].as_str().unwrap();
    assert!(fix.contains("pip install nvidia-cuda-nvrtc-cu12") && fix.contains("cuda-nvrtc-12-9"), "{fix}");
    assert_eq!(verdict(&j, "collect --suite"), "missing");
    assert_eq!(verdict(&j, "calibrate"), "missing");
    assert_eq!(verdict(&j, "collect"), "ok", "{}", j["checks"]);
    // PM sampling was still started and stopped, on an idle GPU.
    assert_eq!(j["facts"]["pm_sampling"]["kernel_launched"], false);
}

/// Only the averaged power reading (and persistence off, no energy counter): degraded, with the fixes;
/// the next commands still work, so the exit status is 0.
#[test]
fn averaged_power_only_shows_the_driver_that_adds_the_instant_field() {
    let m = Machine { nvml_scenario: 1, ..Machine::healthy() };
    let Some(o) = m.doctor(&["--format", "json"]) else { return };
    let j = json(&o);
    assert!(o.status.success(), "{j}");
    let c = row(&j, "power_reading");
    assert_eq!(c["status"], "degraded");
    assert!(c["found"].as_str().unwrap().contains("1-second average"), "{c}");
    assert!(c["fix"].as_str().unwrap().contains("535 or newer"), "{c}");
    let p = row(&j, "persistence");
    assert_eq!(p["status"], "degraded");
    assert_eq!(p["fix"], "sudo nvidia-smi -i 00000000:65:00.0 -pm 1");
    assert_eq!(verdict(&j, "collect"), "degraded");
}

/// MIG on: degraded (shared units read NaN, power is the whole board's), with `nvidia-smi -mig 0`.
#[test]
fn mig_shows_how_to_turn_it_off() {
    let m = Machine { nvml_scenario: 7, ..Machine::healthy() };
    let Some(o) = m.doctor(&[]) else { return };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = row_text(&out, "mig");
    assert!(line.contains("degraded") && line.contains("MIG mode is on"), "{line}");
    assert!(line.contains("sudo nvidia-smi -i 00000000:65:00.0 -mig 0"), "{line}");
    // The table fits a 120-column terminal.
    assert!(out.lines().all(|l| l.chars().count() <= 120), "{out}");
}

/// This machine as it is: no NVIDIA driver at all. Every GPU row is missing with the driver's fix, the
/// commands that need no GPU are listed as working, and the exit status is 1. Skipped where a driver
/// exists.
#[test]
fn no_driver_at_all_prints_the_missing_rows_and_exits_non_zero() {
    if Path::new("/proc/driver/nvidia").exists() {
        return;
    }
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .env_remove("GPUMODEL_FAKE_GPU")
        .env_remove("GPUMODEL_NVML_LIB")
        .args(["doctor", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["ready"], false);
    let nvml = row(&j, "nvml");
    assert_eq!(nvml["status"], "missing");
    assert!(nvml["found"].as_str().unwrap().starts_with("no NVIDIA driver"), "{nvml}");
    assert!(nvml["fix"].as_str().unwrap().contains("nvidia-smi"), "{nvml}");
    for id in ["cuda_driver", "power_reading", "sampling", "profiling_permission", "clocks_settable"] {
        assert_eq!(row(&j, id)["status"], "missing", "{id}");
    }
    assert_eq!(verdict(&j, "import, train, predict, validate, split, cluster, report"), "ok");
    // The table says the same in words.
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .env_remove("GPUMODEL_FAKE_GPU")
        .env_remove("GPUMODEL_NVML_LIB")
        .arg("doctor")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no NVIDIA driver") && out.contains("not ready"), "{out}");
}

/// Under `GPUMODEL_FAKE_GPU=1` (the scripted GPU every other command then uses), doctor asks the same
/// scripted machine, not this one's driver: every check passes and the exit status is 0.
#[test]
fn the_scripted_gpu_is_a_ready_machine() {
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .env("GPUMODEL_FAKE_GPU", "1")
        .env_remove("GPUMODEL_NVML_LIB")
        .args(["doctor", "--format", "json"])
        .output()
        .unwrap();
    let j = json(&o);
    assert_eq!(o.status.code(), Some(0), "{j}");
    assert_eq!(j["ready"], true, "{j}");
    assert_eq!(row(&j, "nvml")["status"], "ok", "{j}");
}

/// A bad --rate is one line on stderr, before any hardware is asked.
#[test]
fn a_bad_rate_is_one_line() {
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .args(["doctor", "--rate", "0"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--rate 0 is not a sampling rate"), "{err}");
}
