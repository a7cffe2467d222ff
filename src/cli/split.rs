//! `gpumodel split FILE` — the best CPU/GPU work split for time, energy or E^a·D^b, from one TOML case
//! file (PEACH two-device and coupled DVFS, Stafford's range test, the exact Pareto front over measured
//! profiles, Lang & Rünger's CG split); `gpumodel split fit FILE` fits linear clock laws with R².

use super::output::{OutputFormat, render_table};
use gpumodel_predict::split::cg::{CgReport, Share};
use gpumodel_predict::split::input::{self, FitRow, Front, Report};
use gpumodel_predict::split::peach::{CoExecution, SplitPoint, Winner};
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
            stafford_case,
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
                "\nStafford et al. range test: co-execution saves energy iff S_G/S_C lies in [{:.4}, {:.4}]; here S_G/S_C = {:.4} → {verdict}\n  (balanced CPU share, Stafford's α = {:.4}; GPU share, PEACH's α = {:.4}; no hosting power or offload in this test)",
                stafford.lower, stafford.upper, stafford.speed_ratio, stafford.cpu_share, stafford.gpu_share
            );
            let s = stafford_case;
            let _ = writeln!(
                out,
                "Stafford et al. model (α = CPU share; model check, not a measurement): α_opt = {:.6}, T(α_opt) = {} s\n  E(0) GPU only {} J, E(α_opt) {} J, E(1) CPU only {} J\n  EDP: GPU only {}, α_opt {}, CPU only {} J·s\n  least energy: {}; least EDP: {}{}",
                s.alpha,
                fixed(s.time_s, 3),
                fixed(s.e_gpu_only_j, 1),
                fixed(s.e_split_j, 1),
                fixed(s.e_cpu_only_j, 1),
                g(s.e_gpu_only_j * s.t_gpu_only_s),
                g(s.e_split_j * s.time_s),
                g(s.e_cpu_only_j * s.t_cpu_only_s),
                winner(s.energy_best),
                winner(s.edp_best),
                if s.energy_best != s.edp_best { " (the energy and EDP optima differ)" } else { "" }
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
            cg_table(&mut out, objective, report);
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

/// `decimals` fixed decimals for values of 1 and more (as the papers' vectors print them), four
/// significant digits below, where fixed decimals would print 0.0.
fn fixed(x: f64, decimals: usize) -> String {
    if x.abs() >= 1.0 { format!("{x:.decimals$}") } else { g(x) }
}

fn winner(w: Winner) -> &'static str {
    match w {
        Winner::GpuOnly => "gpu-only",
        Winner::Split => "split (α_opt)",
        Winner::CpuOnly => "cpu-only",
    }
}

fn uj(x: f64) -> String {
    format!("{:.1} µJ", x * 1e6)
}

/// A published figure beside ours: "(paper: X)" when the file gives one, flagged when the two differ
/// at the paper's printed precision (`half_unit` is half a unit of its last printed digit).
fn beside(ours: f64, paper: Option<f64>, half_unit: f64, unit: &str) -> String {
    match paper {
        Some(v) if (ours - v).abs() > half_unit * (1.0 + 1e-9) => {
            format!(" (paper prints {v}{unit}: differs at its printed precision, see the notes)")
        }
        Some(v) => format!(" (paper: {v}{unit})"),
        None => String::new(),
    }
}

