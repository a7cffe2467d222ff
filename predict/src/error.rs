//! The error type of `gpumodel-predict`. Every message says what is wrong and what to do.

/// Errors of prediction, sweeps and validation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the shared vocabulary (profiles, architectures, artifacts, tables).
    #[error(transparent)]
    Models(#[from] gpumodel_models::Error),
    /// The kernel profile, architecture and model do not fit together.
    #[error("{0}")]
    Mismatch(String),
    /// The request cannot be answered as asked (an empty sweep, too few kernels to cross-validate…).
    #[error("{0}")]
    Invalid(String),
}

/// Result with the prediction error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
