//! Run-time compilation of the suite's CUDA C kernels to PTX with NVRTC.
//!
//! NVRTC is loaded dynamically through `cudarc`'s `nvrtc` feature. cudarc asks the dynamic loader for a
//! bare library name (`libnvrtc.so`, `libnvrtc.so.12`, …), so it only finds the library through
//! `LD_LIBRARY_PATH` as it was when the process started, and it *panics* when nothing is found. Here we
//! first look in the folders of `GPUMODEL_CUDA_LIBS` (colon-separated, as `scripts/test` sets it) and of
//! `LD_LIBRARY_PATH`, open the library there by its full path and keep it open: glibc's `dlopen` then
//! resolves cudarc's bare `libnvrtc.so.12` to the already-loaded object by its SONAME. NVRTC's own
//! `libnvrtc-builtins.so.12.x`, which it opens at compile time, is preloaded the same way. Only after
//! `cudarc::nvrtc::sys::is_culib_present()` agrees do we call into cudarc, so a missing library is an
//! error value with a fix, never a panic.

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// GPU targets every kernel is compiled for in the tests (Turing … Hopper).
pub const TEST_ARCHES: &[&str] = &["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"];

/// Folders to search for the CUDA host libraries: `GPUMODEL_CUDA_LIBS` first, then `LD_LIBRARY_PATH`.
pub fn library_dirs() -> Vec<PathBuf> {
    ["GPUMODEL_CUDA_LIBS", "LD_LIBRARY_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .flat_map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// Makes NVRTC loadable by cudarc (see the module docs); cached for the process.
pub fn ensure_loaded() -> Result<()> {
    // The outcome is cached as the folders looked in (the error is not `Clone`: it may carry an I/O error).
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED.get_or_init(load).clone().map_err(|looked| Error::NvrtcNotFound { looked })
}

/// Loads NVRTC, or says where it looked.
fn load() -> Result<(), String> {
    let dirs = library_dirs();
    for dir in &dirs {
        if let Some(lib) = find_in(dir, "libnvrtc.so") {
            // Builtins first: libnvrtc opens them lazily by SONAME when it compiles.
            if let Some(builtins) = find_in(dir, "libnvrtc-builtins.so") {
                open_forever(&builtins);
            }
            if open_forever(&lib) {
                break;
            }
        }
    }
    // SAFETY: cudarc only tries `dlopen` on its candidate names; it does not call into the library.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        let looked = if dirs.is_empty() {
            "the system library path; GPUMODEL_CUDA_LIBS and LD_LIBRARY_PATH are unset".to_string()
        } else {
            dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        };
        Err(looked)
    }
}

/// The newest `prefix*` file in `dir` (`libnvrtc.so.12`, `libnvrtc.so`), skipping NVIDIA's `.alt` builds.
fn find_in(dir: &Path, prefix: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && !n.contains(".alt"))
        })
        .collect();
    found.sort();
    found.pop()
}

fn open_forever(path: &Path) -> bool {
    // SAFETY: loading NVIDIA's NVRTC runs only its (trusted) initializers; the handle is leaked on
    // purpose so the library stays mapped for cudarc's later lookups by name.
    match unsafe { libloading::Library::new(path) } {
        Ok(lib) => {
            std::mem::forget(lib);
            true
        }
        Err(_) => false,
    }
}

/// Checks the `sm_XY` form and returns the `&'static str` cudarc's options need.
pub fn arch_static(arch: &str) -> Result<&'static str> {
    const KNOWN: &[&str] = &[
        "sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86",
        "sm_87", "sm_89", "sm_90", "sm_100", "sm_120",
    ];
    KNOWN.iter().copied().find(|k| *k == arch).ok_or_else(|| Error::BadArch(arch.to_string()))
}

/// The `sm_XY` target for a compute capability (8, 6) → `sm_86`.
pub fn arch_for_capability(major: u32, minor: u32) -> Result<&'static str> {
    arch_static(&format!("sm_{major}{minor}"))
}

/// Compiles one CUDA C source to PTX text for `arch` (e.g. `sm_86`), optimized (-O3 is NVRTC's default).
/// `name` names the source in errors.
pub fn compile_ptx(name: &str, source: &str, arch: &str) -> Result<String> {
    ensure_loaded()?;
    let arch = arch_static(arch)?;
    let opts = cudarc::nvrtc::CompileOptions {
        arch: Some(arch),
        name: Some(format!("{name}.cu")),
        options: vec!["--std=c++17".into()],
        ..Default::default()
    };
    match cudarc::nvrtc::compile_ptx_with_opts(source, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => Err(Error::NvrtcCompile {
            name: name.to_string(),
            arch: arch.to_string(),
            log: log.to_string_lossy().trim().to_string(),
        }),
        Err(e) => {
            Err(Error::NvrtcCompile { name: name.to_string(), arch: arch.to_string(), log: format!("{e}") })
        }
    }
}

/// The NVRTC version as (major, minor).
pub fn version() -> Result<(i32, i32)> {
    ensure_loaded()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is loaded (checked above) and the out-pointers are valid.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    Ok((major, minor))
}

/// Whether the tests must fail (not skip) when NVRTC is missing: `GPUMODEL_REQUIRE_CUDA_LIBS=1`.
pub fn libs_required() -> bool {
    std::env::var("GPUMODEL_REQUIRE_CUDA_LIBS").is_ok_and(|v| v == "1")
}

/// For the tests that compile with the real NVRTC: whether it loaded. When it did not, a test skips (and
/// says why), unless `GPUMODEL_REQUIRE_CUDA_LIBS=1`, where it fails.
#[cfg(test)]
pub(crate) fn loaded_or_skip() -> bool {
    match ensure_loaded() {
        Ok(()) => true,
        Err(e) => {
            assert!(!libs_required(), "GPUMODEL_REQUIRE_CUDA_LIBS=1 but {e}");
            eprintln!("skipping: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names_are_checked() {
        assert_eq!(arch_for_capability(8, 6).unwrap(), "sm_86");
        assert!(matches!(arch_static("ampere"), Err(Error::BadArch(_))));
    }

    /// Real NVRTC: a trivial kernel compiles for every test target; a syntax error comes back as a
    /// compile error carrying NVRTC's log (not a panic).
    #[test]
    fn real_nvrtc_compiles_and_reports_errors() {
        if !loaded_or_skip() {
            return;
        }
        for arch in TEST_ARCHES {
            let ptx =
                compile_ptx("t", "extern \"C\" __global__ void k(float *x) { x[0] = x[1] * 2.0f; }", arch)
                    .unwrap();
            assert!(ptx.contains(&format!(".target {arch}")), "{ptx}");
            assert!(ptx.contains("st.global.f32"), "{ptx}");
        }
        let err = compile_ptx("bad", "extern \"C\" __global__ void k( { }", "sm_80").unwrap_err();
        assert!(matches!(err, Error::NvrtcCompile { .. }), "{err}");
        assert!(err.to_string().contains("bad.cu"), "{err}");
    }
}
