//! NVML's clock sequence (`collect/src/nvml.rs`: `set_clock_pair`, `restore_clock_pair`, which
//! `gpumodel calibrate` uses for its clock-pair sweep) through the real nvml-wrapper calls, against a
//! stand-in `libnvidia-ml.so` (`tests/fake_nvml_clocks/fake_nvml_clocks.c`) that logs every call. No GPU
//! needed: this checks which NVML functions are called, in which order and with which arguments, and what
//! is put back — not that a GPU honours them.

mod common;

use gpumodel_collect::nvml::{ClockLock, open_nvml_at, restore_clock_pair, set_clock_pair};
use nvml_wrapper::error::NvmlError;

/// Runs `f` on GPU 0 of the fake NVML of `scenario` and returns the fake's call log.
fn with_gpu(scenario: u32, f: impl FnOnce(&mut nvml_wrapper::Device<'_>)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let lib = common::build_fake_nvml(dir.path(), "fake_nvml_clocks/fake_nvml_clocks.c", scenario);
    let nvml = open_nvml_at(Some(lib.as_os_str())).unwrap();
    let mut dev = nvml.device_by_index(0).unwrap();
    f(&mut dev);
    // The same shared object (dlopen returns the loaded one), read for its log.
    // SAFETY: the fake exports `const char *fake_log(void)`, returning a NUL-terminated static buffer.
    unsafe {
        let l = libloading::Library::new(&lib).unwrap();
        let log: libloading::Symbol<unsafe extern "C" fn() -> *const std::ffi::c_char> =
            l.get(b"fake_log").unwrap();
        std::ffi::CStr::from_ptr(log()).to_string_lossy().into_owned()
    }
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
