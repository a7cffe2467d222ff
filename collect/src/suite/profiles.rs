//! The suite's utilization profiles (`<out>.profiles.csv`): one row per kernel and clock pair of a table
//! measured at two or more pairs, in the NV-DVFS DCGM profile layout that `gpumodel train --data` reads as
//! clock-model data.
//!
//! Columns: `DRAMA,FP16A,FP32A,FP64A,SMACT,SMOCC,TENSO,argNo,average_power,benchmark,core_frequency,kernel,
//! memory_frequency,time,gpu` (the last, the GPU's name as the driver gives it, is gpumodel's addition: the
//! clock model trained from the file records it, and `predict --profile` finds the model by it). The fields are ratios in [0, 1] derived from the row's counter rates and the
//! board's [`Peaks`] at the row's clocks:
//!
//! - `DRAMA` = DRAM bytes/s (`dram_bytes_per_s`) ÷ the peak DRAM bandwidth at the memory clock;
//! - `FP32A`, `FP64A` = FP32 / FP64 warp instructions per second ÷ their peaks at the core clock;
//! - `SMACT` = the fraction of SMs the grid covers, min(1, grid fraction × blocks per SM of a full grid);
//! - `SMOCC` = the warps the grid keeps resident ÷ the SMs' warp slots, grid fraction × warps per SM of a
//!   full grid ÷ the peak warps per SM (at most 1);
//! - `FP16A`, `TENSO` = 0: no suite kernel issues FP16 or tensor instructions.
//!
//! A ratio above 1 (a counter read above the nominal peak) is written as 1. `benchmark` is the kernel's
//! CUDA function (the program a clock model's leave-one-program-out validation holds out together),
//! `argNo` and `kernel` the suite kernel's name; `average_power` is W, `time` the seconds of one launch (the
//! same work at every pair), the clocks MHz as measured.
//!
//! The file is written whole from the table on disk (resumed rows included) once a run finishes, through a
//! temporary file and a rename: an interrupted or failed run leaves none, and a resumed run rewrites it.

use super::Peaks;
use super::catalogue::kernels;
use super::cuda::{BLOCKS_PER_SM, WARPS_PER_BLOCK};
use crate::Error;
use gpumodel_models::table::format_number;
use gpumodel_models::timing::Clocks;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The profile file's header (the NV-DVFS DCGM layout).
pub const PROFILE_HEADER: [&str; 15] = [
    "DRAMA",
    "FP16A",
    "FP32A",
    "FP64A",
    "SMACT",
    "SMOCC",
    "TENSO",
    "argNo",
    "average_power",
    "benchmark",
    "core_frequency",
    "kernel",
    "memory_frequency",
    "time",
    "gpu",
];

/// Path of the profiles beside a table: `<out>.profiles.csv`.
pub fn profiles_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".profiles.csv");
    PathBuf::from(s)
}

/// The DCGM-like fields of a kernel at one pair: (SMACT, SMOCC, DRAMA, FP32A, FP64A).
pub fn fields(
    grid_fraction: f64,
    dram_bytes_per_s: f64,
    fp32_per_s: f64,
    fp64_per_s: f64,
    peaks: &Peaks,
) -> [f64; 5] {
    let ratio = |x: f64, peak: f64| if peak > 0.0 { (x / peak).clamp(0.0, 1.0) } else { 0.0 };
    let blocks_per_sm = grid_fraction * f64::from(BLOCKS_PER_SM);
    [
        blocks_per_sm.clamp(0.0, 1.0),
        ratio(blocks_per_sm * f64::from(WARPS_PER_BLOCK), peaks.max_warps_per_sm),
        ratio(dram_bytes_per_s, peaks.dram_bytes_per_s),
        ratio(fp32_per_s, peaks.fp32_per_s),
        ratio(fp64_per_s, peaks.fp64_per_s),
    ]
}

