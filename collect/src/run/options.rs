//! What a run is given ([`RunOptions`]) and what it hands back ([`RunOutcome`], [`ProgramExit`]), and the
//! checks made on them before anything is measured.

use crate::error::{Error, Result};
use gpumodel_models::trace::TraceMeta;
use std::path::PathBuf;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The program and its arguments.
    pub program: Vec<String>,
    /// Trace CSV (the sidecar goes next to it, `.json`). Must not exist.
    pub out: PathBuf,
    /// Power sampling rate, Hz.
    pub rate_hz: f64,
    /// Repeat the program until the run lasts at least this long, seconds.
    pub min_seconds: f64,
    /// Length of each idle phase, seconds (0 skips idle and overhead measurement).
    pub idle_seconds: f64,
    /// GPU index, recorded in the metadata.
    pub device: u32,
    /// Host name, recorded in the metadata.
    pub host: String,
    /// Chip name, when known.
    pub chip: Option<String>,
    /// Send the program's standard output to our standard error, so that ours carries only the result
    /// (`collect --format json|csv|markdown`); otherwise the program writes where it always does.
    pub program_stdout_to_stderr: bool,
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramExit {
    /// Exit code.
    Code(i32),
    /// Killed by a signal.
    Signal,
    /// The run stopped before the program ended (interrupt or sampler failure killed it).
    Killed,
}

/// The outcome of a run: the final metadata (with the summary) and how the program ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub meta: TraceMeta,
    pub exit: ProgramExit,
    /// The counter source's own columns (without the model inputs derived from them).
    pub counter_names: Vec<String>,
}

/// Checks that the program exists and is executable; returns its path.
pub fn resolve_program(program: &str) -> Result<PathBuf> {
    let err = |detail: &str| Error::Program { program: program.to_string(), detail: detail.to_string() };
    if program.is_empty() {
        return Err(Error::Invalid("give the program to run: gpumodel collect ./kernel [args…]".into()));
    }
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(program)).collect())
            .unwrap_or_default()
    };
    for c in &candidates {
        if let Ok(md) = std::fs::metadata(c) {
            use std::os::unix::fs::PermissionsExt;
            if md.is_file() && md.permissions().mode() & 0o111 != 0 {
                return Ok(c.clone());
            }
            if md.is_file() {
                return Err(err("not executable (chmod +x it)"));
            }
        }
    }
    Err(err(if program.contains('/') { "no such file" } else { "not found in PATH" }))
}

impl RunOptions {
    /// Checks the options before anything is measured; returns the program's path.
    pub(super) fn check(&self) -> Result<PathBuf> {
        let program = resolve_program(self.program.first().map_or("", String::as_str))?;
        if !(self.min_seconds.is_finite() && self.min_seconds >= 0.0) {
            return Err(Error::Invalid(format!("--min-seconds {}: give a duration ≥ 0", self.min_seconds)));
        }
        if !(self.idle_seconds.is_finite() && self.idle_seconds >= 0.0) {
            return Err(Error::Invalid(format!("--idle-seconds {}: give a duration ≥ 0", self.idle_seconds)));
        }
        Ok(program)
    }
}
