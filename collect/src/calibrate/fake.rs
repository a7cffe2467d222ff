//! A scripted GPU for calibration: it answers each launch with the cycle counts a GPU with known
//! constants would give, plus a fixed timing overhead and deterministic noise, so the estimators can be
//! checked against constants the test chose.

use super::{CalLaunch, CalibrationDevice, ClockControl, DeviceFacts};
use crate::Error;
use crate::clock_control::ClockOutcome;
use crate::clocks::{ClockPair, SupportedClocks};
use gpumodel_models::arch::ArchProfile;

/// The constants the fake GPU has (core cycles; the L2 bandwidth in GB/s; the shared bandwidth in bytes
/// per SM per core cycle; the arithmetic and conversion rates in results per clock per SM).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrueConstants {
    pub cyc_load: f64,
    pub cyc_store: f64,
    pub cyc_s: f64,
    pub cyc_t: f64,
    pub cyc_r: f64,
    pub alu_latency: f64,
    pub in_warp_delay: f64,
    pub out_warp_delay: f64,
    /// L2 bandwidth at the default clocks; it scales with the core clock (the L2 runs on it).
    pub l2_bandwidth_gbs: f64,
    /// DRAM latency `latency_a · f_core/f_mem + latency_b` (core cycles): what every DRAM chase costs.
    pub latency_a: f64,
    pub latency_b: f64,
    /// DRAM departure delay `(delay_a / f_mem + delay_b) · f_core/f_mem` (core cycles per 32-byte
    /// transaction of one SM): the DRAM stream's bandwidth is `32 · SMs / D` bytes per core cycle…
    pub delay_a: f64,
    pub delay_b: f64,
    /// …capped at this many bytes per core cycle (the L2's DRAM ceiling).
    pub l2_dram_bytes_per_core_cycle: f64,
    /// L2 hit latency, core cycles (any clocks).
    pub l2_latency: f64,
    /// Shared-memory bandwidth, bytes per SM per core cycle.
    pub shared_bytes_per_cycle: f64,
    /// Results per clock per SM, in the Programming Guide's terms (an FMA is one result; a packed `half2`
    /// FMA is two): FP32, FP64 and FP16 fused multiply-add, conversions from and to 64-bit types, 32-bit
    /// integer add and bitwise xor (one rate in the Guide), and special functions (reciprocal square root).
    pub fp32_per_clock: f64,
    pub fp64_per_clock: f64,
    pub fp16_per_clock: f64,
    pub conversion64_per_clock: f64,
    pub int_per_clock: f64,
    pub sfu_per_clock: f64,
}

/// The fake GPU's default clocks (the A100's, as its facts say): core, memory MHz.
pub const FAKE_DEFAULT: ClockPair = ClockPair { core_mhz: 1410, mem_mhz: 1215 };

impl TrueConstants {
    /// Ampere-like orders of magnitude (chosen by hand, not measured): what `GPUMODEL_FAKE_GPU=1` and the
    /// tests give the fake GPU.
    pub const AMPERE_LIKE: TrueConstants = TrueConstants {
        cyc_load: 480.0,
        cyc_store: 260.0,
        cyc_s: 29.0,
        cyc_t: 34.0,
        cyc_r: 1.0,
        alu_latency: 4.0,
        in_warp_delay: 3.2,
        out_warp_delay: 1.5,
        l2_bandwidth_gbs: 4800.0,
        latency_a: 60.0,
        // So that the DRAM latency at the default clocks is cyc_load.
        latency_b: 480.0 - 60.0 * 1410.0 / 1215.0,
        delay_a: 250.0,
        delay_b: 2.0,
        l2_dram_bytes_per_core_cycle: 2000.0,
        l2_latency: 210.0,
        // 32 banks of 4 bytes; the Guide's rates for compute capability 8.0.
        shared_bytes_per_cycle: 128.0,
        fp32_per_clock: 64.0,
        fp64_per_clock: 32.0,
        fp16_per_clock: 256.0,
        conversion64_per_clock: 16.0,
        int_per_clock: 64.0,
        sfu_per_clock: 16.0,
    };

