//! NV-DVFS rows (Wang & Chu, ICPADS 2018; nvprof metrics per kernel and clock pair) as kernel profiles.
//!
//! nvprof's metrics are mapped onto the canonical counters of `models/src/profile.rs`:
//! `inst_fp_32`, `inst_fp_64`, `inst_integer`, `flop_count_sp_special` and `inst_bit_convert` (type
//! conversions, absent from the published rows; read when a row has it) count *thread* operations, so
//! they are divided by the warp size (32) to give warp instructions (exact for full warps);
//! texture-only queries are `tex_cache_transactions − gld_transactions` (the unified L1/texture cache
//! counts global loads too), misses from `tex_cache_hit_rate` (a fraction, or percent);
//! `gld_transactions` are global load transactions that do not hit in L1 on Pascal/Maxwell (global loads
//! are cached in L2 only by default) → `uncached_global_load_transaction`; DRAM and shared transactions are
//! 32 bytes / one bank-wide access; shared bank conflicts are transactions − requests
//! (`*_transactions / *_transactions_per_request`); `cf_executed` → `branch`; `achieved_occupancy` goes
//! to the profile's `code` table, where the timing model reads it as the resident warps per SM.

use crate::error::{Error, Result};
use gpumodel_models::Table;
use gpumodel_models::ncu::metrics::{Capability, from_nvprof};
use gpumodel_models::profile::{KernelProfile, Launch, Measured};
use std::collections::BTreeMap;

/// The columns a row needs, with their meaning in the error message.
const NEEDED: &[&str] = &[
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "inst_executed",
    "gld_transactions",
    "gst_transactions",
    "core_mhz",
    "mem_mhz",
];

/// The kernel profile of table row `row`, its metrics read with Maxwell/Pascal (sm_61) semantics, those of
/// the published NV-DVFS files (see [`profile_from_row_for`]).
pub fn profile_from_row(t: &Table, row: usize) -> Result<KernelProfile> {
    profile_from_row_for(t, row, None)
}

/// The kernel profile of table row `row`, nvprof's metrics read with the semantics of compute capability
/// `cc` (the GPU the rows were measured on; `None`: sm_61). What changes with it is the importer's
/// (`gpumodel import nvprof`): from 7.0 on global loads are cached in the unified L1, so
/// `gld_transactions` split into L1 hits and misses by `global_hit_rate`.
pub fn profile_from_row_for(t: &Table, row: usize, cc: Option<Capability>) -> Result<KernelProfile> {
    let missing: Vec<&str> = NEEDED.iter().copied().filter(|c| t.column_index(c).is_none()).collect();
    if !missing.is_empty() {
        return Err(Error::Mismatch(format!(
            "{}: not NV-DVFS data: column(s) {} missing (import it with `gpumodel import nvdvfs`)",
            t.source,
            missing.join(", ")
        )));
    }
    let get = |c: &str| t.column_index(c).map(|j| t.data[[row, j]]);
    let g = |c: &str| get(c).unwrap_or(0.0);
    // The columns are nvprof metrics: one mapping with `gpumodel import nvprof`, per compute capability.
    // Missing or negative cells are absent metrics; an
    // occupancy outside (0, 1] is dropped (the row still predicts from the occupancy ceilings).
    let metrics: BTreeMap<String, f64> = t
        .columns
        .iter()
        .enumerate()
        .map(|(j, c)| (c.clone(), t.data[[row, j]]))
        .filter(|(c, v)| v.is_finite() && *v >= 0.0 && (c != "achieved_occupancy" || (*v > 0.0 && *v <= 1.0)))
        .collect();
    let mapped = from_nvprof(&metrics, cc)
        .map_err(|e| Error::Invalid(format!("{} line {}: {}", t.source, row + 2, e.0)))?;
    let (counters, code) = (mapped.counters, mapped.code);
    let dim = |c: &str| g(c).round().clamp(1.0, f64::from(u32::MAX)) as u32;
    let name = t.groups.get(row).cloned().unwrap_or_default();
    let kernel_fn = t.text_column("kernel_function").and_then(|v| v.get(row)).cloned().unwrap_or_default();
    let k = KernelProfile {
        name,
        source: format!(
            "NV-DVFS-Benchmark (Wang & Chu, ICPADS 2018), {} line {}, kernel {kernel_fn}",
            t.source,
            row + 2
        ),
        arch: None,
        launch: Launch {
            grid: [dim("grid_x"), dim("grid_y"), dim("grid_z")],
            block: [dim("block_x"), dim("block_y"), dim("block_z")],
            registers_per_thread: 0,
            shared_mem_per_block: 0,
        },
        counters,
        code,
        measured: Measured {
            time_s: get("time_s"),
            power_w: get("power_w"),
            core_mhz: get("core_mhz"),
            mem_mhz: get("mem_mhz"),
        },
    };
    k.check(&t.source)?;
    Ok(k)
}

