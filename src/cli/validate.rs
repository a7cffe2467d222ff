//! `gpumodel validate --data nvdvfs-gtx1080ti --arch gtx1080ti` — predicted vs measured kernel time for
//! every kernel and clock pair, and the E·D^n optimum each model picks against the measured one.

use crate::cli::output::{OutputFormat, render_table};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::{Locator, open, sha256_hex};
use gpumodel_predict::baseline::Baseline;
use gpumodel_predict::calibration::file::{CalibrationFile, DatasetInfo};
use gpumodel_predict::validation::{Options, validate};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A registered NV-DVFS dataset (nvdvfs-gtx1080ti, nvdvfs-gtx980) or the path of an NV-DVFS CSV.
    #[arg(long)]
    pub data: String,
    /// Architecture profile: a built-in name or the path of a TOML file.
    #[arg(long)]
    pub arch: String,
    /// Objectives for the optimum check (E^a·D^b): e, ed, ed2, ed3 or a,b. Repeatable.
    #[arg(long = "objective", default_values = ["e", "ed", "ed2"])]
    pub objectives: Vec<String>,
    /// Peer timing model to compute from the same rows and report beside ours: wang-chu-2018 or
    /// hong-kim-2009. Repeatable.
    #[arg(long = "baseline", value_name = "NAME")]
    pub baselines: Vec<String>,
    /// Restrict the validation to a kernel set: a file with one kernel name per line (or comma-separated;
    /// `#` starts a comment), or a comma-separated list (e.g. Wang & Chu's 20 kernels).
    #[arg(long, value_name = "FILE|LIST")]
    pub kernels: Option<String>,
    /// Apply a time calibration fitted elsewhere (`--save-calibration` on another GPU or dataset) as is,
    /// and report its error beside ours: does it transfer? Any architecture's file is accepted here.
    #[arg(long, value_name = "FILE")]
    pub apply_calibration: Option<PathBuf>,
    /// Show every measured row, not only the per-kernel summary.
    #[arg(long)]
    pub rows: bool,
    /// Write the time calibration fitted on all kernels (TOML) for `gpumodel predict --calibration`.
    #[arg(long, value_name = "FILE")]
    pub save_calibration: Option<PathBuf>,
    /// Overwrite the --save-calibration file if it exists.
    #[arg(long, requires = "save_calibration")]
    pub force: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

