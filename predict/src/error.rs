//! The one error type of `gpumodel-predict` (prediction, sweeps, validation and the CPU/GPU split).
//! Every message says what is wrong and what to do.

/// Errors of prediction, sweeps, validation and the split tools.
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
    Misaligned { what: String, detail: String },
    /// The objective flag could not be parsed (the message says the grammar).
    #[error("{0}")]
    BadObjective(String),
    /// An input file could not be read.
    #[error("cannot read {path}: {source}; check the path")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The input file is not valid TOML for a split case.
    #[error("{path} is not a valid split case: {message}")]
    Parse { path: String, message: String },
    /// A split case file does not say which model to run, or says too much.
    #[error("{0}")]
    Case(String),
    /// A search space that is too large to enumerate.
    #[error("{0}")]
    TooLarge(String),
}

/// Result with the prediction error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
