//! The CPU/GPU split of a conjugate-gradient solver (J. Lang, G. Rünger, "An execution time and energy
//! model for an energy-aware execution of a conjugate gradient method with CPU/GPU collaboration",
//! JPDC 2014): each iteration works on N elements (matrix rows); the GPU takes the share r, the p CPU
//! cores the rest.
//!
//! - Balanced share (both finish together): r = (1 + p·t_el,gpu / t_el,cpu)⁻¹, with t_el,cpu the time
//!   per element of one CPU core and t_el,gpu that of the GPU.
//! - Copy costs: in a split run the parts of the vectors each side computed must cross PCIe every
//!   iteration; we charge `copy_time_per_element_s` per element of N, during which both devices wait at
//!   idle power. A GPU-only or CPU-only run keeps its data where it is.
//! - The CPU's power and speed may follow DVFS laws in the clock f (GHz); Lang & Rünger fitted
//!   P(f) = 2.2f³ + 29f + 24 W and v(f) = 222f − 70 elements/ms.
//!
//! Decision rule (our derivation from the same energy model): with e_C = P_C·t_C and e_G = P_G·t_G the
//! energies per element of the busy CPU (all cores, t_C = t_el,cpu / p) and busy GPU, a balanced split
//! spends (1 − r)·e_C + r·e_G per element (+ copies), GPU-only spends e_G + P_C,idle·t_G, CPU-only
//! e_C + P_G,idle·t_C. So the split beats GPU-only exactly when e_C is below the threshold
//! θ = e_G + (P_C,idle·t_G − t_copy·(P_C,idle + P_G,idle)) / (1 − r), and the tool picks the cheapest
//! of the three for the chosen objective.

use super::{Objective, Result, SplitError, non_negative, positive};
use serde::{Deserialize, Serialize};

/// CPU DVFS laws: polynomials in the clock f, coefficients from the constant term up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuLaw {
    /// Power P(f) in W: `[c0, c1, c2, c3]` means c0 + c1·f + c2·f² + c3·f³.
    pub power_w: Vec<f64>,
    /// Speed v(f) of the whole CPU (all cores) in elements per millisecond, same convention.
    pub elements_per_ms: Vec<f64>,
    /// Clocks to evaluate, GHz.
    pub clocks_ghz: Vec<f64>,
}

fn poly(c: &[f64], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, k| acc * x + k)
}

impl CpuLaw {
    /// (clock, power W, time per element of the whole CPU s, energy per element J) for every clock.
    pub fn table(&self) -> Result<Vec<(f64, f64, f64, f64)>> {
        if self.clocks_ghz.is_empty() {
            return Err(SplitError::EmptyTable { what: "cg cpu_law clocks_ghz".into() });
        }
        if self.power_w.is_empty() || self.elements_per_ms.is_empty() {
            return Err(SplitError::EmptyTable { what: "cg cpu_law coefficients".into() });
        }
        self.clocks_ghz
            .iter()
            .map(|&f| {
                positive("cg cpu clock", f)?;
                let p = positive(&format!("cg cpu power at {f} GHz"), poly(&self.power_w, f))?;
                let v = positive(&format!("cg cpu speed at {f} GHz"), poly(&self.elements_per_ms, f))?;
                let t = 1.0 / (v * 1e3);
                Ok((f, p, t, p * t))
            })
            .collect()
    }
}

/// One CG iteration's split problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgCase {
    /// N, elements per iteration (the result scales with it).
    #[serde(default = "one")]
    pub elements: f64,
    /// p, CPU cores used.
    pub cpu_cores: f64,
    /// t_el,cpu: time per element on one CPU core, s. Ignored when `cpu_law` is given.
    #[serde(default)]
    pub cpu_time_per_element_s: Option<f64>,
    /// CPU power while computing, W. Ignored when `cpu_law` is given.
    #[serde(default)]
    pub cpu_power_w: Option<f64>,
    /// CPU power while idle (e.g. hosting the GPU), W.
    pub cpu_idle_power_w: f64,
    /// t_el,gpu: time per element on the GPU, s.
    pub gpu_time_per_element_s: f64,
    /// GPU power while computing, W.
    pub gpu_power_w: f64,
    /// GPU power while idle, W.
    pub gpu_idle_power_w: f64,
    /// Transfer time per element of N in a split run, s.
    #[serde(default)]
    pub copy_time_per_element_s: f64,
    /// Evaluate the CPU from DVFS laws at `cpu_clock_ghz` (or at its most energy-efficient clock).
    #[serde(default)]
    pub cpu_law: Option<CpuLaw>,
    /// Clock to run the CPU at when `cpu_law` is given; default: the clock whose best run minimizes
    /// the objective.
    #[serde(default)]
    pub cpu_clock_ghz: Option<f64>,
}

fn one() -> f64 {
    1.0
}

/// How to run the solver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CgChoice {
    /// Everything on the CPU.
    CpuOnly,
    /// Everything on the GPU.
    GpuOnly,
    /// Balanced split, GPU share r.
    Split,
}

