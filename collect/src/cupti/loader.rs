//! Finding `libcupti` and `libnvperf_host` for `cudarc`.
//!
//! cudarc (0.19) loads CUPTI by bare names (`libcupti.so`, …, `libcupti.so.12`) through `dlopen`, so it
//! only sees folders the dynamic loader already searches; and `LD_LIBRARY_PATH` is read by the loader
//! once, at process start, so setting it later does nothing. The PyPI wheel `nvidia-cuda-cupti-cu12`
//! ships `libcupti.so.12` and `libnvperf_host.so` in a folder no loader searches. We therefore open both
//! by full path from `GPUMODEL_CUDA_LIBS` (then `LD_LIBRARY_PATH`, then the CUDA toolkit's usual folder)
//! with `RTLD_GLOBAL`, and keep them loaded for the life of the process: a later `dlopen` by SONAME (what
//! cudarc does, and what libcupti does for `libnvperf_host.so`) then finds the copy already loaded.

//!
//! cudarc's CUPTI bindings are generated for one CUPTI (12.9, API version 28) and look each function up
//! at its first call, panicking when it is missing. So before anything calls through cudarc, the
//! library found is checked here ([`check_cupti_library`]): `cuptiGetVersion` must report a CUPTI 12
//! API version new enough for PM sampling and the Profiler Host API ([`MIN_CUPTI_API_VERSION`], CUDA
//! 12.6), not CUPTI 13 (whose structures differ from the bindings), and every function gpumodel calls
//! ([`REQUIRED_CUPTI_SYMBOLS`]) must be exported. Either failure is [`Error::MissingLibrary`] naming the
//! CUPTI needed.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// CUPTI API version of CUDA 12.6, the first with PM sampling and the Profiler Host API
/// (`cupti_version.h`; cudarc's `cuda-12060` bindings).
pub const MIN_CUPTI_API_VERSION: u32 = 24;
/// CUPTI API version the bindings were generated for (CUDA 12.9).
pub const BINDINGS_CUPTI_API_VERSION: u32 = cudarc::cupti::sys::CUPTI_API_VERSION;

/// Every CUPTI function the collector and the injection library call.
pub const REQUIRED_CUPTI_SYMBOLS: &[&str] = &[
    "cuptiGetVersion",
    "cuptiGetResultString",
    "cuptiGetTimestamp",
    "cuptiDeviceGetChipName",
    "cuptiGetDeviceId",
    "cuptiSubscribe",
    "cuptiUnsubscribe",
    "cuptiEnableCallback",
    "cuptiProfilerInitialize",
    "cuptiProfilerDeInitialize",
    "cuptiProfilerGetCounterAvailability",
    "cuptiProfilerHostInitialize",
    "cuptiProfilerHostDeinitialize",
    "cuptiProfilerHostGetSupportedChips",
    "cuptiProfilerHostGetBaseMetrics",
    "cuptiProfilerHostConfigAddMetrics",
    "cuptiProfilerHostGetConfigImageSize",
    "cuptiProfilerHostGetConfigImage",
    "cuptiProfilerHostGetNumOfPasses",
    "cuptiProfilerHostEvaluateToGpuValues",
    "cuptiProfilerHostGetRangeName",
    "cuptiPmSamplingEnable",
    "cuptiPmSamplingDisable",
    "cuptiPmSamplingSetConfig",
    "cuptiPmSamplingStart",
    "cuptiPmSamplingStop",
    "cuptiPmSamplingDecodeData",
    "cuptiPmSamplingGetCounterAvailability",
    "cuptiPmSamplingGetCounterDataSize",
    "cuptiPmSamplingCounterDataImageInitialize",
    "cuptiPmSamplingGetCounterDataInfo",
    "cuptiPmSamplingCounterDataGetSampleInfo",
    "cuptiRangeProfilerEnable",
    "cuptiRangeProfilerDisable",
    "cuptiRangeProfilerSetConfig",
    "cuptiRangeProfilerStart",
    "cuptiRangeProfilerStop",
    "cuptiRangeProfilerDecodeData",
    "cuptiRangeProfilerGetCounterDataSize",
    "cuptiRangeProfilerCounterDataImageInitialize",
    "cuptiRangeProfilerGetCounterDataInfo",
];

