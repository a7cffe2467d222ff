//! Throughput of the SM's units, measured on one SM: shared-memory bandwidth (bytes per core cycle) and
//! the issue cost of FP32, FP64 and FP16 arithmetic, of 64-bit conversions, of 32-bit integer arithmetic
//! and of special-function instructions (core cycles per warp instruction, the profile's `cost_*`
//! convention: 32 / results per clock per SM, with a packed `half2` instruction counting as one
//! instruction).
//!
//! The method is the microbenchmark one of X. Mei and X. Chu, "Dissecting GPU memory hierarchy through
//! microbenchmarking" (IEEE TPDS 28(1), 2017), and Z. Jia et al., "Dissecting the NVIDIA Volta GPU
//! architecture via microbenchmarking" (arXiv:1804.06826, 2018): many warps on one SM, each with several
//! independent chains of the measured instruction (so the unit, not a latency, sets the pace), timed by the
//! SM's cycle counter. Each kernel runs one block of [`BLOCK_THREADS`] threads; every warp starts after a
//! common barrier and reports its own finish, and the last finish is the block's time. Nothing depends on
//! the launch overhead, and the result is per SM, whatever the SM count.
//!
//! `cost_int` and `cost_sfu` also have a looked-up value ([`LOOKED_UP_UNLESS_MEASURED`]): when their
//! kernel gives no usable cycle count the unit is left out and the profile keeps that value, where the
//! other units stop the run (they have no value to fall back on).

use super::{CalLaunch, CalParams, CalibrationDevice, Estimate, LOOKED_UP_UNLESS_MEASURED, SMALL};
use crate::Error;

/// Threads of the one block each throughput kernel runs: 32 warps, the most one block may hold, and no
/// more than any SM since Kepler can keep resident.
pub const BLOCK_THREADS: u32 = 1024;

/// What a kernel's count is divided by (or into).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Per {
    /// Bytes moved per SM per core cycle; the kernel moves this many bytes per thread and step.
    BytesPerCycle(u32),
    /// Core cycles per warp instruction; the kernel issues this many of them per warp and step.
    CyclesPerWarpInstruction(u32),
}

/// One throughput measurement: the profile field, its kernel and what one step of it does.
#[derive(Debug, Clone, Copy)]
pub struct Unit {
    pub field: &'static str,
    pub entry: &'static str,
    per: Per,
    method: &'static str,
}

/// The measurements, in the order they run and are reported.
pub const UNITS: &[Unit] = &[
    Unit {
        field: "shared_bytes_per_cycle",
        entry: "shared_bandwidth",
        per: Per::BytesPerCycle(16),
        method: "conflict-free 32-bit shared-memory loads (every lane its own bank), 32 warps of one block, \
                 4 independent chains per thread; bytes over the SM cycles of the last warp (clock64) \
                 [Mei & Chu, TPDS 2017; Jia et al., arXiv:1804.06826]",
    },
    Unit {
        field: "cost_fp32",
        entry: "fp32_throughput",
        per: Per::CyclesPerWarpInstruction(8),
        method: "8 independent FP32 FMA chains per thread, 32 warps of one block; SM cycles of the last warp \
                 (clock64) per warp instruction [Mei & Chu, TPDS 2017; Jia et al., arXiv:1804.06826]",
    },
    Unit {
        field: "cost_fp64",
        entry: "fp64_throughput",
        per: Per::CyclesPerWarpInstruction(8),
        method: "8 independent FP64 FMA chains per thread, 32 warps of one block; SM cycles of the last warp \
                 (clock64) per warp instruction [Mei & Chu, TPDS 2017; Jia et al., arXiv:1804.06826]",
    },
    Unit {
        field: "cost_fp16",
        entry: "fp16_throughput",
        per: Per::CyclesPerWarpInstruction(8),
        method: "8 independent packed-half FMA chains (fma.rn.f16x2, two FP16 results per thread) per thread, \
                 32 warps of one block; SM cycles of the last warp (clock64) per warp instruction \
                 [Mei & Chu, TPDS 2017; Jia et al., arXiv:1804.06826]",
    },
    Unit {
        field: "cost_conversion64",
        entry: "convert64_throughput",
        per: Per::CyclesPerWarpInstruction(16),
        method: "8 independent chains of F2F conversions f32->f64->f32 per thread (2 per chain and step), 32 \
                 warps of one block; SM cycles of the last warp (clock64) per warp instruction \
                 [Mei & Chu, TPDS 2017; Jia et al., arXiv:1804.06826]",
    },
    Unit {
        field: "cost_int",
        entry: "int_throughput",
        per: Per::CyclesPerWarpInstruction(16),
        method: "8 independent chains per thread of alternating 32-bit integer adds and xors (add.s32, xor.b32; \
                 no multiply), 16 per step, 32 warps of one block; SM cycles of the last warp (clock64) per warp \
                 instruction [Mei & Chu, TPDS 2017; Jia et al., arXiv:1804.06826]",
    },
    Unit {
        field: "cost_sfu",
        entry: "sfu_throughput",
        per: Per::CyclesPerWarpInstruction(8),
        method: "8 independent chains of special-function reciprocal square roots (rsqrt.approx.ftz.f32, MUFU) \
                 per thread, 32 warps of one block; SM cycles of the last warp (clock64) per warp instruction \
                 [Mei & Chu, TPDS 2017; Jia et al., arXiv:1804.06826]",
    },
];

