//! Calibration of the timing model's constants on this GPU (paper §5.5, Table 5.3): global load latency
//! by pointer chasing (CYC_load), store cost (CYC_store), shared-memory and texture-cache latency (CYC_s,
//! CYC_t), register cost (CYC_r), and the paper's in_warp_delay and out_warp_delay; the throughput of the
//! SM's units the model charges instructions at ([`throughput`]: shared-memory bandwidth, FP32, FP64 and
//! FP16 arithmetic, 64-bit conversions, 32-bit integer arithmetic, special functions) — each measured over
//! several repetitions and written, with its median and spread, as a `models/arch/*.toml` profile that
//! `gpumodel predict --arch FILE` loads — and the DVFS memory constants of Wang & Chu's form, measured at
//! several core/memory clock pairs ([`dvfs`]).
//!
//! The kernels are in `collect/kernels/calibrate.cu` (embedded, compiled by NVRTC); the device sits
//! behind [`CalibrationDevice`] with [`FakeCalibrationDevice`] beside it for tests. The trait is thin: run
//! one block and return its cycle counts, time a grid with CUDA events, and list / set / restore clock
//! pairs and read the clocks (NVML). Everything else — chains, estimators, fits, the profile — is above it
//! and runs on the fake GPU in tests.
//!
//! **The run.** `gpumodel calibrate` first sweeps the clock pairs (`--clocks auto` takes up to four
//! supported memory clocks × three core clocks; setting them needs root; `current` sets nothing and
//! measures once at the clocks the GPU runs at): at each pair a page-stride DRAM pointer chase, an L2-hit
//! chase, and DRAM and L2 streams over the whole grid, each repeated `--repeats` times (median and
//! quartiles kept). The clocks are put back after the sweep, on error, on Ctrl-C and when the device is
//! dropped. Then it measures the constants above at the GPU's own clocks, fits the DVFS constants
//! ([`dvfs::fit`]: least squares with the workspace's one routine, `gpumodel_models::stats::least_squares`,
//! R² and residuals per fit, too few distinct ratios or a non-positive constant rejected with the reason),
//! writes the profile (checked by the models crate's loader before it is written) and reports.
//!
//! **Measured and looked up.** Measured on the GPU: the [`MEASURED`] fields — at its current clocks the
//! latencies by pointer chasing (DRAM, shared memory, texture cache: one thread, dependent loads), store
//! cost, register cost, ALU latency, in/out-of-warp delays, L2 bandwidth, and on one SM the shared-memory
//! bandwidth and the issue cost of FP32, FP64 and FP16 FMAs, of f32↔f64 conversions, of 32-bit integer
//! adds and xors (`cost_int`) and of special-function instructions (`cost_sfu`); at the clock pairs the DVFS
//! memory constants (`dvfs_memory.latency_a`, `latency_b`, `delay_a`, `delay_b`, `l2_latency`, `l2_delay`)
//! and `l2_dram_bytes_per_core_cycle`. Looked up: everything else the profile carries ([`DeviceFacts`]: SM
//! count, clocks, limits and the load/store cost from the driver and the cited references). `cost_int` and
//! `cost_sfu` have a looked-up value too, the Programming Guide's rates ([`LOOKED_UP_UNLESS_MEASURED`]):
//! the measurement replaces it, and when their kernel gives no usable cycle count the profile keeps it and
//! the report lists it as looked up, with why; any other failed measurement stops the run and writes
//! nothing. A DVFS fit that is rejected (e.g. `--clocks current`)
//! leaves its constants out of the profile — the `[dvfs_memory]` table is written only whole — and the
//! model falls back to `cyc_load` and `in_warp_delay` fixed in memory-clock time. [`CalibrateReport`] says
//! all of this, with the clock pairs, in the command's output, and every written constant cites how and
//! where it was measured.

pub mod cuda;
pub mod dvfs;
mod fake;
mod profile;
mod report;
pub mod throughput;

pub use fake::{FakeCalibrationDevice, TrueConstants};
pub use profile::{BoardSpec, DeviceFacts, arch_toml, arch_toml_with_idle, documents_toml, profile_name};
pub use report::{CalibrateReport, LookedUp};