/// Whether CUPTI API version `api` can be driven through the bindings: a CUPTI 12 at least as new as
/// PM sampling. CUPTI 13 reports versions like 130001.
pub fn check_cupti_version(api: u32) -> std::result::Result<(), String> {
    let need = format!(
        "gpumodel needs CUPTI 12.6 to 12.9 (API version {MIN_CUPTI_API_VERSION} to {BINDINGS_CUPTI_API_VERSION}, \
         e.g. `pip install nvidia-cuda-cupti-cu12`)"
    );
    if api >= 1000 {
        return Err(format!("it is CUPTI {} (API version {api}); {need}", api / 10000));
    }
    if api < MIN_CUPTI_API_VERSION {
        return Err(format!("its API version {api} predates PM sampling; {need}"));
    }
    Ok(())
}

/// The SONAME major of a library file name: `libcupti.so.13` → 13; `None` for `libcupti.so`.
fn so_major(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?.strip_prefix("libcupti")?;
    let rest = name.split(".so.").nth(1)?;
    rest.split('.').next()?.parse().ok()
}

/// Checks a loaded libcupti before cudarc binds to it: a CUPTI 12 by file name and by
/// `cuptiGetVersion`, exporting every [`REQUIRED_CUPTI_SYMBOLS`]. Returns its API version.
pub fn check_cupti_library(
    lib: &libloading::os::unix::Library,
    path: &Path,
) -> std::result::Result<u32, String> {
    // A symlink (`libcupti.so` → `libcupti.so.13.0.48`) is judged by what it points to.
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(major) = so_major(&real).or_else(|| so_major(path))
        && major != 12
    {
        return Err(format!(
            "{} is CUPTI {major}; gpumodel is built for CUPTI 12 (12.6 to 12.9): install nvidia-cuda-cupti-cu12",
            real.display()
        ));
    }
    let missing: Vec<&str> = REQUIRED_CUPTI_SYMBOLS
        .iter()
        .copied()
        .filter(|s| {
            // SAFETY: only looks the symbol up; the pointer is not used.
            unsafe { lib.get::<*const ()>(s.as_bytes()) }.is_err()
        })
        .collect();
    if !missing.is_empty() {
        return Err(format!("{} lacks {} (needs CUPTI 12.6 to 12.9)", path.display(), missing.join(", ")));
    }
    let mut api = 0u32;
    // SAFETY: cuptiGetVersion(uint32_t*) as declared in cupti_version.h; checked present above.
    let r = unsafe {
        let f = lib
            .get::<unsafe extern "C" fn(*mut u32) -> i32>(b"cuptiGetVersion")
            .map_err(|e| format!("{}: {e}", path.display()))?;
        f(&mut api)
    };
    if r != 0 {
        return Err(format!("{}: cuptiGetVersion failed with CUPTI error {r}", path.display()));
    }
    check_cupti_version(api).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(api)
}

