//! Per-kernel totals: runs the program once more with gpumodel's injection library
//! (`CUDA_INJECTION64_PATH`, see `collect/inject`), which profiles every launch with the CUPTI Range
//! Profiler (auto range, kernel replay) and writes one row per launch; the rows become kernel profiles.
//! Kernel replay serializes and repeats kernels, so this is a separate run from the power trace.

use crate::error::{Error, Result};
use gpumodel_models::ncu::read_inject_rows;
use gpumodel_models::profile::KernelProfile;
use std::path::{Path, PathBuf};

/// File name of the injection library.
pub const INJECT_LIB: &str = "libgpumodel_inject.so";

/// Finds the injection library: `GPUMODEL_INJECT_LIB`, else next to the running executable (or its parent
/// folder, where cargo puts it for tests), else in `../lib/gpumodel/` beside the executable's folder (an
/// installed layout: `bin/gpumodel`, `lib/gpumodel/libgpumodel_inject.so`).
pub fn find_inject_lib() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("GPUMODEL_INJECT_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(Error::Invalid(format!(
                "cannot load {INJECT_LIB}: GPUMODEL_INJECT_LIB={} is not a file; point it at the built library",
                p.display()
            )));
        }
        return Ok(p);
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
    let mut places: Vec<PathBuf> = exe.ancestors().skip(1).take(2).map(|d| d.join(INJECT_LIB)).collect();
    if let Some(prefix) = exe.parent().and_then(Path::parent) {
        places.push(prefix.join("lib/gpumodel").join(INJECT_LIB));
    }
    if let Some(p) = places.iter().find(|p| p.is_file()) {
        return Ok(p.clone());
    }
    let bin = exe.parent().map_or_else(|| ".".into(), |d| d.display().to_string());
    Err(Error::Invalid(format!(
        "cannot load {INJECT_LIB}: it is not beside the gpumodel executable (`cargo install` installs only the \
         executable): from the source tree run `cargo build --release -p gpumodel-inject && cp \
         target/release/{INJECT_LIB} {bin}/`, or set GPUMODEL_INJECT_LIB to the library"
    )))
}

/// Runs `program` under the injection library, writing rows to `rows_csv` (must not exist), and returns
/// the kernel profiles and the program's exit code; with `stdout_to_stderr` the program's standard output
/// goes to our standard error.
pub fn collect_kernel_totals(
    program: &[String],
    rows_csv: &Path,
    stdout_to_stderr: bool,
) -> Result<(Vec<KernelProfile>, Option<i32>)> {
    if rows_csv.exists() {
        return Err(Error::Invalid(format!(
            "{}: already exists; choose another --out (nothing was overwritten)",
            rows_csv.display()
        )));
    }
    let lib = find_inject_lib()?;
    let exe = crate::run::resolve_program(program.first().map_or("", String::as_str))?;
    let mut ld: Vec<PathBuf> = crate::cupti::loader::cuda_lib_dirs();
    ld.retain(|d| d.is_dir());
    let st = crate::run::program_command(&exe, &program[1..], stdout_to_stderr)
        .env("CUDA_INJECTION64_PATH", &lib)
        .env("GPUMODEL_INJECT_OUT", rows_csv)
        .env("LD_LIBRARY_PATH", std::env::join_paths(&ld).unwrap_or_default())
        .status()
        .map_err(|e| Error::Program { program: exe.display().to_string(), detail: e.to_string() })?;
    if !rows_csv.exists() {
        return Err(Error::Invalid(format!(
            "{} was not written: the CUDA driver did not load {} (no driver or GPU here?) or the program \
             launched no kernel",
            rows_csv.display(),
            lib.display()
        )));
    }
    let text = std::fs::read_to_string(rows_csv).map_err(|e| Error::io(rows_csv, e))?;
    let source = rows_csv.display().to_string();
    let kernels = read_inject_rows(&text, &source)?;
    let profiles = kernels
        .iter()
        .filter(|k| k.launch.is_some())
        .map(|k| k.to_profile(&source, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((profiles, st.code()))
}
