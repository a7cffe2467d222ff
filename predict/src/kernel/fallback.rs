//! A roofline over what an export covers, for profiles the pipeline timing model cannot read.
//!
//! Profiler exports often carry bytes and operation counts but not the global-load, store and
//! instruction counts the pipeline model needs (a typical `ncu --metrics` export on an A100 has DRAM and L2
//! bytes, shared wavefronts, FP and tensor operation counts and elapsed cycles). The roofline predicts
//! from those: each memory level and pipe the export covers is a time, work / throughput at the clocks —
//!
//! * DRAM bytes at the architecture's bandwidth (linear in the memory clock);
//! * L2 bytes (or 32-byte L2 transactions) at its L2 bandwidth (linear in the core clock);
//! * shared-memory wavefronts at the SM's shared bandwidth (32 banks of 4 bytes per cycle, CUDA Programming Guide);
//! * FP32, FP64, FP16, integer and special-function warp instructions at the architecture's pipe costs
//!   (cycles per warp instruction per SM, the Programming Guide's throughput tables, as the pipeline model);
//! * tensor-pipe warp instructions at [`TENSOR_CYCLES`] per SM;
//! * warp instructions at one per scheduler per cycle —
//!
//! and the kernel takes the longest of them plus one DRAM latency (the pipeline fill). When the profile
//! has a measured time on this GPU, the prediction is anchored on it: the measured time scaled by the
//! roofline's ratio between the requested and the measured clocks, so the prediction at the measured
//! clocks is the measurement.
//!
//! Its expected error is measured, not assumed: [`nvdvfs_error`] scores it on the NV-DVFS kernels with
//! the counters an A100 ncu export lacks withheld (`cargo run --release -p gpumodel-predict --example
//! fallback_error` prints the table; [`EXPECTED_ERROR`] holds its figures).

use crate::baseline::{Baseline, PeerInputs, WangChuConstants};
use crate::error::{Error, Result};
use gpumodel_models::Table;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::Clocks;
use serde::Serialize;

/// Core cycles one SM takes per tensor-pipe warp instruction: A100's 1024 dense FP16 FMA per SM per
/// cycle (A100 whitepaper: 312 TFLOPS FP16 at 1410 MHz on 108 SMs) for an `HMMA.16816` of 2048 FMA; an
/// approximation for other shapes and types.
pub const TENSOR_CYCLES: f64 = 2.0;

/// The counters of the pipeline timing model a roofline prediction lacked, as the error says them.
pub const FULL_MODEL_COUNTERS: &[&str] = &[
    "inst_executed",
    "global load transactions (l1_global_load_hit + l1_global_load_miss or uncached_global_load_transaction)",
    "global_store_transaction",
];

/// The roofline's expected time error (MAPE, %), measured on the NV-DVFS kernels with the counters an A100
/// ncu export lacks withheld and the measured time at the default clocks as the anchor, by
/// [`nvdvfs_error`]: (dataset, roofline, full pipeline model, Wang & Chu's general form) on the same rows.
pub const EXPECTED_ERROR: &[(&str, f64, f64, f64)] = &[
    ("nvdvfs-gtx980", 9.3, 14.7, 20.1),
    ("nvdvfs-gtx1080ti", 7.3, 13.7, 19.3),
    ("nvdvfs-p100", 11.0, 20.8, 18.4),
];

/// The roofline's expected error without a measured time (the plain roofline), MAPE %, same rows.
pub const EXPECTED_ERROR_UNANCHORED: &[(&str, f64)] =
    &[("nvdvfs-gtx980", 38.5), ("nvdvfs-gtx1080ti", 39.7), ("nvdvfs-p100", 53.7)];

#[cfg(test)]
mod tests {
    use super::*;
    use gpumodel_models::import::{BadRows, Format, import_file};

