//! The CPU/GPU split of a conjugate-gradient solver, with the equations of J. Lang, G. Rünger, "An
//! execution time and energy model for an energy-aware execution of a conjugate gradient method with
//! CPU/GPU collaboration", JPDC 2014 (equation numbers in brackets are the paper's).
//!
//! Each CG iteration works on N elements (matrix rows). Per element the CPU (p threads) takes
//! t_el,cpu per thread and spends E_el,cpu in its packages plus E_el,dram in memory; the GPU takes
//! t_el,gpu and spends E_el,gpu, and every element it holds must first be copied to it (E_el,copy), once
//! per solver call of l iterations. The paper's per-element energies:
//!
//! ```text
//! E*_el,cpu  = E_el,cpu + E_el,dram                 (36)
//! E*_el,gpu  = E_el,gpu + E_el,copy / l             (39)
//! P*_idle,cpu = P_idle,cpu + P_idle,dram            (35)
//! r          = (1 + p·t_el,gpu / t_el,cpu)⁻¹        (26)  GPU share at which both finish together
//! ```
//!
//! Its decision: rule 1 — CPU only when E*_el,cpu ≤ E*_el,gpu; rule 2 — GPU only when
//! E*_el,cpu > E*_el,gpu + P*_idle,cpu·t_el,gpu (the idle CPU's energy while the GPU works one element);
//! otherwise collaborate.
//!
//! Rule 2 leaves out that a collaborating CPU also shortens the run. Comparing the balanced split with
//! GPU-only directly (our derivation from the same model): the split spends (1 − r)·E*_el,cpu +
//! r·E*_el,gpu per element, GPU-only E*_el,gpu + P*_idle,cpu·t_el,gpu, and with 1 − r =
//! t_el,gpu / (t_el,gpu + t_el,cpu/p) the split loses exactly when
//! E*_el,cpu > E*_el,gpu + P*_idle,cpu·(t_el,gpu + t_el,cpu/p). Both thresholds are reported and the
//! report says when their verdicts differ. The model has no GPU idle power, so rule 1 is exact.
//!
//! With q identical GPUs (our extension of the same equations) the GPU part runs q times faster:
//! t_el,gpu becomes t_el,gpu/q in (26), rule 2 and the exact condition.
//!
//! The CPU's clock f (GHz) enters through the paper's DVFS laws P(f) and v(f) (elements per ms of the
//! whole CPU): E_el(f) = P(f)/v(f), fitted on 1.2–2.0 GHz without Turbo.

use super::{Error, Objective, Result, non_negative, positive, share};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `[cg]` section: Table 2 of the paper, laid out as devices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgCase {
    /// p: CPU threads.
    #[serde(default)]
    pub threads: Option<f64>,
    /// l: mean CG iterations per solver call (the copy to the GPU is paid once per call).
    #[serde(default)]
    pub iterations: Option<f64>,
    /// N: elements per iteration, for the per-iteration runs (default 1: results per element).
    #[serde(default = "one")]
    pub elements: f64,
    /// Numbers of identical GPUs q to tabulate (default: just 1).
    #[serde(default = "one_gpu")]
    pub gpus: Vec<u32>,
    /// `[cg.cpu]`.
    #[serde(default)]
    pub cpu: Option<CgCpu>,
    /// `[cg.gpu]`.
    #[serde(default)]
    pub gpu: Option<CgGpu>,
    /// `[cg.cpu_law]`: the CPU's DVFS laws.
    #[serde(default)]
    pub cpu_law: Option<CpuLaw>,
    /// `[cg.example]`: an energy example at given shares.
    #[serde(default)]
    pub example: Option<EnergyExample>,
    /// `[cg.published]`: the paper's printed figures, shown beside ours.
    #[serde(default)]
    pub published: Option<Published>,
}

fn one() -> f64 {
    1.0
}

fn one_gpu() -> Vec<u32> {
    vec![1]
}