/// Profile fields calibration measures (the others come from [`DeviceFacts`]).
pub const MEASURED: &[&str] = &[
    "cyc_load",
    "cyc_store",
    "cyc_s",
    "cyc_t",
    "cyc_r",
    "alu_latency",
    "in_warp_delay",
    "out_warp_delay",
    "l2_bandwidth_gbs",
    "dvfs_memory.latency_a",
    "dvfs_memory.latency_b",
    "dvfs_memory.delay_a",
    "dvfs_memory.delay_b",
    "dvfs_memory.l2_latency",
    "dvfs_memory.l2_delay",
    "l2_dram_bytes_per_core_cycle",
    "shared_bytes_per_cycle",
    "cost_fp32",
    "cost_fp64",
    "cost_fp16",
    "cost_conversion64",
    "cost_int",
    "cost_sfu",
];

/// Measured fields that also have a looked-up value (the Programming Guide's rates, in the device's
/// facts): the measurement replaces it in the profile, and a measurement whose kernel gives no usable
/// cycle count leaves it there (the report says so) instead of stopping the run.
pub const LOOKED_UP_UNLESS_MEASURED: &[&str] = &["cost_int", "cost_sfu"];

/// Whether `field` is measured and has no looked-up value: the device's facts leave it out.
pub fn measured_only(field: &str) -> bool {
    MEASURED.contains(&field) && !LOOKED_UP_UNLESS_MEASURED.contains(&field)
}

/// Launches [`calibrate`] makes (for a progress bar).
pub fn launches(p: CalParams) -> usize {
    p.repeats * (6 + LOADS.len() + WARPS.len() + 2 + throughput::UNITS.len())
}

/// Today's date (UTC) as `YYYY-MM-DD`, for the profile's citations.
pub fn today_utc() -> String {
    civil_date(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
fn civil_date(secs: u64) -> String {
    // Civil date from days since 1970-01-01 (H. Hinnant's `civil_from_days` algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

use crate::Error;
pub use crate::clock_control::ClockControl;
use serde::Serialize;

/// CUDA C source of the calibration kernels.
pub const SOURCE: &str = include_str!("../../kernels/calibrate.cu");

/// One calibration kernel and the PTX it must contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalEntry {
    pub name: &'static str,
    /// The constant it measures.
    pub measures: &'static str,
    pub ptx: &'static [&'static str],
}

/// Every function of `calibrate.cu`. `%clock64` proves the timing is in the code.
pub const ENTRIES: &[CalEntry] = &[
    CalEntry { name: "chase_global", measures: "cyc_load", ptx: &["ld.global.cg.u32", "%clock64"] },
    CalEntry { name: "store_cost", measures: "cyc_store", ptx: &["st.global.u32", "membar.gl", "%clock64"] },
    CalEntry { name: "chase_shared", measures: "cyc_s", ptx: &["ld.shared.u32", "%clock64"] },
    CalEntry { name: "chase_texture", measures: "cyc_t", ptx: &["tex.1d.v4.s32.s32", "%clock64"] },
    CalEntry { name: "register_chain", measures: "alu_latency", ptx: &["add.s32", "xor.b32", "%clock64"] },
    CalEntry { name: "register_issue", measures: "cyc_r", ptx: &["add.s32", "xor.b32", "%clock64"] },
    CalEntry { name: "in_warp_loads", measures: "in_warp_delay", ptx: &["ld.global.cg.u32", "%clock64"] },
    CalEntry { name: "out_warp_loads", measures: "out_warp_delay", ptx: &["ld.global.cg.u32", "%clock64"] },
    CalEntry { name: "l2_stream", measures: "l2_bandwidth_gbs", ptx: &["ld.global.cg.v4.u32", "%nctaid.x"] },
    CalEntry { name: "chase_l2", measures: "dvfs_memory.l2_latency", ptx: &["ld.global.cg.u32", "%clock64"] },
    CalEntry {
        name: "shared_bandwidth",
        measures: "shared_bytes_per_cycle",
        ptx: &["ld.shared.u32", "bar.sync", "%clock64"],
    },
    CalEntry { name: "fp32_throughput", measures: "cost_fp32", ptx: &["fma.rn.f32", "bar.sync", "%clock64"] },
    CalEntry { name: "fp64_throughput", measures: "cost_fp64", ptx: &["fma.rn.f64", "bar.sync", "%clock64"] },
    CalEntry {
        name: "fp16_throughput",
        measures: "cost_fp16",
        ptx: &["fma.rn.f16x2", "bar.sync", "%clock64"],
    },
    CalEntry {
        name: "convert64_throughput",
        measures: "cost_conversion64",
        ptx: &["cvt.f64.f32", "cvt.rn.f32.f64", "bar.sync", "%clock64"],
    },
    CalEntry {
        name: "int_throughput",
        measures: "cost_int",
        ptx: &["add.s32", "xor.b32", "bar.sync", "%clock64"],
    },
    CalEntry {
        name: "sfu_throughput",
        measures: "cost_sfu",
        ptx: &["rsqrt.approx.ftz.f32", "bar.sync", "%clock64"],
    },
];

/// The buffer a calibration kernel chases: a random cycle through `elems / stride` slots, `stride`
/// elements (u32) apart, so each step touches a new line in an order prefetchers cannot guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    pub elems: u32,
    pub stride: u32,
    pub seed: u64,
}

