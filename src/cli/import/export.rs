//! A file given where a kernel profile is expected (`predict --kernel FILE`): a profiler export, told apart
//! by its first lines and read by `import`'s reader; the list of kernel profiles `collect --kernel-totals`
//! writes; or one kernel profile (TOML or JSON). From an export or a list, one kernel launch is taken.

use anyhow::Context as _;
use gpumodel_models::ncu::ImportedKernel;
use gpumodel_models::profile::KernelProfile;
use std::io::BufRead;
use std::path::Path;

/// How many lines of a file's start are looked at to tell a profiler export.
const SNIFF_LINES: usize = 64;

/// What wrote a CSV export, told from its first lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// Nsight Compute: its `==PROF==` log lines or its raw page's `"ID","Process ID"` header.
    Ncu,
    /// nvprof's metric table: its `==PID== NVPROF` log lines or its `"Device","Kernel"` header.
    Nvprof,
    /// nvprof's `--print-gpu-trace`: times and launch shapes, no counter.
    NvprofGpuTrace,
}

/// The export `path` is, or `None` for anything else (a kernel profile included).
pub fn export_of(path: &Path) -> Option<Export> {
    let file = std::fs::File::open(path).ok()?;
    let mut nvprof = false;
    for line in std::io::BufReader::new(file).lines().take(SNIFF_LINES) {
        let Ok(line) = line else { return None };
        let line = line.trim_start_matches('\u{feff}');
        // ncu's CSV: its log lines, or a header whose first column is the launch ID beside the kernel name.
        if line.starts_with("==PROF==") || (line.starts_with("\"ID\",") && line.contains("\"Kernel Name\"")) {
            return Some(Export::Ncu);
        }
        if line.starts_with("\"Start\",\"Duration\"") {
            return Some(Export::NvprofGpuTrace);
        }
        if line.starts_with("\"Device\",\"Kernel\"") {
            return Some(Export::Nvprof);
        }
        // nvprof's log lines come before the table, whose header says which of the two it is.
        nvprof |= line.starts_with("==") && line.contains("NVPROF");
    }
    nvprof.then_some(Export::Nvprof)
}

/// Kernel launch `launch` (1-based, the order of the export; the only one when `None`) of export `path`,
/// as a kernel profile. Several launches and no choice: one line that counts them and names the flags.
pub fn kernel_of(path: &Path, export: Export, launch: Option<usize>) -> anyhow::Result<KernelProfile> {
    let source = path.display().to_string();
    let profiler = match export {
        Export::Ncu => "ncu",
        Export::Nvprof => "nvprof",
        Export::NvprofGpuTrace => anyhow::bail!(
            "{source} is an nvprof gpu trace (times and launch shapes, no counters): give the metric export (`nvprof --csv --metrics all --log-file metrics.csv ./app`) as --kernel, or both to `gpumodel import nvprof metrics.csv --gpu-trace {source} --profiles DIR`"
        ),
    };
    let mut kernels: Vec<ImportedKernel> = Vec::new();
    super::profiler::read_export(profiler, path, None, |k| {
        kernels.push(k);
        Ok(())
    })?;
    let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    let hint =
        format!(", or write each as a profile with `gpumodel import {profiler} {source} --profiles DIR`");
    let pick = pick(launch, &names, &source, &format!("the {profiler} export"), "kernel launches", &hint)?;
    Ok(kernels[pick - 1].to_profile(&source, None)?)
}

/// The kernel profile that file `path` gives (`--launch`: which launch of an export or list).
pub fn kernel_file(path: &Path, launch: Option<usize>) -> anyhow::Result<KernelProfile> {
    let source = path.display().to_string();
    if let Some(export) = export_of(path) {
        return kernel_of(path, export, launch);
    }
    if gpumodel_models::trace::read_meta(path).is_ok_and(|m| m.format == gpumodel_models::trace::TRACE_FORMAT)
    {
        anyhow::bail!(
            "{source} is a collector trace (power and counter rates over a whole program run), not a kernel profile: \
             `gpumodel collect --kernel-totals` also writes per-kernel profiles (<out>.kernels.json) for --kernel, \
             and `predict --profile` reads a trace collected with --pm-passes all"
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("{source}: cannot read it"))?;
    let Ok(text) = String::from_utf8(bytes) else {
        anyhow::bail!(
            "{source}: not a text file (not UTF-8): give a kernel profile (TOML or JSON) or an ncu or nvprof CSV \
             export, not a binary, compressed or spreadsheet file"
        );
    };
    // The table `gpumodel import` writes (one row per kernel) rather than one kernel's profile.
    if text.trim_start_matches('\u{feff}').starts_with("kernel,time_s,") {
        anyhow::bail!(
            "{source} is the kernel table `gpumodel import` writes (one row per kernel, for training): give the \
             export it came from as --kernel (--launch N picks a kernel), or one profile that `gpumodel import … \
             --profiles DIR` writes"
        );
    }
    // A run's GPU activity (a DCGM log or profile, a profile table) rather than one kernel: say which command
    // answers it. A TOML or JSON document is left to the kernel profile's own parser.
    use gpumodel_models::utilization::read::ProfileFormat;
    if let Some(f) = ProfileFormat::guess(&text).filter(|f| *f != ProfileFormat::Document) {
        anyhow::bail!(
            "{source} is a utilization profile ({} format: a run's GPU activity, not one kernel's counters): \
             `gpumodel predict --profile {source}` gives the run's time, power and energy, and their estimate at \
             other clocks",
            f.name()
        );
    }
    if !text.trim_start().starts_with('[') {
        if launch.is_some() {
            anyhow::bail!(
                "--launch picks a kernel launch of an ncu or nvprof export or a list of profiles: {source} is one profile"
            );
        }
        return Ok(KernelProfile::from_file(path)?);
    }
    // A JSON list of profiles, one per kernel launch (`collect --kernel-totals`).
    let kernels: Vec<KernelProfile> = serde_json::from_str(&text).with_context(|| {
        format!("{source}: a JSON list, but not of kernel profiles (as `collect --kernel-totals` writes)")
    })?;
    let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    let pick = pick(launch, &names, &source, "the list", "kernel profiles", "")?;
    let k = kernels.into_iter().nth(pick - 1).expect("pick is within 1..=n");
    k.check(&format!("{source}, profile {pick}"))?;
    Ok(k)
}

/// Which of the `names` (1-based) `--launch` picks: the only one when not given; none, one out of range, or
/// several and no choice are one line that counts them and names the flag (`hint` adds what else to do).
fn pick(
    launch: Option<usize>,
    names: &[&str],
    source: &str,
    holder: &str,
    what: &str,
    hint: &str,
) -> anyhow::Result<usize> {
    let n = names.len();
    match (launch, n) {
        (_, 0) => anyhow::bail!("{source}: {holder} holds no {what}"),
        (None, 1) => Ok(1),
        (Some(i), _) if (1..=n).contains(&i) => Ok(i),
        (Some(i), _) => anyhow::bail!("--launch {i}: {source} holds {what} 1 to {n}"),
        (None, _) => {
            let mut distinct: Vec<&str> = Vec::new();
            for name in names {
                if !distinct.contains(name) {
                    distinct.push(name);
                }
            }
            let mut shown = distinct.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            if distinct.len() > 3 {
                shown = format!("{shown} and {} more", distinct.len() - 3);
            }
            anyhow::bail!("{source} holds {n} {what} ({shown}): pick one with --launch 1..{n}{hint}")
        }
    }
}