/// `[cg.cpu]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgCpu {
    /// t_el,cpu: time per element of one thread, s.
    pub time_per_element_s: f64,
    /// E_el,cpu: package energy per element, J.
    pub energy_per_element_j: f64,
    /// E_el,dram: memory energy per element, J.
    #[serde(default)]
    pub dram_energy_per_element_j: f64,
    /// P_idle,cpu: idle power of the packages, W.
    pub idle_power_w: f64,
    /// P_idle,dram: idle power of the memory, W.
    #[serde(default)]
    pub dram_idle_power_w: f64,
}

/// `[cg.gpu]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgGpu {
    /// t_el,gpu: time per element, s.
    pub time_per_element_s: f64,
    /// E_el,gpu: energy per element, J.
    pub energy_per_element_j: f64,
    /// E_el,copy: energy to copy one element to the GPU (host and GPU side), J.
    #[serde(default)]
    pub copy_energy_per_element_j: f64,
    /// t_el,copy: time to copy one element, s (reported; the paper's decision does not use it).
    #[serde(default)]
    pub copy_time_per_element_s: f64,
}

/// CPU DVFS laws: polynomials in the clock f (GHz), coefficients from the constant term up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuLaw {
    /// P(f) in W: `[c0, c1, c2, c3]` means c0 + c1·f + c2·f² + c3·f³.
    pub power_w: Vec<f64>,
    /// v(f): elements per millisecond of the whole CPU (all threads), same convention.
    pub elements_per_ms: Vec<f64>,
    /// Clocks to tabulate, GHz.
    pub clocks_ghz: Vec<f64>,
}

/// A work share: a number, or a fraction written as a string such as "1/3".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Share {
    /// 0.5
    Number(f64),
    /// "1/3"
    Fraction(String),
}

impl Share {
    fn value(&self, what: &str) -> Result<f64> {
        let v = match self {
            Share::Number(v) => *v,
            Share::Fraction(s) => {
                let bad =
                    || Error::Case(format!("{what} = \"{s}\": write a number or a fraction like \"1/3\""));
                let (a, b) = s.split_once('/').ok_or_else(bad)?;
                let a: f64 = a.trim().parse().map_err(|_| bad())?;
                let b: f64 = b.trim().parse().map_err(|_| bad())?;
                if b == 0.0 {
                    return Err(bad());
                }
                a / b
            }
        };
        share(what, v)
    }
}

/// `[cg.example]`: energy per iteration of N elements at given GPU shares (the paper's example uses the
/// share it observed, which differs from (26) because its measured GPU time includes the transfers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnergyExample {
    /// N.
    pub elements: f64,
    /// GPU share when both CPUs collaborate.
    pub gpu_share: Share,
    /// GPU share when one CPU of two collaborates and the other idles.
    #[serde(default)]
    pub one_cpu_gpu_share: Option<Share>,
    /// Idle power of the unused CPU, W.
    #[serde(default)]
    pub idle_cpu_power_w: Option<f64>,
}

/// `[cg.published]`: figures as the paper prints them, for comparison only (never used in a result).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// The rule-2 threshold as printed, J.
    #[serde(default)]
    pub rule2_threshold_j: Option<f64>,
    /// Idle CPU energy per GPU element as printed, J.
    #[serde(default)]
    pub idle_cpu_energy_per_gpu_element_j: Option<f64>,
    /// Break-even iterations as the text states it (a lower bound such as "more than 15").
    #[serde(default)]
    pub break_even_iterations: Option<String>,
    /// GPU share the paper observed.
    #[serde(default)]
    pub observed_gpu_share: Option<Share>,
    /// Measured E_el,cpu in µJ by clock (GHz as text, or "turbo").
    #[serde(default)]
    pub e_el_cpu_uj: BTreeMap<String, f64>,
    /// Energy example: CPU, GPU, total with both CPUs; total with one CPU, J.
    #[serde(default)]
    pub collaboration_cpu_j: Option<f64>,
    /// See `collaboration_cpu_j`.
    #[serde(default)]
    pub collaboration_gpu_j: Option<f64>,
    /// See `collaboration_cpu_j`.
    #[serde(default)]
    pub collaboration_total_j: Option<f64>,
    /// Parts of the one-CPU run: CPU, GPU, idle second CPU, J.
    #[serde(default)]
    pub one_cpu_parts_j: Option<[f64; 3]>,
    /// See `collaboration_cpu_j`.
    #[serde(default)]
    pub one_cpu_plus_gpu_total_j: Option<f64>,
    /// Notes on the paper's known inconsistencies, printed with the report.
    #[serde(default)]
    pub notes: Vec<String>,
}

