//! The suite's clock control: the collector's one NVML clock sequence ([`crate::nvml::set_clock_pair`],
//! [`crate::nvml::restore_clock_pair`], shared with calibrate) with NVML's refusals turned into
//! [`ClockOutcome::Refused`], so that a run without root continues at the current clocks with one warning.
//!
//! The sequence (documented on `set_clock_pair`): application clocks, else locked GPU and memory clocks;
//! putting back restores the application clocks from before the first change (or resets them when they
//! were the defaults), or resets the locks. [`run_suite`](super::run_suite) puts them back after the sweep
//! and after an error in it; dropping [`NvmlClocks`] does it too (a panic unwinding).

use super::ClockOutcome;
use crate::Error;
use crate::clocks::{ClockPair, SupportedClocks};
use crate::nvml::{ClockCallError, ClockLock, restore_clock_pair, set_clock_pair};
use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;
use std::sync::Arc;

/// The clocks of one NVML device, and what must be undone.
pub struct NvmlClocks {
    nvml: Arc<Nvml>,
    index: u32,
    /// How the clocks were changed, if they were (what [`NvmlClocks::reset`] undoes).
    lock: Option<ClockLock>,
}

/// The one-line reason for a refusal the run can continue past (at the current clocks); `None` for an
/// error that should stop it.
fn refused(e: &NvmlError) -> Option<String> {
    match e {
        NvmlError::NoPermission => {
            Some("NVML: no permission; run as root, or allow it with `nvidia-smi -acp UNRESTRICTED`".into())
        }
        NvmlError::NotSupported => Some("NVML: this GPU does not support setting these clocks".into()),
        NvmlError::InvalidArg => Some("NVML: the GPU does not support this clock pair".into()),
        _ => None,
    }
}

impl NvmlClocks {
    /// The clocks of NVML device `index`; nothing is changed until [`NvmlClocks::set`].
    pub fn new(nvml: Arc<Nvml>, index: u32) -> NvmlClocks {
        NvmlClocks { nvml, index, lock: None }
    }

    fn device(&self) -> Result<nvml_wrapper::Device<'_>, Error> {
        self.nvml
            .device_by_index(self.index)
            .map_err(|e| Error::NoGpu { index: self.index, detail: e.to_string() })
    }

    /// Sets the pair (core and memory MHz). A refusal (no permission, unsupported pair or mechanism) is
    /// [`ClockOutcome::Refused`] with its reason; what an earlier pair changed stays recorded for
    /// [`NvmlClocks::reset`].
    pub fn set(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        let r = set_clock_pair(&mut self.device()?, pair.core_mhz, pair.mem_mhz, self.lock);
        match r {
            Ok(lock) => {
                self.lock = Some(lock);
                Ok(ClockOutcome::Applied)
            }
            Err(e) => {
                let undo = e.undo_note();
                match refused(&e.error) {
                    Some(why) => Ok(ClockOutcome::Refused(format!("{why}{undo}"))),
                    None => Err(Error::Nvml { call: e.call, message: format!("{}{undo}", e.error) }),
                }
            }
        }
    }

    /// The clocks the GPU supports (read-only).
    pub fn supported(&self) -> Result<SupportedClocks, Error> {
        crate::nvml::supported_clocks(&self.device()?)
    }

    /// Puts back what [`NvmlClocks::set`] changed (nothing when it changed nothing). The restoring calls
    /// are tried once: after a failure the error says which call failed (and the drop does not retry).
    pub fn reset(&mut self) -> Result<(), Error> {
        let Some(lock) = self.lock else { return Ok(()) };
        let restored = restore_clock_pair(&mut self.device()?, lock);
        self.lock = None;
        restored
            .map_err(|ClockCallError { call, error, .. }| Error::Nvml { call, message: error.to_string() })
    }
}

impl Drop for NvmlClocks {
    /// The last resort (a panic unwinding): the run loop has normally put the clocks back already.
    fn drop(&mut self) {
        let _ = self.reset();
    }
}
