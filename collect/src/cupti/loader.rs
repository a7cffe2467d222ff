//! Finding `libcupti` and `libnvperf_host` for `cudarc`.
//!
//! cudarc (0.19) loads CUPTI by bare names (`libcupti.so`, …, `libcupti.so.12`) through `dlopen`, so it
//! only sees folders the dynamic loader already searches; and `LD_LIBRARY_PATH` is read by the loader
//! once, at process start, so setting it later does nothing. The PyPI wheel `nvidia-cuda-cupti-cu12`
//! ships `libcupti.so.12` and `libnvperf_host.so` in a folder no loader searches. We therefore open both
//! by full path from `GPUMODEL_CUDA_LIBS` (then `LD_LIBRARY_PATH`, then the CUDA toolkit's usual folder)
//! with `RTLD_GLOBAL`, and keep them loaded for the life of the process: a later `dlopen` by SONAME (what
//! cudarc does, and what libcupti does for `libnvperf_host.so`) then finds the copy already loaded.

use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::OnceLock;

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

/// Opens the first `names` found in `dirs` with RTLD_GLOBAL and leaks it (kept for the process).
fn preload(names: &[&str]) -> Option<PathBuf> {
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
                std::mem::forget(lib);
                return Some(path);
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
        let nvperf_host =
            preload(&["libnvperf_host.so"]).ok_or_else(|| ("libnvperf_host.so".to_string(), searched()))?;
        let cupti = preload(&["libcupti.so.12", "libcupti.so", "libcupti.so.13"])
            .ok_or_else(|| ("libcupti.so".to_string(), searched()))?;
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
