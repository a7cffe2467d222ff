//! NV-DVFS-Benchmark's nvprof performance-and-power CSV (`*-dvfs-real-Performance-Power.csv`: one row per
//! kernel and (core, memory) clock pair, ~45 nvprof metrics, the kernel time and NVML power), read as
//! utilization profiles with DCGM-like fields, so that the clock model can be fitted and asked on it.
//!
//! nvprof does not report DCGM's fields; each is derived from the metric that measures the same thing:
//! * **SMACT** (fraction of time an SM has at least one warp resident, averaged over SMs) ← `sm_activity`
//!   (the GTX 980 file calls it `sm_efficiency`): nvprof's "percentage of time at least one warp is
//!   active on a multiprocessor, averaged over all multiprocessors" — the same definition; the files give
//!   it as a ratio.
//! * **SMOCC** (resident warps over the SM's maximum, averaged over time *and* SMs, idle SMs counted as 0)
//!   ← `achieved_occupancy × sm_activity`: nvprof's `achieved_occupancy` is the same ratio but averaged
//!   over the cycles an SM is active only, so it is scaled by the active fraction.
//! * **DRAMA** (fraction of cycles the DRAM interface is busy) ← (`dram_read_throughput` +
//!   `dram_write_throughput`, GB/s) over the board's peak bandwidth *at the row's memory clock*: `2 ×
//!   memF × bus width / 8` bytes/s (GDDR5/GDDR5X move two words per reported memory clock; 1080 Ti at
//!   5505 MHz: 484 GB/s, the vendor's figure).
//! * **FP32A** (fraction of cycles the FP32 pipes are busy) ← `inst_fp_32` (thread-level FP32
//!   instructions) over what the FP32 lanes can issue in the measured time: lanes × core clock × time.
//! * **FP64A** ← `inst_fp_64` over FP64 lanes × core clock × time, the same way.
//! * FP16A, TENSO and GRACT: no source on these GPUs (no tensor cores; no FP16 or graphics-engine metric
//!   in the files), left out.
//!
//! The job is the kernel's program (`appName`; the files hold one kernel per program), so grouped
//! validation holds whole programs out. Time is `time/ms` (s), power `power/W`. Every ratio is clamped to
//! [0, 1]: a throughput measured in nvprof's replay can exceed what the timed run implies by a few percent.

use super::*;

/// The per-board constants the derivation needs (vendor specifications).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Board {
    /// FP32 lanes (CUDA cores).
    pub fp32_lanes: f64,
    /// FP64 lanes (1/32 of the FP32 lanes on consumer Pascal and Maxwell).
    pub fp64_lanes: f64,
    /// Memory bus width, bits.
    pub bus_bits: f64,
}

impl Board {
    /// Peak DRAM bandwidth at a reported memory clock, bytes/s.
    pub fn peak_bytes_per_s(&self, mem_mhz: f64) -> f64 {
        2.0 * mem_mhz * 1e6 * self.bus_bits / 8.0
    }

    /// The boards the NV-DVFS nvprof files were measured on, by GPU name: GTX 1080 Ti (GP102: 28 SMs × 128
    /// lanes, 352-bit GDDR5X) and GTX 980 (GM204: 16 SMs × 128 lanes, 256-bit GDDR5).
    pub fn of(gpu: &str) -> Option<Board> {
        let n = gpu.to_ascii_lowercase().replace(['-', ' ', '_'], "");
        if n.contains("1080ti") {
            Some(Board { fp32_lanes: 3584.0, fp64_lanes: 112.0, bus_bits: 352.0 })
        } else if n.contains("980") && !n.contains("980ti") {
            Some(Board { fp32_lanes: 2048.0, fp64_lanes: 64.0, bus_bits: 256.0 })
        } else {
            None
        }
    }
}

/// Reads an NV-DVFS nvprof performance-and-power CSV; the board is told by `opts.gpu`.
pub(super) fn nvdvfs_nvprof(text: &str, origin: &str, opts: &ReadOptions) -> Result<ProfileSet> {
    let gpu = opts.gpu.clone().unwrap_or_default();
    let board = Board::of(&gpu).ok_or_else(|| Error::Invalid(format!(
        "{origin}: the nvprof-metric reader needs the board's lanes and memory bus: name a GPU it knows with \
         --gpu (gtx1080ti or gtx980){}",
        if gpu.is_empty() { String::new() } else { format!("; '{gpu}' is not one") }
    )))?;
    let (mut r, header) = csv_with_header(text, origin)?;
    let pos = |c: &str| header.iter().position(|h| h == c);
    let need = |names: &[&str]| {
        names.iter().find_map(|c| pos(c)).ok_or_else(|| Error::Format {
            file: origin.to_string(),
            message: format!("no '{}' column: not an NV-DVFS nvprof performance-and-power file", names[0]),
        })
    };
    let app = need(&["appName"])?;
    let (core, mem) = (need(&["coreF"])?, need(&["memF"])?);
    let (time, power) = (need(&["time/ms"])?, need(&["power/W"])?);
    let smact = need(&["sm_activity", "sm_efficiency"])?;
    let occ = need(&["achieved_occupancy"])?;
    let (dr, dw) = (need(&["dram_read_throughput"])?, need(&["dram_write_throughput"])?);
    let (i32_, i64_) = (need(&["inst_fp_32"])?, need(&["inst_fp_64"])?);
    let mut profiles = Vec::new();
    let mut skipped = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let line = i + 2;
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                reject(opts, &mut skipped, crate::table::csv_error(origin, e))?;
                continue;
            }
        };
        let name = rec.get(app).unwrap_or("").trim().to_string();
        let num = |j: usize| {
            number(rec.get(j).unwrap_or("")).ok_or_else(|| {
                parse_err(origin, line, &header[j], format!("'{}' is not a number", rec.get(j).unwrap_or("")))
            })
        };
        let row = (|| -> Result<UtilizationProfile> {
            let (f, m, t_ms) = (num(core)?, num(mem)?, num(time)?);
            let (sm, t) = (num(smact)?, t_ms / 1000.0);
            let unit = |v: f64| v.clamp(0.0, 1.0);
            let fields = [
                (Field::Smact, unit(sm)),
                (Field::Smocc, unit(num(occ)? * sm)),
                (Field::Drama, unit((num(dr)? + num(dw)?) * 1e9 / board.peak_bytes_per_s(m))),
                (Field::Fp32a, unit(num(i32_)? / (board.fp32_lanes * f * 1e6 * t))),
                (Field::Fp64a, unit(num(i64_)? / (board.fp64_lanes * f * 1e6 * t))),
            ];
            let p = UtilizationProfile {
                name: name.clone(),
                program: Some(name.clone()),
                source: Source::NvdvfsNvprof,
                gpu: None,
                device: None,
                fields: fields.into_iter().collect(),
                core_mhz: f,
                mem_mhz: Some(m),
                power_w: Some(num(power)?),
                time_s: Some(t),
                samples: 1,
            };
            p.check(&format!("{origin}:{line}"))?;
            Ok(p)
        })();
        match row {
            Ok(p) => profiles.push(p),
            Err(e) => reject(opts, &mut skipped, e)?,
        }
    }
    Ok(ProfileSet::new(origin, Source::NvdvfsNvprof, profiles, skipped))
}
