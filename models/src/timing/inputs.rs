//! What the timing model reads from a kernel profile.

use super::is_zero;
use crate::error::{Error, Result};
use crate::profile::KernelProfile;
use serde::Serialize;

/// What the timing model reads from a kernel profile: totals over one launch, all SMs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingInputs {
    /// Warp instructions executed.
    pub inst: f64,
    pub inst_fp32: f64,
    pub inst_fp64: f64,
    pub inst_int: f64,
    pub inst_sfu: f64,
    /// Type-conversion warp instructions (counter `inst_bit_convert`; 0 when the profile lacks it).
    #[serde(skip_serializing_if = "is_zero")]
    pub inst_convert: f64,
    /// Global load transactions (L1 hits + misses + uncached).
    pub load_tx: f64,
    pub store_tx: f64,
    /// Global load instructions (warp-level requests, counter `gld_request`), when the profile has them.
    pub load_requests: Option<f64>,
    /// DRAM bytes, when the profile has them (else every transaction is assumed to reach DRAM).
    pub dram_read_bytes: Option<f64>,
    pub dram_write_bytes: Option<f64>,
    /// L2 read and write transactions, when the profile has them (else every transaction goes to DRAM,
    /// or as far as the DRAM byte counts say): L2 transactions − DRAM transactions are L2 hits.
    pub l2_read_tx: Option<f64>,
    pub l2_write_tx: Option<f64>,
    /// Shared memory accesses without conflicts, and the extra ones bank conflicts cause.
    pub shared_base: f64,
    pub shared_conflicts: f64,
    pub tex_queries: f64,
    pub tex_misses: f64,
    /// Barriers each warp executes (code input `barriers`, default 0).
    pub barriers_per_warp: f64,
}

impl TimingInputs {
    /// Reads the inputs from counters, falling back to the profile's `code` table (same names). Names the
    /// missing fields when a required one is absent from both.
    pub fn from_profile(k: &KernelProfile) -> Result<TimingInputs> {
        let get = |n: &str| k.counter(n).or_else(|| k.code.get(n).copied());
        let opt = |n: &str| get(n).unwrap_or(0.0);
        let mut missing = Vec::new();
        let inst = get("inst_executed");
        if inst.is_none() {
            missing.push("counters.inst_executed");
        }
        let load_parts = ["l1_global_load_hit", "l1_global_load_miss", "uncached_global_load_transaction"];
        let loads: Vec<f64> = load_parts.iter().filter_map(|n| get(n)).collect();
        if loads.is_empty() {
            missing.push(
                "counters.uncached_global_load_transaction (or l1_global_load_hit + l1_global_load_miss)",
            );
        }
        let store = get("global_store_transaction");
        if store.is_none() {
            missing.push("counters.global_store_transaction");
        }
        if !missing.is_empty() {
            return Err(Error::Invalid(format!(
                "kernel profile '{}' lacks {} (write 0 for a kernel that has none; measure them with \
                 `gpumodel collect ./app` or import a profiler's counters with `gpumodel import ncu|nvprof FILE`)",
                k.name,
                missing.join(", ")
            )));
        }
        Ok(TimingInputs {
            inst: inst.unwrap_or(0.0),
            inst_fp32: opt("inst_fp_32"),
            inst_fp64: opt("inst_fp_64"),
            inst_int: opt("inst_integer"),
            inst_sfu: opt("inst_special"),
            inst_convert: opt("inst_bit_convert"),
            load_tx: loads.iter().sum(),
            store_tx: store.unwrap_or(0.0),
            load_requests: get("gld_request"),
            dram_read_bytes: get("dram_read_bytes"),
            dram_write_bytes: get("dram_write_bytes"),
            l2_read_tx: get("l2_read_transactions"),
            l2_write_tx: get("l2_write_transactions"),
            shared_base: opt("shared_load") + opt("shared_store"),
            shared_conflicts: opt("l1_shared_bank_conflict"),
            tex_queries: opt("tex0_cache_sector_queries"),
            tex_misses: opt("tex0_cache_sector_misses"),
            barriers_per_warp: k.code.get("barriers").copied().unwrap_or(0.0),
        })
    }
}

impl TimingInputs {
    /// Warp-level memory instructions: global load requests (`gld_request`; without it, at least one per
    /// 128 bytes of load transactions), global store requests (one per 128 bytes of store transactions,
    /// the fully coalesced case: profiles carry no store request counter) and shared-memory requests.
    pub fn memory_instructions(&self, transaction_bytes: f64) -> f64 {
        let full = |tx: f64| tx * transaction_bytes / 128.0;
        self.load_requests.unwrap_or_else(|| full(self.load_tx)) + full(self.store_tx) + self.shared_base
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::tests::launch;

    #[test]
    fn from_profile_reads_the_conversion_counter_when_present() {
        let text = include_str!("../../../datasets/examples/kernels/matrixmul.toml");
        let mut k: KernelProfile = toml::from_str(text).unwrap();
        assert_eq!(TimingInputs::from_profile(&k).unwrap().inst_convert, 0.0);
        k.counters.insert("inst_bit_convert".into(), 1234.0);
        k.check("k").unwrap();
        assert_eq!(TimingInputs::from_profile(&k).unwrap().inst_convert, 1234.0);
    }

    #[test]
    fn missing_fields_are_named() {
        let k = KernelProfile {
            name: "k".into(),
            source: String::new(),
            arch: None,
            launch: launch(1, 32, 0, 0),
            counters: [("inst_executed".to_string(), 10.0)].into_iter().collect(),
            code: Default::default(),
            measured: Default::default(),
        };
        let msg = TimingInputs::from_profile(&k).unwrap_err().to_string();
        assert!(
            msg.contains("global_store_transaction")
                && msg.contains("uncached_global_load_transaction")
                && msg.contains("gpumodel collect"),
            "{msg}"
        );
    }
}
