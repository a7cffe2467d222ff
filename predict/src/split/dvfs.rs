//! Coupled CPU/GPU DVFS (PEACH §IV-B): the CPU's rate and dynamic power depend on the CPU clock, the
//! GPU's on the GPU clock; every (f_C, f_G) pair gets its own best split, and the best pair wins.
//!
//! A quantity is given per clock either as a table (one value per clock) or as a linear law
//! `slope·f + intercept` (PEACH §VII-A fits such laws; [`fit_line`] fits them from tables, with R²).

use super::peach::{SplitPoint, TwoDevice};
use super::{Error, Objective, Result, positive};
use serde::{Deserialize, Serialize};

/// A quantity as a function of clock: a linear law or one value per clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Curve {
    /// `slope·f + intercept`.
    Law {
        /// Change per clock unit.
        slope: f64,
        /// Value at f = 0.
        intercept: f64,
    },
    /// One value per clock, in the order of the clock list.
    Table(Vec<f64>),
}

impl Curve {
    /// The value at clock index `i` (clock `f`).
    fn at(&self, i: usize, f: f64) -> f64 {
        match self {
            Curve::Law { slope, intercept } => slope * f + intercept,
            Curve::Table(v) => v[i],
        }
    }
}

/// One device's clock table with its rate and dynamic power per clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceDvfs {
    /// Clocks (GHz for CPUs, MHz for GPUs, by PEACH's habit; any unit the laws use).
    pub clocks: Vec<f64>,
    /// Rate (work per second) per clock.
    pub rate: Curve,
    /// Dynamic power (W) per clock.
    pub dynamic_power_w: Curve,
}

impl DeviceDvfs {
    /// Checks non-empty clocks, table lengths, and a positive rate and non-negative power at every clock.
    pub fn check(&self, device: &str) -> Result<()> {
        if self.clocks.is_empty() {
            return Err(Error::EmptyTable { what: format!("{device} clock list") });
        }
        for (name, c) in [("rate", &self.rate), ("dynamic_power_w", &self.dynamic_power_w)] {
            if let Curve::Table(v) = c
                && v.len() != self.clocks.len()
            {
                return Err(Error::Misaligned {
                    what: format!("{device} {name} table"),
                    detail: format!(
                        "{} values for {} clocks: give one value per clock",
                        v.len(),
                        self.clocks.len()
                    ),
                });
            }
        }
        for (i, &f) in self.clocks.iter().enumerate() {
            positive(&format!("{device} clock"), f)?;
            positive(&format!("{device} rate at clock {f}"), self.rate.at(i, f))?;
            super::non_negative(
                &format!("{device} dynamic power at clock {f}"),
                self.dynamic_power_w.at(i, f),
            )?;
        }
        Ok(())
    }

    /// (clock, rate, dynamic power) for every clock.
    pub fn points(&self) -> Vec<(f64, f64, f64)> {
        self.clocks
            .iter()
            .enumerate()
            .map(|(i, &f)| (f, self.rate.at(i, f), self.dynamic_power_w.at(i, f)))
            .collect()
    }
}

/// The best split at one clock pair for each objective asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// CPU clock.
    pub cpu_clock: f64,
    /// GPU clock.
    pub gpu_clock: f64,
    /// One best split per objective, in the order asked.
    pub best: Vec<SplitPoint>,
}

/// The whole (f_C, f_G) search: one cell per pair, CPU clocks outer, in the order of the input.
///
/// `base` supplies the static and hosting power, offload overhead and work; its rates and dynamic
/// powers are replaced by the clock tables' values.
pub fn search(
    base: &TwoDevice,
    cpu: &DeviceDvfs,
    gpu: &DeviceDvfs,
    objectives: &[Objective],
    step: Option<f64>,
) -> Result<Vec<Cell>> {
    cpu.check("cpu")?;
    gpu.check("gpu")?;
    let mut cells = Vec::with_capacity(cpu.clocks.len() * gpu.clocks.len());
    for (fc, rc, pc) in cpu.points() {
        for &(fg, rg, pg) in &gpu.points() {
            let sys = TwoDevice { cpu_rate: rc, cpu_dynamic_w: pc, gpu_rate: rg, gpu_dynamic_w: pg, ..*base };
            sys.check()?;
            let best = objectives.iter().map(|&o| sys.optimum(o, step)).collect();
            cells.push(Cell { cpu_clock: fc, gpu_clock: fg, best });
        }
    }
    Ok(cells)
}

