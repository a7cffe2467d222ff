//! NVML's clock sequence (`collect/src/nvml.rs`: `set_clock_pair`, `restore_clock_pair`, which
//! `gpumodel calibrate` uses for its clock-pair sweep and `gpumodel suite` through `suite::NvmlClocks`)
//! through the real nvml-wrapper calls, against a stand-in `libnvidia-ml.so`
//! (`tests/fake_nvml_clocks/fake_nvml_clocks.c`) that logs every call. No GPU needed: this checks which
//! NVML functions are called, in which order and with which arguments, and what is put back — not that a
//! GPU honours them.

mod common;

use gpumodel_collect::Error;
use gpumodel_collect::clocks::ClockPair;
use gpumodel_collect::nvml::{ClockLock, open_nvml_at, restore_clock_pair, set_clock_pair};
use gpumodel_collect::suite::{
    ClockControl, ClockOutcome, GpuInfo, Measurement, NvmlClocks, Plan, Progress, SuiteDevice, SuiteKernel,
    run_suite, select_kernels,
};
use nvml_wrapper::error::NvmlError;
use std::ffi::{CString, c_char};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The fake NVML of `scenario`, built into `dir`: the shared object's path.
fn fake_nvml(dir: &Path, scenario: u32) -> PathBuf {
    common::build_fake_nvml(dir, "fake_nvml_clocks/fake_nvml_clocks.c", scenario)
}

/// The fake's call log so far. `dlopen` of the same path returns the library NVML loaded.
fn call_log(lib: &Path) -> String {
    // SAFETY: the fake exports `const char *fake_log(void)`, returning a NUL-terminated static buffer.
    unsafe {
        let l = libloading::Library::new(lib).unwrap();
        let log: libloading::Symbol<unsafe extern "C" fn() -> *const c_char> = l.get(b"fake_log").unwrap();
        std::ffi::CStr::from_ptr(log()).to_string_lossy().into_owned()
    }
}

/// Adds `line` to the fake's log, between the NVML calls it records.
fn note(lib: &Path, line: &str) {
    let line = CString::new(line).unwrap();
    // SAFETY: the fake exports `void fake_note(const char *)`, which copies the NUL-terminated string.
    unsafe {
        let l = libloading::Library::new(lib).unwrap();
        let f: libloading::Symbol<unsafe extern "C" fn(*const c_char)> = l.get(b"fake_note").unwrap();
        f(line.as_ptr());
    }
}

