//! `gpumodel calibrate` — measure the timing model's constants on this GPU and write an architecture profile.
//! Its output says which constants were measured now and which the profile looks up (driver, references),
//! and which timing-model constants it does not write at all (the DVFS memory constants).

use super::output::{ExportFormat, print, progress_bar};
use gpumodel_collect::calibrate::{self, CalParams, CalibrationDevice, FakeCalibrationDevice};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Dependent accesses per latency measurement.
    #[arg(long, default_value_t = 4096)]
    pub steps: i32,
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
    if let Some(out) = &args.out
        && out.exists()
        && !args.force
    {
        anyhow::bail!("{} exists: choose another --out or pass --force to replace it", out.display());
    }
    let mut dev: Box<dyn CalibrationDevice> = if super::gpu::fake_gpu() {
        Box::new(FakeCalibrationDevice::new(calibrate::TrueConstants::AMPERE_LIKE))
    } else {
        Box::new(calibrate::cuda::CudaCalibrationDevice::open(args.device)?)
    };
    let facts = dev.facts();
    let name = args.name.clone().unwrap_or_else(|| calibrate::profile_name(&facts.display_name));
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("{name}.toml")));
    if out.exists() && !args.force {
        anyhow::bail!("{} exists: choose another --out or pass --force to replace it", out.display());
    }
    let params = CalParams { repeats: args.repeats, steps: args.steps };
    let pb = progress_bar(calibrate::launches(params) as u64, "calibrate");
    let est = calibrate::calibrate(dev.as_mut(), params, &mut |entry| {
        pb.set_message(entry.to_string());
        pb.inc(1);
    })?;
    pb.finish_and_clear();
    let when = calibrate::today_utc();
    let text = calibrate::arch_toml(&name, &facts, &est, &facts.display_name, &when)?;
    std::fs::write(&out, text).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
    let report =
        calibrate::CalibrateReport::new(&facts.display_name, &name, &out.display().to_string(), &facts, &est);
    print(&report, args.format)?;
    eprintln!("wrote {} (use it with: gpumodel predict --arch {})", out.display(), out.display());
    Ok(ExitCode::SUCCESS)
}
