//! The kernel profile: what `predict` needs to know about one kernel launch, and what the collector's
//! range profiler and the ncu / nvprof importers write.
//!
//! Counter totals are keyed by **canonical counter names** — the paper's Fermi event names (Table 5.2)
//! plus an instruction mix — so that one timing and power model reads profiles from any chip. The
//! per-chip maps in `models/counters/*.toml` say which CUPTI metric gives each canonical counter.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Canonical counters (totals over one launch, all SMs) and what each counts.
pub const CANONICAL_COUNTERS: &[(&str, &str)] = &[
    ("gld_request", "global load instructions executed (warp level)"),
    ("l1_global_load_hit", "global load requests that hit in L1"),
    ("l1_global_load_miss", "global load requests that missed L1"),
    ("uncached_global_load_transaction", "global load transactions that bypass L1"),
    ("global_store_transaction", "global store transactions"),
    ("local_load", "local-memory load instructions (spills)"),
    ("local_store", "local-memory store instructions (spills)"),
    ("inst_executed", "warp instructions executed"),
    ("branch", "branch instructions executed"),
    ("divergent_branch", "divergent branches"),
    ("shared_load", "shared-memory load instructions"),
    ("shared_store", "shared-memory store instructions"),
    ("l1_shared_bank_conflict", "extra shared-memory wavefronts caused by bank conflicts"),
    ("tex0_cache_sector_queries", "texture cache sector queries"),
    ("tex0_cache_sector_misses", "texture cache sector misses"),
    ("inst_fp_32", "FP32 warp instructions (FMA counted once)"),
    ("inst_fp_64", "FP64 warp instructions"),
    ("inst_integer", "integer warp instructions"),
    ("inst_special", "special-function (SFU: sin, rsqrt, …) warp instructions"),
    ("inst_bit_convert", "type-conversion (F2F, F2I, I2F, I2I) warp instructions"),
    ("dram_read_bytes", "bytes read from DRAM"),
    ("dram_write_bytes", "bytes written to DRAM"),
    ("l2_read_transactions", "32-byte L2 read transactions"),
    ("l2_write_transactions", "32-byte L2 write transactions"),
];

/// Further counters that profiler exports carry and the roofline fallback reads (not model inputs, not
/// in the per-chip CUPTI maps): accepted in kernel profiles beside [`CANONICAL_COUNTERS`].
pub const EXPORT_COUNTERS: &[(&str, &str)] = &[
    ("inst_fp_16", "FP16 warp instructions"),
    ("inst_tensor", "tensor-pipe warp instructions (HMMA, IMMA, DMMA)"),
    ("shared_wavefronts", "shared-memory data-pipe wavefronts (nvprof: shared load + store transactions)"),
    ("dram_bytes", "bytes read from and written to DRAM, when the export does not split them"),
    ("l2_bytes", "bytes through L2 (reads, writes, atomics), when the export does not split them"),
];

/// The largest counter total a launch can have: 10^18 events would take 11 days at 10^12 events per
/// second. Larger values (1e308, an overflowed sum) are a broken export, refused by [`KernelProfile::check`].
pub const MAX_COUNTER_TOTAL: f64 = 1e18;

/// The ten model inputs of the paper (Table 5.2), as sums of canonical counters.
pub const MODEL_INPUTS: &[(&str, &[&str])] = &[
    ("G_load", &["gld_request", "l1_global_load_hit", "l1_global_load_miss"]),
    ("G_store", &["global_store_transaction"]),
    ("L_load", &["local_load"]),
    ("L_store", &["local_store"]),
    ("exec_inst", &["inst_executed"]),
    ("branch", &["branch"]),
    ("divergent_branch", &["divergent_branch"]),
    ("S_access", &["shared_load", "l1_shared_bank_conflict"]),
    ("T_hits", &["tex0_cache_sector_queries"]),
    ("T_miss", &["tex0_cache_sector_misses"]),
];

/// Launch configuration of one kernel. All zeros (the default) means unknown: an export without launch
/// shapes still gives a profile that the roofline fallback can predict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// Grid size in blocks (x, y, z).
    pub grid: [u32; 3],
    /// Block size in threads (x, y, z).
    pub block: [u32; 3],
    /// Registers per thread.
    #[serde(default)]
    pub registers_per_thread: u32,
    /// Shared memory per block, bytes (static + dynamic).
    #[serde(default)]
    pub shared_mem_per_block: u32,
}

impl Launch {
    /// Total blocks.
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product()
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u32 {
        self.block.iter().product()
    }

    /// Whether the shape is known (not the all-zero default).
    pub fn is_known(&self) -> bool {
        *self != Launch::default()
    }
}

/// Measured values, when the profile comes from a run (for validation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// Kernel time, seconds.
    #[serde(default)]
    pub time_s: Option<f64>,
    /// Average power, watts.
    #[serde(default)]
    pub power_w: Option<f64>,
    /// Core and memory clocks of the measurement, MHz.
    #[serde(default)]
    pub core_mhz: Option<f64>,
    #[serde(default)]
    pub mem_mhz: Option<f64>,
}