/// Runs `f` on GPU 0 of the fake NVML of `scenario` and returns the fake's call log.
fn with_gpu(scenario: u32, f: impl FnOnce(&mut nvml_wrapper::Device<'_>)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let lib = fake_nvml(dir.path(), scenario);
    let nvml = open_nvml_at(Some(lib.as_os_str())).unwrap();
    let mut dev = nvml.device_by_index(0).unwrap();
    f(&mut dev);
    call_log(&lib)
}

#[test]
fn application_clocks_are_set_then_reset_when_they_were_the_defaults() {
    let log = with_gpu(0, |dev| {
        let lock = set_clock_pair(dev, 960, 1215, None).unwrap();
        assert_eq!(lock, ClockLock::Applications { before: None });
        // A second pair keeps the mechanism and what to put back.
        let lock = set_clock_pair(dev, 510, 800, Some(lock)).unwrap();
        assert_eq!(lock, ClockLock::Applications { before: None });
        restore_clock_pair(dev, lock).unwrap();
    });
    assert_eq!(log, "set_app 1215 960\nset_app 800 510\nreset_app\n");
}

/// Someone had set application clocks other than the defaults: they are put back, not reset.
#[test]
fn application_clocks_that_were_not_the_defaults_are_put_back() {
    let log = with_gpu(1, |dev| {
        let lock = set_clock_pair(dev, 960, 1215, None).unwrap();
        assert_eq!(lock, ClockLock::Applications { before: Some((1215, 1200)) });
        restore_clock_pair(dev, lock).unwrap();
    });
    assert_eq!(log, "set_app 1215 960\nset_app 1215 1200\n");
}

/// GeForce boards refuse application clocks: the GPU and memory clocks are locked instead, and both locks
/// are reset afterwards.
#[test]
fn without_application_clocks_the_clocks_are_locked_and_unlocked() {
    let log = with_gpu(2, |dev| {
        let lock = set_clock_pair(dev, 960, 1215, None).unwrap();
        assert_eq!(lock, ClockLock::Locked);
        let lock = set_clock_pair(dev, 510, 800, Some(lock)).unwrap();
        restore_clock_pair(dev, lock).unwrap();
    });
    assert_eq!(
        log,
        "set_app 1215 960\nlock_gpu 960 960\nlock_mem 1215 1215\nlock_gpu 510 510\nlock_mem 800 800\n\
         reset_gpu_lock\nreset_mem_lock\n"
    );
}

#[test]
fn no_permission_is_reported_with_the_call_that_was_refused() {
    with_gpu(3, |dev| {
        let e = set_clock_pair(dev, 960, 1215, None).unwrap_err();
        assert_eq!(e.call, "nvmlDeviceSetApplicationsClocks");
        assert!(matches!(e.error, NvmlError::NoPermission), "{:?}", e.error);
    });
}

/// A GPU lock without a memory lock (pre-Ampere) is undone before the error returns: nothing half-set.
#[test]
fn a_refused_memory_lock_leaves_no_gpu_lock_behind() {
    let log = with_gpu(4, |dev| {
        let e = set_clock_pair(dev, 960, 1215, None).unwrap_err();
        assert_eq!(e.call, "nvmlDeviceSetMemoryLockedClocks");
        assert!(matches!(e.error, NvmlError::NotSupported), "{:?}", e.error);
    });
    assert_eq!(log, "set_app 1215 960\nlock_gpu 960 960\nlock_mem 1215 1215\nreset_gpu_lock\n");
}

/// The suite's GPU with the real clock control ([`NvmlClocks`] over the fake NVML) and kernel runs that
/// only write `run <kernel>` into the fake's log, so the log is the whole sequence: set, runs, restore.
struct LoggedGpu {
    clocks: NvmlClocks,
    lib: PathBuf,
    fail_on: Option<&'static str>,
}

impl ClockControl for LoggedGpu {
    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        self.clocks.set(pair)
    }

    fn reset_clocks(&mut self) -> Result<(), Error> {
        self.clocks.reset()
    }
}

impl SuiteDevice for LoggedGpu {
    fn info(&self) -> GpuInfo {
        GpuInfo { name: "fake".into(), chip: None, driver: None, compute_capability: None, sm_count: None }
    }

    fn run(&mut self, kernel: &SuiteKernel, min_seconds: f64) -> Result<Measurement, Error> {
        note(&self.lib, &format!("run {}", kernel.name));
        if self.fail_on == Some(kernel.name.as_str()) {
            return Err(Error::Cuda { call: "cuLaunchKernel", message: "unspecified launch failure".into() });
        }
        Ok(Measurement {
            seconds: min_seconds,
            launches: 10,
            power_w: 100.0,
            power_samples: 10,
            clocks: gpumodel_models::timing::Clocks { core_mhz: 1410.0, mem_mhz: 1215.0 },
            counter_rates: Default::default(),
        })
    }
}