/// Folders searched for the CUDA host libraries, in order.
pub fn cuda_lib_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["GPUMODEL_CUDA_LIBS", "LD_LIBRARY_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.extend(std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()));
        }
    }
    for d in ["/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// A check run on a library as soon as it is loaded.
type Check = fn(&libloading::os::unix::Library, &Path) -> std::result::Result<(), String>;

/// Opens the first `names` found in `dirs` with RTLD_GLOBAL, runs `check` on it, and leaks it (kept for
/// the process). A library refused by `check` stops the search with that reason: loading a second
/// CUPTI next to a wrong one would leave cudarc to pick either.
fn preload(names: &[&str], check: Check) -> Option<std::result::Result<PathBuf, String>> {
    for dir in cuda_lib_dirs() {
        for name in names {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            // SAFETY: loading NVIDIA's library runs its initializers, which only set up its own state.
            let lib = unsafe {
                libloading::os::unix::Library::open(
                    Some(&path),
                    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
                )
            };
            if let Ok(lib) = lib {
                let verdict = check(&lib, &path);
                std::mem::forget(lib);
                return Some(verdict.map(|()| path));
            }
        }
    }
    None
}

/// Where the two libraries were loaded from.
#[derive(Debug, Clone)]
pub struct CuptiLibs {
    pub cupti: PathBuf,
    pub nvperf_host: PathBuf,
}

/// Loads libnvperf_host and libcupti once; later calls return the first outcome.
pub fn load_cupti() -> Result<CuptiLibs> {
    static LOADED: OnceLock<std::result::Result<CuptiLibs, (String, String)>> = OnceLock::new();
    let r = LOADED.get_or_init(|| {
        let searched = || {
            let d: Vec<String> = cuda_lib_dirs().iter().map(|p| p.display().to_string()).collect();
            format!("not found in {}", d.join(":"))
        };
        let nvperf_host = preload(&["libnvperf_host.so"], |_, _| Ok(()))
            .ok_or_else(|| ("libnvperf_host.so".to_string(), searched()))?
            .map_err(|e| ("libnvperf_host.so".to_string(), e))?;
        // libcupti.so.13 is not searched for: its structures differ from the 12.9 bindings.
        let cupti = preload(&["libcupti.so.12", "libcupti.so"], |lib, path| {
            check_cupti_library(lib, path).map(|_| ())
        })
        .ok_or_else(|| ("libcupti.so".to_string(), searched()))?
        .map_err(|e| ("libcupti.so".to_string(), e))?;
        // SAFETY: only probes dlopen by name; the library is already resident.
        if !unsafe { cudarc::cupti::sys::is_culib_present() } {
            return Err((
                "libcupti.so".into(),
                format!("loaded {} but cudarc cannot see it", cupti.display()),
            ));
        }
        Ok(CuptiLibs { cupti, nvperf_host })
    });
    r.clone().map_err(|(library, detail)| Error::MissingLibrary { library, detail })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUPTI 13 (API 130001…) and pre-PM-sampling CUPTIs are refused with the CUPTI
    /// needed; 12.6 to 12.9 pass.
    #[test]
    fn cupti_versions_outside_12_6_to_12_9_are_refused_with_the_version_needed() {
        assert_eq!(BINDINGS_CUPTI_API_VERSION, 28);
        for ok in [24, 26, 28] {
            assert!(check_cupti_version(ok).is_ok(), "{ok}");
        }
        let e = check_cupti_version(130001).unwrap_err();
        assert!(e.contains("CUPTI 13") && e.contains("nvidia-cuda-cupti-cu12"), "{e}");
        let e = check_cupti_version(18).unwrap_err();
        assert!(e.contains("predates PM sampling") && e.contains("12.6 to 12.9"), "{e}");
    }

    #[test]
    fn so_major_reads_the_file_name() {
        assert_eq!(so_major(Path::new("/x/libcupti.so.13")), Some(13));
        assert_eq!(so_major(Path::new("/x/libcupti.so.12.9.79")), Some(12));
        assert_eq!(so_major(Path::new("/x/libcupti.so")), None);
    }

    /// A library without the CUPTI functions (here the C library, loaded in every process) is refused
    /// with the missing names, before cudarc could panic on them.
    #[test]
    fn a_library_without_cuptis_functions_is_refused_naming_them() {
        let path = Path::new("libc.so.6");
        // SAFETY: the C library is already loaded in every process.
        let lib = unsafe { libloading::os::unix::Library::new(path) }.unwrap();
        let e = check_cupti_library(&lib, path).unwrap_err();
        assert!(e.contains("lacks cuptiGetVersion") && e.contains("cuptiPmSamplingEnable"), "{e}");
        assert!(e.contains("needs CUPTI 12.6 to 12.9"), "{e}");
    }

    /// With the wheel's CUPTI (scripts/test), the real library passes the check and reports 12.9's API.
    #[test]
    fn the_installed_cupti_passes_the_version_and_symbol_check() {
        match load_cupti() {
            Ok(libs) => {
                // SAFETY: already loaded by load_cupti.
                let lib = unsafe { libloading::os::unix::Library::new(&libs.cupti) }.unwrap();
                let api = check_cupti_library(&lib, &libs.cupti).unwrap();
                assert!((MIN_CUPTI_API_VERSION..=BINDINGS_CUPTI_API_VERSION).contains(&api), "{api}");
            }
            Err(e) => assert!(std::env::var_os("GPUMODEL_REQUIRE_CUDA_LIBS").is_none(), "{e}"),
        }
    }
}
