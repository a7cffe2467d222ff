//! The suite's catalogue: the CUDA source, its functions ([`Entry`]) and the kernels run from them
//! ([`SuiteKernel`]), and choosing among them (`--kernels`).

use super::LANE_DEPENDENT_BRANCH;
use crate::Error;
use serde::{Deserialize, Serialize};

/// CUDA C source of every suite kernel.
pub const SOURCE: &str = include_str!("../../kernels/suite.cu");

/// Elements (floats) of the suite's input and output buffers: 16 Mi floats = 64 MiB each, larger than the
/// L2 of every GPU up to Hopper (50 MiB), so strided loads reach DRAM.
pub const BUFFER_ELEMS: u32 = 1 << 24;

/// One CUDA function of `suite.cu`: what it exercises and how to check that the compiler kept it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Function name in `suite.cu`.
    pub name: &'static str,
    /// Execution pattern (paper §5.4-B) in words.
    pub pattern: &'static str,
    /// Canonical counters (models/src/profile.rs) this kernel is meant to drive.
    pub drives: &'static [&'static str],
    /// PTX the function's body must contain (see [`ptx_has`](super::ptx_has)); proves the work was not
    /// optimized away.
    pub ptx: &'static [&'static str],
    /// What the knob means.
    pub knob: &'static str,
}

