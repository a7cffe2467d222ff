//! Kernel time on one GPU from what was measured on another (`gpumodel validate --from DATA --from-arch
//! ARCH`): each kernel's profile — its counters and its measured time — is the other GPU's row nearest that
//! GPU's default clocks, and every clock pair of the GPU under test is predicted from it. This is the
//! question a user asks with a profile from one GPU and a purchase or a port in mind.
//!
//! Two answers start from the measured time rather than from the counters:
//! * **scaled** (the anchor to beat): the measured time × the ratio of the two GPUs' throughput in the
//!   kernel's bottleneck on the GPU it was measured on — DRAM bandwidth at the memory clock for global loads
//!   and stores, SMs × core clock × shared-memory bytes per cycle for shared memory and bank conflicts,
//!   SMs × core clock × warp schedulers for compute, SMs × core clock otherwise;
//! * **model-scaled** (ours, anchored): the measured time × the ratio of the timing model's times on the two
//!   GPUs, so that whatever the model misses on both GPUs alike cancels.

use crate::baseline::PeerInputs;
use crate::error::{Error, Result};
use crate::nvdvfs::{kernels, profile_from_row_for};
use gpumodel_models::Table;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::ncu::metrics::Capability;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::{Clocks, TimingInputs, occupancy, predict_time};

/// Shared-memory bytes per SM per core cycle when a profile does not say: 32 banks × 4 bytes.
const SHARED_BYTES_PER_CYCLE: f64 = 128.0;

/// The GPU the profiles were measured on: its NV-DVFS rows and its architecture profile.
#[derive(Debug, Clone, PartialEq)]
pub struct FromGpu {
    pub table: Table,
    pub arch: ArchProfile,
}

/// One kernel as measured on the other GPU.
#[derive(Debug, Clone)]
pub struct Anchor {
    /// Its profile (counters and launch), from the row nearest the other GPU's default clocks.
    pub profile: KernelProfile,
    /// That row's counters for the peer models.
    pub peer: PeerInputs,
    /// Its measured time there, seconds, and the clocks of that row.
    pub measured_s: f64,
    pub clocks: Clocks,
    /// The timing model's bottleneck and time on that GPU at those clocks.
    pub bottleneck: &'static str,
    pub model_s: f64,
}

impl Anchor {
    /// The scaled baseline on `arch` at `clocks`.
    pub fn scaled_s(&self, from: &ArchProfile, arch: &ArchProfile, clocks: Clocks) -> f64 {
        self.measured_s * throughput(from, self.bottleneck, self.clocks)
            / throughput(arch, self.bottleneck, clocks)
    }

    /// Ours, anchored, given the timing model's time on the GPU under test.
    pub fn model_scaled_s(&self, model_s: f64) -> f64 {
        self.measured_s * model_s / self.model_s
    }
}

/// Work per second of `arch` at `clocks` in the pipeline `bottleneck` (a component of the timing model),
/// up to a factor that is the same on every GPU.
pub fn throughput(arch: &ArchProfile, bottleneck: &str, clocks: Clocks) -> f64 {
    let sm_cycles = arch.sm_count.value * clocks.core_mhz * 1e6;
    match bottleneck {
        "global load" | "global store" => arch.mem_bandwidth_gbs.value * clocks.mem_mhz / arch.mem_mhz.value,
        "shared" | "bank conflicts" => {
            sm_cycles * arch.shared_bytes_per_cycle.as_ref().map_or(SHARED_BYTES_PER_CYCLE, |s| s.value)
        }
        "compute" => sm_cycles * arch.schedulers_per_sm.value,
        _ => sm_cycles,
    }
}