    /// The figures predict reports as the roofline's expected error are what [`nvdvfs_error`] measures
    /// (to the printed digit), on each NV-DVFS file present under `GPUMODEL_DATA_DIR`.
    #[test]
    fn the_stated_expected_error_is_the_measured_one() {
        let Some(dir) = std::env::var_os("GPUMODEL_DATA_DIR").map(std::path::PathBuf::from) else { return };
        let files = [
            ("nvdvfs-gtx980", "gtx980", "gtx980-high-dvfs-real-small-workload-Performance-Power.csv"),
            ("nvdvfs-gtx1080ti", "gtx1080ti", "gtx1080ti-dvfs-real-Performance-Power.csv"),
            ("nvdvfs-p100", "p100", "p100-dvfs-real-Performance-Power.csv"),
        ];
        for (name, arch, file) in files {
            let t = import_file(&dir.join("nvdvfs").join(file), Format::Nvdvfs, BadRows::Fail).unwrap().table;
            let e = nvdvfs_error(&t, &ArchProfile::builtin(arch).unwrap()).unwrap();
            let stated = EXPECTED_ERROR.iter().find(|s| s.0 == name).unwrap();
            let round = |v: f64| (v * 10.0).round() / 10.0;
            assert_eq!(round(e.roofline_mape_pct), stated.1, "{name}");
            assert_eq!(round(e.full_model_mape_pct), stated.2, "{name}");
            assert_eq!(e.wang_chu_mape_pct.map(round), Some(stated.3), "{name}");
            let plain = EXPECTED_ERROR_UNANCHORED.iter().find(|s| s.0 == name).unwrap();
            assert_eq!(round(e.unanchored_mape_pct), plain.1, "{name}");
            // The goal: at most twice the full model's error.
            assert!(e.roofline_mape_pct <= 2.0 * e.full_model_mape_pct, "{name}: {e:?}");
        }
    }
}

/// One roofline term: a memory level or pipe and its time at the clocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Term {
    pub name: &'static str,
    pub time_s: f64,
}

/// A roofline prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roofline {
    pub kernel: String,
    pub arch: String,
    pub clocks: Clocks,
    /// Predicted time, seconds.
    pub time_s: f64,
    /// The bound: the term with the longest time.
    pub bound: &'static str,
    /// Every term the profile covers, longest first (anchored: scaled as the time is).
    pub terms: Vec<Term>,
    /// The pipeline fill, seconds (one DRAM latency; anchored: scaled as the time is).
    pub fill_s: f64,
    /// The measured time it is anchored on, seconds, and the clocks of that measurement.
    pub anchor: Option<(f64, Clocks)>,
    /// What the pipeline timing model needed that the profile lacks.
    pub lacked: Vec<String>,
    /// The profile does not name its GPU: its measured time is taken as measured on this one.
    pub gpu_assumed: bool,
    /// Expected error (MAPE %) measured on NV-DVFS for this kind of prediction (anchored or not): the
    /// median over the GPUs measured.
    pub expected_error_pct: Option<f64>,
}

fn c(k: &KernelProfile, name: &str) -> Option<f64> {
    k.counter(name).or_else(|| k.code.get(name).copied())
}

/// The roofline terms of `k` at `clocks` on `arch` (empty when the profile covers nothing).
pub fn terms(k: &KernelProfile, arch: &ArchProfile, clocks: Clocks) -> Vec<Term> {
    let core_hz = clocks.core_mhz * 1e6;
    let sms = arch.sm_count.value;
    let per_sm = |work: f64, cycles_each: f64| work * cycles_each / sms / core_hz;
    let mut out = Vec::new();
    let mut push = |name: &'static str, t: Option<f64>| {
        if let Some(t) = t.filter(|t| t.is_finite()) {
            out.push(Term { name, time_s: t });
        }
    };
    let dram = match (c(k, "dram_read_bytes"), c(k, "dram_write_bytes")) {
        (Some(r), Some(w)) => Some(r + w),
        (r, w) => c(k, "dram_bytes").or(r).or(w),
    };
    push("DRAM", dram.map(|b| b / arch.bandwidth_bytes_per_s(clocks.mem_mhz)));
    let l2 = match (c(k, "l2_read_transactions"), c(k, "l2_write_transactions")) {
        (Some(r), Some(w)) => Some((r + w) * 32.0),
        _ => c(k, "l2_bytes"),
    };
    let l2_bw = arch.l2_bandwidth_gbs.value * 1e9 * clocks.core_mhz / arch.core_mhz.value;
    push("L2", l2.map(|b| b / l2_bw));
    let shared = c(k, "shared_wavefronts").or_else(|| {
        Some(c(k, "shared_load")? + c(k, "shared_store")? + c(k, "l1_shared_bank_conflict").unwrap_or(0.0))
    });
    push("shared", shared.map(|w| per_sm(w, arch.shared_cycles_per_wavefront())));
    push("FP32", c(k, "inst_fp_32").map(|n| per_sm(n, arch.cost_fp32.value)));
    push("FP64", c(k, "inst_fp_64").map(|n| per_sm(n, arch.cost_fp64.value)));
    let fp16 = arch.cost_fp16.as_ref().map_or(arch.cost_fp32.value, |c| c.value);
    push("FP16", c(k, "inst_fp_16").map(|n| per_sm(n, fp16)));
    push("integer", c(k, "inst_integer").map(|n| per_sm(n, arch.cost_int.value)));
    push("special", c(k, "inst_special").map(|n| per_sm(n, arch.cost_sfu.value)));
    push("tensor", c(k, "inst_tensor").map(|n| per_sm(n, TENSOR_CYCLES)));
    push("issue", c(k, "inst_executed").map(|n| per_sm(n, 1.0 / arch.schedulers_per_sm.value)));
    out.sort_by(|a, b| b.time_s.total_cmp(&a.time_s));
    out
}