fn poly(c: &[f64], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, k| acc * x + k)
}

/// Which way to run the solver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CgChoice {
    /// Everything on the CPU.
    CpuOnly,
    /// Everything on the GPU(s).
    GpuOnly,
    /// Both, at the balanced share r.
    Collaborate,
}

impl CgChoice {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            CgChoice::CpuOnly => "cpu-only",
            CgChoice::GpuOnly => "gpu-only",
            CgChoice::Collaborate => "collaborate",
        }
    }
}

/// The paper's decision and the exact one, for one CPU energy per element and q GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Decision {
    /// q.
    pub gpus: u32,
    /// r: the GPUs' total share when all finish together.
    pub gpu_share: f64,
    /// Rule 1 holds (E*_el,cpu ≤ E*_el,gpu): CPU only.
    pub rule1: bool,
    /// E*_el,gpu + P*_idle,cpu·t_el,gpu/q, J.
    pub rule2_threshold_j: f64,
    /// Rule 2 holds (E*_el,cpu above its threshold): GPU only.
    pub rule2: bool,
    /// The paper's decision.
    pub decision: CgChoice,
    /// "rule 1", "rule 2", or "neither rule".
    pub decided_by: &'static str,
    /// E*_el,gpu + P*_idle,cpu·(t_el,gpu/q + t_el,cpu/p), J: the exact bound above which GPU-only beats
    /// the balanced split.
    pub exact_threshold_j: f64,
    /// The decision with the exact bound in place of rule 2.
    pub exact_decision: CgChoice,
}

/// One clock of the CPU law table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LawRow {
    /// f, GHz.
    pub clock_ghz: f64,
    /// P(f), W.
    pub power_w: f64,
    /// v(f), elements per ms of the whole CPU.
    pub elements_per_ms: f64,
    /// E_el(f) = P(f)/v(f), J.
    pub e_el_j: f64,
    /// The paper's printed E_el at this clock, µJ, when it prints one.
    pub published_uj: Option<f64>,
    /// The decision at this clock (E*_el,cpu = E_el(f) + E_el,dram, t_el,cpu = p / v(f)), q = 1.
    pub decision: Decision,
}

/// The clock choice from the laws.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockChoice {
    /// The listed clock with the least E_el(f), GHz.
    pub clock_ghz: f64,
    /// E_el there, J.
    pub e_el_j: f64,
    /// The chosen clock is the lowest or highest listed: the laws' minimum may lie outside the range.
    pub at_edge: bool,
    /// Minimum of E_el(f) on a fine grid between the lowest and highest listed clock: (GHz, J).
    pub continuous_min: (f64, f64),
}

/// Energy (J) of one way to run the example.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExampleRun {
    /// GPU share.
    pub gpu_share: f64,
    /// Energy of the CPU part, J.
    pub cpu_j: f64,
    /// Energy of the GPU part (compute and copy), J.
    pub gpu_j: f64,
    /// Energy of an idle CPU, J (0 when both CPUs work).
    pub idle_cpu_j: f64,
    /// Sum, J.
    pub total_j: f64,
}