/// Runs the suite over `clocks` with two kernels on the fake NVML of `scenario`; the second kernel fails
/// when `fail` is set. Returns the run's result, its warnings and the fake's log.
fn suite_on(scenario: u32, clocks: &str, fail: bool) -> (Result<(), Error>, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let lib = fake_nvml(dir.path(), scenario);
    let nvml = open_nvml_at(Some(lib.as_os_str())).unwrap();
    let mut gpu = LoggedGpu {
        clocks: NvmlClocks::new(nvml.clone(), 0),
        lib: lib.clone(),
        fail_on: fail.then_some("idle_sleep"),
    };
    let plan = Plan {
        kernels: select_kernels(&["fp32_fma_full".into(), "idle_sleep".into()]).unwrap(),
        clocks: clocks.parse().unwrap(),
        min_seconds: 1.0,
        out: dir.path().join("suite.csv"),
        resume: false,
    };
    let mut warnings = Vec::new();
    let r = run_suite(&mut gpu, &plan, &AtomicBool::new(false), &mut |p| {
        if let Progress::Warning(w) = p {
            warnings.push(w);
        }
    });
    // The log before the device is dropped: dropping it must have nothing left to put back.
    let log = call_log(&lib);
    drop(gpu);
    assert_eq!(call_log(&lib), log, "the run loop left the clocks for the drop to put back");
    (r.map(|_| ()), warnings, log)
}

/// The suite sets each pair through the shared sequence before its kernels, and puts the defaults back
/// once at the end.
#[test]
fn the_suite_sets_each_pair_before_its_runs_and_resets_at_the_end() {
    let (r, warnings, log) = suite_on(0, "960:1215,510:800", false);
    r.unwrap();
    // This test GPU does not know its peak rates, so no utilization profiles are written beside the table.
    assert!(warnings.iter().all(|w| w.contains("peak rates are not known")), "{warnings:?}");
    assert_eq!(
        log,
        "set_app 1215 960\nrun fp32_fma_full\nrun idle_sleep\n\
         set_app 800 510\nrun fp32_fma_full\nrun idle_sleep\nreset_app\n"
    );
}

/// A kernel that fails at a locked pair: both locks are reset before the error returns.
#[test]
fn a_failing_kernel_leaves_no_clock_lock_behind() {
    let (r, _, log) = suite_on(2, "960:1215,510:800", true);
    let e = r.unwrap_err().to_string();
    assert!(e.contains("unspecified launch failure"), "{e}");
    assert_eq!(
        log,
        "set_app 1215 960\nlock_gpu 960 960\nlock_mem 1215 1215\nrun fp32_fma_full\nrun idle_sleep\n\
         reset_gpu_lock\nreset_mem_lock\n"
    );
}

/// Application clocks someone else had set are put back after a failing kernel, not reset to the
/// defaults.
#[test]
fn a_failing_kernel_puts_back_the_application_clocks_from_before() {
    let (r, _, log) = suite_on(1, "960:1215", true);
    assert!(r.is_err());
    assert_eq!(log, "set_app 1215 960\nrun fp32_fma_full\nrun idle_sleep\nset_app 1215 1200\n");
}

/// A run on the fake NVML of `scenario` whose clock change is refused: it succeeds at the current clocks
/// with exactly one warning. Returns the warning and the fake's log.
fn refused_run(scenario: u32, clocks: &str) -> (String, String) {
    let (r, mut warnings, log) = suite_on(scenario, clocks, false);
    r.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    (warnings.remove(0), log)
}

/// Without root the suite warns once and runs at the current clocks: nothing was set, nothing is reset.
#[test]
fn without_permission_the_suite_runs_at_the_current_clocks_and_resets_nothing() {
    let (warning, log) = refused_run(3, "960:1215,510:800");
    assert!(warning.contains("no permission") && warning.contains("nvidia-smi -acp"), "{warning}");
    assert_eq!(log, "set_app 1215 960\nrun fp32_fma_full\nrun idle_sleep\n");
}

/// A memory lock the GPU refuses after the GPU lock was set, and the GPU lock's reset failing too: the
/// warning says the GPU may be left locked and how to unlock it.
#[test]
fn a_gpu_lock_that_cannot_be_undone_is_in_the_warning() {
    let (warning, log) = refused_run(5, "960:1215");
    assert!(warning.contains("nvidia-smi -rgc"), "{warning}");
    let expected = "set_app 1215 960\nlock_gpu 960 960\nlock_mem 1215 1215\nreset_gpu_lock\n\
                    run fp32_fma_full\nrun idle_sleep\n";
    assert_eq!(log, expected);
}