/// Runs every [`UNITS`] kernel `p.repeats` times; the median of each is its estimate. A unit with a
/// looked-up value ([`LOOKED_UP_UNLESS_MEASURED`]) whose kernel gives no usable cycle count is left out
/// (the profile keeps that value); any other failure is the run's.
pub fn measure(
    dev: &mut dyn CalibrationDevice,
    p: CalParams,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Estimate>, Error> {
    let mut out = Vec::with_capacity(UNITS.len());
    for u in UNITS {
        match measure_unit(dev, u, p, progress) {
            Ok(e) => out.push(e),
            Err(Error::Invalid(_)) if LOOKED_UP_UNLESS_MEASURED.contains(&u.field) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

fn measure_unit(
    dev: &mut dyn CalibrationDevice,
    u: &Unit,
    p: CalParams,
    progress: &mut dyn FnMut(&str),
) -> Result<Estimate, Error> {
    let warps = BLOCK_THREADS / 32;
    let mut v = Vec::with_capacity(p.repeats);
    for _ in 0..p.repeats {
        let launch =
            CalLaunch { entry: u.entry, threads: BLOCK_THREADS, chain: SMALL, steps: p.steps, knob: 1 };
        let cycles = last_finish(&dev.run(&launch)?, warps, u.entry)?;
        progress(u.entry);
        let steps = f64::from(p.steps);
        v.push(match u.per {
            Per::BytesPerCycle(b) => f64::from(b) * f64::from(BLOCK_THREADS) * steps / cycles,
            Per::CyclesPerWarpInstruction(k) => cycles / (f64::from(warps) * steps * f64::from(k)),
        });
    }
    let mut e = Estimate::from_samples(u.field, u.method, v)?;
    e.unit = match u.per {
        Per::BytesPerCycle(_) => "bytes per SM per core cycle",
        Per::CyclesPerWarpInstruction(_) => "core cycles per warp instruction",
    };
    Ok(e)
}

/// The block's time: the last of the `warps` finishes (`out[2w]`, cycles since the common start). A warp
/// that reports no cycles did not run, and then neither did the measurement.
fn last_finish(out: &[u64], warps: u32, entry: &str) -> Result<f64, Error> {
    if out.len() < 2 * warps as usize {
        return Err(Error::Invalid(format!("{entry} returned {} values for {warps} warps", out.len())));
    }
    let finishes: Vec<u64> = out.iter().step_by(2).take(warps as usize).copied().collect();
    match finishes.iter().max() {
        Some(&c) if !finishes.contains(&0) => Ok(c as f64),
        _ => Err(Error::Invalid(format!(
            "{entry} returned no cycle count for some warp: the kernel did not run"
        ))),
    }
}
