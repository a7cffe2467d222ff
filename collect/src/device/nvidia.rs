//! The machine's NVIDIA GPUs: NVML for power, clocks and the exporter's readings, the CUDA driver and
//! NVRTC for kernels, CUPTI for counters.

use super::{Counters, Gpu, MeasureError, Node};
use crate::calibrate::{self, CalibrationDevice};
use crate::cgroup::ProcFs;
use crate::counters::CounterSource;
use crate::cupti::pm::{CuptiPmCounters, PmOptions};
use crate::doctor::Probes;
use crate::doctor::system::SystemProbes;
use crate::nvml::{NvmlPower, open_nvml};
use crate::run::{RunOptions, RunOutcome, run as run_program, run_replay};
use crate::suite::{self, SuiteDevice};
use crate::telemetry::nvml::NvmlTelemetry;
use crate::{Error, Result};
use gpumodel_models::counters::{CounterMap, MapKind};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The machine's NVIDIA GPUs.
#[derive(Debug, Clone, Copy, Default)]
pub struct NvidiaGpu;

impl Gpu for NvidiaGpu {
    fn measure(
        &self,
        opts: &mut RunOptions,
        pm: &PmOptions,
        counters: Counters,
        interrupted: Arc<AtomicBool>,
    ) -> std::result::Result<RunOutcome, MeasureError> {
        let nvml = open_nvml().map_err(MeasureError::Gpu)?;
        // NVML's numbering can differ from CUDA's: match the physical GPU by its PCI bus id.
        let power = NvmlPower::open_cuda_device(nvml, pm.device).map_err(MeasureError::Gpu)?;
        let source = match counters {
            Counters::None => None,
            _ => {
                let c = CuptiPmCounters::open(pm).map_err(MeasureError::Counters)?;
                opts.chip = Some(c.chip().to_string());
                Some(c)
            }
        };
        let run = match source {
            Some(pass1) if counters == Counters::AllGroups => {
                // Application replay: pass 1 uses the source opened above; pass k opens group k once the
                // previous pass has dropped its own (PM sampling is one configuration per device at a time).
                let passes = pass1.pass_count();
                let mut pass1 = Some(pass1);
                let pm = pm.clone();
                let counters_for = move |k: usize| -> Result<Box<dyn CounterSource>> {
                    match pass1.take() {
                        Some(c) if k == 0 => Ok(Box::new(c)),
                        _ => Ok(Box::new(CuptiPmCounters::open_pass(&pm, k)?)),
                    }
                };
                run_replay(opts, power, passes, counters_for, interrupted)
            }
            c => run_program(opts, power, c.map(|c| Box::new(c) as Box<dyn CounterSource>), interrupted),
        };
        run.map_err(MeasureError::Run)
    }

    /// The GPU `pm.device` with power sampled at `rate_hz` and CUPTI PM sampling of the chip's `pm`
    /// counter map. The driver is checked first, so a machine without a GPU gets that one line rather than
    /// a CUPTI error.
    fn suite_device(
        &self,
        pm: &PmOptions,
        rate_hz: f64,
    ) -> std::result::Result<Box<dyn SuiteDevice>, MeasureError> {
        let device = pm.device;
        crate::cuda_gpu::check_driver(device).map_err(MeasureError::Gpu)?;
        let pm = pm.clone();
        // PM sampling is opened by the device after its CUDA context exists (NVIDIA's pm_sampling sample
        // creates the context first).
        let open_counters = move || -> Result<suite::cuda::SuiteCounters> {
            let source = CuptiPmCounters::open(&pm)?;
            let map = CounterMap::builtin(source.chip()).map_err(Error::from)?;
            Ok(suite::cuda::SuiteCounters {
                source: Box::new(source) as Box<dyn CounterSource>,
                map,
                kind: MapKind::Pm,
            })
        };
        let opened = suite::cuda::CudaSuiteDevice::open(device, rate_hz, Some(Box::new(open_counters)));
        Ok(Box::new(opened.map_err(MeasureError::Counters)?))
    }

    fn calibration_device(&self, device: u32) -> Result<Box<dyn CalibrationDevice>> {
        Ok(Box::new(calibrate::cuda::CudaCalibrationDevice::open(device)?))
    }

    /// This machine's driver, libraries and GPU.
    fn doctor_probes(&self) -> Box<dyn Probes> {
        Box::new(SystemProbes::new())
    }

    /// NVML and this host's `/proc`.
    fn node(&self) -> Result<Node> {
        Ok(Node { telemetry: Box::new(NvmlTelemetry::open()?), processes: Box::new(ProcFs("/proc".into())) })
    }
}
