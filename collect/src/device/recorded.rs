//! A recorded GPU: a trace of NVML answers (`GPUMODEL_REPLAY=FILE`, `serve --replay FILE`), served as
//! recorded, quirks and failed calls included. It runs no kernel.

use super::{Counters, Gpu, MeasureError, Node, REPLAY_VAR};
use crate::calibrate::CalibrationDevice;
use crate::cupti::pm::PmOptions;
use crate::doctor::Probes;
use crate::doctor::system::SystemProbes;
use crate::replay::ReplayPower;
use crate::run::{RunOptions, RunOutcome, run as run_program};
use crate::suite::SuiteDevice;
use crate::{Error, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The GPU recorded in a trace file.
#[derive(Debug, Clone)]
pub struct RecordedGpu {
    path: PathBuf,
}

impl RecordedGpu {
    pub fn new(path: PathBuf) -> RecordedGpu {
        RecordedGpu { path }
    }
}

impl Gpu for RecordedGpu {
    /// The trace's first GPU's power (or power from its energy counter), clocks and energy counter,
    /// sampled in real time ([`ReplayPower`]); no counters.
    fn measure(
        &self,
        opts: &mut RunOptions,
        _pm: &PmOptions,
        counters: Counters,
        interrupted: Arc<AtomicBool>,
    ) -> std::result::Result<RunOutcome, MeasureError> {
        if counters != Counters::None {
            return Err(MeasureError::Counters(Error::Invalid(format!(
                "the trace {REPLAY_VAR} names holds power, clocks and energy, no counters: run collect with \
                 --no-counters"
            ))));
        }
        let power = ReplayPower::open(&self.path).map_err(MeasureError::Gpu)?;
        run_program(opts, power, None, interrupted).map_err(MeasureError::Run)
    }

    fn suite_device(
        &self,
        _pm: &PmOptions,
        _rate_hz: f64,
    ) -> std::result::Result<Box<dyn SuiteDevice>, MeasureError> {
        Err(MeasureError::Gpu(runs_no_kernel("the suite")))
    }

    fn calibration_device(&self, _device: u32) -> Result<Box<dyn CalibrationDevice>> {
        Err(runs_no_kernel("calibrate"))
    }

    /// A recording is not a machine: doctor checks this one.
    fn doctor_probes(&self) -> Box<dyn Probes> {
        Box::new(SystemProbes::new())
    }

    /// Every GPU of the trace, with the PIDs' names and containers its header records.
    fn node(&self) -> Result<Node> {
        let (telemetry, processes) = crate::replay::open(&self.path)?;
        Ok(Node { telemetry: Box::new(telemetry), processes: Box::new(processes) })
    }
}

/// The refusal of a command that runs kernels on a recorded GPU.
fn runs_no_kernel(what: &str) -> Error {
    Error::Invalid(format!(
        "{REPLAY_VAR} replays a recorded GPU's NVML answers (for `collect --no-counters` and `serve`); \
         {what} runs kernels on a GPU: unset {REPLAY_VAR} (or use GPUMODEL_FAKE_GPU=1 for the scripted GPU)"
    ))
}