    /// DRAM latency in core cycles at `c` (the form above).
    pub fn dram_latency(&self, c: ClockPair) -> f64 {
        let r = f64::from(c.core_mhz) / f64::from(c.mem_mhz);
        self.latency_a * r + self.latency_b
    }

    /// DRAM departure delay in core cycles at `c`.
    pub fn dram_delay(&self, c: ClockPair) -> f64 {
        let (fc, fm) = (f64::from(c.core_mhz), f64::from(c.mem_mhz));
        (self.delay_a / fm + self.delay_b) * fc / fm
    }
}

/// The scripted GPU: facts from the built-in `a100` profile, timings from [`TrueConstants`].
pub struct FakeCalibrationDevice {
    pub truth: TrueConstants,
    /// Relative noise amplitude (0.02 = ±2 %), deterministic.
    pub noise: f64,
    /// Launches made.
    pub launches: usize,
    /// Every launch's kernel and buffer, in order.
    pub log: Vec<(&'static str, super::Chain)>,
    /// The clocks it runs at now, and every clock change (`None`: restored to the defaults).
    pub clocks: ClockPair,
    pub clock_log: Vec<Option<ClockPair>>,
    /// Whether setting clocks is allowed (false: the "needs root" error).
    pub clocks_settable: bool,
    /// Fail every launch after this many (to test that the clocks are restored on error).
    pub fail_after: Option<usize>,
    rng: u64,
    /// What the fake GPU reports of itself (the built-in a100 profile, parsed once).
    facts: DeviceFacts,
}

impl FakeCalibrationDevice {
    pub fn new(truth: TrueConstants) -> FakeCalibrationDevice {
        FakeCalibrationDevice {
            truth,
            noise: 0.02,
            launches: 0,
            log: Vec::new(),
            clocks: FAKE_DEFAULT,
            clock_log: Vec::new(),
            clocks_settable: true,
            fail_after: None,
            rng: 0x2545_f491_4f6c_dd1d,
            facts: a100_facts(),
        }
    }

    fn count(&mut self, l: &CalLaunch) -> Result<(), Error> {
        self.launches += 1;
        self.log.push((l.entry, l.chain));
        match self.fail_after {
            Some(n) if self.launches > n => Err(Error::Invalid("fake GPU: launch failed (scripted)".into())),
            _ => Ok(()),
        }
    }

    /// A throughput kernel's per-warp finishes: what one block of `l.threads` threads does (in the terms
    /// of `calibrate.cu`: 16 shared bytes, 8 FMAs (16 FP16 results), 16 conversions, 16 integer adds and
    /// xors or 8 reciprocal square roots per thread and step)
    /// at the true rate of its unit — or, when too few warps are in flight for that, at one dependent step
    /// per latency (`cyc_s` for shared loads, `alu_latency` for arithmetic) — the warps finishing one after
    /// another over the last tenth of it.
    fn block_throughput(&mut self, l: &CalLaunch) -> Vec<u64> {
        let t = self.truth;
        let work = f64::from(l.threads) * f64::from(l.steps);
        let (rate_bound, latency) = match l.entry {
            "shared_bandwidth" => (16.0 * work / t.shared_bytes_per_cycle, t.cyc_s),
            "fp32_throughput" => (8.0 * work / t.fp32_per_clock, t.alu_latency),
            "fp64_throughput" => (8.0 * work / t.fp64_per_clock, t.alu_latency),
            "fp16_throughput" => (16.0 * work / t.fp16_per_clock, t.alu_latency),
            "int_throughput" => (16.0 * work / t.int_per_clock, 2.0 * t.alu_latency),
            "sfu_throughput" => (8.0 * work / t.sfu_per_clock, t.alu_latency),
            _ => (16.0 * work / t.conversion64_per_clock, 2.0 * t.alu_latency),
        };
        let cycles = rate_bound.max(f64::from(l.steps) * latency) * self.jitter();
        let warps = l.threads.div_ceil(32);
        (0..warps)
            .flat_map(|w| {
                let c = cycles * (0.9 + 0.1 * f64::from(w + 1) / f64::from(warps)) + TIMER_OVERHEAD;
                [c.round() as u64, 7]
            })
            .collect()
    }