/// The plain roofline time: the longest term plus one DRAM latency (None when no term is covered).
fn roofline_s(k: &KernelProfile, arch: &ArchProfile, clocks: Clocks) -> Option<(f64, Vec<Term>, f64)> {
    let t = terms(k, arch, clocks);
    let longest = t.first()?.time_s;
    let fill = arch.dram_latency_cycles(clocks.core_mhz, clocks.mem_mhz) / (clocks.core_mhz * 1e6);
    Some((longest + fill, t, fill))
}

/// Whether the profile covers any memory level or pipe the roofline reads.
pub fn covers_anything(k: &KernelProfile) -> bool {
    let arch_free = [
        "dram_read_bytes",
        "dram_write_bytes",
        "dram_bytes",
        "l2_read_transactions",
        "l2_write_transactions",
        "l2_bytes",
        "shared_wavefronts",
        "shared_load",
        "inst_fp_32",
        "inst_fp_64",
        "inst_fp_16",
        "inst_integer",
        "inst_special",
        "inst_tensor",
        "inst_executed",
    ];
    arch_free.iter().any(|n| c(k, n).is_some())
}

/// What the pipeline model needed that `k` lacks (for the report).
pub fn lacked(k: &KernelProfile) -> Vec<String> {
    let mut out = Vec::new();
    if c(k, "inst_executed").is_none() {
        out.push(FULL_MODEL_COUNTERS[0].to_string());
    }
    let loads = ["l1_global_load_hit", "l1_global_load_miss", "uncached_global_load_transaction"];
    if loads.iter().all(|n| c(k, n).is_none()) {
        out.push(FULL_MODEL_COUNTERS[1].to_string());
    }
    if c(k, "global_store_transaction").is_none() {
        out.push(FULL_MODEL_COUNTERS[2].to_string());
    }
    if !k.launch.is_known() {
        out.push("the launch shape (grid and block)".into());
    }
    out
}

/// Predicts `k` on `arch` at `clocks` with the roofline, anchored on its measured time when it was
/// measured on this GPU. Refuses only when the profile covers no memory level and no pipe, naming where
/// the profiler command lines to run are.
pub fn predict_roofline(k: &KernelProfile, arch: &ArchProfile, clocks: Clocks) -> Result<Roofline> {
    let Some((t, terms, fill)) = roofline_s(k, arch, clocks) else {
        return Err(Error::Invalid(format!(
            "kernel profile '{}' has no counter any model reads (no DRAM, L2 or shared traffic, no \
             instruction counts): profile again with the ncu command (or, up to Volta, the nvprof one) that \
             `gpumodel import --help` prints, then `gpumodel predict --kernel k.csv`",
            k.name
        )));
    };
    let same_gpu = k.arch.as_deref().is_none_or(|a| arch.names_gpu(a));
    let anchor = k.measured.time_s.filter(|_| same_gpu).and_then(|m| {
        let at = Clocks {
            core_mhz: k.measured.core_mhz.unwrap_or(arch.core_mhz.value),
            mem_mhz: k.measured.mem_mhz.unwrap_or(arch.mem_mhz.value),
        };
        let (t0, _, _) = roofline_s(k, arch, at)?;
        (t0 > 0.0).then_some((m, at, t0))
    });
    // Anchored, every term is scaled as the total is, so that the longest term plus the fill is the
    // predicted time (a term never exceeds the total it is part of).
    let scale = anchor.map_or(1.0, |(m, _, t0)| m / t0);
    let time_s = t * scale;
    let terms: Vec<Term> = terms.into_iter().map(|x| Term { time_s: x.time_s * scale, ..x }).collect();
    let expected = |table: &[f64]| {
        let mut v: Vec<f64> = table.to_vec();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let expected_error_pct = if anchor.is_some() {
        expected(&EXPECTED_ERROR.iter().map(|e| e.1).collect::<Vec<_>>())
    } else {
        expected(&EXPECTED_ERROR_UNANCHORED.iter().map(|e| e.1).collect::<Vec<_>>())
    };
    Ok(Roofline {
        kernel: k.name.clone(),
        arch: arch.name.clone(),
        clocks,
        time_s,
        bound: terms[0].name,
        terms,
        fill_s: fill * scale,
        anchor: anchor.map(|(m, at, _)| (m, at)),
        lacked: lacked(k),
        gpu_assumed: anchor.is_some() && k.arch.is_none(),
        expected_error_pct,
    })
}

/// The counters an A100 `ncu --metrics` export typically lacks (instruction, global load and store,
/// integer, branch and texture counts), withheld from NV-DVFS rows to measure the roofline's error.
pub const WITHHELD: &[&str] = &[
    "inst_executed",
    "gld_request",
    "uncached_global_load_transaction",
    "l1_global_load_hit",
    "l1_global_load_miss",
    "global_store_transaction",
    "inst_integer",
    "branch",
    "divergent_branch",
    "tex0_cache_sector_queries",
    "tex0_cache_sector_misses",
    "local_load",
    "local_store",
];

/// The roofline's error on one NV-DVFS table, beside the full pipeline model's and Wang & Chu's general
/// form on the same rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FallbackError {
    pub rows: usize,
    pub kernels: usize,
    /// Anchored on each kernel's measured time at the clock pair nearest the architecture's default.
    pub roofline_mape_pct: f64,
    /// Without any measured time.
    pub unanchored_mape_pct: f64,
    /// The pipeline timing model with every counter, uncalibrated.
    pub full_model_mape_pct: f64,
    /// Wang & Chu's general form with their published constants (None for an arch they did not publish).
    pub wang_chu_mape_pct: Option<f64>,
}