/// Time and energy of one way to run an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CgRun {
    /// Which way.
    pub choice: CgChoice,
    /// GPU share of the elements.
    pub gpu_share: f64,
    /// Time per iteration, s.
    pub time_s: f64,
    /// Energy per iteration, J.
    pub energy_j: f64,
}

/// The result: the three runs, the threshold, and the choice for the objective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CgReport {
    /// CPU clock used, when a law was given.
    pub cpu_clock_ghz: Option<f64>,
    /// Busy-CPU (all cores) time per element t_C, s.
    pub cpu_time_per_element_s: f64,
    /// e_C = P_C·t_C, J per element.
    pub cpu_energy_per_element_j: f64,
    /// e_G = P_G·t_G, J per element.
    pub gpu_energy_per_element_j: f64,
    /// r, balanced GPU share.
    pub balanced_gpu_share: f64,
    /// θ: the split beats GPU-only when e_C < θ, J per element.
    pub split_threshold_j: f64,
    /// CPU-only, GPU-only, split.
    pub runs: [CgRun; 3],
    /// The run that minimizes the objective.
    pub choice: CgRun,
    /// Per-clock CPU table when a law was given: (GHz, W, s per element, J per element).
    pub cpu_law_table: Vec<(f64, f64, f64, f64)>,
}

