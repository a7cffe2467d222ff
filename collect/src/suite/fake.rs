//! A scripted GPU for the suite's run loop: deterministic power and counter rates per kernel and clock,
//! a log of every call (to check ordering and clock sweeping), and hooks to refuse clock changes, to
//! "press Ctrl-C" after some runs, or to fail a kernel.

use super::{ClockOutcome, ClockPair, GpuInfo, Measurement, SuiteDevice, SuiteKernel};
use crate::Error;
use gpumodel_models::power_inputs::{self, POWER_INPUTS};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The scripted GPU. Its power law ([`FakeSuiteDevice::true_power`]) is `idle_w` plus, per power input
/// ([`gpumodel_models::power_inputs`]), a weight times the input's rate (in G/s), scaled by (core clock /
/// default)² for the SM's inputs and by the memory clock / default for DRAM traffic; rates scale with the
/// core clock and the launched grid fraction. Journey tests check predictions against this law.
pub struct FakeSuiteDevice {
    pub info: GpuInfo,
    /// Default clocks (what "current" means before any change).
    pub default_clocks: ClockPair,
    current: ClockPair,
    /// Whether set_clocks succeeds (false = no permission, as for a non-root user).
    pub clocks_allowed: bool,
    /// Every call, in order: `set 1410/1215`, `run global_load_s1`, `reset`.
    pub log: Vec<String>,
    /// After this many runs, set the flag (a Ctrl-C during the run).
    pub stop_after: Option<(usize, Arc<AtomicBool>)>,
    /// Fail when running the kernel of this name.
    pub fail_on: Option<String>,
    /// Idle power, W.
    pub idle_w: f64,
    runs: usize,
}

impl FakeSuiteDevice {
    /// A fake "NVIDIA A100-SXM4-40GB" at 1410/1215 MHz, clock control allowed.
    pub fn new() -> FakeSuiteDevice {
        let default_clocks = ClockPair { core_mhz: 1410.0, mem_mhz: 1215.0 };
        FakeSuiteDevice {
            info: GpuInfo {
                name: "NVIDIA A100-SXM4-40GB (fake)".into(),
                chip: Some("GA100".into()),
                driver: Some("550.54.15".into()),
                compute_capability: Some((8, 0)),
                sm_count: Some(108),
            },
            default_clocks,
            current: default_clocks,
            clocks_allowed: true,
            log: Vec::new(),
            stop_after: None,
            fail_on: None,
            idle_w: 55.0,
            runs: 0,
        }
    }

    /// Watts per G/s of each power input, in the order of [`POWER_INPUTS`]; DRAM's is the memory system's.
    pub const WEIGHTS: [f64; 10] = [6.0, 10.0, 18.0, 7.0, 12.0, 5.0, 9.0, 11.0, 8.0, 14.0];

    /// The scripted GPU's true power at `clocks` for a kernel whose canonical counter rates (events per
    /// second) are `rate`: the law every journey test checks against.
    pub fn true_power(&self, rate: impl Fn(&str) -> Option<f64>, clocks: ClockPair) -> f64 {
        let f = clocks.core_mhz / self.default_clocks.core_mhz;
        let m = clocks.mem_mhz / self.default_clocks.mem_mhz;
        let values = power_inputs::values(rate);
        let mut w = self.idle_w;
        for ((p, v), weight) in POWER_INPUTS.iter().zip(&values).zip(Self::WEIGHTS) {
            let g = v.1.unwrap_or(0.0) / 1e9 * weight;
            w += if p.name == "dram_bytes_per_s" { g * m } else { g * f * f };
        }
        w
    }

    /// The rates the fake GPU produces for `kernel` at `clocks` (also what tests compare against).
    pub fn rates(&self, kernel: &SuiteKernel, clocks: ClockPair) -> BTreeMap<String, f64> {
        let scale = kernel.grid_fraction * clocks.core_mhz / self.default_clocks.core_mhz;
        let knob = f64::from(kernel.knob.clamp(1, 64));
        let mut r = BTreeMap::new();
        if let Some(e) = kernel.entry() {
            for c in e.drives {
                // A fixed pseudo-random factor per kernel and counter, so that no two counters are exactly
                // proportional across kernels (real counters are not, and regressions need that).
                r.insert((*c).to_string(), 1e9 * scale * mix(&kernel.name, c) * (1.0 + knob.ln() / 4.0));
            }
        }
        r.insert("inst_executed".into(), 2e9 * scale);
        r
    }
}

impl Default for FakeSuiteDevice {
    fn default() -> Self {
        FakeSuiteDevice::new()
    }
}

impl SuiteDevice for FakeSuiteDevice {
    fn info(&self) -> GpuInfo {
        self.info.clone()
    }

    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        self.log.push(format!("set {}", pair.label()));
        if !self.clocks_allowed {
            return Ok(ClockOutcome::Refused(
                "NVML: insufficient permissions; run as root or `nvidia-smi -acp UNRESTRICTED`".into(),
            ));
        }
        self.current = pair;
        Ok(ClockOutcome::Applied)
    }

    fn reset_clocks(&mut self) -> Result<(), Error> {
        self.log.push("reset".into());
        self.current = self.default_clocks;
        Ok(())
    }

    fn run(&mut self, kernel: &SuiteKernel, min_seconds: f64) -> Result<Measurement, Error> {
        self.log.push(format!("run {}", kernel.name));
        if self.fail_on.as_deref() == Some(kernel.name.as_str()) {
            return Err(Error::Cuda { call: "cuLaunchKernel", message: "unspecified launch failure".into() });
        }
        self.runs += 1;
        if let Some((n, flag)) = &self.stop_after
            && self.runs >= *n
        {
            flag.store(true, Ordering::SeqCst);
        }
        let rates = self.rates(kernel, self.current);
        let power_w = self.true_power(|c| rates.get(c).copied(), self.current);
        Ok(Measurement {
            seconds: min_seconds,
            launches: 100,
            power_w,
            power_samples: (min_seconds * 60.0).ceil() as usize,
            clocks: self.current,
            counter_rates: rates,
        })
    }
}

/// A factor in [0.5, 1.5) from a name pair (FNV-1a), stable across runs and platforms.
fn mix(a: &str, b: &str) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in a.bytes().chain([0]).chain(b.bytes()) {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    0.5 + (h % 1000) as f64 / 1000.0
}