fn cg_table(out: &mut String, objective: &str, r: &CgReport) {
    let (cpu, gpu) = (&r.cpu, &r.gpu);
    let published = r.published.clone().unwrap_or_default();
    let d = &r.decisions[0];
    let _ = writeln!(out, "Lang & Rünger CG model (JPDC 2014); equation numbers in brackets are the paper's");
    let _ = writeln!(
        out,
        "inputs: p = {} threads, l = {} iterations per solver call\n  CPU: t_el,cpu {:.2} µs per thread ({:.2} µs with {} threads), E_el,cpu {}, E_el,dram {}, P_idle,cpu {} W, P_idle,dram {} W\n  GPU: t_el,gpu {:.2} µs, E_el,gpu {}, E_el,copy {}, t_el,copy {:.1} µs",
        r.threads,
        r.iterations,
        cpu.time_per_element_s * 1e6,
        r.cpu_time_per_element_s * 1e6,
        r.threads,
        uj(cpu.energy_per_element_j),
        uj(cpu.dram_energy_per_element_j),
        cpu.idle_power_w,
        cpu.dram_idle_power_w,
        gpu.time_per_element_s * 1e6,
        uj(gpu.energy_per_element_j),
        uj(gpu.copy_energy_per_element_j),
        gpu.copy_time_per_element_s * 1e6,
    );
    let _ = writeln!(out, "E*_el,cpu = E_el,cpu + E_el,dram = {}  (36)", uj(r.e_star_el_cpu_j));
    let _ = writeln!(out, "E*_el,gpu = E_el,gpu + E_el,copy / l = {}  (39)", uj(r.e_star_el_gpu_j));
    let _ = writeln!(out, "P*_idle,cpu = P_idle,cpu + P_idle,dram = {:.1} W  (35)", r.p_star_idle_cpu_w);
    let _ = writeln!(
        out,
        "idle CPU energy per GPU element P*_idle,cpu·t_el,gpu = {}{}",
        uj(r.idle_cpu_energy_per_gpu_element_j),
        beside(
            r.idle_cpu_energy_per_gpu_element_j * 1e6,
            published.idle_cpu_energy_per_gpu_element_j.map(|v| v * 1e6),
            0.5,
            " µJ"
        )
    );
    let (ec, eg) = (r.e_star_el_cpu_j * 1e6, r.e_star_el_gpu_j * 1e6);
    let _ = writeln!(
        out,
        "rule 1: CPU only if E*_el,cpu <= E*_el,gpu: {ec:.1} {} {eg:.1} µJ → {}",
        if d.rule1 { "<=" } else { ">" },
        if d.rule1 { "applies: CPU only" } else { "does not apply" }
    );
    let paper401 = published.rule2_threshold_j.map(|v| v * 1e6);
    let _ = writeln!(
        out,
        "rule 2: GPU only if E*_el,cpu > E*_el,gpu + P*_idle,cpu·t_el,gpu = {}{}: {ec:.1} {} {:.1} µJ → {}",
        uj(d.rule2_threshold_j),
        paper401.map_or(String::new(), |v| format!(" (the paper prints {v} µJ)")),
        if d.rule2 { ">" } else { "<=" },
        d.rule2_threshold_j * 1e6,
        if d.rule2 {
            "applies: GPU only"
        } else if d.rule1 {
            "not reached"
        } else {
            "does not apply"
        }
    );
    let _ = writeln!(
        out,
        "decision: {} (decided by {})",
        d.decision.name(),
        match d.decided_by {
            "neither rule" => "neither rule 1 nor rule 2 applying",
            other => other,
        }
    );
    let same = if d.exact_decision == d.decision {
        "same verdict as the paper's rule".to_string()
    } else {
        format!(
            "DIFFERS from the paper's rule: it says {}, the exact comparison {}",
            d.decision.name(),
            d.exact_decision.name()
        )
    };
    let _ = writeln!(
        out,
        "exact condition beside rule 2: GPU only if E*_el,cpu > E*_el,gpu + P*_idle,cpu·(t_el,gpu + t_el,cpu/p) = {} → {}; {same}",
        uj(d.exact_threshold_j),
        d.exact_decision.name()
    );
    let observed = published.observed_gpu_share.as_ref().map(|s| match s {
        Share::Number(v) => format!("{v:.4}"),
        Share::Fraction(f) => f.clone(),
    });
    let _ = writeln!(
        out,
        "balanced GPU share r = (1 + p·t_el,gpu/t_el,cpu)⁻¹ = {:.4}  (26){}",
        d.gpu_share,
        observed.map_or(String::new(), |o| format!(
            "; the paper observes about {o}: its measured GPU time includes the per-call transfers"
        ))
    );
    match r.break_even_iterations {
        Some(l) => {
            let _ = writeln!(
                out,
                "break-even iterations l = E_el,copy / (E*_el,cpu − E_el,gpu) = {l:.1}: with more iterations per call a GPU element costs less than a CPU element{}",
                published
                    .break_even_iterations
                    .as_ref()
                    .map_or(String::new(), |t| format!(" (paper: \"{t}\")"))
            );
        }
        None => {
            let _ = writeln!(out, "break-even iterations: none (E_el,gpu alone is not below E*_el,cpu)");
        }
    }
    if r.decisions.len() > 1 || d.gpus != 1 {
        let _ =
            writeln!(out, "\nwith q identical GPUs (t_el,gpu/q in (26), rule 2 and the exact condition):");
        let rows: Vec<Vec<String>> = r
            .decisions
            .iter()
            .map(|d| {
                vec![
                    d.gpus.to_string(),
                    format!("{:.4}", d.gpu_share),
                    format!("{:.1}", d.rule2_threshold_j * 1e6),
                    format!("{:.1}", d.exact_threshold_j * 1e6),
                    d.decision.name().into(),
                    d.exact_decision.name().into(),
                ]
            })
            .collect();
        out.push_str(&render_table(
            &["q", "r", "rule-2 threshold µJ", "exact threshold µJ", "paper's rules", "exact"],
            &rows,
        ));
    }
    if !r.cpu_law_table.is_empty() {
        let _ =
            writeln!(out, "\nCPU DVFS laws: E_el(f) = P(f) / v(f); E*_el,cpu(f) adds Table 2's E_el,dram");
        let rows: Vec<Vec<String>> = r
            .cpu_law_table
            .iter()
            .map(|row| {
                vec![
                    format!("{:.1}", row.clock_ghz),
                    format!("{:.1}", row.power_w),
                    format!("{:.1}", row.elements_per_ms),
                    format!("{:.1}", row.e_el_j * 1e6),
                    row.published_uj.map_or("-".into(), |v| format!("{v}")),
                    format!("{:.1}", (row.e_el_j + cpu.dram_energy_per_element_j) * 1e6),
                    row.decision.decision.name().into(),
                ]
            })
            .collect();
        out.push_str(&render_table(
            &["GHz", "P(f) W", "v(f) el/ms", "E_el(f) µJ", "paper µJ", "E*_el,cpu µJ", "decision"],
            &rows,
        ));
        if let Some(c) = &r.clock_choice {
            let turbo = published.e_el_cpu_uj.get("turbo");
            let _ = writeln!(
                out,
                "CPU clock for the least energy per element from the laws: {:.1} GHz ({}){}{}",
                c.clock_ghz,
                uj(c.e_el_j),
                if c.at_edge {
                    "; E_el(f) is least at an edge of the listed clocks, so a clock outside the laws' fitted range may be cheaper".to_string()
                } else {
                    format!(
                        " (the law's minimum between the listed clocks: {:.2} GHz, {})",
                        c.continuous_min.0,
                        uj(c.continuous_min.1)
                    )
                },
                turbo.map_or(String::new(), |t| format!(
                    "; the paper measures {t} µJ at Turbo (outside the fit), the value Table 2 and the decision above use"
                ))
            );
        }
    }
    let per = if r.elements == 1.0 {
        "one element".to_string()
    } else {
        format!("one iteration of {} elements", r.elements)
    };
    let _ = writeln!(out, "\n{per} (q = {}; times without transfers, as in the paper's rules)", d.gpus);
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .map(|run| vec![run.choice.name().into(), pct(run.gpu_share), g(run.time_s), g(run.energy_j)])
        .collect();
    out.push_str(&render_table(&["run", "gpu share", "time s", "energy J"], &rows));
    let _ = writeln!(out, "least {objective}: {}", r.choice.choice.name());
    if let Some((both, one)) = &r.example {
        let _ = writeln!(
            out,
            "\nenergy example: per CG iteration, GPU share {:.4} with both CPUs{}",
            both.gpu_share,
            one.map_or(String::new(), |o| format!(", {:.4} with one CPU while the other idles", o.gpu_share))
        );
        let cell = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
        let flag = |ours: f64, paper: Option<f64>| match paper {
            Some(p) if (ours - p).abs() > 0.005 * (1.0 + 1e-9) => {
                "differs at the printed precision (see notes)"
            }
            Some(_) => "same at the printed precision",
            None => "",
        };
        let mut rows = Vec::new();
        let mut push = |label: &str, ours: f64, paper: Option<f64>| {
            rows.push(vec![
                label.to_string(),
                format!("{ours:.3}"),
                cell(paper),
                flag(ours, paper).to_string(),
            ]);
        };
        push("both CPUs: CPU part", both.cpu_j, published.collaboration_cpu_j);
        push("both CPUs: GPU part (compute + copy)", both.gpu_j, published.collaboration_gpu_j);
        push("both CPUs: total", both.total_j, published.collaboration_total_j);
        if let Some(o) = one {
            let parts = published.one_cpu_parts_j;
            push("one CPU: CPU part", o.cpu_j, parts.map(|p| p[0]));
            push("one CPU: GPU part (compute + copy)", o.gpu_j, parts.map(|p| p[1]));
            push("one CPU: idle second CPU", o.idle_cpu_j, parts.map(|p| p[2]));
            push("one CPU: total", o.total_j, published.one_cpu_plus_gpu_total_j);
        }
        out.push_str(&render_table(&["", "ours J", "paper J", ""], &rows));
        if let Some(o) = one {
            let _ = writeln!(
                out,
                "→ {} ({:.3} J vs {:.3} J)",
                if both.total_j < o.total_j {
                    "using both CPUs with the GPU uses less energy"
                } else {
                    "one CPU with the GPU uses less energy"
                },
                both.total_j,
                o.total_j
            );
        }
    }
    for n in &published.notes {
        let _ = writeln!(out, "note: {n}");
    }
}