/// The cell with the smallest value of objective number `k`.
pub fn global_best<'a>(cells: &'a [Cell], objectives: &[Objective], k: usize) -> Option<&'a Cell> {
    let o = objectives[k];
    cells.iter().min_by(|a, b| {
        let va = o.log_value(a.best[k].energy_j, a.best[k].time_s);
        let vb = o.log_value(b.best[k].energy_j, b.best[k].time_s);
        va.total_cmp(&vb)
    })
}

/// A least-squares line with its coefficient of determination (the workspace's one line fit).
pub use gpumodel_models::stats::LineFit;

/// Fits y = slope·x + intercept by least squares ([`gpumodel_models::stats::fit_line`]) over the clock
/// table `x`; needs one finite value per clock and two or more distinct clocks. `what` names the table in
/// the error.
pub fn fit_line(what: &str, x: &[f64], y: &[f64]) -> Result<LineFit> {
    use gpumodel_models::stats::LineFitError;
    let misaligned = |detail: String| Error::Misaligned { what: what.to_string(), detail };
    gpumodel_models::stats::fit_line(x, y).map_err(|e| match e {
        LineFitError::Misaligned { x, y } => {
            misaligned(format!("{x} clocks but {y} values; give one value per clock"))
        }
        LineFitError::TooFewDistinctX => {
            misaligned("a line needs at least two different clocks; add another clock to the table".into())
        }
        LineFitError::NotFinite => {
            misaligned("a clock or value is NaN or infinite; give finite numbers in the table".into())
        }
        e => misaligned(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_an_exact_line_and_reports_r2() {
        let x = [1.2, 1.6, 2.0, 2.6];
        let y: Vec<f64> = x.iter().map(|f| 111.0 * f + 6.1).collect();
        let l = fit_line("r", &x, &y).unwrap();
        assert!((l.slope - 111.0).abs() < 1e-9 && (l.intercept - 6.1).abs() < 1e-9 && l.r2 > 1.0 - 1e-12);
        // Hand-computed: x = 0,1,2, y = 0,2,1 → slope 0.5, intercept 0.5, SS_res = 1.5, SS_tot = 2 → R² 0.25.
        let l = fit_line("r", &[0.0, 1.0, 2.0], &[0.0, 2.0, 1.0]).unwrap();
        assert!((l.slope - 0.5).abs() < 1e-12 && (l.intercept - 0.5).abs() < 1e-12);
        assert!((l.r2 - 0.25).abs() < 1e-12);
        assert!(fit_line("r", &[1.0], &[2.0]).is_err());
        assert!(fit_line("r", &[1.0, 2.0], &[2.0]).is_err());
    }

    /// Each way a table cannot be fitted is one line naming the table and what to change.
    #[test]
    fn a_table_that_cannot_be_fitted_says_which_and_what_to_do() {
        let msg = |x: &[f64], y: &[f64]| fit_line("gpu rate", x, y).unwrap_err().to_string();
        assert_eq!(msg(&[1.0, 2.0], &[2.0]), "gpu rate: 2 clocks but 1 values; give one value per clock");
        assert_eq!(
            msg(&[1.5, 1.5], &[2.0, 3.0]),
            "gpu rate: a line needs at least two different clocks; add another clock to the table"
        );
        assert_eq!(
            msg(&[1.0, 2.0], &[f64::NAN, 3.0]),
            "gpu rate: a clock or value is NaN or infinite; give finite numbers in the table"
        );
    }

    #[test]
    fn table_length_must_match_clocks() {
        let d = DeviceDvfs {
            clocks: vec![1.0, 2.0],
            rate: Curve::Table(vec![1.0]),
            dynamic_power_w: Curve::Law { slope: 1.0, intercept: 0.0 },
        };
        assert!(matches!(d.check("cpu"), Err(Error::Misaligned { .. })));
        let d = DeviceDvfs { clocks: vec![], ..d };
        assert!(matches!(d.check("cpu"), Err(Error::EmptyTable { .. })));
    }

    #[test]
    fn a_law_that_goes_negative_is_refused() {
        // PEACH's Pd_G = 0.337·f − 109 is negative below 324 MHz.
        let d = DeviceDvfs {
            clocks: vec![300.0],
            rate: Curve::Law { slope: 1.495, intercept: -1.78 },
            dynamic_power_w: Curve::Law { slope: 0.337, intercept: -109.0 },
        };
        assert!(matches!(d.check("gpu"), Err(Error::BadValue { .. })));
    }
}