/// Time and energy of one iteration of N elements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CgRun {
    /// Which way.
    pub choice: CgChoice,
    /// GPU share.
    pub gpu_share: f64,
    /// Time, s (compute only, as in the paper's decision).
    pub time_s: f64,
    /// Energy, J.
    pub energy_j: f64,
}

/// Everything the paper's equations give for a case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CgReport {
    /// p.
    pub threads: f64,
    /// l.
    pub iterations: f64,
    /// N.
    pub elements: f64,
    /// The CPU's Table 2 values.
    pub cpu: CgCpu,
    /// The GPU's Table 2 values.
    pub gpu: CgGpu,
    /// The paper's printed figures, for comparison.
    pub published: Option<Published>,
    /// t_el,cpu / p: time per element of the whole CPU, s.
    pub cpu_time_per_element_s: f64,
    /// E*_el,cpu (36), J.
    pub e_star_el_cpu_j: f64,
    /// E*_el,gpu (39), J.
    pub e_star_el_gpu_j: f64,
    /// P*_idle,cpu (35), W.
    pub p_star_idle_cpu_w: f64,
    /// P*_idle,cpu·t_el,gpu: what the idle CPU burns per GPU element, J.
    pub idle_cpu_energy_per_gpu_element_j: f64,
    /// l at which E*_el,gpu = E*_el,cpu: E_el,copy / (E*_el,cpu − E_el,gpu); None when the GPU element
    /// is never cheaper.
    pub break_even_iterations: Option<f64>,
    /// The decision for each q in `gpus` (the first is the headline).
    pub decisions: Vec<Decision>,
    /// CPU-only, GPU-only and collaborating runs of one iteration (q = first of `gpus`).
    pub runs: [CgRun; 3],
    /// The run that minimizes the objective.
    pub choice: CgRun,
    /// The law table, when `[cg.cpu_law]` is given.
    pub cpu_law_table: Vec<LawRow>,
    /// The clock the laws favour for energy.
    pub clock_choice: Option<ClockChoice>,
    /// The example with both CPUs, and with one CPU while the other idles.
    pub example: Option<(ExampleRun, Option<ExampleRun>)>,
}

#[derive(Clone, Copy)]
struct Inputs {
    p: f64,
    t_cpu: f64,
    t_gpu: f64,
    e_star_cpu: f64,
    e_star_gpu: f64,
    p_idle: f64,
}

fn decide(i: &Inputs, q: u32) -> Decision {
    let tg = i.t_gpu / q as f64;
    let tc = i.t_cpu / i.p;
    let r = 1.0 / (1.0 + i.p * tg / i.t_cpu);
    let rule1 = i.e_star_cpu <= i.e_star_gpu;
    let rule2_threshold = i.e_star_gpu + i.p_idle * tg;
    let rule2 = !rule1 && i.e_star_cpu > rule2_threshold;
    let exact_threshold = i.e_star_gpu + i.p_idle * (tg + tc);
    let (decision, decided_by) = if rule1 {
        (CgChoice::CpuOnly, "rule 1")
    } else if rule2 {
        (CgChoice::GpuOnly, "rule 2")
    } else {
        (CgChoice::Collaborate, "neither rule")
    };
    let exact_decision = if rule1 {
        CgChoice::CpuOnly
    } else if i.e_star_cpu > exact_threshold {
        CgChoice::GpuOnly
    } else {
        CgChoice::Collaborate
    };
    Decision {
        gpus: q,
        gpu_share: r,
        rule1,
        rule2_threshold_j: rule2_threshold,
        rule2,
        decision,
        decided_by,
        exact_threshold_j: exact_threshold,
        exact_decision,
    }
}