    fn jitter(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let u = (self.rng >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        1.0 + self.noise * (2.0 * u - 1.0)
    }
}

/// The fake GPU's facts: the built-in a100 profile's.
fn a100_facts() -> DeviceFacts {
    let a100 = ArchProfile::builtin("a100").expect("the built-in a100 profile parses (tested in models)");
    // A100's L2: 40 MB (NVIDIA A100 Tensor Core GPU Architecture whitepaper).
    // The a100 profile's Guide values of cost_int and cost_sfu stay, as a real GPU's facts keep them.
    let measured_only: Vec<&str> =
        super::MEASURED.iter().copied().filter(|f| super::measured_only(f)).collect();
    let mut f = DeviceFacts::from_profile(&a100, &measured_only, 40 << 20);
    f.display_name = crate::device::SCRIPTED_GPU.into();
    // Its supported clocks, as the CUDA device lists NVML's: every memory clock, and the core clocks at
    // the default memory clock (so `predict --arch` of its profile sweeps what the board can run).
    let sup = fake_supported();
    let mut mem: Vec<f64> = sup.iter().map(|(m, _)| f64::from(*m)).collect();
    mem.sort_by(f64::total_cmp);
    let mut core: Vec<f64> = sup
        .iter()
        .find(|(m, _)| *m == FAKE_DEFAULT.mem_mhz)
        .map(|(_, g)| g.iter().map(|c| f64::from(*c)).collect())
        .unwrap_or_default();
    core.sort_by(f64::total_cmp);
    f.core_clocks_mhz = (core, "fake_clocks".into());
    f.mem_clocks_mhz = (mem, "fake_clocks".into());
    f.sources.insert("fake_clocks".into(), "the scripted GPU's supported clocks (as NVML lists them)".into());
    f
}

/// Cycles the timer itself costs (two clock64 reads), included in every fake timing.
const TIMER_OVERHEAD: f64 = 40.0;

/// The scripted clocks: `fake_supported`'s pairs, settable unless `clocks_settable` is false (a user
/// without root), every change logged.
impl ClockControl for FakeCalibrationDevice {
    fn supported_clocks(&self) -> Result<SupportedClocks, Error> {
        Ok(fake_supported())
    }

    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        if let Some(refusal) = self.refusal(pair) {
            return Ok(ClockOutcome::Refused(refusal.to_string()));
        }
        self.clocks = pair;
        self.clock_log.push(Some(pair));
        Ok(ClockOutcome::Applied)
    }

    fn try_set_clocks(&mut self, pair: ClockPair) -> Result<(), Error> {
        match self.refusal(pair) {
            Some(e) => Err(e),
            None => self.set_clocks(pair).map(|_| ()),
        }
    }

    fn reset_clocks(&mut self) -> Result<(), Error> {
        self.clocks = FAKE_DEFAULT;
        self.clock_log.push(None);
        Ok(())
    }

    fn clocks_now(&self) -> Option<ClockPair> {
        Some(self.clocks)
    }
}

impl FakeCalibrationDevice {
    /// Why the scripted GPU refuses `pair`, as the error calibrate stops with.
    fn refusal(&self, pair: ClockPair) -> Option<Error> {
        if !self.clocks_settable {
            return Some(Error::ClockPermission {
                detail: "NVML: insufficient permissions (fake GPU)".into(),
            });
        }
        if !fake_supported().iter().any(|(m, g)| *m == pair.mem_mhz && g.contains(&pair.core_mhz)) {
            return Some(Error::Invalid(format!("fake GPU: clock pair {pair} is not supported")));
        }
        None
    }
}

impl CalibrationDevice for FakeCalibrationDevice {
    fn facts(&self) -> DeviceFacts {
        self.facts.clone()
    }

