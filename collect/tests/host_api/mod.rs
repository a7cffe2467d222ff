//! Turn-taking for the tests that load CUPTI's host library.

use gpumodel_collect::cupti::loader::load_cupti;

/// The test harness runs tests on parallel threads, and CUPTI's profiler host API keeps process-wide
/// state: concurrent host objects failed intermittently with CUPTI_ERROR_UNKNOWN. `gpumodel` itself uses
/// one host object at a time, so the tests take turns too.
static HOST_API: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The libraries are loaded and this test holds the host API; `None` means skip (libraries absent and not
/// required by `GPUMODEL_REQUIRE_CUDA_LIBS=1`).
pub fn libs_or_skip() -> Option<std::sync::MutexGuard<'static, ()>> {
    let guard = HOST_API.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match load_cupti() {
        Ok(_) => Some(guard),
        Err(e) => {
            if std::env::var("GPUMODEL_REQUIRE_CUDA_LIBS").is_ok_and(|v| v == "1") {
                panic!("GPUMODEL_REQUIRE_CUDA_LIBS=1 but {e}");
            }
            eprintln!("skipping: {e}");
            None
        }
    }
}
