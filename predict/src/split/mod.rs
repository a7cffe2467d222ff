//! CPU/GPU work split: how to share one data-parallel workload between the host CPU and the GPU (and,
//! for measured profiles, between any number of devices) for time, energy or E^a·D^b.
//!
//! The models come from four papers, each in its own module:
//! - [`peach`]: the two-device analytic model of PEACH (R. Ge, X. Feng, M. Burtscher, Z. Zong,
//!   "Performance and Energy Modeling for Cooperative Hybrid Computing", IEEE NAS 2014), with its
//!   coupled CPU/GPU DVFS search ([`dvfs`]) and the co-execution range test of J. Stafford et al.
//!   (Euro-Par 2017, [`peach::stafford_range`]);
//! - [`pareto`]: the exact bi-objective (time, energy) front over discrete per-device profiles
//!   (H. Khaleghzadeh et al., HEPOPTA / HTPOPTA);
//! - [`cg`]: the CPU/GPU split of a conjugate-gradient solver with copy costs (J. Lang, G. Rünger,
//!   JPDC 2014).
//!
//! [`from_model::derive`] builds the GPU's rate and dynamic power from a kernel profile with this crate's
//! timing model and a trained power model, so a split can start from counters alone.
//!
//! [`input`] reads the one TOML file that describes a case and runs the right model.
//!
//! ```
//! use gpumodel_predict::split::{peach::TwoDevice, Objective};
//! // PEACH Table V, System I (Xeon E5-2670 pair + Tesla K20c): rates in GFLOPS, powers in watts.
//! let sys = TwoDevice {
//!     static_power_w: 42.4 + 76.7 + 46.6,
//!     cpu_rate: 293.0, cpu_dynamic_w: 239.4,
//!     gpu_rate: 1052.4, gpu_dynamic_w: 128.6,
//!     hosting_power_w: 30.0, offload_overhead_s: 0.0, work: 1.0,
//! };
//! sys.check()?;
//! assert!((sys.balance_share() - 0.782).abs() < 5e-4);
//! assert_eq!(sys.optimum(Objective::ENERGY, None).gpu_share, 1.0); // GPU-only saves most energy
//! # Ok::<(), gpumodel_predict::split::SplitError>(())
//! ```

pub mod cg;
pub mod dvfs;
pub mod export;
pub mod from_model;
pub mod input;
pub mod pareto;
pub mod peach;

#[cfg(test)]
mod pareto_props;

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Everything that can go wrong in the split tools; messages say what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// A number that must be positive (a rate, a time) or non-negative (a power) is not.
    #[error("{what} must be {must}, got {value}: fix it in the input file")]
    BadValue { what: String, must: &'static str, value: f64 },
    /// A work share outside [0, 1].
    #[error("{what} = {value} is outside [0, 1]: a share of the work must lie between 0 and 1")]
    ShareOutOfRange { what: String, value: f64 },
    /// A table with no rows.
    #[error("{what} is empty: give at least one entry")]
    EmptyTable { what: String },
    /// Two columns of one table (or the size grids of two devices) do not line up.
    #[error("{what}: {detail}")]
    Mismatch { what: String, detail: String },
    /// The objective flag could not be parsed.
    #[error("unknown objective `{0}`: use time, energy, ed, ed2, or `a,b` for E^a·D^b with a, b >= 0")]
    BadObjective(String),
    /// The input file could not be read.
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// The input file is not valid TOML for a split case.
    #[error("{path} is not a valid split case: {message}")]
    Parse { path: String, message: String },
    /// The file does not say which model to run, or says too much.
    #[error("{0}")]
    Case(String),
    /// A search space that is too large to enumerate.
    #[error("{0}")]
    TooLarge(String),
}

/// Result alias of this module.
pub type Result<T> = std::result::Result<T, SplitError>;

/// Reads any TOML file as a generic JSON value, so that values can be looked up by key without a
/// schema — e.g. the papers' test vectors beside the repository (`../shared/papers/*.toml`), which the
/// integration tests compare `gpumodel split` against.
pub fn read_toml_value(path: &std::path::Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| SplitError::Io { path: path.display().to_string(), source })?;
    toml::from_str(&text)
        .map_err(|e| SplitError::Parse { path: path.display().to_string(), message: e.message().to_string() })
}

/// Checks that `value` is finite and > 0.
pub(crate) fn positive(what: &str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(SplitError::BadValue { what: what.to_string(), must: "a finite number > 0", value })
    }
}

