//! A scripted GPU for the suite's run loop: a time law and a power law per kernel and clock pair, a log of
//! every call (to check ordering and clock sweeping), and hooks to refuse clock changes, to "press Ctrl-C"
//! after some runs, or to fail a kernel.

use super::{ClockControl, ClockOutcome, GpuInfo, Measurement, Peaks, SuiteDevice, SuiteKernel};
use crate::Error;
use crate::clocks::{ClockPair, SupportedClocks};
use gpumodel_models::power_inputs::{self, POWER_INPUTS};
use gpumodel_models::profile::Launch;
use gpumodel_models::timing::Clocks;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One launch's work on the scripted GPU: what its time law ([`FakeSuiteDevice::true_time`]) turns into a
/// time, counter rates and power at any clock pair. A suite kernel's work is
/// [`FakeSuiteDevice::work`]; a test describes a workload outside the suite with one of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    /// SM-clock cycles of the launch's compute: its time at the core clock f is `core_cycles / f`.
    pub core_cycles: f64,
    /// Bytes the launch moves between L2 and DRAM.
    pub dram_bytes: f64,
    /// Canonical counter totals of one launch; the same at every clock pair.
    pub counters: BTreeMap<String, f64>,
}

/// The scripted GPU, the law journey tests check against. For a launch of [`Work`] (C core cycles, B DRAM
/// bytes, counter totals N) at core clock f and memory clock m (f₀, m₀ the defaults):
///
/// - time: `t(f, m) = max(C / f, B / (bw₀ · m / m₀)) + L`, the compute and the DRAM traffic overlapping,
///   bw₀ = [`FakeSuiteDevice::dram_bytes_per_s`] (peak DRAM bandwidth at m₀) and L =
///   [`FakeSuiteDevice::LAUNCH_LATENCY_S`] (a fixed launch latency);
/// - counter rates: `N / t(f, m)`;
/// - power ([`FakeSuiteDevice::true_power`] on those rates): `idle_w` plus, per power input
///   ([`gpumodel_models::power_inputs`]), a weight times the input's rate (in G/s), scaled by (f / f₀)² for
///   the SM's inputs and by m / m₀ for DRAM traffic;
/// - energy: `P · t` ([`FakeSuiteDevice::true_energy`]).
///
/// A suite kernel's counter totals are its nominal rates times [`FakeSuiteDevice::REFERENCE_S`], its
/// compute is `REFERENCE_S · f₀` cycles, and its DRAM bytes are its DRAM read and write totals: at the
/// default clocks a kernel whose DRAM traffic fits in `REFERENCE_S` runs in `REFERENCE_S + L`, and one
/// that does not is bound by the memory clock.
pub struct FakeSuiteDevice {
    pub info: GpuInfo,
    /// Default clocks (what "current" means before any change).
    pub default_clocks: Clocks,
    current: Clocks,
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
    /// Peak DRAM bandwidth at the default memory clock, bytes/s (scaled to the scripted counter rates,
    /// so that the suite's DRAM kernels are partly memory-bound).
    pub dram_bytes_per_s: f64,
    /// The clocks it supports: memory 1215, 1000, 900 and 800 MHz, each with core clocks 210–1410 MHz in
    /// 15 MHz steps (an A100's core clock table; the lower memory clocks are scripted, for sweeps over
    /// pairs).
    pub supported: SupportedClocks,
    runs: usize,
}

