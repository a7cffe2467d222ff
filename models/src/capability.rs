//! What NVIDIA documents per compute capability: the occupancy ceilings of the CUDA C++ Programming
//! Guide's "Technical Specifications per Compute Capability" table, the per-SM results per clock of its
//! "Arithmetic Instructions" table, and the warp schedulers and LD/ST units of each architecture
//! whitepaper's SM diagram. Everything a timing-model profile needs that does not depend on the board
//! (SM count, clocks, memory) or on a measurement (latencies): `gpumodel arch new` writes a profile for a
//! GPU from these and the board's own numbers, and `gpumodel calibrate` falls back on them.

/// The documented facts of one compute capability (per SM).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapabilityFacts {
    /// `8.9`.
    pub capability: &'static str,
    /// Architecture name, for the citation (`Ada`).
    pub architecture: &'static str,
    pub max_warps_per_sm: f64,
    pub max_blocks_per_sm: f64,
    /// Shared memory per SM and the most one block may use (opt-in), bytes.
    pub shared_mem_per_sm: f64,
    pub max_shared_mem_per_block: f64,
    pub schedulers_per_sm: f64,
    /// LD/ST units per SM (whitepaper SM diagram).
    pub ldst_units: f64,
    /// Results per clock per SM: 32-bit floating-point FMA, 64-bit FMA, 32-bit integer add, 32-bit
    /// special functions (reciprocal, rsqrt, log2, exp2, sin, cos), conversions from and to 64-bit types.
    pub fp32: f64,
    pub fp64: f64,
    pub int32: f64,
    pub sfu: f64,
    pub conversion64: f64,
}

const fn row(
    capability: &'static str,
    architecture: &'static str,
    warps_blocks: (f64, f64),
    shared_kib: (f64, f64),
    schedulers_ldst: (f64, f64),
    rates: [f64; 5],
) -> CapabilityFacts {
    CapabilityFacts {
        capability,
        architecture,
        max_warps_per_sm: warps_blocks.0,
        max_blocks_per_sm: warps_blocks.1,
        shared_mem_per_sm: shared_kib.0 * 1024.0,
        max_shared_mem_per_block: shared_kib.1 * 1024.0,
        schedulers_per_sm: schedulers_ldst.0,
        ldst_units: schedulers_ldst.1,
        fp32: rates[0],
        fp64: rates[1],
        int32: rates[2],
        sfu: rates[3],
        conversion64: rates[4],
    }
}

/// The compute capabilities this table covers (Maxwell to Hopper, the CUDA 12 Programming Guide's
/// columns for discrete GPUs). Rates: FP32, FP64, INT32 add, SFU, 64-bit conversions.
pub const CAPABILITIES: &[CapabilityFacts] = &[
    row("5.0", "Maxwell", (64.0, 32.0), (64.0, 48.0), (4.0, 32.0), [128.0, 4.0, 128.0, 32.0, 4.0]),
    row("5.2", "Maxwell", (64.0, 32.0), (96.0, 48.0), (4.0, 32.0), [128.0, 4.0, 128.0, 32.0, 4.0]),
    row("6.0", "Pascal", (64.0, 32.0), (64.0, 48.0), (2.0, 16.0), [64.0, 32.0, 64.0, 16.0, 16.0]),
    row("6.1", "Pascal", (64.0, 32.0), (96.0, 48.0), (4.0, 32.0), [128.0, 4.0, 128.0, 32.0, 4.0]),
    row("7.0", "Volta", (64.0, 32.0), (96.0, 96.0), (4.0, 32.0), [64.0, 32.0, 64.0, 16.0, 16.0]),
    row("7.5", "Turing", (32.0, 16.0), (64.0, 64.0), (4.0, 16.0), [64.0, 2.0, 64.0, 16.0, 2.0]),
    row("8.0", "Ampere", (64.0, 32.0), (164.0, 163.0), (4.0, 32.0), [64.0, 32.0, 64.0, 16.0, 16.0]),
    row("8.6", "Ampere", (48.0, 16.0), (100.0, 99.0), (4.0, 16.0), [128.0, 2.0, 64.0, 16.0, 2.0]),
    row("8.9", "Ada", (48.0, 24.0), (100.0, 99.0), (4.0, 16.0), [128.0, 2.0, 64.0, 16.0, 2.0]),
    row("9.0", "Hopper", (64.0, 32.0), (228.0, 227.0), (4.0, 32.0), [128.0, 64.0, 64.0, 16.0, 16.0]),
];

