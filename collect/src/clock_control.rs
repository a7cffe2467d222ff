//! A GPU's clocks behind one trait, [`ClockControl`], and its one real implementation, [`NvmlClocks`], for
//! `collect --suite` and `calibrate`: NVML's clock sequence ([`crate::nvml::set_clock_pair`],
//! [`crate::nvml::restore_clock_pair`]) on one device, with what it changed remembered until it is put
//! back. The suite asks with [`ClockControl::set_clocks`], where NVML's refusals are
//! [`ClockOutcome::Refused`] (a run without root continues at the current clocks with one warning);
//! calibrate asks with [`ClockControl::try_set_clocks`], where they stop it with the call that failed.
//!
//! The sequence (documented on `set_clock_pair`): application clocks, else locked GPU and memory clocks;
//! putting back restores the application clocks from before the first change (or resets them when they
//! were the defaults), or resets the locks. The commands put them back after their sweep and after an
//! error in it; dropping [`NvmlClocks`] does it too (a panic unwinding).

use crate::Error;
use crate::clocks::{ClockPair, SupportedClocks};
use crate::nvml::{ClockCallError, ClockLock, clock_error, restore_clock_pair, set_clock_pair};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::error::NvmlError;
use std::sync::Arc;

/// A GPU's clocks, as the commands that set them see them: [`NvmlClocks`] on a real GPU, the scripted
/// devices' own clocks in tests. The suite's and calibrate's devices are each one
/// ([`crate::suite::SuiteDevice`], [`crate::calibrate::CalibrationDevice`]). The defaults are a device
/// that can neither list nor set clocks.
pub trait ClockControl {
    /// The clocks the GPU supports (what `--clocks auto` spreads over and a list is checked against); a
    /// device that cannot list them says so, and only `--clocks current` works on it.
    fn supported_clocks(&self) -> Result<SupportedClocks, Error> {
        Err(Error::ClocksUnsupported { detail: "this device cannot list its supported clocks".into() })
    }
    /// Sets the pair until [`ClockControl::reset_clocks`]. A refusal a run can continue past (no
    /// permission, an unsupported pair or mechanism) is [`ClockOutcome::Refused`]; any other failure is
    /// an error.
    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        Ok(ClockOutcome::Refused(format!("this device cannot set clocks {pair}")))
    }
    /// Sets the pair, or stops with an error for every failure, a refusal included.
    fn try_set_clocks(&mut self, pair: ClockPair) -> Result<(), Error> {
        match self.set_clocks(pair)? {
            ClockOutcome::Applied => Ok(()),
            ClockOutcome::Refused(detail) => Err(Error::ClocksUnsupported { detail }),
        }
    }
    /// Puts back what [`ClockControl::set_clocks`] changed (nothing to do when it changed nothing).
    fn reset_clocks(&mut self) -> Result<(), Error> {
        Ok(())
    }
    /// The clocks the GPU runs at now, where the device can read them.
    fn clocks_now(&self) -> Option<ClockPair> {
        None
    }
}

/// Whether a clock request took effect.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockOutcome {
    /// The clocks are set.
    Applied,
    /// The GPU refuses (no permission, or the pair is unsupported): the reason, in one line.
    Refused(String),
}

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

    /// Sets the pair (core and memory MHz), or says which NVML call failed and how (a GPU lock that could
    /// not be undone on the way is named with the command that undoes it). What an earlier pair changed
    /// stays recorded for [`NvmlClocks::reset`].
    fn apply(&mut self, pair: ClockPair) -> Result<Result<(), ClockCallError>, Error> {
        let r = set_clock_pair(&mut self.device()?, pair.core_mhz, pair.mem_mhz, self.lock);
        Ok(r.map(|lock| self.lock = Some(lock)))
    }

    /// Sets the pair. A refusal (no permission, unsupported pair or mechanism) is
    /// [`ClockOutcome::Refused`] with its reason; any other failure is an error.
    pub fn set(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        match self.apply(pair)? {
            Ok(()) => Ok(ClockOutcome::Applied),
            Err(e) => {
                let undo = e.undo_note();
                match refused(&e.error) {
                    Some(why) => Ok(ClockOutcome::Refused(format!("{why}{undo}"))),
                    None => Err(Error::Nvml { call: e.call, message: format!("{}{undo}", e.error) }),
                }
            }
        }
    }

    /// Sets the pair; every failure, a refusal included, is an error naming the NVML call
    /// ([`Error::ClockPermission`], [`Error::ClocksUnsupported`], [`Error::Nvml`]).
    pub fn try_set(&mut self, pair: ClockPair) -> Result<(), Error> {
        self.apply(pair)?.map_err(call_error)
    }

    /// The SM and memory clocks the GPU runs at now (read-only); `None` where NVML does not say.
    pub fn now(&self) -> Option<ClockPair> {
        let dev = self.device().ok()?;
        Some(ClockPair {
            core_mhz: dev.clock_info(Clock::SM).ok()?,
            mem_mhz: dev.clock_info(Clock::Memory).ok()?,
        })
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
        restored.map_err(call_error)
    }
}

impl ClockControl for NvmlClocks {
    fn supported_clocks(&self) -> Result<SupportedClocks, Error> {
        self.supported()
    }
    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        self.set(pair)
    }
    /// NVML's own error for a refusal: [`Error::ClockPermission`] or [`Error::ClocksUnsupported`] with the
    /// call that failed.
    fn try_set_clocks(&mut self, pair: ClockPair) -> Result<(), Error> {
        self.try_set(pair)
    }
    fn reset_clocks(&mut self) -> Result<(), Error> {
        self.reset()
    }
    fn clocks_now(&self) -> Option<ClockPair> {
        self.now()
    }
}

/// A failed clock call as the collector's error, with the undo note of a lock left in place.
fn call_error(e: ClockCallError) -> Error {
    let note = e.undo_note();
    clock_error(e.call, e.error, &note)
}

impl Drop for NvmlClocks {
    /// The last resort (a panic unwinding): the run loop has normally put the clocks back already.
    fn drop(&mut self) {
        let _ = self.reset();
    }
}
