//! The power source: instantaneous board power, clocks and the energy counter of one GPU.
//!
//! [`PowerSource`] is what the sampler thread reads; [`crate::nvml::NvmlPower`] reads NVML and
//! [`crate::fake::FakePower`] plays scripted values. A source probes once what its GPU offers (an
//! instantaneous power field or only the averaged `power_usage`, an energy counter or not) and says so in
//! [`PowerInfo`], which the trace's metadata records.

use crate::error::Result;
use gpumodel_models::{Joules, Mhz, Watts};
use serde::{Deserialize, Serialize};

/// Which reading the power values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerField {
    /// `NVML_FI_DEV_POWER_INSTANT` through `nvmlDeviceGetFieldValues`: the instantaneous reading.
    Instant,
    /// `nvmlDeviceGetPowerUsage`: on Ampere and newer a 1-second average, older GPUs ~20 ms.
    Average,
    /// Scripted values of a fake source (tests, benchmarks).
    Scripted,
    /// Recorded NVML answers replayed from a trace (`GPUMODEL_REPLAY`).
    Replayed,
}

/// What a power source offers, probed once when it is opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerInfo {
    /// GPU name as the driver reports it (e.g. "NVIDIA A100-SXM4-40GB").
    pub gpu: String,
    /// Driver version, if known.
    pub driver: Option<String>,
    /// CUDA compute capability (major, minor), if known.
    pub compute_capability: Option<(u32, u32)>,
    /// Which reading power samples come from.
    pub field: PowerField,
    /// Whether the total-energy counter (Volta and newer) can be read.
    pub energy_counter: bool,
    /// PCI bus id of the GPU read (NVML's spelling), when the source knows it.
    pub pci_bus_id: Option<String>,
}

/// One power reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerReading {
    /// Board power.
    pub power: Watts,
    /// SM clock, when the source can read it.
    pub core: Option<Mhz>,
    /// Memory clock, when the source can read it.
    pub mem: Option<Mhz>,
}

/// A GPU power sensor. Implementations are moved onto the sampler thread, hence `Send`.
pub trait PowerSource: Send {
    /// What this source offers (probed once at open).
    fn info(&self) -> PowerInfo;
    /// Reads power and clocks now.
    fn read(&mut self) -> Result<PowerReading>;
    /// The GPU's cumulative energy counter, or `None` when the GPU has none (before Volta).
    fn energy(&mut self) -> Result<Option<Joules>>;
    /// What could not be read without stopping the run (a clock the driver refused, …), one line each;
    /// read after the run and written to the trace's warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

impl<T: PowerSource + ?Sized> PowerSource for Box<T> {
    fn info(&self) -> PowerInfo {
        (**self).info()
    }
    fn read(&mut self) -> Result<PowerReading> {
        (**self).read()
    }
    fn energy(&mut self) -> Result<Option<Joules>> {
        (**self).energy()
    }
    fn warnings(&self) -> Vec<String> {
        (**self).warnings()
    }
}