impl CgCase {
    /// Evaluates the three ways to run and picks the best for `objective`.
    pub fn solve(&self, objective: Objective) -> Result<CgReport> {
        let n = positive("cg elements", self.elements)?;
        let p = positive("cg cpu_cores", self.cpu_cores)?;
        let tg = positive("cg gpu_time_per_element_s", self.gpu_time_per_element_s)?;
        let pg = non_negative("cg gpu_power_w", self.gpu_power_w)?;
        let pgi = non_negative("cg gpu_idle_power_w", self.gpu_idle_power_w)?;
        let pci = non_negative("cg cpu_idle_power_w", self.cpu_idle_power_w)?;
        let tcopy = non_negative("cg copy_time_per_element_s", self.copy_time_per_element_s)?;
        let (clock, pc, tc, table) = match &self.cpu_law {
            Some(law) => {
                let table = law.table()?;
                let row = match self.cpu_clock_ghz {
                    Some(f) => *table.iter().find(|r| (r.0 - f).abs() < 1e-9).ok_or_else(|| {
                        SplitError::Case(format!(
                            "cg cpu_clock_ghz = {f} is not in cpu_law.clocks_ghz: add it or pick one of them"
                        ))
                    })?,
                    None => {
                        // No clock given: the clock whose best run minimizes the objective.
                        let mut best: Option<(f64, CgReport)> = None;
                        for r in &table {
                            let fixed = CgCase { cpu_clock_ghz: Some(r.0), ..self.clone() };
                            let rep = fixed.solve(objective)?;
                            let v = objective.log_value(rep.choice.energy_j, rep.choice.time_s);
                            if best.as_ref().is_none_or(|(bv, _)| v < *bv) {
                                best = Some((v, rep));
                            }
                        }
                        return best
                            .map(|(_, rep)| rep)
                            .ok_or_else(|| SplitError::EmptyTable { what: "cg cpu_law clocks_ghz".into() });
                    }
                };
                (Some(row.0), row.1, row.2, table)
            }
            None => {
                let missing =
                    |k: &str| SplitError::Case(format!("cg needs `{k}` (or a `cpu_law` to derive it from)"));
                let t1 = self.cpu_time_per_element_s.ok_or_else(|| missing("cpu_time_per_element_s"))?;
                let t1 = positive("cg cpu_time_per_element_s", t1)?;
                let pc = self.cpu_power_w.ok_or_else(|| missing("cpu_power_w"))?;
                (None, non_negative("cg cpu_power_w", pc)?, t1 / p, Vec::new())
            }
        };
        // t_el,cpu of one core is p·t_C, so r = (1 + p·t_el,gpu/t_el,cpu)⁻¹ = t_C / (t_C + t_G).
        let t_el_cpu = tc * p;
        let r = 1.0 / (1.0 + p * tg / t_el_cpu);
        let (ec, eg) = (pc * tc, pg * tg);
        let cpu_only = CgRun {
            choice: CgChoice::CpuOnly,
            gpu_share: 0.0,
            time_s: n * tc,
            energy_j: n * (ec + pgi * tc),
        };
        let gpu_only = CgRun {
            choice: CgChoice::GpuOnly,
            gpu_share: 1.0,
            time_s: n * tg,
            energy_j: n * (eg + pci * tg),
        };
        let split = CgRun {
            choice: CgChoice::Split,
            gpu_share: r,
            time_s: n * (r * tg + tcopy),
            energy_j: n * ((1.0 - r) * ec + r * eg + tcopy * (pci + pgi)),
        };
        let threshold = eg + (pci * tg - tcopy * (pci + pgi)) / (1.0 - r);
        let runs = [cpu_only, gpu_only, split];
        let choice = *runs
            .iter()
            .min_by(|a, b| {
                objective
                    .log_value(a.energy_j, a.time_s)
                    .total_cmp(&objective.log_value(b.energy_j, b.time_s))
            })
            .unwrap_or(&split);
        Ok(CgReport {
            cpu_clock_ghz: clock,
            cpu_time_per_element_s: tc,
            cpu_energy_per_element_j: ec,
            gpu_energy_per_element_j: eg,
            balanced_gpu_share: r,
            split_threshold_j: threshold,
            runs,
            choice,
            cpu_law_table: table,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn law() -> CpuLaw {
        // Lang & Rünger's fitted laws.
        CpuLaw {
            power_w: vec![24.0, 29.0, 0.0, 2.2],
            elements_per_ms: vec![-70.0, 222.0],
            clocks_ghz: vec![1.6, 2.0, 2.4, 3.0],
        }
    }

    #[test]
    fn law_matches_a_hand_computation() {
        let t = law().table().unwrap();
        // f = 2.0: P = 2.2·8 + 58 + 24 = 99.6 W; v = 374 el/ms → 99.6 / 374 000 J = 266.3 µJ per element.
        let r = t[1];
        assert!((r.1 - 99.6).abs() < 1e-9 && (r.2 - 1.0 / 374_000.0).abs() < 1e-15);
        assert!((r.3 * 1e6 - 266.31).abs() < 0.01, "{r:?}");
        // f = 3.0: P = 59.4 + 87 + 24 = 170.4 W; v = 596 el/ms → 285.9 µJ, the ≈286 µJ of their example.
        assert!((t[3].3 * 1e6 - 285.91).abs() < 0.01);
    }

    #[test]
    fn without_a_clock_the_best_clock_for_the_objective_is_chosen() {
        let c = CgCase {
            elements: 1.0,
            cpu_cores: 8.0,
            cpu_time_per_element_s: None,
            cpu_power_w: None,
            cpu_idle_power_w: 0.0,
            gpu_time_per_element_s: 1e-3, // a GPU so slow that CPU-only wins at every clock
            gpu_power_w: 1000.0,
            gpu_idle_power_w: 0.0,
            copy_time_per_element_s: 0.0,
            cpu_law: Some(law()),
            cpu_clock_ghz: None,
        };
        // CPU-only energy per element is P(f)/v(f): least at 2.0 GHz of {1.6, 2.0, 2.4, 3.0} (266.3 µJ,
        // vs 278.4, 268.0, 285.9); CPU-only time is least at the highest clock.
        let e = c.solve(Objective::ENERGY).unwrap();
        assert_eq!((e.cpu_clock_ghz, e.choice.choice), (Some(2.0), CgChoice::CpuOnly));
        let t = c.solve(Objective::TIME).unwrap();
        assert_eq!(t.cpu_clock_ghz, Some(3.0));
    }

    #[test]
    fn balanced_share_and_threshold_follow_the_formulas() {
        let c = CgCase {
            elements: 1.0,
            cpu_cores: 4.0,
            cpu_time_per_element_s: Some(8e-6),
            cpu_power_w: Some(100.0),
            cpu_idle_power_w: 20.0,
            gpu_time_per_element_s: 1e-6,
            gpu_power_w: 150.0,
            gpu_idle_power_w: 10.0,
            copy_time_per_element_s: 0.0,
            cpu_law: None,
            cpu_clock_ghz: None,
        };
        let r = c.solve(Objective::ENERGY).unwrap();
        // r = 1/(1 + 4·1/8) = 2/3; t_C = 2 µs; e_C = 200 µJ; e_G = 150 µJ.
        assert!((r.balanced_gpu_share - 2.0 / 3.0).abs() < 1e-12);
        // θ = 150 + 20·1/(1/3) µJ = 210 µJ; e_C = 200 < θ → split beats GPU-only.
        assert!((r.split_threshold_j * 1e6 - 210.0).abs() < 1e-9);
        let [cpu, gpu, split] = r.runs;
        // Split: 1/3·200 + 2/3·150 = 166.67 µJ; GPU-only: 150 + 20 = 170; CPU-only: 200 + 10·2 = 220.
        assert!((split.energy_j * 1e6 - 500.0 / 3.0).abs() < 1e-9);
        assert!((gpu.energy_j * 1e6 - 170.0).abs() < 1e-9 && (cpu.energy_j * 1e6 - 220.0).abs() < 1e-9);
        assert_eq!(r.choice.choice, CgChoice::Split);
        // Copy costs of 0.5 µs per element make the split lose: 166.67 + 0.5·30 = 181.67 > 170.
        let r = CgCase { copy_time_per_element_s: 0.5e-6, ..c }.solve(Objective::ENERGY).unwrap();
        assert_eq!(r.choice.choice, CgChoice::GpuOnly);
        assert!(r.split_threshold_j < r.cpu_energy_per_element_j);
    }
}