impl CgCase {
    /// Applies the paper's equations and picks the run that minimizes `objective`.
    pub fn solve(&self, objective: Objective) -> Result<CgReport> {
        let missing = |what: &str, keys: &str| Error::Case(format!("[cg] needs {what}: add it ({keys})"));
        let p = self.threads.ok_or_else(|| missing("`threads` (p)", "threads = 16"))?;
        let p = positive("[cg] threads", p)?;
        let l = self.iterations.ok_or_else(|| missing("`iterations` (l)", "iterations = 32.4"))?;
        let l = positive("[cg] iterations", l)?;
        let n = positive("[cg] elements", self.elements)?;
        let cpu = self.cpu.as_ref().ok_or_else(|| {
            missing(
                "the section [cg.cpu]",
                "time_per_element_s, energy_per_element_j, dram_energy_per_element_j, idle_power_w, dram_idle_power_w",
            )
        })?;
        let gpu = self.gpu.as_ref().ok_or_else(|| {
            missing(
                "the section [cg.gpu]",
                "time_per_element_s, energy_per_element_j, copy_energy_per_element_j, copy_time_per_element_s",
            )
        })?;
        let t_cpu = positive("[cg.cpu] time_per_element_s", cpu.time_per_element_s)?;
        let e_cpu = non_negative("[cg.cpu] energy_per_element_j", cpu.energy_per_element_j)?;
        let e_dram = non_negative("[cg.cpu] dram_energy_per_element_j", cpu.dram_energy_per_element_j)?;
        let p_idle = non_negative("[cg.cpu] idle_power_w", cpu.idle_power_w)?
            + non_negative("[cg.cpu] dram_idle_power_w", cpu.dram_idle_power_w)?;
        let t_gpu = positive("[cg.gpu] time_per_element_s", gpu.time_per_element_s)?;
        let e_gpu = non_negative("[cg.gpu] energy_per_element_j", gpu.energy_per_element_j)?;
        let e_copy = non_negative("[cg.gpu] copy_energy_per_element_j", gpu.copy_energy_per_element_j)?;
        non_negative("[cg.gpu] copy_time_per_element_s", gpu.copy_time_per_element_s)?;
        if self.gpus.is_empty() {
            return Err(Error::EmptyTable { what: "[cg] gpus".into() });
        }
        if let Some(&q) = self.gpus.iter().find(|&&q| q == 0) {
            return Err(Error::BadValue {
                what: "[cg] gpus".into(),
                must: "a whole number > 0",
                value: q as f64,
            });
        }
        let e_star_cpu = e_cpu + e_dram;
        let e_star_gpu = e_gpu + e_copy / l;
        let inputs = Inputs { p, t_cpu, t_gpu, e_star_cpu, e_star_gpu, p_idle };
        let decisions: Vec<Decision> = self.gpus.iter().map(|&q| decide(&inputs, q)).collect();
        let break_even = (e_star_cpu > e_gpu).then(|| e_copy / (e_star_cpu - e_gpu));

        // One iteration of N elements, q = the first of `gpus`.
        let q = self.gpus[0] as f64;
        let (tc, tg) = (t_cpu / p, t_gpu / q);
        let r = decisions[0].gpu_share;
        let runs = [
            CgRun { choice: CgChoice::CpuOnly, gpu_share: 0.0, time_s: n * tc, energy_j: n * e_star_cpu },
            CgRun {
                choice: CgChoice::GpuOnly,
                gpu_share: 1.0,
                time_s: n * tg,
                energy_j: n * (e_star_gpu + p_idle * tg),
            },
            CgRun {
                choice: CgChoice::Collaborate,
                gpu_share: r,
                time_s: n * r * tg,
                energy_j: n * ((1.0 - r) * e_star_cpu + r * e_star_gpu),
            },
        ];
        let choice = *runs
            .iter()
            .min_by(|a, b| {
                objective
                    .log_value(a.energy_j, a.time_s)
                    .total_cmp(&objective.log_value(b.energy_j, b.time_s))
            })
            .unwrap_or(&runs[2]);

        let published = self.published.clone().unwrap_or_default();
        let (cpu_law_table, clock_choice) = match &self.cpu_law {
            Some(law) => {
                let rows = law_table(law, &inputs, e_dram, &published)?;
                let choice = clock_choice(law, &rows)?;
                (rows, Some(choice))
            }
            None => (Vec::new(), None),
        };

        let example = match &self.example {
            Some(ex) => {
                let n = positive("[cg.example] elements", ex.elements)?;
                let r = ex.gpu_share.value("[cg.example] gpu_share")?;
                let both = ExampleRun {
                    gpu_share: r,
                    cpu_j: (1.0 - r) * n * e_star_cpu,
                    gpu_j: r * n * e_star_gpu,
                    idle_cpu_j: 0.0,
                    total_j: (1.0 - r) * n * e_star_cpu + r * n * e_star_gpu,
                };
                let one = match &ex.one_cpu_gpu_share {
                    Some(s) => {
                        let r1 = s.value("[cg.example] one_cpu_gpu_share")?;
                        let idle_w = ex.idle_cpu_power_w.ok_or_else(|| {
                            Error::Case(
                                "[cg.example] one_cpu_gpu_share needs idle_cpu_power_w: the idle power of the unused CPU"
                                    .into(),
                            )
                        })?;
                        let idle_w = non_negative("[cg.example] idle_cpu_power_w", idle_w)?;
                        // The unused CPU idles while the GPU computes its part (the paper's 0.15 J).
                        let (c, g, i) =
                            ((1.0 - r1) * n * e_star_cpu, r1 * n * e_star_gpu, idle_w * r1 * n * t_gpu);
                        Some(ExampleRun {
                            gpu_share: r1,
                            cpu_j: c,
                            gpu_j: g,
                            idle_cpu_j: i,
                            total_j: c + g + i,
                        })
                    }
                    None => None,
                };
                Some((both, one))
            }
            None => None,
        };
        if let Some(s) = &published.observed_gpu_share {
            s.value("[cg.published] observed_gpu_share")?;
        }

        Ok(CgReport {
            threads: p,
            iterations: l,
            elements: n,
            cpu: cpu.clone(),
            gpu: gpu.clone(),
            published: self.published.clone(),
            cpu_time_per_element_s: tc,
            e_star_el_cpu_j: e_star_cpu,
            e_star_el_gpu_j: e_star_gpu,
            p_star_idle_cpu_w: p_idle,
            idle_cpu_energy_per_gpu_element_j: p_idle * t_gpu,
            break_even_iterations: break_even,
            decisions,
            runs,
            choice,
            cpu_law_table,
            clock_choice,
            example,
        })
    }
}

