//! `gpumodel split fit`: least-squares laws for the clock tables of a case file.

use super::CaseFile;
use crate::split::dvfs::{self, LineFit};
use crate::split::{Error, Result};
use serde::Serialize;

/// A fitted linear law for one table of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitRow {
    /// "cpu" or "gpu".
    pub device: String,
    /// "rate" or "dynamic_power_w".
    pub quantity: String,
    /// The fit (None when the file already gives a law).
    pub fit: Option<LineFit>,
    /// The law the file gives, when it gives one: (slope, intercept).
    pub given_law: Option<(f64, f64)>,
    /// The device's clock table (x of the fit).
    pub clocks: Vec<f64>,
    /// The measured values at those clocks that were fitted (None when the file gives a law).
    pub measured: Option<Vec<f64>>,
}

/// `gpumodel split fit`: a least-squares line for every clock table in `[cpu.dvfs]` / `[gpu.dvfs]`.
pub fn fit_laws(file: &CaseFile) -> Result<Vec<FitRow>> {
    let mut rows = Vec::new();
    let devs = [
        ("cpu", file.cpu.as_ref().and_then(|c| c.dvfs.as_ref())),
        ("gpu", file.gpu.as_ref().and_then(|g| g.dvfs.as_ref())),
    ];
    for (name, d) in devs {
        let Some(d) = d else { continue };
        if d.clocks.is_empty() {
            return Err(Error::EmptyTable { what: format!("{name} clock list") });
        }
        for (q, c) in [("rate", &d.rate), ("dynamic_power_w", &d.dynamic_power_w)] {
            let row = match c {
                dvfs::Curve::Table(v) => FitRow {
                    device: name.into(),
                    quantity: q.into(),
                    fit: Some(dvfs::fit_line(&format!("{name} {q}"), &d.clocks, v)?),
                    given_law: None,
                    clocks: d.clocks.clone(),
                    measured: Some(v.clone()),
                },
                dvfs::Curve::Law { slope, intercept } => FitRow {
                    device: name.into(),
                    quantity: q.into(),
                    fit: None,
                    given_law: Some((*slope, *intercept)),
                    clocks: d.clocks.clone(),
                    measured: None,
                },
            };
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return Err(Error::Case(
            "nothing to fit: give clock tables in [cpu.dvfs] / [gpu.dvfs] (clocks, rate, dynamic_power_w)"
                .into(),
        ));
    }
    Ok(rows)
}
