//! `gpumodel calibrate` — measure the timing model's constants on this GPU and write an architecture profile.
//! First the DVFS memory constants at several clock pairs (`--clocks`; the clocks are set through NVML
//! and restored afterwards, also on error and Ctrl-C), then the other constants at the GPU's own clocks:
//! latencies, delays, L2 bandwidth, and on one SM the shared-memory bandwidth and the issue cost of FP32,
//! FP64 and FP16 arithmetic, of 64-bit conversions, of 32-bit integer arithmetic and of special functions.
//! Its output says which constants were measured (and at which clock pairs), which the profile looks up
//! (driver, references), and which fits were rejected and so are not written.

use super::output::{ExportFormat, print, progress_bar};
use gpumodel_collect::calibrate::dvfs;
use gpumodel_collect::calibrate::{self, CalParams};
use gpumodel_collect::clocks::{self, ClockPlan};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to write the profile (default: `<name>.toml`); load it with `gpumodel predict --arch FILE`.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Short name of the profile (default: from the GPU's name, e.g. `rtx4090`).
    #[arg(long)]
    pub name: Option<String>,
    /// GPU index (NVML / CUDA ordinal).
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Repetitions per constant (the median is written, the spread cited).
    #[arg(long, default_value_t = 9)]
    pub repeats: usize,
    /// Dependent accesses per latency measurement, and steps of each throughput kernel (shared-memory
    /// bandwidth, FP32/FP64/FP16 arithmetic, 64-bit conversions, 32-bit integer arithmetic, special functions).
    #[arg(long, default_value_t = 4096)]
    pub steps: i32,
    /// Clock pairs at which to measure the DVFS memory constants: `auto` (up to 4 memory clocks × 3 core
    /// clocks the GPU supports; setting clocks needs root), `current` (only the clocks the GPU runs at: no
    /// clock is set, the DRAM latency and delay fits are skipped), or a list such as
    /// `1410:1215,1110:1215,810:1215` (core:memory MHz), as for `collect --suite --clocks`.
    #[arg(long, alias = "clock-pairs", default_value = "auto", value_name = "auto|current|CORE:MEM,...")]
    pub clocks: String,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
    /// How to print what was measured and what was looked up: table, csv (the measured constants),
    /// json or markdown.
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.repeats == 0 || args.repeats > 1000 {
        anyhow::bail!("--repeats {} must be between 1 and 1000", args.repeats);
    }
    if args.steps < 16 {
        anyhow::bail!(
            "--steps {} must be at least 16 (fewer steps measure the timer, not the memory)",
            args.steps
        );
    }
    if let Some(n) = &args.name
        && (n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    {
        anyhow::bail!("--name '{n}': use letters, digits, '-' and '_' only (it becomes the profile's name)");
    }
    let plan: ClockPlan = args.clocks.parse().map_err(anyhow::Error::msg)?;
    if let Some(out) = &args.out
        && out.exists()
        && !args.force
    {
        anyhow::bail!("{} exists: choose another --out or pass --force to replace it", out.display());
    }
    let mut dev = super::gpu::Backend::from_env().gpu().calibration_device(args.device)?;
    let facts = dev.facts();
    let name = args.name.clone().unwrap_or_else(|| calibrate::profile_name(&facts.display_name));
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("{name}.toml")));
    if out.exists() && !args.force {
        anyhow::bail!("{} exists: choose another --out or pass --force to replace it", out.display());
    }
    let pairs = match plan {
        ClockPlan::Current => Vec::new(),
        _ => clocks::resolve_pairs(&plan, &dev.supported_clocks()?)?,
    };
    let params = CalParams { repeats: args.repeats, steps: args.steps };
    let total = calibrate::launches(params) + dvfs::launches(pairs.len().max(1), params);
    let pb = progress_bar(total as u64, "calibrate");
    let stop = super::gpu::interrupt_flag();
    // The sweep first: it fails fast where clocks cannot be set, and restores them before the rest.
    let swept = dvfs::sweep(
        dev.as_mut(),
        &pairs,
        params,
        &mut |entry| {
            pb.set_message(entry.to_string());
            pb.inc(1);
        },
        &|| stop.load(Ordering::SeqCst),
    );
    let points = match swept {
        // Interrupted during the sweep: the clocks are put back (the message says so); exit as the later
        // phase does, with the shell's Ctrl-C status.
        Err(e @ gpumodel_collect::Error::Interrupted(_)) => {
            pb.finish_and_clear();
            eprintln!("gpumodel: error: {e}");
            return Ok(ExitCode::from(130));
        }
        r => r?,
    };
    let est = calibrate::calibrate(dev.as_mut(), params, &mut |entry| {
        if stop.load(Ordering::SeqCst) {
            // The clocks are the GPU's own again and nothing is written yet: stop here.
            pb.finish_and_clear();
            eprintln!("gpumodel: error: calibrate interrupted; nothing written");
            std::process::exit(130);
        }
        pb.set_message(entry.to_string());
        pb.inc(1);
    })?;
    pb.finish_and_clear();
    let fit = dvfs::fit(&points);
    let when = calibrate::today_utc();
    let idle: Vec<calibrate::IdlePower> = points.iter().filter_map(|p| p.idle).collect();
    let text = calibrate::arch_toml_with_idle(
        &name,
        &facts,
        &est,
        &fit.constants,
        &idle,
        (&facts.display_name, &when),
    )?;
    std::fs::write(&out, text).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
    let report = calibrate::CalibrateReport::new(
        &facts.display_name,
        &name,
        &out.display().to_string(),
        &facts,
        &est,
        &points,
        &fit,
    );
    print(&report, args.format)?;
    eprintln!("wrote {} (use it with: gpumodel predict --arch {})", out.display(), out.display());
    Ok(ExitCode::SUCCESS)
}
