//! The one error type of `gpumodel-models`. Every message says what happened and what to do.

use std::path::PathBuf;

/// Errors of `gpumodel-models`: reading, importing, resolving and checking data, and rendering a
/// command's result (`export`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}; check the path and its permissions")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A cell, a line or a header does not have the form the reader expects.
    #[error("{file}:{line}: column {column}: {message}")]
    Parse { file: String, line: u64, column: String, message: String },
    /// A file's structure is wrong as a whole (missing header, no rows, truncated).
    #[error("{file}: {message}")]
    Format { file: String, message: String },
    /// The name is not in the dataset registry.
    #[error("unknown dataset '{name}': known datasets are {known} (see `gpumodel dataset list`)")]
    UnknownDataset { name: String, known: String },
    /// The dataset is in the registry but its file is nowhere on this machine.
    #[error(
        "dataset '{name}' not found (looked in {looked}): set GPUMODEL_DATA_DIR to a folder holding {file}, \
         pass its path, or run `gpumodel dataset fetch {name}` on a machine with network access"
    )]
    MissingDataset { name: String, file: String, looked: String },
    /// A file's sha256 is not the one the registry names.
    #[error(
        "{path}: sha256 mismatch for dataset '{name}': expected {expected}, got {actual}; \
         the file is not the registered version (nothing was deleted)"
    )]
    ChecksumMismatch { name: String, path: PathBuf, expected: String, actual: String },
    /// A download failed.
    #[error("downloading {url}: {message}")]
    Download { url: String, message: String },
    /// A feature set or model artifact does not fit the data it is used on.
    #[error("{0}")]
    Mismatch(String),
    /// The data cannot be used as asked (empty, NaN, infinite, a zero target for MAPE…).
    #[error("{0}")]
    Invalid(String),
    /// A TOML or JSON document could not be read.
    #[error("{file}: {message}")]
    Document { file: String, message: String },
    /// A command's result could not be rendered (it does not serialize, or the CSV writer failed): a bug,
    /// not bad input.
    #[error(
        "cannot render the result of `{command}` as {format}: {message}; this is a bug in gpumodel: please \
         report it with the command line, or try another --format"
    )]
    Render { command: &'static str, format: &'static str, message: String },
}

/// Result with the dataset layer's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`; text that is not UTF-8 (a binary, compressed or spreadsheet file read as
    /// text) is said to be that, not a permissions problem.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::InvalidData {
            return Error::not_text(&path.display().to_string());
        }
        Error::Io { path, source }
    }

    /// `file` is not UTF-8 text.
    pub(crate) fn not_text(file: &str) -> Error {
        Error::Format {
            file: file.to_string(),
            message:
                "not a text file (not UTF-8): give the text export itself (CSV, TOML or JSON), not a binary, \
                      compressed or spreadsheet file"
                    .into(),
        }
    }
}
