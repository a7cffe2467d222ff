//! What `gpumodel split` prints: the [`Report`] of a case file and the [`FitReport`] of `split fit`, on the
//! one output layer (`gpumodel_models::export`). The table keeps the papers' notation; CSV carries one row
//! per evaluated point (quoted, every digit); JSON is the report itself.

use super::cg::{CgReport, Share};
use super::input::{FitRow, Front, Report};
use super::peach::{CoExecution, SplitPoint, Winner};
use gpumodel_models::export::{Cell, Column, Doc, Export, Section};
use serde::Serialize;

/// `say!(doc, "format", args…)`: a line (or lines) of prose.
macro_rules! say {
    ($out:expr, $($t:tt)*) => { $out.say(format!($($t)*)) };
}

/// Columns from the labels people read; the machine name is the label in snake_case.
fn cols(labels: &[&str]) -> Vec<Column> {
    labels
        .iter()
        .map(|l| {
            let name: String =
                l.chars().map(|c| if c.is_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
            Column::new(name.trim_matches('_'), *l)
        })
        .collect()
}

/// A cell from the text the papers' layout prints: a number (percentages included) keeps its value
/// beside the text, so tables align it right; `-` is no value.
fn cell(s: String) -> Cell {
    if s == "-" {
        return Cell::Empty;
    }
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) => Cell::shown(if s.ends_with('%') { v / 100.0 } else { v }, s),
        Err(_) => Cell::Text(s),
    }
}

fn grid<L: AsRef<str>>(out: &mut Doc, (labels, rows): (&[L], &Vec<Vec<String>>)) {
    let labels: Vec<&str> = labels.iter().map(AsRef::as_ref).collect();
    out.table(cols(&labels), rows.iter().map(|r| r.iter().cloned().map(cell).collect()).collect());
}

impl Export for Report {
    const COMMAND: &'static str = "split";

    fn sections(&self) -> Vec<Section> {
        text_sections(self)
    }

    fn csv_section(&self) -> Option<Section> {
        Some(csv(self))
    }
}

/// `gpumodel split fit`: the least-squares clock laws of a case file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitReport {
    /// The case file as the user named it.
    pub file: String,
    pub rows: Vec<FitRow>,
}

impl Export for FitReport {
    const COMMAND: &'static str = "split-fit";

    fn sections(&self) -> Vec<Section> {
        let mut s = Section::new(cols(&["device", "quantity", "slope", "intercept", "r2", "points"]));
        for r in &self.rows {
            let mut row = vec![Cell::text(&r.device), Cell::text(&r.quantity)];
            match (r.fit, r.given_law) {
                (Some(f), _) => row.extend([
                    Cell::num(f.slope, 6),
                    Cell::num(f.intercept, 6),
                    Cell::num(f.r2, 6),
                    Cell::int(i64::try_from(f.n).unwrap_or(i64::MAX)),
                ]),
                (None, Some((slope, intercept))) => row.extend([
                    Cell::shown(slope, format!("{slope}")),
                    Cell::shown(intercept, format!("{intercept}")),
                    Cell::text("law given"),
                    Cell::Empty,
                ]),
                (None, None) => row.extend([Cell::Empty, Cell::Empty, Cell::Empty, Cell::Empty]),
            }
            s.push(row);
        }
        vec![s]
    }
}

