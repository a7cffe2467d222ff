//! The GPU every command talks to, behind one interface, [`Gpu`], chosen in one place, [`Backend`]: the
//! machine's NVIDIA GPUs ([`NvidiaGpu`]: NVML, the CUDA driver, CUPTI), the scripted GPU of
//! `GPUMODEL_FAKE_GPU=1` ([`ScriptedGpu`], for tests and demos on machines without one), or a recorded GPU
//! ([`RecordedGpu`]: `GPUMODEL_REPLAY=FILE`, or `serve --replay FILE`, its NVML answers replayed).
//!
//! A [`Gpu`] opens what `collect`, `collect --suite`, `calibrate`, `doctor` and `serve` use, each behind
//! the trait the command is written against: [`PowerSource`](crate::power::PowerSource) and
//! [`CounterSource`](crate::counters::CounterSource) for a program run, [`SuiteDevice`] and
//! [`CalibrationDevice`] (both a [`ClockControl`](crate::clock_control::ClockControl), whose one real
//! implementation is [`NvmlClocks`](crate::clock_control::NvmlClocks)), [`Probes`], and [`Node`] for the
//! exporter. A recording runs no kernel: its suite and calibrate devices are a one-line refusal.
//!
//! Every backend is read-only unless a command is asked to set clocks (`--clocks` other than `current`).

mod nvidia;
mod recorded;
mod scripted;

pub use nvidia::NvidiaGpu;
pub use recorded::RecordedGpu;
pub use scripted::ScriptedGpu;

use crate::calibrate::CalibrationDevice;
use crate::cgroup::{ProcFs, ProcessInfo};
use crate::cupti::pm::PmOptions;
use crate::doctor::Probes;
use crate::run::{RunOptions, RunOutcome};
use crate::suite::SuiteDevice;
use crate::telemetry::{NoGpu, Telemetry};
use crate::{Error, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The scripted GPU's name, as every scripted device reports it (the suite's, calibrate's, the collector's
/// power source, `serve`'s node), so that a model trained on one is found for the others by name.
pub const SCRIPTED_GPU: &str = "NVIDIA A100-SXM4-40GB (fake)";

/// The variable naming the trace a [`Backend::Replay`] replays.
pub const REPLAY_VAR: &str = "GPUMODEL_REPLAY";

/// A GPU as every command opens it.
pub trait Gpu {
    /// Runs the program of `opts` with power and, as asked, counter sampling (`pm`: the PM sampling
    /// options, its `device` the CUDA ordinal). Sets `opts.chip` to the chip the counters come from.
    fn measure(
        &self,
        opts: &mut RunOptions,
        pm: &PmOptions,
        counters: Counters,
        interrupted: Arc<AtomicBool>,
    ) -> std::result::Result<RunOutcome, MeasureError>;
    /// The suite's device, power sampled at `rate_hz` with PM sampling of `pm`.
    fn suite_device(
        &self,
        pm: &PmOptions,
        rate_hz: f64,
    ) -> std::result::Result<Box<dyn SuiteDevice>, MeasureError>;
    /// The device `calibrate` measures, CUDA device `device`.
    fn calibration_device(&self, device: u32) -> Result<Box<dyn CalibrationDevice>>;
    /// What `doctor` asks.
    fn doctor_probes(&self) -> Box<dyn Probes>;
    /// What `serve` reads: every GPU of the node, with its processes' names and containers. A node without
    /// a usable driver is [`Error::NoDriver`] or the NVML error; see [`Node::without_gpus`].
    fn node(&self) -> Result<Node>;
}

/// Which GPU the commands talk to: the one factory of [`Gpu`]s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The machine's NVIDIA GPU.
    Nvidia,
    /// The scripted GPU: an A100-like board whose power, counters and clocks follow known laws.
    Scripted,
    /// A recorded GPU: the trace of NVML answers in this file, served as recorded — to `serve` whole, to
    /// `collect --no-counters` as its first GPU's power, clocks and energy counter. It runs no kernel, so
    /// the suite and `calibrate` refuse it; `doctor` checks this machine instead.
    Replay(PathBuf),
}

impl Backend {
    /// `GPUMODEL_REPLAY=FILE`: the GPU recorded in FILE; `GPUMODEL_FAKE_GPU=1`: the scripted GPU;
    /// anything else: the machine's GPU.
    pub fn from_env() -> Backend {
        match std::env::var_os(REPLAY_VAR).filter(|v| !v.is_empty()) {
            Some(path) => Backend::Replay(path.into()),
            None if std::env::var("GPUMODEL_FAKE_GPU").is_ok_and(|v| v == "1") => Backend::Scripted,
            None => Backend::Nvidia,
        }
    }

    pub fn is_scripted(&self) -> bool {
        *self == Backend::Scripted
    }

    pub fn is_replay(&self) -> bool {
        matches!(self, Backend::Replay(_))
    }

    /// Opens the chosen GPU (nothing is touched until one of its methods is called).
    pub fn gpu(&self) -> Box<dyn Gpu> {
        match self {
            Backend::Nvidia => Box::new(NvidiaGpu),
            Backend::Scripted => Box::new(ScriptedGpu),
            Backend::Replay(path) => Box::new(RecordedGpu::new(path.clone())),
        }
    }
}

/// What a program run samples besides power.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counters {
    /// Power only.
    None,
    /// The counters of the chip's first PM group.
    FirstGroup,
    /// Every group, one run of the program per group (application replay).
    AllGroups,
}

/// Where opening the GPU or a measured run failed, so that the command can say which part to fix.
#[derive(Debug)]
pub enum MeasureError {
    /// Opening the GPU (driver, NVML, the CUDA device).
    Gpu(Error),
    /// Opening its counters (CUPTI PM sampling).
    Counters(Error),
    /// The run of the program.
    Run(Error),
}

/// A node as the exporter reads it: its GPUs, and who the processes on them are.
pub struct Node {
    pub telemetry: Box<dyn Telemetry>,
    pub processes: Box<dyn ProcessInfo>,
}

impl Node {
    /// A node without GPUs (no driver), its processes this host's: served with no GPU series.
    pub fn without_gpus() -> Node {
        Node { telemetry: Box::new(NoGpu), processes: Box::new(ProcFs("/proc".into())) }
    }
}
