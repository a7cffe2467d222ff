//! `gpumodel split FILE` — the best CPU/GPU work split for time, energy or E^a·D^b, from one TOML case
//! file (PEACH two-device and coupled DVFS, Stafford's range test, the exact Pareto front over measured
//! profiles, Lang & Rünger's CG split); `gpumodel split fit FILE` fits linear clock laws with R².

use super::output::{OutputFormat, render_table};
use gpumodel_predict::split::input::{self, FitRow, Front, Report};
use gpumodel_predict::split::peach::{CoExecution, SplitPoint};
use gpumodel_predict::split::{Objective, SplitError};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Options of `gpumodel split FILE`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The case file (TOML); see datasets/examples/split/ for one per paper.
    pub file: Option<PathBuf>,
    /// What to minimize: time, energy, ed, ed2, or `a,b` for E^a·D^b.
    #[arg(long, default_value = "energy")]
    pub objective: String,
    /// Also evaluate the model at this GPU share (0 to 1; two-device cases at fixed clocks).
    #[arg(long, value_name = "ALPHA", allow_negative_numbers = true)]
    pub gpu_share: Option<f64>,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Fit rate and dynamic power against clock (least squares) for the clock tables of a case file.
    Fit {
        /// The case file with [cpu.dvfs] / [gpu.dvfs] tables.
        file: PathBuf,
        #[arg(long, value_enum, default_value_t)]
        format: OutputFormat,
    },
}

