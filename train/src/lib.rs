//! # gpumodel-train — fitting power models
//!
//! Owns training: the 10-4-4-1 sigmoid back-propagation neural network (burn, autodiff), the MLR and MLR+
//! baselines (linfa-linear), cross-validation (random k-fold as in the paper, grouped k-fold that leaves
//! whole kernels out, held-out test sets) and the accuracy metrics. Its output is a
//! [`gpumodel_models::artifact::ModelArtifact`]: plain JSON that `gpumodel-models` evaluates without burn.
//!
//! Models follow linfa's shape: unfitted parameters, validated by `check()`, then `fit(&Dataset)`.
//!
//! ```
//! use gpumodel_models::Dataset;
//! use gpumodel_train::{fit_mlr, metrics};
//! use ndarray::{array, Array1};
//! // power = 50 + 100·util, exactly
//! let ds = Dataset {
//!     records: array![[0.1], [0.5], [0.9], [0.3]],
//!     targets: Array1::from(vec![60.0, 100.0, 140.0, 80.0]),
//!     feature_names: vec!["util".into()],
//!     target_name: "power_w".into(),
//!     groups: vec!["a".into(), "b".into(), "c".into(), "d".into()],
//! };
//! let model = fit_mlr(&ds, "example", gpumodel_models::artifact::ModelKind::Mlr)?;
//! let pred = model.predict(ds.records.view());
//! assert!(metrics::rmse(pred.as_slice().unwrap(), ds.targets.as_slice().unwrap())? < 1e-9);
//! # Ok::<(), gpumodel_train::Error>(())
//! ```

pub mod bpann;
pub mod eval;
pub mod experiment;
pub mod lbfgs;
pub mod metrics;
pub mod mlr;
pub mod physical;
pub mod selection;
pub use gpumodel_models::uncertainty;
pub mod utilization;

#[cfg(feature = "burn")]
pub use bpann::burn_forward;
pub use bpann::{BpannParams, Solver};

pub use eval::{ModelSpec, Protocol, cross_validate, evaluate};
pub use metrics::{KernelError, Metrics};
pub use mlr::fit_mlr;
pub use physical::PhysicalParams;

/// Errors of training and evaluation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A hyper-parameter is out of range; the message says which and what is allowed.
    #[error("{0}")]
    Params(String),
    /// The data cannot be used as asked (too few rows or groups, zero targets for MAPE, …).
    #[error("{0}")]
    Invalid(String),
    /// The data layer failed (missing columns, NaN, a bad split…).
    #[error(transparent)]
    Data(#[from] gpumodel_models::Error),
    /// The least-squares solver failed.
    #[error("linear regression failed: {0} (are some inputs constant or collinear?)")]
    Linear(String),
}

/// Result with the training error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
