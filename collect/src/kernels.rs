//! Per-kernel totals: runs the program once more with gpumodel's injection library
//! (`CUDA_INJECTION64_PATH`, see `collect/inject`), which profiles every launch with the CUPTI Range
//! Profiler (auto range, kernel replay) and writes one row per launch; the rows become kernel profiles.
//! Kernel replay serializes and repeats kernels, so this is a separate run from the power trace. On the
//! scripted GPU, [`collect_kernel_totals_scripted`] runs the program without the library and writes the
//! rows the library would for the scripted program's kernel; the same reader turns them into profiles.

use crate::error::{Error, Result};
use crate::suite::FakeSuiteDevice;
use gpumodel_models::counters::CounterMap;
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
        "cannot load {INJECT_LIB}: it is neither beside the gpumodel executable nor in ../lib/gpumodel/ (`cargo \
         install` installs only the executable): from the source tree run `bash scripts/install`, or `cargo build \
         --release -p gpumodel-inject && cp target/release/{INJECT_LIB} {bin}/`, or set GPUMODEL_INJECT_LIB to the \
         library"
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
    refuse_existing(rows_csv)?;
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
    Ok((profiles_from_rows(rows_csv)?, st.code()))
}

/// The kernel profiles of a rows file written by the injection library (launches with a known geometry).
pub fn profiles_from_rows(rows_csv: &Path) -> Result<Vec<KernelProfile>> {
    let text = std::fs::read_to_string(rows_csv).map_err(|e| Error::io(rows_csv, e))?;
    let source = rows_csv.display().to_string();
    let kernels = read_inject_rows(&text, &source)?;
    Ok(kernels
        .iter()
        .filter(|k| k.launch.is_some())
        .map(|k| k.to_profile(&source, None))
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// The columns of the injection library's rows before the chip's canonical counters: the launch, its
/// duration, the SM clock during it and the GPU's name.
pub const ROW_COLUMNS: [&str; 13] = [
    "index",
    "name",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "shared_mem_bytes",
    "duration_s",
    "core_mhz",
    "device",
];

/// The rows the injection library writes on the scripted GPU (a GA100) for the scripted program: a header
/// and one launch of [`FakeSuiteDevice::APP_KERNEL`], its counters those of
/// [`FakeSuiteDevice::app_work`] and its duration the time law's at the default clocks, which it ran at.
pub fn scripted_rows() -> Result<String> {
    let dev = FakeSuiteDevice::new();
    let chip = dev.info.chip.clone().unwrap_or_default();
    let map = CounterMap::builtin(&chip)?;
    let work = dev.app_work();
    let duration_s = dev.true_time(&work, dev.default_clocks);
    let l = FakeSuiteDevice::APP_LAUNCH;
    let mut header: Vec<String> = ROW_COLUMNS.iter().map(|c| c.to_string()).collect();
    header.extend(map.range.keys().cloned());
    let mut row = vec!["0".to_string(), format!("\"{}\"", FakeSuiteDevice::APP_KERNEL.replace('"', "'"))];
    row.extend(l.grid.iter().chain(&l.block).map(u32::to_string));
    row.push(l.registers_per_thread.to_string());
    row.push(l.shared_mem_per_block.to_string());
    row.push(format!("{duration_s}"));
    row.push(format!("{}", dev.default_clocks.core_mhz));
    row.push(format!("\"{}\"", dev.info.name.replace('"', "'")));
    for k in map.range.keys() {
        row.push(work.counters.get(k).map_or("nan".into(), |v| format!("{v}")));
    }
    Ok(format!("{}\n{}\n", header.join(","), row.join(",")))
}

/// [`collect_kernel_totals`] on the scripted GPU: runs `program` as it is (its exit code is the program's),
/// writes [`scripted_rows`] to `rows_csv` (must not exist) and reads them back as the real run's rows are.
pub fn collect_kernel_totals_scripted(
    program: &[String],
    rows_csv: &Path,
    stdout_to_stderr: bool,
) -> Result<(Vec<KernelProfile>, Option<i32>)> {
    refuse_existing(rows_csv)?;
    let exe = crate::run::resolve_program(program.first().map_or("", String::as_str))?;
    let st = crate::run::program_command(&exe, &program[1..], stdout_to_stderr)
        .status()
        .map_err(|e| Error::Program { program: exe.display().to_string(), detail: e.to_string() })?;
    let rows = scripted_rows()?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(rows_csv)
        .and_then(|mut f| std::io::Write::write_all(&mut f, rows.as_bytes()))
        .map_err(|e| Error::io(rows_csv, e))?;
    Ok((profiles_from_rows(rows_csv)?, st.code()))
}

fn refuse_existing(rows_csv: &Path) -> Result<()> {
    if rows_csv.exists() {
        return Err(Error::Invalid(format!(
            "{}: already exists; choose another --out (nothing was overwritten)",
            rows_csv.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_totals_give_the_laws_launch_and_the_programs_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("app.kernels.csv");
        let program: Vec<String> = ["sh", "-c", "exit 3"].map(String::from).to_vec();
        let (profiles, code) = collect_kernel_totals_scripted(&program, &rows, true).unwrap();
        assert_eq!(code, Some(3));
        assert_eq!(profiles.len(), 1);
        let p = &profiles[0];
        let dev = FakeSuiteDevice::new();
        let work = dev.app_work();
        assert_eq!(p.name, FakeSuiteDevice::APP_KERNEL);
        assert_eq!(p.launch, FakeSuiteDevice::APP_LAUNCH);
        assert_eq!(p.arch.as_deref(), Some("a100"));
        assert_eq!(p.measured.core_mhz, Some(dev.default_clocks.core_mhz));
        let t = p.measured.time_s.unwrap();
        assert!((t / dev.true_time(&work, dev.default_clocks) - 1.0).abs() < 1e-9, "{t}");
        for (c, v) in &work.counters {
            assert_eq!(p.counter(c), Some(*v), "{c}");
        }
        // The rows file is never overwritten.
        let again = collect_kernel_totals_scripted(&program, &rows, true).unwrap_err();
        assert!(again.to_string().contains("already exists"), "{again}");
    }
}
