//! Scripted answers for the checklist: a healthy Ampere-class GPU by default ([`FakeProbes::healthy`]),
//! each probe replaceable by a failure (an error constructor, since the collector's error is not `Clone`).

use super::{
    ClockFacts, CudaFacts, CuptiFacts, KernelFacts, MigState, NvmlDevice, NvmlFacts, NvrtcFacts, PmFacts,
    Probes, RangeFacts, SamplingFacts,
};
use crate::error::{Error, Result};
use crate::fake::FakePower;
use crate::power::{PowerField, PowerSource};
use crate::sampler::Clock;

/// A scripted answer: the facts, or the error to return.
pub type Answer<T> = std::result::Result<T, fn() -> Error>;

/// Scripted probes.
pub struct FakeProbes {
    pub nvml: Answer<NvmlFacts>,
    /// Constant power of the sampling run, W.
    pub power_w: f64,
    pub cuda: Answer<CudaFacts>,
    pub cupti: Answer<CuptiFacts>,
    pub nvrtc: Answer<NvrtcFacts>,
    pub kernel: Answer<KernelFacts>,
    pub pm: Answer<PmFacts>,
    pub range: Answer<RangeFacts>,
    /// The highest power sampling rate this scripted host keeps, Hz, and its p99 interval jitter, ms:
    /// the sampling row reads these figures, never the test machine's own scheduling.
    pub kept_hz: f64,
    pub jitter_ms: f64,
}

fn answer<T: Clone>(a: &Answer<T>) -> Result<T> {
    a.clone().map_err(|make| make())
}

impl FakeProbes {
    /// An A40-like board on a CUDA 12.9 driver with CUPTI 12.9: every check passes.
    pub fn healthy() -> FakeProbes {
        let bus = "00000000:65:00.0".to_string();
        FakeProbes {
            nvml: Ok(NvmlFacts {
                driver_version: Some("575.57.08".into()),
                cuda_version: Some(12090),
                devices: vec![NvmlDevice {
                    index: 0,
                    name: "Fake GA102".into(),
                    pci_bus_id: Some(bus.clone()),
                }],
                index: 0,
                matched_by_pci_bus_id: true,
                name: "Fake GA102".into(),
                pci_bus_id: Some(bus.clone()),
                compute_capability: Some((8, 6)),
                mig: None,
                virtualization: Some("none".into()),
                persistence: Some(true),
                power_limit_w: Some(300.0),
                power_field: Some(PowerField::Instant),
                power_error: None,
                energy_counter: true,
                clocks: ClockFacts {
                    sm_mhz: Some(1410),
                    mem_mhz: Some(7251),
                    max_sm_mhz: Some(1740),
                    max_mem_mhz: Some(7251),
                    supported_mem_mhz: vec![7251, 405],
                    supported_sm_mhz: vec![1740, 1410, 210],
                    applications_mhz: Some((7251, 1410)),
                    applications_restricted: Some(true),
                    root: true,
                },
                notes: Vec::new(),
            }),
            power_w: 120.0,
            cuda: Ok(CudaFacts {
                driver_version: 12090,
                device_count: 1,
                pci_bus_id: Some("0000:65:00.0".into()),
            }),
            cupti: Ok(CuptiFacts { path: "libcupti.so.12".into(), api_version: 28 }),
            nvrtc: Ok(NvrtcFacts { version: (12, 9) }),
            kernel: Ok(KernelFacts {
                kernel: "fp32_fma".into(),
                arch: "sm_86".into(),
                compile_ms: 400.0,
                kernel_ms: 0.5,
            }),
            pm: Ok(PmFacts { chip: "GA102".into(), samples: 6, kernel_launched: true }),
            range: Ok(RangeFacts { metric: "smsp__inst_executed.sum".into(), ranges: 1, value: Some(5.0e6) }),
            kept_hz: 1000.0,
            jitter_ms: 0.2,
        }
    }

    /// The NVML facts, to change one field.
    pub fn nvml_mut(&mut self) -> &mut NvmlFacts {
        match &mut self.nvml {
            Ok(n) => n,
            Err(_) => panic!("the scripted NVML answer is a failure"),
        }
    }

    /// MIG on (current and pending).
    pub fn with_mig(mut self) -> FakeProbes {
        self.nvml_mut().mig = Some(MigState { current: true, pending: true });
        self
    }
}

impl Probes for FakeProbes {
    fn nvml(&mut self, _cuda_device: u32) -> Result<NvmlFacts> {
        answer(&self.nvml)
    }
    fn power_source(&mut self, _nvml_index: u32) -> Result<Box<dyn PowerSource>> {
        Ok(Box::new(FakePower::constant(Clock::new(), self.power_w)))
    }
    fn cuda(&mut self, _cuda_device: u32) -> Result<CudaFacts> {
        answer(&self.cuda)
    }
    fn cupti(&mut self) -> Result<CuptiFacts> {
        answer(&self.cupti)
    }
    fn nvrtc(&mut self) -> Result<NvrtcFacts> {
        answer(&self.nvrtc)
    }
    fn kernel(&mut self, _cuda_device: u32) -> Result<KernelFacts> {
        answer(&self.kernel)
    }
    fn pm_sampling(&mut self, _cuda_device: u32, _rate_hz: f64) -> Result<PmFacts> {
        answer(&self.pm)
    }
    fn range_profiler(&mut self, _cuda_device: u32) -> Result<RangeFacts> {
        answer(&self.range)
    }
    fn sampling(&mut self, _nvml_index: u32, rate_hz: f64, seconds: f64) -> Result<SamplingFacts> {
        let achieved_hz = rate_hz.min(self.kept_hz);
        Ok(SamplingFacts {
            requested_hz: rate_hz,
            achieved_hz,
            samples: (achieved_hz * seconds).round() as usize,
            p99_jitter_ms: self.jitter_ms,
            mean_power_w: self.power_w,
        })
    }
}
