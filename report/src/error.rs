//! Errors of the report crate.

/// What can go wrong reading results and writing a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A file is not JSON, or not the JSON of a command the report reads.
    #[error("{file}: {message}")]
    Input { file: String, message: String },
    /// The output exists and `--force` was not given.
    #[error("{0}: already exists; pass --force to overwrite it (nothing was written)")]
    Exists(String),
    /// The atomic write failed (the message names the file).
    #[error(transparent)]
    Write(#[from] gpumodel_models::error::Error),
    /// Drawing failed (a plotters error; not expected on valid input).
    #[error("drawing {0}")]
    Draw(String),
}

impl Error {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io { path: path.display().to_string(), source }
    }
    pub(crate) fn input(file: &str, message: impl Into<String>) -> Error {
        Error::Input { file: file.to_string(), message: message.into() }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