/// The kernel names of `--kernels`: a file's names (one per line or comma-separated, `#` comments), or the
/// comma-separated list itself.
fn kernel_set(spec: &str) -> anyhow::Result<Vec<String>> {
    let path = std::path::Path::new(spec);
    let text = if path.is_file() {
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read --kernels {spec}: {e}"))?
    } else {
        spec.to_string()
    };
    let names: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(','))
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        anyhow::bail!(
            "--kernels {spec}: no kernel names (give a comma-separated list or a file with one name per line)"
        );
    }
    Ok(names)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let objectives = args.objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>, _>>()?;
    let baselines = args.baselines.iter().map(|b| Baseline::parse(b)).collect::<Result<Vec<_>, _>>()?;
    let kernels = args.kernels.as_deref().map(kernel_set).transpose()?;
    let arch = ArchProfile::resolve(&args.arch)?;
    // Refuse an existing calibration file before the work, not after.
    if let Some(p) = &args.save_calibration
        && p.exists()
        && !args.force
    {
        anyhow::bail!("{} already exists: pass --force to overwrite it, or choose another file", p.display());
    }
    let opened = open(&args.data, Some(Format::Nvdvfs), BadRows::Fail, &Locator::from_env())?;
    let apply = match &args.apply_calibration {
        Some(p) => {
            let f = CalibrationFile::read(p)?;
            let label = format!("{} (fitted for {} on {})", p.display(), f.arch, f.dataset.name);
            Some((label, f.calibration()))
        }
        None => None,
    };
    let opts = Options { objectives: objectives.clone(), kernels, baselines, apply };
    let report = validate(&opened.imported.table, &arch, &opts)?;
    if let Some(p) = &args.save_calibration {
        let bytes = std::fs::read(&opened.path)
            .map_err(|e| anyhow::anyhow!("cannot read {} to checksum it: {e}", opened.path.display()))?;
        let dataset = DatasetInfo {
            name: opened.entry.as_ref().map_or_else(|| args.data.clone(), |e| e.name.clone()),
            path: opened.path.display().to_string(),
            sha256: sha256_hex(&bytes),
            rows: report.rows,
            kernels: report.kernels,
        };
        report.calibration_file(dataset).write(p, args.force)?;
        // The note goes to stderr so that JSON/CSV on stdout stay machine-readable.
        eprintln!(
            "wrote {} (time calibration for {}, fitted on all {} kernels; out-of-fold MAPE {:.1}%)",
            p.display(),
            arch.name,
            report.kernels,
            report.mape_pct
        );
    }
    let mut sink = crate::cli::predict::Out::new();
    match args.format {
        OutputFormat::Json => writeln!(sink, "{}", serde_json::to_string_pretty(&report)?),
        OutputFormat::Csv => {
            let names: Vec<&str> = report.baselines.iter().map(|b| b.name.as_str()).collect();
            let extra: String = names.iter().map(|n| format!(",{}_time_s", n.replace('-', "_"))).collect();
            writeln!(
                sink,
                "kernel,core_mhz,mem_mhz,measured_time_s,model_time_s,predicted_time_s,measured_power_w,predicted_power_w{extra}"
            );
            for r in &report.per_row {
                let extra: String = names.iter().map(|n| format!(",{}", r.baseline_time_s[*n])).collect();
                writeln!(
                    sink,
                    "{},{},{},{},{},{},{},{}{extra}",
                    r.kernel,
                    r.core_mhz,
                    r.mem_mhz,
                    r.measured_time_s,
                    r.model_time_s,
                    r.predicted_time_s,
                    r.measured_power_w,
                    r.predicted_power_w
                );
            }
        }
        OutputFormat::Table => {
            let labels: Vec<String> = objectives.iter().map(|o| o.label()).collect();
            let mut header = vec!["kernel", "bottleneck", "model MAPE %", "calibrated MAPE %"];
            let baseline_heads: Vec<String> =
                report.baselines.iter().map(|b| format!("{} MAPE %", b.name)).collect();
            header.extend(baseline_heads.iter().map(String::as_str));
            if report.applied.is_some() {
                header.push("applied cal. MAPE %");
            }
            header.extend(["fold p", "power MAPE %"]);
            let regret_heads: Vec<String> = labels.iter().map(|l| format!("{l} regret %")).collect();
            header.extend(regret_heads.iter().map(String::as_str));
            let rows: Vec<Vec<String>> = report
                .per_kernel
                .iter()
                .map(|k| {
                    let mut r = vec![
                        k.kernel.clone(),
                        k.bottleneck.to_string(),
                        format!("{:.1}", k.model_mape_pct),
                        format!("{:.1}", k.mape_pct),
                    ];
                    r.extend(report.baselines.iter().map(|b| format!("{:.1}", k.baseline_mape_pct[&b.name])));
                    r.extend(k.applied_mape_pct.map(|m| format!("{m:.1}")));
                    r.extend([
                        if k.fold_calibrated { format!("{}", k.fold_exponent) } else { "none".to_string() },
                        format!("{:.1}", k.power_mape_pct),
                    ]);
                    r.extend(k.choices.iter().map(|c| format!("{:.2}", c.regret_pct)));
                    r
                })
                .collect();
            write!(sink, "{}", render_table(&header, &rows));
            if args.rows {
                let rows: Vec<Vec<String>> = report
                    .per_row
                    .iter()
                    .map(|r| {
                        vec![
                            r.kernel.clone(),
                            format!("{}", r.core_mhz),
                            format!("{}", r.mem_mhz),
                            r.bound_kind.to_string(),
                            format!("{:.4}", r.measured_time_s * 1e3),
                            format!("{:.4}", r.model_time_s * 1e3),
                            format!("{:.4}", r.predicted_time_s * 1e3),
                            format!("{:.1}", r.measured_power_w),
                            format!("{:.1}", r.predicted_power_w),
                        ]
                    })
                    .collect();
                writeln!(sink);
                write!(
                    sink,
                    "{}",
                    render_table(
                        &[
                            "kernel",
                            "core MHz",
                            "mem MHz",
                            "model bound",
                            "measured ms",
                            "model ms",
                            "calibrated ms",
                            "measured W",
                            "predicted W"
                        ],
                        &rows
                    )
                );
            }
            writeln!(sink);
            writeln!(
                sink,
                "{} rows, {} kernels on {} ({})",
                report.rows, report.kernels, arch.display_name, report.data
            );
            writeln!(
                sink,
                "kernel time MAPE: {:.1}% (timing model as is), {:.1}% calibrated out-of-fold (p chosen inside each fold; {} of {} folds kept their calibration, the others beat by the model as is); worst kernel {} at {:.1}%",
                report.model_mape_pct,
                report.mape_pct,
                report.folds_calibrated,
                report.kernels,
                report.worst_kernel,
                report.worst_kernel_mape_pct
            );
            if let Some(a) = &report.applied {
                writeln!(
                    sink,
                    "applied calibration {}: kernel time MAPE {:.1}% (fitted elsewhere, applied as is)",
                    a.source, a.mape_pct
                );
            }
            for b in &report.baselines {
                writeln!(
                    sink,
                    "baseline {}: kernel time MAPE {:.1}% (median kernel {:.1}%, worst kernel {} at {:.1}%), from the same rows",
                    b.name, b.mape_pct, b.median_kernel_mape_pct, b.worst_kernel, b.worst_kernel_mape_pct
                );
            }
            let by_p: Vec<String> =
                report.exponents.iter().map(|e| format!("p {} {:.2}%", e.p, e.loko_mape_pct)).collect();
            writeln!(
                sink,
                "fixed-p leave-one-kernel-out MAPE: {}; best {:.1}% (p selected on the reported error: optimistic)",
                by_p.join(", "),
                report.selected_on_reported_mape_pct
            );
            let c = report.calibration;
            writeln!(
                sink,
                "calibration on all kernels: a_memory {:.4}, a_compute {:.4}, a_shared {:.4}, a_l2 {:.4}, p {} (in-sample MAPE {:.1}%; --save-calibration FILE writes it)",
                c.a[0], c.a[1], c.a[2], c.a[3], c.p, report.calibration_in_sample_mape_pct
            );
            // How often each power input set was chosen across the folds, in first-seen order.
            let mut chosen: Vec<(&str, usize)> = Vec::new();
            for k in &report.per_kernel {
                match chosen.iter_mut().find(|(l, _)| *l == k.fold_power_inputs) {
                    Some((_, n)) => *n += 1,
                    None => chosen.push((k.fold_power_inputs, 1)),
                }
            }
            let chosen: Vec<String> = chosen
                .iter()
                .map(|(l, n)| format!("{l} in {n} fold{}", if *n == 1 { "" } else { "s" }))
                .collect();
            writeln!(
                sink,
                "power MAPE (out-of-fold MLR, for the optima): {:.1}%; inputs chosen inside each fold: {}",
                report.power_mape_pct,
                chosen.join(", ")
            );
            for o in &report.objectives {
                writeln!(
                    sink,
                    "{:>5} optimum: median regret {:.2}%, mean {:.2}%, max {:.2}%, exact best pair picked for {:.0}% of kernels (diagnostic median regret: measured time + predicted power {:.2}%, predicted time + measured power {:.2}%)",
                    o.objective,
                    o.median_regret_pct,
                    o.mean_regret_pct,
                    o.max_regret_pct,
                    100.0 * o.hit_rate,
                    o.median_regret_measured_time_pct,
                    o.median_regret_measured_power_pct
                );
            }
            for m in &report.method {
                writeln!(sink, "method: {m}");
            }
        }
    }
    sink.emit()?;
    Ok(ExitCode::SUCCESS)
}
