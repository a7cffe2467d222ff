//! The real NVML code path (nvml-wrapper → `collect/src/nvml.rs` → the sampler and run loop) against a
//! stand-in `libnvidia-ml.so` written in C for these tests (`tests/fake_nvml/fake_nvml.c`), built here
//! with `cc` and loaded through nvml-wrapper's `Nvml::builder().lib_path(…)`. One shared object per
//! scenario (`-DSCENARIO=n`), so tests running in parallel share no state. No GPU needed.

mod common;

use gpumodel_collect::Error;
use gpumodel_collect::fake::FakeCounters;
use gpumodel_collect::nvml::{NvmlPower, nvml_index_by_pci_bus_id, open_nvml_at};
use gpumodel_collect::pci::PciBusId;
use gpumodel_collect::power::{PowerField, PowerSource};
use gpumodel_collect::run::{RunOptions, run};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

fn open(dir: &Path, scenario: u32) -> gpumodel_collect::Result<Arc<nvml_wrapper::Nvml>> {
    let lib = common::build_fake_nvml(dir, "fake_nvml/fake_nvml.c", scenario);
    open_nvml_at(Some(lib.as_os_str()))
}

#[test]
fn instant_power_energy_clocks_and_pci_ids_come_through_the_real_code() {
    let dir = tempfile::tempdir().unwrap();
    let nvml = open(dir.path(), 0).unwrap();
    // The CUDA side's bus id (short domain) finds NVML's device 1 by value.
    let bus: PciBusId = "0000:65:00.0".parse().unwrap();
    assert_eq!(nvml_index_by_pci_bus_id(&nvml, &bus), Some(1));
    let absent: PciBusId = "0000:b3:00.0".parse().unwrap();
    assert_eq!(nvml_index_by_pci_bus_id(&nvml, &absent), None);

    let mut p = NvmlPower::open(nvml, 1).unwrap();
    let info = p.info();
    assert_eq!(info.gpu, "Fake NVIDIA GPU 1");
    assert_eq!(info.driver.as_deref(), Some("575.57.08"));
    assert_eq!(info.compute_capability, Some((8, 6)));
    assert_eq!(info.field, PowerField::Instant);
    assert!(info.energy_counter);
    assert_eq!(info.pci_bus_id.as_deref(), Some("00000000:65:00.0"));
    let r = p.read().unwrap();
    // 654321 mW from NVML_FI_DEV_POWER_INSTANT, not the 100 W average.
    assert!((r.power.get() - 654.321).abs() < 1e-9, "{r:?}");
    assert_eq!(r.core.map(|m| m.0), Some(1410.0));
    assert_eq!(r.mem.map(|m| m.0), Some(1215.0));
    let e0 = p.energy().unwrap().unwrap().get();
    let e1 = p.energy().unwrap().unwrap().get();
    assert!((e1 - e0 - 1.5).abs() < 1e-9, "mJ converted to J once: {e0} {e1}");
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());
}

#[test]
fn not_supported_answers_become_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = NvmlPower::open(open(dir.path(), 1).unwrap(), 0).unwrap();
    let info = p.info();
    // The instant field's own NOT_SUPPORTED → the averaged reading; no energy counter; no memory clock.
    assert_eq!(info.field, PowerField::Average);
    assert!(!info.energy_counter);
    let r = p.read().unwrap();
    assert_eq!(r.power.get(), 100.0);
    assert_eq!(r.core.map(|m| m.0), Some(1410.0));
    assert_eq!(r.mem, None);
    assert_eq!(p.energy().unwrap(), None);
    // NOT_SUPPORTED is a value, not a warning.
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());
}

#[test]
fn no_permission_for_power_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let Err(e) = NvmlPower::open(open(dir.path(), 2).unwrap(), 0) else {
        panic!("no power without permission")
    };
    let msg = e.to_string();
    assert!(msg.starts_with("NVML nvmlDeviceGetPowerUsage failed: no permission to read power"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn a_gpu_without_any_power_reading_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let Err(e) = NvmlPower::open(open(dir.path(), 5).unwrap(), 0) else { panic!("no power reading") };
    let msg = e.to_string();
    assert!(msg.contains("reports no power reading") && msg.contains("external meter"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn driver_not_loaded_is_the_no_driver_error() {
    let dir = tempfile::tempdir().unwrap();
    let Err(e) = open(dir.path(), 4) else { panic!("init must fail") };
    assert!(matches!(e, Error::NoDriver { .. }), "{e}");
    assert!(e.to_string().starts_with("no NVIDIA driver: the NVIDIA kernel driver is not loaded"), "{e}");
}

#[test]
fn a_library_missing_a_function_asks_for_a_newer_driver() {
    let dir = tempfile::tempdir().unwrap();
    let Err(e) = open(dir.path(), 6) else { panic!("init must fail without nvmlInit_v2") };
    let msg = e.to_string();
    assert!(
        msg.contains("lacks a function this tool needs") && msg.contains("update the NVIDIA driver"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn a_library_that_is_not_nvml_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let not_nvml = dir.path().join("libnvidia-ml.so");
    std::fs::write(&not_nvml, b"not an ELF file").unwrap();
    let Err(e) = open_nvml_at(Some(not_nvml.as_os_str())) else { panic!("garbage must not load") };
    assert!(e.to_string().starts_with("no NVIDIA driver"), "{e}");
}

fn run_opts(dir: &Path) -> RunOptions {
    RunOptions {
        program: vec!["/bin/sleep".into(), "0.2".into()],
        out: dir.join("t.csv"),
        rate_hz: 50.0,
        min_seconds: 0.0,
        idle_seconds: 0.05,
        device: 0,
        host: "h".into(),
        chip: None,
        program_stdout_to_stderr: false,
    }
}

/// The whole run loop on the fake NVML: rows carry the instant power and clocks, the sidecar the
/// energy counter.
#[test]
fn a_run_on_the_fake_nvml_writes_its_readings() {
    let dir = tempfile::tempdir().unwrap();
    let p = NvmlPower::open(open(dir.path(), 0).unwrap(), 0).unwrap();
    let o = run_opts(dir.path());
    let counters = FakeCounters::new(&["inst_executed"], 0.02, |_| vec![1e9]);
    let r = run(&o, p, Some(Box::new(counters)), Arc::new(AtomicBool::new(false))).unwrap();
    let s = r.meta.summary.clone().unwrap();
    assert_eq!(s.energy_source, "energy_counter");
    assert!((s.mean_power_w - 123.456).abs() < 1e-9, "{s:?}");
    let text = std::fs::read_to_string(&o.out).unwrap();
    let row = text.lines().nth(1).unwrap();
    assert!(row.contains("123.456") && row.contains("1410") && row.contains("1215"), "{row}");
}

/// Clocks that stop answering mid-run and an energy counter refused: the run goes on, the samples
/// have no clock, and the sidecar says what was not recorded and how often.
#[test]
fn clock_reads_that_fail_mid_run_are_counted_in_the_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let p = NvmlPower::open(open(dir.path(), 3).unwrap(), 0).unwrap();
    assert!(!p.info().energy_counter);
    let o = run_opts(dir.path());
    run(&o, p, None, Arc::new(AtomicBool::new(false))).unwrap();
    let meta = gpumodel_models::trace::read_meta(&o.out).unwrap();
    assert!(matches!(meta.status, gpumodel_models::trace::RunStatus::Complete), "{:?}", meta.status);
    let w = meta.warnings.join(" | ");
    assert!(w.contains("NVML refused to read the energy counter (no permission)"), "{w}");
    assert!(w.contains("NVML SM clock reads failed") && w.contains("times)"), "{w}");
}
