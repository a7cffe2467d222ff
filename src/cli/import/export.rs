//! A profiler export given where a kernel profile is expected (`predict --kernel k.csv`): told apart by
//! its first lines, read as `import ncu|nvprof` reads it, and one of its kernel launches taken.

use gpumodel_models::ncu::read_nvprof_gpu_trace;
use gpumodel_models::ncu::{ImportedKernel, is_gpu_trace, read_ncu_each, read_nvprof};
use gpumodel_models::profile::KernelProfile;
use std::io::BufRead;
use std::path::Path;

/// How many lines of a file's start are looked at to tell a profiler export.
const SNIFF_LINES: usize = 64;

/// The profiler that wrote the CSV export `path`, from its first lines: `ncu` (its `==PROF==` log lines or
/// its raw page's `"ID","Process ID"` header) or `nvprof` (its `==PID== NVPROF` log lines, or a metric or
/// gpu-trace header). `None` for anything else, a kernel profile included.
pub fn profiler_of(path: &Path) -> Option<&'static str> {
    let file = std::fs::File::open(path).ok()?;
    for line in std::io::BufReader::new(file).lines().take(SNIFF_LINES) {
        let Ok(line) = line else { return None };
        let line = line.trim_start_matches('\u{feff}');
        if line.starts_with("==PROF==") || line.starts_with("\"ID\",\"Process ID\"") {
            return Some("ncu");
        }
        if (line.starts_with("==") && line.contains("NVPROF"))
            || line.starts_with("\"Device\",\"Kernel\"")
            || line.starts_with("\"Start\",\"Duration\"")
        {
            return Some("nvprof");
        }
    }
    None
}

/// Kernel launch `launch` (1-based, the order of the export; the only one when `None`) of the `profiler`
/// export `path`, as a kernel profile. Several launches and no choice: one line that counts them and
/// names the flags.
pub fn kernel_of(path: &Path, profiler: &str, launch: Option<usize>) -> anyhow::Result<KernelProfile> {
    let source = path.display().to_string();
    let mut kernels: Vec<ImportedKernel> = Vec::new();
    if profiler == "ncu" {
        let file = std::fs::File::open(path).map_err(|e| anyhow::anyhow!("{source}: cannot read: {e}"))?;
        read_ncu_each(std::io::BufReader::new(file), &source, |k| {
            kernels.push(k);
            Ok(())
        })?;
    } else {
        let text =
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{source}: cannot read: {e}"))?;
        kernels = if is_gpu_trace(&text) {
            // Times and launch shapes, no counter: nothing a model reads on its own.
            read_nvprof_gpu_trace(&text, &source)?;
            anyhow::bail!(
                "{source} is an nvprof gpu trace (times and launch shapes, no counters): give the metric export (`nvprof --csv --metrics all --log-file metrics.csv ./app`) as --kernel, or both to `gpumodel import nvprof metrics.csv --gpu-trace {source} --profiles DIR`"
            );
        } else {
            read_nvprof(&text, &source)?.0
        };
    }
    let n = kernels.len();
    let pick = match (launch, n) {
        (_, 0) => anyhow::bail!("{source}: the {profiler} export holds no kernel launch"),
        (None, 1) => 1,
        (Some(i), _) if (1..=n).contains(&i) => i,
        (Some(i), _) => anyhow::bail!("--launch {i}: {source} holds kernel launches 1 to {n}"),
        (None, _) => {
            let mut names: Vec<&str> = Vec::new();
            for k in &kernels {
                if !names.contains(&k.name.as_str()) {
                    names.push(&k.name);
                }
            }
            let shown = names.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            let more = if names.len() > 3 { format!(" and {} more", names.len() - 3) } else { String::new() };
            anyhow::bail!(
                "{source} holds {n} kernel launches ({shown}{more}): pick one with --launch 1..{n}, or write each as a profile with `gpumodel import {profiler} {source} --profiles DIR`"
            );
        }
    };
    Ok(kernels[pick - 1].to_profile(&source, None)?)
}