/// The published E_el for a clock, looked up by its GHz written as text ("1.2", "2.0", "2").
fn published_at(p: &Published, f: f64) -> Option<f64> {
    p.e_el_cpu_uj.iter().find(|(k, _)| k.parse::<f64>().is_ok_and(|g| (g - f).abs() < 1e-9)).map(|(_, v)| *v)
}

fn law_table(law: &CpuLaw, i: &Inputs, e_dram: f64, published: &Published) -> Result<Vec<LawRow>> {
    if law.clocks_ghz.is_empty() {
        return Err(Error::EmptyTable { what: "[cg.cpu_law] clocks_ghz".into() });
    }
    if law.power_w.is_empty() || law.elements_per_ms.is_empty() {
        return Err(Error::EmptyTable { what: "[cg.cpu_law] power_w / elements_per_ms coefficients".into() });
    }
    law.clocks_ghz
        .iter()
        .map(|&f| {
            positive("[cg.cpu_law] clocks_ghz", f)?;
            let pw = positive(&format!("[cg.cpu_law] power_w at {f} GHz"), poly(&law.power_w, f))?;
            let v =
                positive(&format!("[cg.cpu_law] elements_per_ms at {f} GHz"), poly(&law.elements_per_ms, f))?;
            let e_el = pw / (v * 1e3);
            // t_el,cpu is per thread: the whole CPU takes 1/v, so one thread p/v.
            let at = Inputs { t_cpu: i.p / (v * 1e3), e_star_cpu: e_el + e_dram, ..*i };
            Ok(LawRow {
                clock_ghz: f,
                power_w: pw,
                elements_per_ms: v,
                e_el_j: e_el,
                published_uj: published_at(published, f),
                decision: decide(&at, 1),
            })
        })
        .collect()
}