/// Scores the roofline on NV-DVFS table `t` (every kernel, every clock pair but each kernel's anchor row).
pub fn nvdvfs_error(t: &Table, arch: &ArchProfile) -> Result<FallbackError> {
    use crate::nvdvfs::{kernels, profile_from_row};
    let wc = WangChuConstants::for_arch(&arch.name);
    let (mut roof, mut plain, mut full, mut peer) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let kernels = kernels(t);
    for (_, rows) in &kernels {
        let at = |r: usize| -> Result<Clocks> {
            let p = profile_from_row(t, r)?;
            Ok(Clocks {
                core_mhz: p.measured.core_mhz.unwrap_or(arch.core_mhz.value),
                mem_mhz: p.measured.mem_mhz.unwrap_or(arch.mem_mhz.value),
            })
        };
        let dist = |r: usize| -> f64 {
            at(r).map_or(f64::MAX, |c| {
                ((c.core_mhz - arch.core_mhz.value) / arch.core_mhz.value).abs()
                    + ((c.mem_mhz - arch.mem_mhz.value) / arch.mem_mhz.value).abs()
            })
        };
        let Some(&anchor) = rows.iter().min_by(|a, b| dist(**a).total_cmp(&dist(**b))) else { continue };
        let mut a = profile_from_row(t, anchor)?;
        a.counters.retain(|k, _| !WITHHELD.contains(&k.as_str()));
        a.arch = Some(arch.name.clone());
        for &r in rows.iter().filter(|r| **r != anchor) {
            let p = profile_from_row(t, r)?;
            let Some(measured) = p.measured.time_s.filter(|m| *m > 0.0) else { continue };
            let clocks = at(r)?;
            let err = |pred: f64| 100.0 * (pred - measured).abs() / measured;
            roof.push(err(predict_roofline(&a, arch, clocks)?.time_s));
            let mut bare = a.clone();
            bare.measured.time_s = None;
            plain.push(err(predict_roofline(&bare, arch, clocks)?.time_s));
            let cfg = crate::Config { clocks: Some(clocks), ..crate::Config::default() };
            full.push(err(crate::predict_time_only(&p, arch, &cfg)?.time_s));
            if let Some(c) = &wc {
                let x = PeerInputs::from_row(t, r)?;
                if let Some(t) = Baseline::WangChu2018.time_s(c, &x, clocks.core_mhz, clocks.mem_mhz) {
                    peer.push(err(t));
                }
            }
        }
    }
    if roof.is_empty() {
        return Err(Error::Invalid(format!("{}: no NV-DVFS row with a measured time to score", t.source)));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Ok(FallbackError {
        rows: roof.len(),
        kernels: kernels.len(),
        roofline_mape_pct: mean(&roof),
        unanchored_mape_pct: mean(&plain),
        full_model_mape_pct: mean(&full),
        wang_chu_mape_pct: (!peer.is_empty()).then(|| mean(&peer)),
    })
}