/// The library's error as one line (its message already names the cause).
fn one_line(e: SplitError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(Action::Fit { file, format }) => fit(file, format),
        None => {
            let Some(file) = args.run.file else {
                anyhow::bail!(
                    "give a case file: `gpumodel split FILE` (examples in datasets/examples/split/)"
                );
            };
            // Flags first, then the file.
            let objective: Objective = args.run.objective.parse().map_err(one_line)?;
            let case = input::load(&file).map_err(one_line)?;
            let report = case.run_at(objective, args.run.gpu_share).map_err(one_line)?;
            let text = match args.run.format {
                OutputFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
                OutputFormat::Csv => csv(&report),
                OutputFormat::Table => table(&report),
            };
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn fit(file: PathBuf, format: OutputFormat) -> anyhow::Result<ExitCode> {
    let case = input::load(&file).map_err(one_line)?;
    let rows = input::fit_laws(&case).map_err(one_line)?;
    let cells = |r: &FitRow| -> Vec<String> {
        match (r.fit, r.given_law) {
            (Some(f), _) => vec![
                r.device.clone(),
                r.quantity.clone(),
                format!("{:.6}", f.slope),
                format!("{:.6}", f.intercept),
                format!("{:.6}", f.r2),
                f.n.to_string(),
            ],
            (None, Some((s, i))) => vec![
                r.device.clone(),
                r.quantity.clone(),
                format!("{s}"),
                format!("{i}"),
                "law given".into(),
                "-".into(),
            ],
            (None, None) => vec![r.device.clone(), r.quantity.clone()],
        }
    };
    let header = ["device", "quantity", "slope", "intercept", "r2", "points"];
    match format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        OutputFormat::Csv => {
            println!("{}", header.join(","));
            for r in &rows {
                println!("{}", cells(r).join(","));
            }
        }
        OutputFormat::Table => {
            print!("{}", render_table(&header, &rows.iter().map(cells).collect::<Vec<_>>()))
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn g(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) { format!("{x:.4e}") } else { format!("{x:.4}") }
}

fn point_row(label: &str, p: &SplitPoint) -> Vec<String> {
    vec![
        label.to_string(),
        pct(p.gpu_share),
        pct(1.0 - p.gpu_share),
        g(p.time_s),
        g(p.energy_j),
        g(p.performance),
        g(p.efficiency),
    ]
}

fn point_header(unit: &str) -> Vec<String> {
    ["", "gpu share", "cpu share", "time s", "energy J"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("{unit}/s"), format!("{unit}/J")])
        .collect()
}

fn table(r: &Report) -> String {
    let mut out = String::new();
    match r {
        Report::TwoDevice {
            title,
            unit,
            system,
            share_step,
            balance_share,
            candidates,
            best,
            chosen,
            stafford,
            at,
            gpu_from_model,
        } => {
            if let Some(t) = title {
                let _ = writeln!(out, "{t}");
            }
            if let Some(d) = gpu_from_model {
                let _ = writeln!(
                    out,
                    "GPU from our models: kernel {} on {} at {}/{} MHz, power model {}:\n  predicted {} s per launch at {:.1} W (bottleneck {}) → R_G {} {unit}/s, Pd_G {:.1} W",
                    d.kernel,
                    d.arch,
                    d.core_mhz,
                    d.mem_mhz,
                    d.model,
                    g(d.time_s),
                    d.power_w,
                    d.bottleneck,
                    g(d.rate),
                    d.dynamic_power_w
                );
            }
            let _ = writeln!(
                out,
                "PEACH two-device model: R_C {} R_G {} {unit}/s, P0 {} W, Pd_C {} W, Pd_G {} W, P_OH {} W, T_OH {} s",
                g(system.cpu_rate),
                g(system.gpu_rate),
                g(system.static_power_w),
                g(system.cpu_dynamic_w),
                g(system.gpu_dynamic_w),
                system.hosting_power_w,
                system.offload_overhead_s
            );
            let _ = writeln!(
                out,
                "balanced GPU share α = {:.4}; shares searched {}\n",
                balance_share,
                share_step.map_or("continuously (optimum in {0, α, 1})".to_string(), |s| format!(
                    "in steps of {s}"
                ))
            );
            let h = point_header(unit);
            let header: Vec<&str> = h.iter().map(String::as_str).collect();
            let mut rows: Vec<Vec<String>> = ["cpu only", "balanced", "gpu only"]
                .iter()
                .zip(candidates)
                .map(|(l, p)| point_row(l, p))
                .collect();
            for b in best {
                let mark = if &b.objective == chosen { " *" } else { "" };
                rows.push(point_row(&format!("best {}{mark}", b.objective), &b.point));
            }
            if let Some(p) = at {
                rows.push(point_row("given share", p));
            }
            out.push_str(&render_table(&header, &rows));
            let verdict = match stafford.verdict {
                CoExecution::CpuOnly => "CPU only (GPU too slow for its power)",
                CoExecution::Split => "co-execute: splitting saves energy",
                CoExecution::GpuOnly => "GPU only (CPU too slow for its power)",
            };
            let _ = writeln!(
                out,
                "\nStafford et al. range test: {:.4} < S_G/S_C = {:.4} < {:.4} ? → {verdict}\n  (balanced CPU share, Stafford's α = {:.4}; GPU share, PEACH's α = {:.4}; no hosting power or offload in this test)",
                stafford.lower, stafford.speed_ratio, stafford.upper, stafford.cpu_share, stafford.gpu_share
            );
        }
        Report::Dvfs {
            title,
            unit,
            share_step,
            objectives,
            cells,
            global,
            chosen,
            savings,
            gpu_from_model,
        } => {
            if let Some(t) = title {
                let _ = writeln!(out, "{t}");
            }
            let _ = writeln!(
                out,
                "PEACH coupled DVFS: best GPU share at every (CPU clock, GPU clock); shares {}",
                share_step.map_or("continuous".to_string(), |s| format!("in steps of {s}"))
            );
            let mut gpu_clocks: Vec<f64> = Vec::new();
            let mut cpu_clocks: Vec<f64> = Vec::new();
            for c in cells {
                if !gpu_clocks.contains(&c.gpu_clock) {
                    gpu_clocks.push(c.gpu_clock);
                }
                if !cpu_clocks.contains(&c.cpu_clock) {
                    cpu_clocks.push(c.cpu_clock);
                }
            }
            for (k, o) in objectives.iter().enumerate() {
                if !(o == "time" || o == "energy" || o == chosen) {
                    continue;
                }
                let _ = writeln!(out, "\nbest for {o}: GPU share, {unit}/s, {unit}/J");
                let mut h = vec!["cpu \\ gpu".to_string()];
                h.extend(gpu_clocks.iter().map(|f| format!("{f}")));
                let header: Vec<&str> = h.iter().map(String::as_str).collect();
                let rows: Vec<Vec<String>> = cpu_clocks
                    .iter()
                    .map(|fc| {
                        let mut row = vec![format!("{fc}")];
                        for fg in &gpu_clocks {
                            let cell = cells.iter().find(|c| c.cpu_clock == *fc && c.gpu_clock == *fg);
                            row.push(cell.map_or("-".into(), |c| {
                                let p = &c.best[k];
                                format!(
                                    "{:.0}% {:.0} {:.2}",
                                    p.gpu_share * 100.0,
                                    p.performance,
                                    p.efficiency
                                )
                            }));
                        }
                        row
                    })
                    .collect();
                out.push_str(&render_table(&header, &rows));
            }
            let _ = writeln!(out, "\nglobal optimum per objective");
            let rows: Vec<Vec<String>> = global
                .iter()
                .map(|b| {
                    let mut row = point_row(&b.objective, &b.point);
                    row.insert(1, format!("{}", b.cpu_clock));
                    row.insert(2, format!("{}", b.gpu_clock));
                    row
                })
                .collect();
            let mut h = point_header(unit);
            h.insert(1, "cpu clock".into());
            h.insert(2, "gpu clock".into());
            let header: Vec<&str> = h.iter().map(String::as_str).collect();
            out.push_str(&render_table(&header, &rows));
            if !gpu_from_model.is_empty() {
                let _ = writeln!(out, "\nGPU clock table predicted by our models");
                let rows: Vec<Vec<String>> = gpu_from_model
                    .iter()
                    .map(|d| {
                        vec![
                            format!("{}", d.core_mhz),
                            g(d.time_s),
                            format!("{:.1}", d.power_w),
                            g(d.rate),
                            format!("{:.1}", d.dynamic_power_w),
                            d.bottleneck.clone(),
                        ]
                    })
                    .collect();
                let rate = format!("R_G {unit}/s");
                out.push_str(&render_table(
                    &["core MHz", "time s", "power W", &rate, "Pd_G W", "bottleneck"],
                    &rows,
                ));
            }
            if let Some(s) = savings {
                let _ = writeln!(
                    out,
                    "\nbest efficiency ({} / {}, {:.0}% GPU) against the best-{} split at ({} / {}, {:.0}% GPU):\n  efficiency {:.3} vs {:.3} {unit}/J: +{:.1}% (η_new/η_old − 1, what PEACH calls \"saves\")\n  energy per unit of work falls by {:.1}% (1 − E_new/E_old: the energy actually saved)",
                    s.best.cpu_clock,
                    s.best.gpu_clock,
                    s.best.point.gpu_share * 100.0,
                    s.baseline.objective,
                    s.baseline.cpu_clock,
                    s.baseline.gpu_clock,
                    s.baseline.point.gpu_share * 100.0,
                    s.best.point.efficiency,
                    s.baseline.point.efficiency,
                    s.efficiency_gain * 100.0,
                    s.energy_saved * 100.0
                );
            }
        }
        Report::Pareto { title, devices, units, static_power_w, dynamic, total, chosen } => {
            if let Some(t) = title {
                let _ = writeln!(out, "{t}");
            }
            let _ = writeln!(
                out,
                "exact Pareto fronts: {units} units over {} ({}); static power {static_power_w} W",
                devices.len(),
                devices.join(", ")
            );
            for f in [dynamic, total] {
                front_table(&mut out, f, devices, chosen);
            }
        }
        Report::Cg { title, objective, report } => {
            if let Some(t) = title {
                let _ = writeln!(out, "{t}");
            }
            if let Some(f) = report.cpu_clock_ghz {
                let _ = writeln!(out, "CPU clock {f} GHz (from the DVFS laws)");
                let rows: Vec<Vec<String>> = report
                    .cpu_law_table
                    .iter()
                    .map(|r| {
                        vec![format!("{}", r.0), format!("{:.2}", r.1), g(r.2), format!("{:.1}", r.3 * 1e6)]
                    })
                    .collect();
                out.push_str(&render_table(&["GHz", "power W", "s/element", "µJ/element"], &rows));
            }
            let _ = writeln!(
                out,
                "energy per element: CPU e_C {:.1} µJ, GPU e_G {:.1} µJ; balanced GPU share r = {:.4}",
                report.cpu_energy_per_element_j * 1e6,
                report.gpu_energy_per_element_j * 1e6,
                report.balanced_gpu_share
            );
            let _ = writeln!(
                out,
                "split beats GPU-only when e_C < θ = {:.1} µJ: {}",
                report.split_threshold_j * 1e6,
                if report.cpu_energy_per_element_j < report.split_threshold_j { "yes" } else { "no" }
            );
            let rows: Vec<Vec<String>> = report
                .runs
                .iter()
                .map(|r| {
                    let name = serde_json::to_value(r.choice).ok().and_then(|v| v.as_str().map(String::from));
                    vec![name.unwrap_or_default(), pct(r.gpu_share), g(r.time_s), g(r.energy_j)]
                })
                .collect();
            out.push_str(&render_table(&["run", "gpu share", "time s", "energy J"], &rows));
            let name =
                serde_json::to_value(report.choice.choice).ok().and_then(|v| v.as_str().map(String::from));
            let _ = writeln!(out, "decision for {objective}: {}", name.unwrap_or_default());
        }
        _ => {
            let _ = writeln!(out, "{}", serde_json::to_string_pretty(r).unwrap_or_default());
        }
    }
    out
}

fn front_table(out: &mut String, f: &Front, devices: &[String], chosen: &str) {
    let _ = writeln!(out, "\n(time, {} energy) front: {} points", f.energy, f.points.len());
    let mut h = vec!["time s".to_string(), format!("{} energy J", f.energy)];
    h.extend(devices.iter().cloned());
    let header: Vec<&str> = h.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = f
        .points
        .iter()
        .map(|p| {
            let mut r = vec![g(p.time_s), g(p.energy_j)];
            r.extend(p.distribution.iter().map(|x| x.to_string()));
            r
        })
        .collect();
    out.push_str(&render_table(&header, &rows));
    for (o, p) in &f.best {
        let mark = if o == chosen { " *" } else { "" };
        let _ = writeln!(
            out,
            "  best {o}{mark}: {:?} (time {} s, energy {} J)",
            p.distribution,
            g(p.time_s),
            g(p.energy_j)
        );
    }
}

fn csv(r: &Report) -> String {
    let mut out = String::new();
    match r {
        Report::TwoDevice { best, at, .. } => {
            out.push_str("objective,gpu_share,time_s,energy_j,performance,efficiency\n");
            let given = at.map(|p| ("given-share".to_string(), p));
            for (name, p) in best.iter().map(|b| (b.objective.clone(), b.point)).chain(given) {
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{}",
                    name, p.gpu_share, p.time_s, p.energy_j, p.performance, p.efficiency
                );
            }
        }
        Report::Dvfs { objectives, cells, .. } => {
            out.push_str("cpu_clock,gpu_clock,objective,gpu_share,time_s,energy_j,performance,efficiency\n");
            for c in cells {
                for (o, p) in objectives.iter().zip(&c.best) {
                    let _ = writeln!(
                        out,
                        "{},{},{o},{},{},{},{},{}",
                        c.cpu_clock,
                        c.gpu_clock,
                        p.gpu_share,
                        p.time_s,
                        p.energy_j,
                        p.performance,
                        p.efficiency
                    );
                }
            }
        }
        Report::Pareto { dynamic, total, .. } => {
            out.push_str("energy,time_s,energy_j,distribution\n");
            for f in [dynamic, total] {
                for p in &f.points {
                    let d: Vec<String> = p.distribution.iter().map(|x| x.to_string()).collect();
                    let _ = writeln!(out, "{},{},{},{}", f.energy, p.time_s, p.energy_j, d.join(";"));
                }
            }
        }
        Report::Cg { report, .. } => {
            out.push_str("run,gpu_share,time_s,energy_j\n");
            for run in &report.runs {
                let name = serde_json::to_value(run.choice).ok().and_then(|v| v.as_str().map(String::from));
                let _ = writeln!(
                    out,
                    "{},{},{},{}",
                    name.unwrap_or_default(),
                    run.gpu_share,
                    run.time_s,
                    run.energy_j
                );
            }
        }
        _ => out.push_str(&serde_json::to_string(r).unwrap_or_default()),
    }
    out
}