fn clock_choice(law: &CpuLaw, rows: &[LawRow]) -> Result<ClockChoice> {
    let best = rows
        .iter()
        .min_by(|a, b| a.e_el_j.total_cmp(&b.e_el_j))
        .ok_or_else(|| Error::EmptyTable { what: "[cg.cpu_law] clocks_ghz".into() })?;
    let lo = rows.iter().map(|r| r.clock_ghz).fold(f64::INFINITY, f64::min);
    let hi = rows.iter().map(|r| r.clock_ghz).fold(f64::NEG_INFINITY, f64::max);
    let at_edge = rows.len() > 1 && (best.clock_ghz == lo || best.clock_ghz == hi);
    // A fine grid (1 MHz-ish) is exact enough for a smooth law and never fails on odd polynomials.
    let steps = 1000;
    let mut cont = (best.clock_ghz, best.e_el_j);
    for k in 0..=steps {
        let f = lo + (hi - lo) * k as f64 / steps as f64;
        let v = poly(&law.elements_per_ms, f);
        if v > 0.0 {
            let e = poly(&law.power_w, f) / (v * 1e3);
            if e.is_finite() && e > 0.0 && e < cont.1 {
                cont = (f, e);
            }
        }
    }
    Ok(ClockChoice { clock_ghz: best.clock_ghz, e_el_j: best.e_el_j, at_edge, continuous_min: cont })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 2 of the paper (Sandybridge + Tesla C2075), typed in from the paper's values.
    fn table2() -> CgCase {
        CgCase {
            threads: Some(16.0),
            iterations: Some(32.4),
            elements: 1.0,
            gpus: vec![1, 2],
            cpu: Some(CgCpu {
                time_per_element_s: 27.2e-6,
                energy_per_element_j: 265e-6,
                dram_energy_per_element_j: 20.5e-6,
                idle_power_w: 83.0,
                dram_idle_power_w: 1.3,
            }),
            gpu: Some(CgGpu {
                time_per_element_s: 1.69e-6,
                energy_per_element_j: 235e-6,
                copy_energy_per_element_j: 814e-6,
                copy_time_per_element_s: 11.8e-6,
            }),
            cpu_law: None,
            example: None,
            published: None,
        }
    }

    #[test]
    fn table2_gives_the_papers_derived_values() {
        let r = table2().solve(Objective::ENERGY).unwrap();
        // By hand: 265 + 20.5 = 285.5; 235 + 814/32.4 = 260.1235; + 84.3·1.69 = 402.5905;
        // 260.1235 + 84.3·(1.69 + 1.70) = 545.9005; r = 1/(1 + 16·1.69/27.2) = 0.50148.
        assert!((r.e_star_el_cpu_j * 1e6 - 285.5).abs() < 1e-9);
        assert!((r.e_star_el_gpu_j * 1e6 - (235.0 + 814.0 / 32.4)).abs() < 1e-9);
        let d = r.decisions[0];
        assert!((d.rule2_threshold_j * 1e6 - 402.5905).abs() < 1e-3, "{d:?}");
        assert!((d.exact_threshold_j * 1e6 - 545.9005).abs() < 1e-3, "{d:?}");
        assert!((d.gpu_share - 1.0 / (1.0 + 16.0 * 1.69 / 27.2)).abs() < 1e-12);
        assert_eq!(
            (d.decision, d.decided_by, d.exact_decision),
            (CgChoice::Collaborate, "neither rule", CgChoice::Collaborate)
        );
        assert!((r.break_even_iterations.unwrap() - 814.0 / 50.5).abs() < 1e-9);
        // The exact condition is the energy comparison itself: collaborating is cheapest.
        assert_eq!(r.choice.choice, CgChoice::Collaborate);
    }

    #[test]
    fn rule2_and_the_exact_bound_disagree_between_the_thresholds() {
        // E*_el,cpu = 450 µJ lies between 402.6 and 545.9: rule 2 says GPU only, the exact comparison
        // says the balanced split is still cheaper.
        let mut c = table2();
        c.cpu.as_mut().unwrap().energy_per_element_j = 450e-6 - 20.5e-6;
        let r = c.solve(Objective::ENERGY).unwrap();
        let d = r.decisions[0];
        assert_eq!((d.decision, d.exact_decision), (CgChoice::GpuOnly, CgChoice::Collaborate));
        assert_eq!(r.choice.choice, CgChoice::Collaborate);
        let [_, gpu, split] = r.runs;
        assert!(split.energy_j < gpu.energy_j);
    }

    #[test]
    fn more_gpus_shrink_the_idle_term() {
        let r = table2().solve(Objective::ENERGY).unwrap();
        let (d1, d2) = (r.decisions[0], r.decisions[1]);
        // q = 2: t_el,gpu/2 = 0.845 µs: r = 1/(1 + 16·0.845/27.2), threshold 260.12 + 84.3·0.845.
        assert!((d2.gpu_share - 1.0 / (1.0 + 16.0 * 0.845 / 27.2)).abs() < 1e-12);
        assert!((d2.rule2_threshold_j - (r.e_star_el_gpu_j + 84.3 * 0.845e-6)).abs() < 1e-15);
        assert!(d2.gpu_share > d1.gpu_share && d2.rule2_threshold_j < d1.rule2_threshold_j);
    }

    #[test]
    fn law_table_matches_a_hand_computation() {
        let mut c = table2();
        c.cpu_law = Some(CpuLaw {
            power_w: vec![24.0, 29.0, 0.0, 2.2],
            elements_per_ms: vec![-70.0, 222.0],
            clocks_ghz: vec![1.2, 2.0],
        });
        let r = c.solve(Objective::ENERGY).unwrap();
        // f = 2.0: P = 2.2·8 + 58 + 24 = 99.6 W; v = 374 el/ms → 266.31 µJ; f = 1.2: 62.6016/196.4 → 318.74.
        let t = &r.cpu_law_table;
        assert!((t[1].power_w - 99.6).abs() < 1e-9 && (t[1].elements_per_ms - 374.0).abs() < 1e-9);
        assert!((t[1].e_el_j * 1e6 - 266.31).abs() < 0.01 && (t[0].e_el_j * 1e6 - 318.74).abs() < 0.01);
        let ch = r.clock_choice.unwrap();
        assert_eq!((ch.clock_ghz, ch.at_edge), (2.0, true));
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut c = table2();
        c.gpu.as_mut().unwrap().time_per_element_s = -1.0;
        let e = c.solve(Objective::ENERGY).unwrap_err().to_string();
        assert!(e.contains("[cg.gpu] time_per_element_s"), "{e}");
        let mut c = table2();
        c.cpu = None;
        assert!(c.solve(Objective::ENERGY).unwrap_err().to_string().contains("[cg.cpu]"));
        let mut c = table2();
        c.example = Some(EnergyExample {
            elements: 10.0,
            gpu_share: Share::Fraction("4/3".into()),
            one_cpu_gpu_share: None,
            idle_cpu_power_w: None,
        });
        let e = c.solve(Objective::ENERGY).unwrap_err().to_string();
        assert!(e.contains("[cg.example] gpu_share") && e.contains("outside [0, 1]"), "{e}");
    }
}