impl Chain {
    /// The chain's contents: `chain[i]` is the next index.
    pub fn build(&self) -> Vec<u32> {
        let slots = (self.elems / self.stride.max(1)).max(1);
        let mut order: Vec<u32> = (0..slots).collect();
        let mut s = self.seed | 1;
        for i in (1..order.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            order.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let mut chain = vec![0u32; self.elems as usize];
        for w in 0..order.len() {
            let from = order[w] * self.stride;
            let to = order[(w + 1) % order.len()] * self.stride;
            chain[from as usize] = to;
        }
        chain
    }
}

/// One launch of a calibration kernel: `threads` in one block, on one SM.
#[derive(Debug, Clone, PartialEq)]
pub struct CalLaunch {
    pub entry: &'static str,
    pub threads: u32,
    pub chain: Chain,
    pub steps: i32,
    pub knob: i32,
}

/// A GPU as calibration uses it: launches one block and returns the `out` array (u64 per slot), or
/// launches a whole grid and returns its GPU time; its clocks are set through [`ClockControl`], a refusal
/// stopping the sweep ([`ClockControl::try_set_clocks`]).
pub trait CalibrationDevice: ClockControl {
    /// What the driver says about the GPU (everything the profile needs that is not measured).
    fn facts(&self) -> DeviceFacts;
    /// Runs one launch and returns `out` (at least `2 × warps` values).
    fn run(&mut self, launch: &CalLaunch) -> Result<Vec<u64>, Error>;
    /// Runs `launch` over `blocks` blocks of `launch.threads` threads and returns its GPU time in seconds,
    /// measured with CUDA events recorded around it on the same stream.
    fn run_timed(&mut self, launch: &CalLaunch, blocks: u32) -> Result<f64, Error>;
    /// The board's power with nothing launched, at the clocks it then runs at; `None` where the device
    /// cannot read its power.
    fn idle_power(&mut self) -> Result<Option<IdlePower>, Error> {
        Ok(None)
    }
}

/// The idle board's power, as calibrate measures it after a clock pair's launches: the profile's
/// `idle_w` entry of those clocks, a floor no kernel at them draws less than.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IdlePower {
    /// The clocks NVML reported while the GPU idled (an idle GPU may drop below the pair set).
    pub clocks: crate::clocks::ClockPair,
    /// Median of the readings, W.
    pub watts: f64,
    /// Readings taken.
    pub readings: usize,
}

/// One measured constant: the median over repetitions and the spread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Field of the arch profile (`cyc_load`).
    pub field: &'static str,
    /// Median over the repetitions, in [`Estimate::unit`].
    pub median: f64,
    /// First and third quartiles.
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
    /// Repetitions.
    pub n: usize,
    /// How it was measured, in words.
    pub method: &'static str,
    /// Unit of the figures (`core cycles`, `GB/s`).
    pub unit: &'static str,
}

impl Estimate {
    fn from_samples(field: &'static str, method: &'static str, mut v: Vec<f64>) -> Result<Estimate, Error> {
        v.retain(|x| x.is_finite());
        if v.is_empty() {
            return Err(Error::Invalid(format!("calibration of {field} produced no finite measurement")));
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (v.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
        };
        Ok(Estimate {
            field,
            median: q(0.5),
            q1: q(0.25),
            q3: q(0.75),
            min: v[0],
            max: v[v.len() - 1],
            n: v.len(),
            method,
            unit: "core cycles",
        })
    }
}

/// How many repetitions and how long each chase is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CalParams {
    /// Repetitions per constant (the median is reported).
    pub repeats: usize,
    /// Dependent steps per latency measurement.
    pub steps: i32,
}