/// Every function of `suite.cu`.
pub const ENTRIES: &[Entry] = &[
    Entry {
        name: "global_load",
        pattern: "global loads, coalesced (stride 1) to uncoalesced (stride >= 32)",
        drives: &["gld_request", "l1_global_load_miss", "dram_read_bytes"],
        ptx: &["ld.global.cg.f32"],
        knob: "stride between neighbouring threads, elements",
    },
    Entry {
        name: "global_store",
        pattern: "global stores, coalesced to uncoalesced",
        drives: &["global_store_transaction", "dram_write_bytes"],
        ptx: &["st.global.f32"],
        knob: "stride between neighbouring threads, elements",
    },
    Entry {
        name: "l1_hit",
        pattern: "L1 hits: a small per-block footprint re-read through L1",
        drives: &["gld_request", "l1_global_load_hit"],
        ptx: &["ld.global.ca.f32"],
        knob: "footprint, floats (power of two)",
    },
    Entry {
        name: "l1_miss",
        pattern: "L1 misses: one line per thread over the whole buffer, cached in L2 only",
        drives: &["gld_request", "l1_global_load_miss", "dram_read_bytes"],
        ptx: &["ld.global.cg.f32"],
        knob: "extra offset per step, elements",
    },
    Entry {
        name: "shared_conflict",
        pattern: "shared memory with 1- to 32-way bank conflicts",
        drives: &["shared_load", "shared_store", "l1_shared_bank_conflict"],
        ptx: &["ld.shared.f32", "st.shared.f32"],
        knob: "lanes per bank (conflict ways)",
    },
    Entry {
        name: "texture_fetch",
        pattern: "texture fetches, high hit rate (small footprint) or low (whole buffer)",
        drives: &["tex0_cache_sector_queries", "tex0_cache_sector_misses"],
        ptx: &["tex.1d.v4.f32.s32"],
        knob: "footprint, elements (power of two)",
    },
    Entry {
        name: "fp32_fma",
        pattern: "FP32 fused multiply-add",
        drives: &["inst_executed", "inst_fp_32"],
        ptx: &["fma.rn.f32"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "fp64_fma",
        pattern: "FP64 fused multiply-add",
        drives: &["inst_executed", "inst_fp_64"],
        ptx: &["fma.rn.f64"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "sfu",
        pattern: "special functions (sin, rsqrt, exp2) on the SFU",
        drives: &["inst_executed", "inst_special"],
        ptx: &["sin.approx.f32", "rsqrt.approx.f32", "ex2.approx"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "integer",
        pattern: "integer multiply-add, shift, xor",
        drives: &["inst_executed", "inst_integer"],
        ptx: &["mad.lo.s32", "xor.b32", "shr.u32"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "branch_divergence",
        pattern: "branch divergence: lanes split over 1 to 32 paths",
        drives: &["branch", "divergent_branch", "inst_executed"],
        ptx: &[LANE_DEPENDENT_BRANCH, "%tid.x"],
        knob: "paths per warp",
    },
    Entry {
        name: "local_spill",
        pattern: "local-memory spills (a run-time indexed per-thread array)",
        drives: &["local_load", "local_store"],
        ptx: &["ld.local.f32", "st.local.f32"],
        knob: "live array size, floats (power of two, <= 64)",
    },
    Entry {
        name: "mix_compute_memory",
        pattern: "compute/memory mix",
        drives: &["gld_request", "inst_fp_32", "dram_read_bytes"],
        ptx: &["ld.global.cg.f32", "fma.rn.f32"],
        knob: "FP32 FMAs per global load",
    },
    Entry {
        name: "idle",
        pattern: "idle: resident warps that only sleep",
        drives: &[],
        ptx: &["nanosleep.u32"],
        knob: "nanoseconds per nap",
    },
];

/// One run of the suite: a function of `suite.cu` at one intensity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteKernel {
    /// Unique name, the table's group label (`global_load_s32`).
    pub name: String,
    /// Function in `suite.cu`.
    pub entry: String,
    /// The pattern's knob.
    pub knob: i32,
    /// Fraction of the full grid launched (1 = every SM busy at full occupancy of the suite's blocks).
    pub grid_fraction: f64,
    /// Inner-loop repetitions per launch.
    pub iters: i32,
}

impl SuiteKernel {
    /// The [`Entry`] this kernel runs.
    pub fn entry(&self) -> Option<&'static Entry> {
        ENTRIES.iter().find(|e| e.name == self.entry)
    }
}

fn k(name: &str, entry: &str, knob: i32, grid_fraction: f64, iters: i32) -> SuiteKernel {
    SuiteKernel { name: name.into(), entry: entry.into(), knob, grid_fraction, iters }
}

/// The whole suite, in run order: every pattern at several intensities (48 kernels).
pub fn kernels() -> Vec<SuiteKernel> {
    let mut v = Vec::new();
    for s in [1, 2, 4, 8, 32] {
        v.push(k(&format!("global_load_s{s}"), "global_load", s, 1.0, 256));
    }
    v.push(k("global_load_s1_quarter", "global_load", 1, 0.25, 256));
    for s in [1, 4, 32] {
        v.push(k(&format!("global_store_s{s}"), "global_store", s, 1.0, 256));
    }
    v.push(k("global_store_s1_quarter", "global_store", 1, 0.25, 256));
    for f in [256, 4096] {
        v.push(k(&format!("l1_hit_f{f}"), "l1_hit", f, 1.0, 1024));
    }
    v.push(k("l1_miss", "l1_miss", 1, 1.0, 256));
    v.push(k("l1_miss_quarter", "l1_miss", 1, 0.25, 256));
    for w in [1, 2, 4, 8, 16, 32] {
        v.push(k(&format!("shared_conflict_{w}way"), "shared_conflict", w, 1.0, 2048));
    }
    v.push(k("texture_hit_high", "texture_fetch", 1024, 1.0, 1024));
    v.push(k("texture_hit_low", "texture_fetch", BUFFER_ELEMS as i32, 1.0, 256));
    v.push(k("texture_hit_high_quarter", "texture_fetch", 1024, 0.25, 1024));
    for (e, iters) in [("fp32_fma", 8192), ("fp64_fma", 2048), ("sfu", 2048), ("integer", 8192)] {
        for (frac, tag) in [(1.0, "full"), (0.5, "half"), (0.125, "eighth")] {
            v.push(k(&format!("{e}_{tag}"), e, 1, frac, iters));
        }
    }
    for p in [1, 2, 4, 8, 32] {
        v.push(k(&format!("branch_divergence_{p}paths"), "branch_divergence", p, 1.0, 512));
    }
    for a in [16, 64] {
        v.push(k(&format!("local_spill_{a}"), "local_spill", a, 1.0, 2048));
    }
    for r in [1, 4, 16, 64, 256] {
        v.push(k(&format!("mix_fma{r}_per_load"), "mix_compute_memory", r, 1.0, 256));
    }
    v.push(k("idle_sleep", "idle", 100_000, 1.0, 64));
    v
}

/// Selects suite kernels by name or entry (`--kernels shared_conflict,fp32_fma_full`); empty = all.
pub fn select_kernels(filter: &[String]) -> Result<Vec<SuiteKernel>, Error> {
    let all = kernels();
    if filter.is_empty() {
        return Ok(all);
    }
    let mut out: Vec<SuiteKernel> = Vec::new();
    for f in filter {
        let hits: Vec<&SuiteKernel> = all.iter().filter(|k| &k.name == f || &k.entry == f).collect();
        if hits.is_empty() {
            let entries: Vec<&str> = ENTRIES.iter().map(|e| e.name).collect();
            return Err(Error::Invalid(format!(
                "--kernels: no suite kernel '{f}': use a pattern ({}) or a kernel name from `gpumodel collect --suite --list-kernels`",
                entries.join(", ")
            )));
        }
        for h in hits {
            if !out.iter().any(|k| k.name == h.name) {
                out.push(h.clone());
            }
        }
    }
    Ok(out)
}