/// One kernel: name, launch, counter totals, optional code-analysis inputs and measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelProfile {
    pub name: String,
    /// Where the numbers come from (a paper, a tool, a run).
    #[serde(default)]
    pub source: String,
    /// Architecture profile name the counters were measured on, if known.
    #[serde(default)]
    pub arch: Option<String>,
    /// The launch shape; absent (all zeros) when the source had none.
    #[serde(default)]
    pub launch: Launch,
    /// Canonical counter totals for one launch.
    #[serde(default)]
    pub counters: BTreeMap<String, f64>,
    /// Inputs of the timing model that come from code analysis when counters lack them: any canonical
    /// counter name (used when `counters` lacks it), `barriers` (barriers each warp executes) and
    /// `achieved_occupancy` (0–1, the resident-warp fraction when no `--warps` is given). See
    /// `timing::TimingInputs::from_profile`.
    #[serde(default)]
    pub code: BTreeMap<String, f64>,
    #[serde(default)]
    pub measured: Measured,
}

impl KernelProfile {
    /// Reads a profile from TOML or JSON (by extension; `.json` is JSON, anything else TOML).
    pub fn from_file(path: &Path) -> Result<KernelProfile> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let source = path.display().to_string();
        let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let p: KernelProfile = if is_json {
            serde_json::from_str(&text).map_err(|e| Error::Document {
                file: source.clone(),
                message: format!("not a kernel profile: {e}"),
            })?
        } else {
            toml::from_str(&text).map_err(|e| Error::Document {
                file: source.clone(),
                message: format!("not a kernel profile: {}", e.message()),
            })?
        };
        p.check(&source)?;
        Ok(p)
    }

    /// Checks values a user may get wrong: unknown counter names, negative totals, empty launches.
    pub fn check(&self, source: &str) -> Result<()> {
        if self.launch.is_known() && (self.launch.blocks() == 0 || self.launch.threads_per_block() == 0) {
            return Err(Error::Invalid(format!(
                "{source}: launch.grid and launch.block must be at least 1 in every dimension (or both absent)"
            )));
        }
        for (k, v) in &self.counters {
            if !CANONICAL_COUNTERS.iter().chain(EXPORT_COUNTERS).any(|(c, _)| c == k) {
                let known: Vec<&str> =
                    CANONICAL_COUNTERS.iter().chain(EXPORT_COUNTERS).map(|(c, _)| *c).collect();
                return Err(Error::Invalid(format!(
                    "{source}: unknown counter '{k}' (known: {})",
                    known.join(", ")
                )));
            }
            if !v.is_finite() || *v < 0.0 || *v > MAX_COUNTER_TOTAL {
                return Err(Error::Invalid(format!(
                    "{source}: counter '{k}' is {v}: a launch's total must be finite, ≥ 0 and at most 1e18"
                )));
            }
        }
        for (k, v) in &self.code {
            let ok = match k.as_str() {
                "achieved_occupancy" => *v > 0.0 && *v <= 1.0,
                _ => v.is_finite() && *v >= 0.0 && *v <= MAX_COUNTER_TOTAL,
            };
            if !ok {
                let range = if k == "achieved_occupancy" {
                    "the fraction of the maximum resident warps, within (0, 1]"
                } else {
                    "finite, ≥ 0 and at most 1e18"
                };
                return Err(Error::Invalid(format!("{source}: code.{k} is {v}: it must be {range}")));
            }
        }
        for (k, v) in [("time_s", self.measured.time_s), ("power_w", self.measured.power_w)] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0 && v < 1e6)
            {
                return Err(Error::Invalid(format!(
                    "{source}: measured.{k} is {v}: it must be a positive number below 1e6"
                )));
            }
        }
        for (k, v) in [("core_mhz", self.measured.core_mhz), ("mem_mhz", self.measured.mem_mhz)] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0 && v <= 100_000.0)
            {
                return Err(Error::Invalid(format!(
                    "{source}: measured.{k} is {v} MHz: a clock must be within 0–100,000 MHz"
                )));
            }
        }
        Ok(())
    }

    /// A canonical counter's total, or `None` when the profile lacks it.
    pub fn counter(&self, name: &str) -> Option<f64> {
        self.counters.get(name).copied()
    }

    /// The ten model inputs as totals; `None` for an input when one of its counters is missing.
    pub fn model_input_totals(&self) -> Vec<(&'static str, Option<f64>)> {
        MODEL_INPUTS
            .iter()
            .map(|(name, parts)| {
                let total = parts.iter().map(|p| self.counter(p)).sum::<Option<f64>>();
                (*name, total)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = r#"
name = "k"
[launch]
grid = [100, 1, 1]
block = [256, 1, 1]
[counters]
gld_request = 10
l1_global_load_hit = 5
l1_global_load_miss = 5
"#;

    #[test]
    fn reads_toml_and_sums_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.toml");
        std::fs::write(&p, P).unwrap();
        let k = KernelProfile::from_file(&p).unwrap();
        assert_eq!(k.launch.blocks(), 100);
        let inputs = k.model_input_totals();
        assert_eq!(inputs[0], ("G_load", Some(20.0)));
        assert_eq!(inputs[1], ("G_store", None));
    }

    #[test]
    fn unknown_counter_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.toml");
        std::fs::write(&p, P.replace("gld_request", "gld_requests")).unwrap();
        let msg = KernelProfile::from_file(&p).unwrap_err().to_string();
        assert!(msg.contains("unknown counter 'gld_requests'"), "{msg}");
    }

    #[test]
    fn model_input_counters_are_canonical() {
        for (_, parts) in MODEL_INPUTS {
            for p in *parts {
                assert!(CANONICAL_COUNTERS.iter().any(|(c, _)| c == p), "{p}");
            }
        }
    }
}