/// Rows of each kernel (group), in order of first appearance.
pub fn kernels(t: &Table) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, g) in t.groups.iter().enumerate() {
        match out.iter_mut().find(|(n, _)| n == g) {
            Some((_, rows)) => rows.push(i),
            None => out.push((g.clone(), vec![i])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: &str = "kernel,grid_x,grid_y,grid_z,block_x,block_y,block_z,inst_executed,gld_transactions,\
gst_transactions,core_mhz,mem_mhz,inst_fp_64
k,10,1,1,256,1,1,5000,100,100,1600,5000,6400
";

    /// The same row read for the capability it was measured on: before 7.0 global loads are L2-cached
    /// (`uncached_global_load_transaction`), from 7.0 they split into unified-L1 hits and misses by
    /// `global_hit_rate`; the timing model reads the same total either way.
    #[test]
    fn global_loads_follow_the_compute_capability() {
        let text =
            ROW.replace(",inst_fp_64\n", ",inst_fp_64,global_hit_rate\n").replace(",6400\n", ",6400,0.25\n");
        let t = Table::read_csv_bytes(text.as_bytes(), "r.csv", "kernel").unwrap();
        for cc in [None, Capability::parse("5.2"), Capability::parse("6.0"), Capability::parse("6.1")] {
            let k = profile_from_row_for(&t, 0, cc).unwrap();
            assert_eq!(k.counter("uncached_global_load_transaction"), Some(100.0), "{cc:?}");
            assert_eq!(k.counter("l1_global_load_hit"), None, "{cc:?}");
        }
        let k = profile_from_row_for(&t, 0, Capability::parse("7.0")).unwrap();
        assert_eq!(k.counter("uncached_global_load_transaction"), None);
        assert_eq!(
            (k.counter("l1_global_load_hit"), k.counter("l1_global_load_miss")),
            (Some(25.0), Some(75.0))
        );
        let sum = |k: &KernelProfile| gpumodel_models::timing::TimingInputs::from_profile(k).unwrap().load_tx;
        assert_eq!(sum(&k), sum(&profile_from_row(&t, 0).unwrap()));
    }

    /// A row with nvprof's thread-level conversion count gives warp instructions; one without has none.
    #[test]
    fn a_conversion_column_is_read_as_warp_instructions() {
        let without = Table::read_csv_bytes(ROW.as_bytes(), "r.csv", "kernel").unwrap();
        let k = profile_from_row(&without, 0).unwrap();
        assert_eq!((k.counter("inst_fp_64"), k.counter("inst_bit_convert")), (Some(200.0), None));
        let text =
            ROW.replace(",inst_fp_64\n", ",inst_fp_64,inst_bit_convert\n").replace(",6400\n", ",6400,3200\n");
        let with = Table::read_csv_bytes(text.as_bytes(), "r.csv", "kernel").unwrap();
        assert_eq!(profile_from_row(&with, 0).unwrap().counter("inst_bit_convert"), Some(100.0));
    }
}