impl Default for CalParams {
    fn default() -> Self {
        CalParams { repeats: 9, steps: 4096 }
    }
}

/// Large chase over 256 MiB of u32, one element per 128-byte line: misses every cache up to Hopper's L2.
const BIG: Chain = Chain { elems: 1 << 26, stride: 32, seed: 0x5eed };
/// Store target: its own 64 MiB buffer, so the stores never overwrite the chase chain of `BIG`.
const STORE: Chain = Chain { elems: 1 << 24, stride: 32, seed: 0x570e };
/// Small chase: 1024 consecutive u32 (4 KiB), fits shared memory and the texture cache.
const SMALL: Chain = Chain { elems: 1024, stride: 1, seed: 0x7e47 };

/// Warp counts of the out_warp_delay sweep.
const WARPS: &[u32] = &[1, 2, 4, 8, 16, 32];
/// Loads per warp of the in_warp_delay sweep.
const LOADS: &[i32] = &[1, 2, 3, 4, 5, 6, 7, 8];

/// Measures every constant; `progress` is told each finished launch (for a progress bar).
pub fn calibrate(
    dev: &mut dyn CalibrationDevice,
    p: CalParams,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Estimate>, Error> {
    if p.repeats == 0 || p.steps <= 0 {
        return Err(Error::Invalid("--repeats and --steps must be at least 1".into()));
    }
    let steps = f64::from(p.steps);
    let mut run = |launch: CalLaunch, dev: &mut dyn CalibrationDevice| -> Result<Vec<u64>, Error> {
        let out = dev.run(&launch)?;
        progress(launch.entry);
        Ok(out)
    };
    let mut latency = |field: &'static str,
                       method: &'static str,
                       entry: &'static str,
                       chain: Chain,
                       per_step: f64,
                       dev: &mut dyn CalibrationDevice|
     -> Result<Estimate, Error> {
        let mut v = Vec::with_capacity(p.repeats);
        for _ in 0..p.repeats {
            let launch = CalLaunch { entry, threads: 32, chain, steps: p.steps, knob: chain.elems as i32 };
            let out = run(launch, dev)?;
            v.push(first(&out, entry)? / (steps * per_step));
        }
        Estimate::from_samples(field, method, v)
    };
    let mut est = vec![
        latency(
            "cyc_load",
            "pointer chase through DRAM, L1 bypassed (ld.global.cg), 1 thread",
            "chase_global",
            BIG,
            1.0,
            dev,
        )?,
        latency(
            "cyc_store",
            "global stores to distinct lines, each fenced (membar.gl), 1 thread",
            "store_cost",
            STORE,
            1.0,
            dev,
        )?,
        latency(
            "cyc_s",
            "dependent pointer chase in shared memory (each load returns the next address), 1 thread",
            "chase_shared",
            SMALL,
            1.0,
            dev,
        )?,
        latency(
            "cyc_t",
            "dependent pointer chase through tex1Dfetch over a 4 KiB footprint (hits after a warm-up pass), 1 thread",
            "chase_texture",
            SMALL,
            1.0,
            dev,
        )?,
        latency(
            "cyc_r",
            "eight independent integer add/xor chains, cycles per instruction",
            "register_issue",
            SMALL,
            16.0,
            dev,
        )?,
        latency(
            "alu_latency",
            "dependent integer add/xor chain, cycles per instruction",
            "register_chain",
            SMALL,
            2.0,
            dev,
        )?,
    ];
    // in_warp_delay: slope of cycles per step over the memory transactions one warp issues per step.
    let mut slopes = Vec::with_capacity(p.repeats);
    for _ in 0..p.repeats {
        let mut pts = Vec::new();
        for &k in LOADS {
            let launch =
                CalLaunch { entry: "in_warp_loads", threads: 32, chain: BIG, steps: p.steps, knob: k };
            let out = run(launch, dev)?;
            // Each thread's load touches its own line: one warp load is 32 transactions (eq. 5.3-5.4).
            pts.push((32.0 * f64::from(k), first(&out, "in_warp_loads")? / steps));
        }
        slopes.push(slope(&pts));
    }
    est.push(Estimate::from_samples(
        "in_warp_delay",
        "slope of cycles per step over the transactions of one warp: 1-8 independent uncoalesced loads, 32 lines each",
        slopes,
    )?);
    // out_warp_delay: slope of the last warp's finish (cycles per load) over the warps in the block.
    let mut slopes = Vec::with_capacity(p.repeats);
    for _ in 0..p.repeats {
        let mut pts = Vec::new();
        for &w in WARPS {
            let launch = CalLaunch {
                entry: "out_warp_loads",
                threads: 32 * w,
                chain: BIG,
                steps: p.steps / 16,
                knob: 0,
            };
            let out = run(launch, dev)?;
            if out.len() < 2 * w as usize {
                return Err(Error::Invalid(format!(
                    "out_warp_loads returned {} values for {w} warps",
                    out.len()
                )));
            }
            let last = (0..w as usize).map(|i| out[2 * i] as f64).fold(0.0, f64::max);
            pts.push((f64::from(w), last / f64::from((p.steps / 16).max(1))));
        }
        slopes.push(slope(&pts));
    }
    est.push(Estimate::from_samples(
        "out_warp_delay",
        "slope of the last warp's finish (cycles per dependent load) over 1-32 warps of one block",
        slopes,
    )?);
    est.push(l2_bandwidth(dev, p, progress)?);
    est.extend(throughput::measure(dev, p, progress)?);
    Ok(est)
}

/// Bytes the L2 stream moves per timed launch pair, at least: enough that the extra passes take
/// milliseconds even at the ~10 TB/s of recent L2s.
const L2_STREAM_BYTES: f64 = 8e9;

/// L2 bandwidth: the whole grid reads a footprint of half the L2 (between 256 KiB and 32 MiB) `k` and
/// `2k` times; bandwidth = footprint · k / (t(2k) − t(k)), so launch overhead and the cold first pass
/// cancel. `p.repeats` pairs; the median is reported in GB/s.
fn l2_bandwidth(
    dev: &mut dyn CalibrationDevice,
    p: CalParams,
    progress: &mut dyn FnMut(&str),
) -> Result<Estimate, Error> {
    let mut timed = |dev: &mut dyn CalibrationDevice, launch: &CalLaunch, blocks| {
        let t = dev.run_timed(launch, blocks)?;
        progress(launch.entry);
        Ok::<f64, Error>(t)
    };
    let facts = dev.facts();
    let sm = facts.values.iter().find(|(f, _, _)| f == "sm_count").map_or(1.0, |v| v.1).max(1.0);
    // Half the L2, in whole 16-byte quads; u32 elements, so `elems` is a multiple of 4.
    let footprint = (facts.l2_cache_bytes / 2).clamp(256 << 10, 32 << 20) / 16 * 16;
    let chain = Chain { elems: (footprint / 4) as u32, stride: 1, seed: 0x12b4 };
    let k = (L2_STREAM_BYTES / footprint as f64).ceil().max(1.0) as i32;
    // 8 blocks of 256 threads per SM: 64 warps, the most any SM since Kepler can hold (extra blocks queue).
    let blocks = (8.0 * sm) as u32;
    let mut v = Vec::with_capacity(p.repeats);
    for _ in 0..p.repeats {
        let launch = |steps| CalLaunch { entry: "l2_stream", threads: 256, chain, steps, knob: -1 };
        let t1 = timed(dev, &launch(k), blocks)?;
        let t2 = timed(dev, &launch(2 * k), blocks)?;
        let dt = t2 - t1;
        v.push(if dt > 0.0 { footprint as f64 * f64::from(k) / dt / 1e9 } else { f64::NAN });
    }
    let mut e = Estimate::from_samples(
        "l2_bandwidth_gbs",
        "whole grid (8 blocks of 256 threads per SM) streaming half the L2 with 16-byte ld.global.cg loads; \
         extra bytes over extra time between k and 2k passes, CUDA events",
        v,
    )?;
    e.unit = "GB/s";
    Ok(e)
}

fn first(out: &[u64], entry: &str) -> Result<f64, Error> {
    match out.first() {
        Some(&c) if c > 0 => Ok(c as f64),
        _ => Err(Error::Invalid(format!("{entry} returned no cycle count: the kernel did not run"))),
    }
}

/// Least-squares slope of y over x.
fn slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}

#[cfg(test)]
mod tests;
