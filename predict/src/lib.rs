//! # gpumodel-predict — answers from models
//!
//! Owns prediction: from a kernel profile to time, power, energy and bottlenecks (the counter-based
//! pipeline timing model with the trained power model), sweeps over warps and clocks with their
//! E^a·D^b optima, cluster energy versus node count, the time calibration, validation against measured
//! NV-DVFS data with peer timing models as baselines, and the CPU/GPU work split optimizer.
//!
//! ```
//! use gpumodel_models::{arch::ArchProfile, profile::KernelProfile};
//! use gpumodel_predict::{Config, predict_time_only};
//! let k: KernelProfile = toml::from_str(gpumodel_predict::examples::REDUCTION).unwrap();
//! let arch = ArchProfile::builtin("titanx")?;
//! let p = predict_time_only(&k, &arch, &Config { warps: Some(32), ..Config::default() })?;
//! assert!(p.time_s > 0.0);
//! # Ok::<(), gpumodel_predict::Error>(())
//! ```

pub mod baseline;
pub mod calibration;
pub mod clock;
pub mod error;
pub mod examples;
pub mod kernel;
pub mod nvdvfs;
pub mod power;
pub mod report;
pub mod split;
pub mod sweep;
pub mod validation;

pub use calibration::TimeCalibration;
pub use error::{Error, Result};
pub use kernel::{Config, Prediction, predict_kernel, predict_time_only};
