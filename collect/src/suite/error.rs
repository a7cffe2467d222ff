//! The suite's error type.

use crate::nvrtc::NvrtcError;
use std::path::{Path, PathBuf};

/// Errors of the suite and of calibration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuiteError {
    /// Bad options.
    #[error("{0}")]
    Invalid(String),
    /// No CUDA driver (libcuda.so) on this machine.
    #[error(
        "no CUDA driver: {0}; run on a machine with an NVIDIA GPU and driver, or import existing measurements \
         with `gpumodel import`"
    )]
    NoCudaDriver(String),
    /// A CUDA driver call failed.
    #[error("CUDA {call} failed: {message}")]
    Cuda { call: &'static str, message: String },
    /// NVRTC could not be loaded or could not compile.
    #[error(transparent)]
    Nvrtc(#[from] NvrtcError),
    /// The collector layer (NVML, CUPTI, sampler) failed.
    #[error(transparent)]
    Collect(#[from] crate::Error),
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    /// The output file exists and `--resume` was not given, or cannot be resumed.
    #[error("{0}")]
    Output(String),
}

impl SuiteError {
    pub(crate) fn io(path: &Path, e: impl std::fmt::Display) -> SuiteError {
        SuiteError::Io { path: path.to_path_buf(), message: e.to_string() }
    }
}