/// What [`write_profiles`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfilesOutcome {
    /// The profiles are in this file.
    Written(PathBuf),
    /// The table's rows are at one clock pair: a clock model needs several.
    OnePair,
    /// The board's peaks are not known at a pair of the table: the fields cannot be derived.
    NoPeaks,
}

/// Writes `<out>.profiles.csv` (of the GPU named `gpu`) from the table at `out` when its rows span two or more clock pairs and the
/// board's peaks are known at each (`peaks`). Otherwise no file is written, and one left from an earlier
/// run is removed (it would describe another table).
pub fn write_profiles(
    out: &Path,
    gpu: &str,
    peaks: &dyn Fn(Clocks) -> Option<Peaks>,
) -> Result<ProfilesOutcome, Error> {
    let path = profiles_path(out);
    let text = std::fs::read_to_string(out).map_err(|e| Error::io(out, e))?;
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let bad = |what: String| Error::Output(format!("{}: {what}: no profiles written", out.display()));
    let header: Vec<String> =
        reader.headers().map_err(|e| bad(e.to_string()))?.iter().map(String::from).collect();
    let col =
        |name: &str| header.iter().position(|h| h == name).ok_or_else(|| bad(format!("no {name} column")));
    let c = PROFILE_SOURCE.map(col);
    let mut idx = [0usize; 10];
    for (i, r) in c.into_iter().enumerate() {
        idx[i] = r?;
    }
    let records: Vec<csv::StringRecord> =
        reader.records().collect::<Result<_, _>>().map_err(|e| bad(e.to_string()))?;
    let labels: BTreeSet<&str> = records.iter().filter_map(|r| r.get(idx[1])).collect();
    let clear = |why: ProfilesOutcome| match std::fs::remove_file(&path) {
        Ok(()) => Ok(why),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(why),
        Err(e) => Err(Error::io(&path, e)),
    };
    if labels.len() < 2 {
        return clear(ProfilesOutcome::OnePair);
    }
    let catalogue = kernels();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(PROFILE_HEADER).map_err(|e| Error::io(&path, e))?;
    for r in &records {
        let num = |i: usize| -> Result<f64, Error> {
            let cell = r.get(idx[i]).unwrap_or("");
            cell.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| {
                bad(format!(
                    "'{cell}' in column {} of kernel {} is not a number",
                    PROFILE_SOURCE[i], &r[idx[0]]
                ))
            })
        };
        let kernel = r.get(idx[0]).unwrap_or("");
        let clocks = Clocks { core_mhz: num(3)?, mem_mhz: num(4)? };
        let Some(p) = peaks(clocks) else { return clear(ProfilesOutcome::NoPeaks) };
        let [smact, smocc, drama, fp32a, fp64a] = fields(num(2)?, num(7)?, num(8)?, num(9)?, &p);
        let benchmark = catalogue.iter().find(|k| k.name == kernel).map_or(kernel, |k| k.entry.as_str());
        let zero = format_number(0.0);
        let rec = [
            format_number(drama),
            zero.clone(),
            format_number(fp32a),
            format_number(fp64a),
            format_number(smact),
            format_number(smocc),
            zero,
            kernel.to_string(),
            format_number(num(5)?),
            benchmark.to_string(),
            format_number(clocks.core_mhz),
            kernel.to_string(),
            format_number(clocks.mem_mhz),
            format_number(num(6)?),
            gpu.to_string(),
        ];
        w.write_record(&rec).map_err(|e| Error::io(&path, e))?;
    }
    let bytes = w.into_inner().map_err(|e| Error::io(&path, e.into_error()))?;
    gpumodel_models::atomic::write_atomic(&path, &bytes)?;
    Ok(ProfilesOutcome::Written(path))
}

/// The table columns read, in the order of the indices used above.
const PROFILE_SOURCE: [&str; 10] = [
    "kernel",
    "clocks",
    "grid_fraction",
    "core_mhz",
    "mem_mhz",
    "power_w",
    "time_s",
    "dram_bytes_per_s",
    "fp32_per_s",
    "fp64_per_s",
];