/// The citation of [`CAPABILITIES`].
pub const SOURCE: &str = "CUDA C++ Programming Guide (CUDA 12): 'Technical Specifications per Compute Capability' \
    (resident warps and blocks per SM, shared memory per SM and per block) and 'Arithmetic Instructions' \
    (results per clock cycle per SM: 32-bit floating-point add/multiply/multiply-add, 64-bit floating-point, \
    32-bit integer add, 32-bit reciprocal/rsqrt/log2/exp2/sin/cos, type conversions from and to 64-bit types); \
    warp schedulers and LD/ST units per SM from the architecture whitepapers' SM diagrams (Maxwell GM204, \
    Pascal GP100/GP102, Volta GV100, Turing TU102, Ampere GA100/GA102, Ada AD102, Hopper GH100)";

/// The facts of compute capability `cc` (`8.9`), or `None` when the table does not cover it.
pub fn facts(cc: &str) -> Option<CapabilityFacts> {
    CAPABILITIES.iter().find(|f| f.capability == cc.trim()).copied()
}

/// The facts of compute capability `cc`, or the error that names the covered ones and what to do.
pub fn require(cc: &str) -> crate::Result<CapabilityFacts> {
    facts(cc).ok_or_else(|| {
        crate::Error::Invalid(format!(
            "compute capability {} is not in the documented table (covered: {}): run `gpumodel calibrate` on the \
             GPU, or copy a built-in profile and edit it",
            cc.trim(),
            CAPABILITIES.iter().map(|f| f.capability).collect::<Vec<_>>().join(", ")
        ))
    })
}

impl CapabilityFacts {
    /// Issue cycles of one warp instruction on a unit with `rate` results per clock per SM (the arch
    /// profiles' `cost_*` convention: 32 / rate).
    pub fn cost(rate: f64) -> f64 {
        32.0 / rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::ArchProfile;

    /// The table agrees with every shipped profile of a covered capability, each written by hand from
    /// its own whitepaper and the Guide (so a wrong row here, or a wrong profile, fails).
    #[test]
    fn the_table_agrees_with_the_shipped_profiles() {
        let mut checked = 0;
        for name in ArchProfile::builtin_names() {
            let a = ArchProfile::builtin(name).unwrap();
            let Some(f) = facts(&a.compute_capability) else { continue };
            checked += 1;
            let pairs = [
                ("max_warps_per_sm", a.max_warps_per_sm.value, f.max_warps_per_sm),
                ("max_blocks_per_sm", a.max_blocks_per_sm.value, f.max_blocks_per_sm),
                ("shared_mem_per_sm", a.shared_mem_per_sm.value, f.shared_mem_per_sm),
                ("max_shared_mem_per_block", a.max_shared_mem_per_block.value, f.max_shared_mem_per_block),
                ("schedulers_per_sm", a.schedulers_per_sm.value, f.schedulers_per_sm),
                ("cost_ldst", a.cost_ldst.value, CapabilityFacts::cost(f.ldst_units)),
                ("cost_fp32", a.cost_fp32.value, CapabilityFacts::cost(f.fp32)),
                ("cost_fp64", a.cost_fp64.value, CapabilityFacts::cost(f.fp64)),
                ("cost_int", a.cost_int.value, CapabilityFacts::cost(f.int32)),
                ("cost_sfu", a.cost_sfu.value, CapabilityFacts::cost(f.sfu)),
            ];
            for (field, shipped, table) in pairs {
                assert_eq!(shipped, table, "{name} ({}): {field}", a.compute_capability);
            }
            if let Some(c) = &a.cost_conversion64 {
                assert_eq!(c.value, CapabilityFacts::cost(f.conversion64), "{name}: cost_conversion64");
            }
        }
        // GTX 980, Titan X (5.2), GTX 1080 Ti (6.1), P100 (6.0), V100 (7.0), A100 (8.0), H100 (9.0).
        assert_eq!(checked, 7);
    }

    #[test]
    fn lookups() {
        assert_eq!(facts(" 8.9").unwrap().max_warps_per_sm, 48.0);
        assert!(facts("2.0").is_none() && facts("10.0").is_none());
        let msg = require("10.0").unwrap_err().to_string();
        assert!(msg.contains("10.0") && msg.contains("covered: 5.0, 5.2, 6.0"), "{msg}");
    }
}