/// Each kernel of `groups` (the rows under test, table `t`) as measured on `from`. A kernel `from` lacks,
/// or launched there with another grid or block (another problem size: another workload), is refused, all
/// of them in one error that names the kernels both have with the same launch.
pub fn anchors(from: &FromGpu, t: &Table, groups: &[(String, Vec<usize>)]) -> Result<Vec<Anchor>> {
    let theirs = kernels(&from.table);
    let (mut missing, mut other_launch, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for (name, rows) in groups {
        let Some((_, their_rows)) = theirs.iter().find(|(g, _)| g == name) else {
            missing.push(name.as_str());
            continue;
        };
        let a = anchor(from, name, their_rows)?;
        let ours = profile_from_row_for(t, rows[0], None)?.launch;
        if (ours.grid, ours.block) != (a.profile.launch.grid, a.profile.launch.block) {
            other_launch.push(name.as_str());
            continue;
        }
        out.push(a);
    }
    if missing.is_empty() && other_launch.is_empty() {
        return Ok(out);
    }
    let both: Vec<&str> = groups
        .iter()
        .map(|(g, _)| g.as_str())
        .filter(|g| !missing.contains(g) && !other_launch.contains(g))
        .collect();
    let mut why = Vec::new();
    if !missing.is_empty() {
        why.push(format!("not measured on {}: {}", from.arch.name, missing.join(", ")));
    }
    if !other_launch.is_empty() {
        why.push(format!(
            "launched there with another grid or block (another problem size): {}",
            other_launch.join(", ")
        ));
    }
    Err(Error::Invalid(format!(
        "{}: {}; give --kernels with the kernels both files launch alike{}",
        from.table.source,
        why.join("; "),
        if both.is_empty() { " (there are none)".to_string() } else { format!(": {}", both.join(",")) }
    )))
}

/// Kernel `name` as measured on `from`, from its rows `rows` there.
fn anchor(from: &FromGpu, name: &str, rows: &[usize]) -> Result<Anchor> {
    let t = &from.table;
    let col = |c: &str, r: usize| t.column_index(c).map(|j| t.data[[r, j]]);
    let default = Clocks::default_for(&from.arch);
    let row = super::nearest_row(t, rows, default);
    let measured_s = col("time_s", row).filter(|v| v.is_finite() && *v > 0.0).ok_or_else(|| {
        Error::Invalid(format!(
            "{} line {}: {name} has no measured time (time_s) to start from",
            t.source,
            row + 2
        ))
    })?;
    let clocks = Clocks {
        core_mhz: col("core_mhz", row).unwrap_or(default.core_mhz),
        mem_mhz: col("mem_mhz", row).unwrap_or(default.mem_mhz),
    };
    let profile = profile_from_row_for(t, row, Capability::parse(&from.arch.compute_capability))?;
    // The bottleneck and occupancy as validate takes them for the GPU under test: at the default clocks.
    let tp = crate::kernel::predict_time_only(&profile, &from.arch, &crate::kernel::Config::default())?;
    let x = TimingInputs::from_profile(&profile)?;
    let occ = occupancy(&profile.launch, &from.arch, Some(tp.occupancy.active_warps_per_sm))?;
    let model_s = predict_time(&x, &from.arch, &occ, clocks).time_s;
    Ok(Anchor {
        peer: PeerInputs::from_row(t, row)?,
        profile,
        measured_s,
        clocks,
        bottleneck: tp.bottleneck,
        model_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_follows_the_bottleneck_s_resource() {
        let a = ArchProfile::builtin("gtx1080ti").unwrap();
        let c = Clocks::default_for(&a);
        let double_core = Clocks { core_mhz: 2.0 * c.core_mhz, ..c };
        let double_mem = Clocks { mem_mhz: 2.0 * c.mem_mhz, ..c };
        for (class, core, mem) in [
            ("global load", 1.0, 2.0),
            ("global store", 1.0, 2.0),
            ("compute", 2.0, 1.0),
            ("shared", 2.0, 1.0),
        ] {
            let base = throughput(&a, class, c);
            assert!((throughput(&a, class, double_core) / base - core).abs() < 1e-12, "{class}");
            assert!((throughput(&a, class, double_mem) / base - mem).abs() < 1e-12, "{class}");
        }
    }
}