/// One row per evaluated point, in the layout of earlier versions.
fn csv(r: &Report) -> Section {
    let point_cells = |p: &SplitPoint| {
        [p.gpu_share, p.time_s, p.energy_j, p.performance, p.efficiency].map(|v| Cell::num(v, 6))
    };
    match r {
        Report::TwoDevice { best, at, .. } => {
            let mut s = Section::new(cols(&[
                "objective",
                "gpu_share",
                "time_s",
                "energy_j",
                "performance",
                "efficiency",
            ]));
            let given = at.map(|p| ("given-share".to_string(), p));
            for (name, p) in best.iter().map(|b| (b.objective.clone(), b.point)).chain(given) {
                let mut row = vec![Cell::Text(name)];
                row.extend(point_cells(&p));
                s.push(row);
            }
            s
        }
        Report::Dvfs { objectives, cells, .. } => {
            let mut s = Section::new(cols(&[
                "cpu_clock",
                "gpu_clock",
                "objective",
                "gpu_share",
                "time_s",
                "energy_j",
                "performance",
                "efficiency",
            ]));
            for c in cells {
                for (o, p) in objectives.iter().zip(&c.best) {
                    let mut row = vec![Cell::num(c.cpu_clock, 0), Cell::num(c.gpu_clock, 0), Cell::text(o)];
                    row.extend(point_cells(p));
                    s.push(row);
                }
            }
            s
        }
        Report::Pareto { dynamic, total, .. } => {
            let mut s = Section::new(cols(&["energy", "time_s", "energy_j", "distribution"]));
            for f in [dynamic, total] {
                for p in &f.points {
                    let d: Vec<String> = p.distribution.iter().map(|x| x.to_string()).collect();
                    s.push(vec![
                        Cell::text(&f.energy),
                        Cell::num(p.time_s, 6),
                        Cell::num(p.energy_j, 6),
                        Cell::Text(d.join(";")),
                    ]);
                }
            }
            s
        }
        Report::Cg { report, .. } => {
            let mut s = Section::new(cols(&["run", "gpu_share", "time_s", "energy_j"]));
            for run in &report.runs {
                // The serde name of the choice, as the JSON writes it.
                let name = serde_json::to_value(run.choice).ok().and_then(|v| v.as_str().map(String::from));
                s.push(vec![
                    Cell::Text(name.unwrap_or_default()),
                    Cell::num(run.gpu_share, 6),
                    Cell::num(run.time_s, 6),
                    Cell::num(run.energy_j, 6),
                ]);
            }
            s
        }
    }
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

fn text_sections(r: &Report) -> Vec<Section> {
    let mut out = Doc::new();
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
                say!(out, "{t}");
            }
            if let Some(d) = gpu_from_model {
                say!(
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
            say!(
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
            say!(
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
            grid(&mut out, (&header, &rows));
            let verdict = match stafford.verdict {
                CoExecution::CpuOnly => "CPU only (GPU too slow for its power)",
                CoExecution::Split => "co-execute: splitting saves energy",
                CoExecution::GpuOnly => "GPU only (CPU too slow for its power)",
            };
            say!(
                out,
                "\nStafford et al. range test: co-execution saves energy iff S_G/S_C lies in [{:.4}, {:.4}]; here S_G/S_C = {:.4} → {verdict}\n  (balanced CPU share, Stafford's α = {:.4}; GPU share, PEACH's α = {:.4}; no hosting power or offload in this test)",
                stafford.lower,
                stafford.upper,
                stafford.speed_ratio,
                stafford.cpu_share,
                stafford.gpu_share
            );
            let s = stafford_case;
            say!(
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
                say!(out, "{t}");
            }
            say!(
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
                say!(out, "\nbest for {o}: GPU share, {unit}/s, {unit}/J");
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
                grid(&mut out, (&header, &rows));
            }
            say!(out, "\nglobal optimum per objective");
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
            grid(&mut out, (&header, &rows));
            if !gpu_from_model.is_empty() {
                say!(out, "\nGPU clock table predicted by our models");
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
                grid(&mut out, (&["core MHz", "time s", "power W", &rate, "Pd_G W", "bottleneck"], &rows));
            }
            if let Some(s) = savings {
                say!(
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
                say!(out, "{t}");
            }
            say!(
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
                say!(out, "{t}");
            }
            cg_table(&mut out, objective, report);
        }
    }
    out.into_sections()
}

fn front_table(out: &mut Doc, f: &Front, devices: &[String], chosen: &str) {
    say!(out, "\n(time, {} energy) front: {} points", f.energy, f.points.len());
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
    grid(out, (&header, &rows));
    for (o, p) in &f.best {
        let mark = if o == chosen { " *" } else { "" };
        say!(
            out,
            "  best {o}{mark}: {:?} (time {} s, energy {} J)",
            p.distribution,
            g(p.time_s),
            g(p.energy_j)
        );
    }
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

fn cg_table(out: &mut Doc, objective: &str, r: &CgReport) {
    let (cpu, gpu) = (&r.cpu, &r.gpu);
    let published = r.published.clone().unwrap_or_default();
    let d = &r.decisions[0];
    say!(out, "Lang & Rünger CG model (JPDC 2014); equation numbers in brackets are the paper's");
    say!(
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
    say!(out, "E*_el,cpu = E_el,cpu + E_el,dram = {}  (36)", uj(r.e_star_el_cpu_j));
    say!(out, "E*_el,gpu = E_el,gpu + E_el,copy / l = {}  (39)", uj(r.e_star_el_gpu_j));
    say!(out, "P*_idle,cpu = P_idle,cpu + P_idle,dram = {:.1} W  (35)", r.p_star_idle_cpu_w);
    say!(
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
    say!(
        out,
        "rule 1: CPU only if E*_el,cpu <= E*_el,gpu: {ec:.1} {} {eg:.1} µJ → {}",
        if d.rule1 { "<=" } else { ">" },
        if d.rule1 { "applies: CPU only" } else { "does not apply" }
    );
    let paper401 = published.rule2_threshold_j.map(|v| v * 1e6);
    say!(
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
    say!(
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
    say!(
        out,
        "exact condition beside rule 2: GPU only if E*_el,cpu > E*_el,gpu + P*_idle,cpu·(t_el,gpu + t_el,cpu/p) = {} → {}; {same}",
        uj(d.exact_threshold_j),
        d.exact_decision.name()
    );
    let observed = published.observed_gpu_share.as_ref().map(|s| match s {
        Share::Number(v) => format!("{v:.4}"),
        Share::Fraction(f) => f.clone(),
    });
    say!(
        out,
        "balanced GPU share r = (1 + p·t_el,gpu/t_el,cpu)⁻¹ = {:.4}  (26){}",
        d.gpu_share,
        observed.map_or(String::new(), |o| format!(
            "; the paper observes about {o}: its measured GPU time includes the per-call transfers"
        ))
    );
    match r.break_even_iterations {
        Some(l) => {
            say!(
                out,
                "break-even iterations l = E_el,copy / (E*_el,cpu − E_el,gpu) = {l:.1}: with more iterations per call a GPU element costs less than a CPU element{}",
                published
                    .break_even_iterations
                    .as_ref()
                    .map_or(String::new(), |t| format!(" (paper: \"{t}\")"))
            );
        }
        None => {
            say!(out, "break-even iterations: none (E_el,gpu alone is not below E*_el,cpu)");
        }
    }
    if r.decisions.len() > 1 || d.gpus != 1 {
        say!(out, "\nwith q identical GPUs (t_el,gpu/q in (26), rule 2 and the exact condition):");
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
        grid(
            out,
            (&["q", "r", "rule-2 threshold µJ", "exact threshold µJ", "paper's rules", "exact"], &rows),
        );
    }
    if !r.cpu_law_table.is_empty() {
        say!(out, "\nCPU DVFS laws: E_el(f) = P(f) / v(f); E*_el,cpu(f) adds Table 2's E_el,dram");
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
        grid(
            out,
            (&["GHz", "P(f) W", "v(f) el/ms", "E_el(f) µJ", "paper µJ", "E*_el,cpu µJ", "decision"], &rows),
        );
        if let Some(c) = &r.clock_choice {
            let turbo = published.e_el_cpu_uj.get("turbo");
            say!(
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
    say!(out, "\n{per} (q = {}; times without transfers, as in the paper's rules)", d.gpus);
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .map(|run| vec![run.choice.name().into(), pct(run.gpu_share), g(run.time_s), g(run.energy_j)])
        .collect();
    grid(out, (&["run", "gpu share", "time s", "energy J"], &rows));
    say!(out, "least {objective}: {}", r.choice.choice.name());
    if let Some((both, one)) = &r.example {
        say!(
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
        grid(out, (&["", "ours J", "paper J", ""], &rows));
        if let Some(o) = one {
            say!(
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
        say!(out, "note: {n}");
    }
}