    fn run(&mut self, l: &CalLaunch) -> Result<Vec<u64>, Error> {
        self.count(l)?;
        let t = self.truth;
        let steps = f64::from(l.steps);
        let per_step = match l.entry {
            "chase_global" => t.dram_latency(self.clocks),
            "chase_l2" => t.l2_latency,
            "store_cost" => t.cyc_store,
            "chase_shared" => t.cyc_s,
            "chase_texture" => t.cyc_t,
            "register_issue" => 16.0 * t.cyc_r,
            "register_chain" => 2.0 * t.alu_latency,
            // Paper eq. 5.3: CYC_load + (transactions of the warp - 1) x in_warp_delay; 32 lines per load.
            "in_warp_loads" => t.cyc_load + f64::from(32 * l.knob - 1) * t.in_warp_delay,
            "out_warp_loads" => {
                let warps = l.threads.div_ceil(32);
                let mut out = Vec::with_capacity(2 * warps as usize);
                for w in 0..warps {
                    let c = steps * (t.cyc_load + f64::from(w) * t.out_warp_delay) * self.jitter()
                        + TIMER_OVERHEAD;
                    out.extend([c.round() as u64, 7]);
                }
                return Ok(out);
            }
            "shared_bandwidth"
            | "fp32_throughput"
            | "fp64_throughput"
            | "fp16_throughput"
            | "convert64_throughput"
            | "int_throughput"
            | "sfu_throughput" => return Ok(self.block_throughput(l)),
            other => {
                return Err(Error::Invalid(format!("fake GPU: unknown calibration kernel {other}")));
            }
        };
        let c = steps * per_step * self.jitter() + TIMER_OVERHEAD;
        Ok(vec![c.round() as u64, 7])
    }

    fn run_timed(&mut self, l: &CalLaunch, blocks: u32) -> Result<f64, Error> {
        self.count(l)?;
        if l.entry != "l2_stream" || blocks == 0 || l.threads == 0 {
            return Err(Error::Invalid(format!(
                "fake GPU: no timed kernel {} over {blocks} blocks",
                l.entry
            )));
        }
        // DRAM: 32 bytes per SM per departure delay, capped by the L2's ceiling, both per core cycle. A
        // footprint that fits the L2 is read from DRAM once, then from L2 (its bandwidth scales with the
        // core clock). Plus launch overhead.
        let t = self.truth;
        let sm = self.facts.value("sm_count").unwrap_or(1.0);
        let core_hz = f64::from(self.clocks.core_mhz) * 1e6;
        let dram_bps = (32.0 * sm / t.dram_delay(self.clocks)).min(t.l2_dram_bytes_per_core_cycle) * core_hz;
        let l2_bps =
            t.l2_bandwidth_gbs * 1e9 * f64::from(self.clocks.core_mhz) / f64::from(FAKE_DEFAULT.core_mhz);
        let bytes = 4.0 * f64::from(l.chain.elems);
        let secs = if bytes > self.facts.l2_cache_bytes as f64 {
            bytes * f64::from(l.steps) / dram_bps * self.jitter()
        } else {
            bytes / dram_bps + bytes * f64::from(l.steps - 1) / l2_bps * self.jitter()
        };
        Ok(secs + LAUNCH_OVERHEAD_S)
    }

    fn idle_power(&mut self) -> Result<Option<super::IdlePower>, Error> {
        Ok(Some(super::IdlePower { clocks: self.clocks, watts: fake_idle_w(self.clocks), readings: 10 }))
    }
}

/// The fake GPU's idle power at a clock pair, W: rising with both clocks, as measured boards' does.
pub fn fake_idle_w(c: ClockPair) -> f64 {
    30.0 + 0.02 * f64::from(c.core_mhz) + 0.01 * f64::from(c.mem_mhz)
}

/// Seconds a kernel launch costs on top of its work, included in every fake timed launch.
const LAUNCH_OVERHEAD_S: f64 = 6e-6;

/// The fake GPU's clocks: five memory clocks, each with core clocks 510–1410 MHz in 15 MHz steps.
fn fake_supported() -> SupportedClocks {
    [1215, 1107, 1000, 900, 800].into_iter().map(|m| (m, (0..=60).map(|i| 1410 - 15 * i).collect())).collect()
}