impl FakeSuiteDevice {
    /// A fake "NVIDIA A100-SXM4-40GB" at 1410/1215 MHz, clock control allowed.
    pub fn new() -> FakeSuiteDevice {
        let default_clocks = Clocks { core_mhz: 1410.0, mem_mhz: 1215.0 };
        FakeSuiteDevice {
            info: GpuInfo {
                name: crate::device::SCRIPTED_GPU.into(),
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
            dram_bytes_per_s: 2.0e9,
            supported: [1215, 1000, 900, 800]
                .into_iter()
                .map(|m| (m, (210..=1410).step_by(15).collect()))
                .collect(),
            runs: 0,
        }
    }

    /// Watts per G/s of each power input, in the order of [`POWER_INPUTS`]; DRAM's is the memory system's.
    pub const WEIGHTS: [f64; 10] = [6.0, 10.0, 18.0, 7.0, 12.0, 5.0, 9.0, 11.0, 8.0, 14.0];

    /// The fixed latency of every launch, s (the `L` of the time law).
    pub const LAUNCH_LATENCY_S: f64 = 5e-6;

    /// A suite kernel's compute time at the default core clock, s: its counter totals are its nominal
    /// rates times this.
    pub const REFERENCE_S: f64 = 1e-3;

    /// Peak FP32 and FP64 warp instructions per core cycle of the whole scripted GPU (the denominators of
    /// FP32A and FP64A), scaled to the scripted counter rates.
    pub const FP32_PER_CYCLE: f64 = 1.5;
    pub const FP64_PER_CYCLE: f64 = 0.75;

    /// The scripted GPU's true power at `clocks` for a kernel whose canonical counter rates (events per
    /// second) are `rate`: the law every journey test checks against.
    pub fn true_power(&self, rate: impl Fn(&str) -> Option<f64>, clocks: Clocks) -> f64 {
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

    /// The time law: seconds of one launch of `work` at `clocks`.
    pub fn true_time(&self, work: &Work, clocks: Clocks) -> f64 {
        let compute = work.core_cycles / (clocks.core_mhz * 1e6);
        let memory = work.dram_bytes / self.peaks(clocks).dram_bytes_per_s;
        compute.max(memory) + Self::LAUNCH_LATENCY_S
    }

    /// Counter rates (events per second) of `work` at `clocks`: its totals over [`Self::true_time`].
    pub fn work_rates(&self, work: &Work, clocks: Clocks) -> BTreeMap<String, f64> {
        let t = self.true_time(work, clocks);
        work.counters.iter().map(|(c, n)| (c.clone(), n / t)).collect()
    }

    /// Power of `work` at `clocks`, W: [`Self::true_power`] on [`Self::work_rates`].
    pub fn work_power(&self, work: &Work, clocks: Clocks) -> f64 {
        let rates = self.work_rates(work, clocks);
        self.true_power(|c| rates.get(c).copied(), clocks)
    }

    /// Energy of one launch of `work` at `clocks`, J: power × time.
    pub fn true_energy(&self, work: &Work, clocks: Clocks) -> f64 {
        self.work_power(work, clocks) * self.true_time(work, clocks)
    }

    /// The board's peaks at `clocks` (the same as [`SuiteDevice::peaks`]): DRAM bandwidth ∝ the memory
    /// clock, FP32 / FP64 issue ∝ the core clock, 64 warps per SM.
    pub fn peaks(&self, clocks: Clocks) -> Peaks {
        Peaks {
            dram_bytes_per_s: self.dram_bytes_per_s * clocks.mem_mhz / self.default_clocks.mem_mhz,
            fp32_per_s: Self::FP32_PER_CYCLE * clocks.core_mhz * 1e6,
            fp64_per_s: Self::FP64_PER_CYCLE * clocks.core_mhz * 1e6,
            max_warps_per_sm: 64.0,
        }
    }

    /// One launch of a suite kernel as [`Work`]: its nominal rates (a fixed pseudo-random factor per kernel
    /// and counter, scaled by the launched grid fraction and the knob) times [`Self::REFERENCE_S`].
    pub fn work(&self, kernel: &SuiteKernel) -> Work {
        let knob = f64::from(kernel.knob.clamp(1, 64));
        let mut n = BTreeMap::new();
        if let Some(e) = kernel.entry() {
            for c in e.drives {
                // No two counters are exactly proportional across kernels (real counters are not, and
                // regressions need that).
                let rate = 1e9 * kernel.grid_fraction * mix(&kernel.name, c) * (1.0 + knob.ln() / 4.0);
                n.insert((*c).to_string(), rate * Self::REFERENCE_S);
            }
        }
        n.insert("inst_executed".into(), 2e9 * kernel.grid_fraction * Self::REFERENCE_S);
        let dram_bytes = ["dram_read_bytes", "dram_write_bytes"].iter().filter_map(|c| n.get(*c)).sum();
        Work { core_cycles: Self::REFERENCE_S * self.default_clocks.core_mhz * 1e6, dram_bytes, counters: n }
    }

    /// Kernel name of the scripted program's one launch ([`Self::app_work`]), as the driver names the
    /// launched function (mangled `app_kernel(double*, const float*, int)`).
    pub const APP_KERNEL: &str = "_Z10app_kernelPdPKfi";

    /// Launch configuration of [`Self::APP_KERNEL`].
    pub const APP_LAUNCH: Launch = Launch {
        grid: [432, 1, 1],
        block: [256, 1, 1],
        registers_per_thread: 40,
        shared_mem_per_block: 2048,
    };

    /// One launch of the scripted program's kernel (what `collect --kernel-totals` profiles on this GPU):
    /// 1.5 ms of compute at the default core clock with an FP64, integer and special-function mix, global
    /// loads that mostly miss, and DRAM traffic under the bandwidth, so the core clock bounds it. Its
    /// counters cover the GA100 range map.
    pub fn app_work(&self) -> Work {
        let counters: BTreeMap<String, f64> = [
            ("inst_executed", 2.7e6),
            ("inst_fp_32", 0.3e6),
            ("inst_fp_64", 0.6e6),
            ("inst_integer", 0.9e6),
            ("inst_special", 0.3e6),
            ("inst_bit_convert", 0.4e6),
            ("branch", 0.2e6),
            ("divergent_branch", 0.02e6),
            ("gld_request", 0.25e6),
            ("l1_global_load_hit", 0.2e6),
            ("l1_global_load_miss", 0.9e6),
            ("global_store_transaction", 0.4e6),
            ("local_load", 0.0),
            ("local_store", 0.0),
            ("shared_load", 0.1e6),
            ("shared_store", 0.05e6),
            ("l1_shared_bank_conflict", 0.01e6),
            ("tex0_cache_sector_queries", 0.0),
            ("tex0_cache_sector_misses", 0.0),
            ("dram_read_bytes", 1.6e6),
            ("dram_write_bytes", 0.9e6),
        ]
        .into_iter()
        .map(|(c, v)| (c.to_string(), v))
        .collect();
        let dram_bytes = counters["dram_read_bytes"] + counters["dram_write_bytes"];
        Work { core_cycles: 1.5e-3 * self.default_clocks.core_mhz * 1e6, dram_bytes, counters }
    }

    /// The rates the fake GPU produces for `kernel` at `clocks`: [`Self::work_rates`] of its [`Self::work`].
    pub fn rates(&self, kernel: &SuiteKernel, clocks: Clocks) -> BTreeMap<String, f64> {
        self.work_rates(&self.work(kernel), clocks)
    }
}

impl Default for FakeSuiteDevice {
    fn default() -> Self {
        FakeSuiteDevice::new()
    }
}

/// The scripted clocks: every change logged; refused when `clocks_allowed` is false (a user without root).
impl ClockControl for FakeSuiteDevice {
    fn supported_clocks(&self) -> Result<SupportedClocks, Error> {
        Ok(self.supported.clone())
    }

    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        self.log.push(format!("set {}", pair.label()));
        if !self.clocks_allowed {
            return Ok(ClockOutcome::Refused(
                "NVML: insufficient permissions; run as root or `nvidia-smi -acp UNRESTRICTED`".into(),
            ));
        }
        self.current = pair.clocks();
        Ok(ClockOutcome::Applied)
    }

    fn reset_clocks(&mut self) -> Result<(), Error> {
        self.log.push("reset".into());
        self.current = self.default_clocks;
        Ok(())
    }
}

impl SuiteDevice for FakeSuiteDevice {
    fn info(&self) -> GpuInfo {
        self.info.clone()
    }

    fn peaks(&self, clocks: Clocks) -> Option<Peaks> {
        Some(FakeSuiteDevice::peaks(self, clocks))
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
        // Whole launches of the law's time, at least `min_seconds` of them.
        let work = self.work(kernel);
        let t = self.true_time(&work, self.current);
        let launches = ((min_seconds / t).ceil() as u64).max(1);
        let seconds = launches as f64 * t;
        let rates = self.work_rates(&work, self.current);
        let power_w = self.true_power(|c| rates.get(c).copied(), self.current);
        Ok(Measurement {
            seconds,
            launches,
            power_w,
            power_samples: (seconds * 60.0).ceil() as usize,
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
