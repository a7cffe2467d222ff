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
//! # Ok::<(), gpumodel_predict::Error>(())
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

/// The split tools report through the crate's one error type (its `BadValue`, `ShareOutOfRange`,
/// `EmptyTable`, `Misaligned`, `BadObjective`, `Io`, `Parse`, `Case` and `TooLarge` variants).
pub use crate::{Error, Result};

/// Reads any TOML file as a generic JSON value, so that values can be looked up by key without a
/// schema — e.g. the papers' test vectors beside the repository (`../shared/papers/*.toml`), which the
/// integration tests compare `gpumodel split` against.
pub fn read_toml_value(path: &std::path::Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| Error::Io { path: path.display().to_string(), source })?;
    toml::from_str(&text)
        .map_err(|e| Error::Parse { path: path.display().to_string(), message: e.message().to_string() })
}

/// Checks that `value` is finite and > 0.
pub(crate) fn positive(what: &str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::BadValue { what: what.to_string(), must: "a finite number > 0", value })
    }
}

/// Checks that `value` is finite and >= 0.
pub(crate) fn non_negative(what: &str, value: f64) -> Result<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(Error::BadValue { what: what.to_string(), must: "a finite number >= 0", value })
    }
}

/// Checks that a share lies in [0, 1].
pub(crate) fn share(what: &str, value: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(Error::ShareOutOfRange { what: what.to_string(), value })
    }
}

/// The one objective, shared with every other command (`gpumodel_models::energy::Objective`).
pub use gpumodel_models::energy::Objective;

#[cfg(test)]
mod tests {
    use super::*;

    /// The split's names and pairs go through the one grammar.
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