/// Checks that `value` is finite and >= 0.
pub(crate) fn non_negative(what: &str, value: f64) -> Result<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(SplitError::BadValue { what: what.to_string(), must: "a finite number >= 0", value })
    }
}

/// Checks that a share lies in [0, 1].
pub(crate) fn share(what: &str, value: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(SplitError::ShareOutOfRange { what: what.to_string(), value })
    }
}

/// What to minimize: E^a·D^b (energy to the power a times delay to the power b), a, b >= 0, not both 0.
///
/// `time` is (0, 1), `energy` (1, 0), `ed` (1, 1), `ed2` (1, 2). Maximizing performance (work / time)
/// is minimizing time; maximizing efficiency (work / energy, e.g. GFLOPS/W) is minimizing energy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Objective {
    /// Exponent of energy.
    pub a: f64,
    /// Exponent of delay (time).
    pub b: f64,
}

impl Objective {
    /// Shortest time (best performance).
    pub const TIME: Objective = Objective { a: 0.0, b: 1.0 };
    /// Least energy (best efficiency).
    pub const ENERGY: Objective = Objective { a: 1.0, b: 0.0 };
    /// Energy-delay product.
    pub const ED: Objective = Objective { a: 1.0, b: 1.0 };
    /// Energy-delay-squared product.
    pub const ED2: Objective = Objective { a: 1.0, b: 2.0 };

    /// Checks a, b >= 0, finite, not both zero.
    pub fn new(a: f64, b: f64) -> Result<Objective> {
        if a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0 && a + b > 0.0 {
            Ok(Objective { a, b })
        } else {
            Err(SplitError::BadObjective(format!("{a},{b}")))
        }
    }

    /// The value to minimize. Computed through logarithms so that large exponents do not overflow;
    /// the ordering is the same as that of E^a·D^b.
    pub fn log_value(&self, energy_j: f64, time_s: f64) -> f64 {
        let mut v = 0.0;
        if self.a > 0.0 {
            v += self.a * energy_j.ln();
        }
        if self.b > 0.0 {
            v += self.b * time_s.ln();
        }
        v
    }

    /// E^a·D^b itself.
    pub fn value(&self, energy_j: f64, time_s: f64) -> f64 {
        energy_j.powf(self.a) * time_s.powf(self.b)
    }

    /// The objectives every report lists: time, energy, ED, ED².
    pub fn standard() -> [Objective; 4] {
        [Objective::TIME, Objective::ENERGY, Objective::ED, Objective::ED2]
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if *self == Objective::TIME {
            "time".to_string()
        } else if *self == Objective::ENERGY {
            "energy".to_string()
        } else if *self == Objective::ED {
            "ed".to_string()
        } else if *self == Objective::ED2 {
            "ed2".to_string()
        } else {
            format!("E^{}·D^{}", self.a, self.b)
        };
        f.write_str(&name)
    }
}

impl FromStr for Objective {
    type Err = SplitError;

    fn from_str(s: &str) -> Result<Objective> {
        match s.trim().to_ascii_lowercase().as_str() {
            "time" | "delay" | "performance" => Ok(Objective::TIME),
            "energy" | "efficiency" => Ok(Objective::ENERGY),
            "ed" => Ok(Objective::ED),
            "ed2" => Ok(Objective::ED2),
            other => {
                let bad = || SplitError::BadObjective(s.to_string());
                let (a, b) = other.split_once(',').ok_or_else(bad)?;
                let a: f64 = a.trim().parse().map_err(|_| bad())?;
                let b: f64 = b.trim().parse().map_err(|_| bad())?;
                Objective::new(a, b).map_err(|_| bad())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objective_parses_names_and_pairs() {
        assert_eq!("time".parse::<Objective>().unwrap(), Objective::TIME);
        assert_eq!("ED2".parse::<Objective>().unwrap(), Objective::ED2);
        assert_eq!("2, 0.5".parse::<Objective>().unwrap(), Objective { a: 2.0, b: 0.5 });
        assert!("fast".parse::<Objective>().is_err());
        assert!("-1,2".parse::<Objective>().is_err());
        assert!("0,0".parse::<Objective>().is_err());
    }

    #[test]
    fn log_value_orders_like_the_product() {
        let o = Objective::ED2;
        let (e1, t1, e2, t2) = (3.0, 2.0, 10.0, 1.2);
        assert_eq!(o.log_value(e1, t1) < o.log_value(e2, t2), o.value(e1, t1) < o.value(e2, t2));
        assert!((o.value(e1, t1) - 12.0).abs() < 1e-12);
    }
}
