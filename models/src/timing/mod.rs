//! The counter-based pipeline timing model (paper §5.5, eq. 5.2–5.13), generalized to any architecture
//! profile and to core and memory clocks.
//!
//! The paper models one *round* of active warps on one SM — global loads leave the SM one
//! `in_warp_delay` apart after the first pays the full latency `CYC_load` (eq. 5.4), stores likewise
//! (eq. 5.5), shared accesses and bank conflicts cost `CYC_s` each (eq. 5.9), warps meet at barriers
//! `out_warp_delay` apart (eq. 5.12) — and multiplies by the number of rounds (eq. 5.11, 5.13). Here:
//!
//! * counts come from counters when the profile has them, from its `code` table otherwise (same names);
//! * the grid runs in waves of `active_blocks_per_sm` blocks per SM; a wave's counts are its blocks'
//!   share of the totals, and a last, partial wave runs with the warps of its leftover blocks (wave
//!   quantization), so a round is "what one SM does while its active warps are resident";
//! * memory instructions (global and shared requests) cost their own pipes, not compute issue time too;
//! * compute (eq. 5.6, ignored by the paper's final sum because its kernels were memory bound) is issue
//!   time, `max(1/schedulers, alu_latency/active_warps)` cycles per warp instruction, or the busiest pipe
//!   (Σ inst_type · cost_type), whichever is larger — fewer active warps hide less latency;
//! * the memory, compute, shared and texture pipelines overlap across warps, so one round takes about the
//!   longest of them (the memory and SM sides by a soft maximum, [`OVERLAP_EXPONENT`]; the latency
//!   bound by a plain maximum) plus the barrier time; the breakdown still reports every component, the largest is
//!   the bottleneck (paper Fig. 5.7);
//! * clocks: compute cycles are core cycles; DRAM latency and departure delay are fixed in memory-clock
//!   time, so in core cycles they scale by `(f_core/f_core0)·(f_mem0/f_mem)`.

use crate::arch::ArchProfile;
use serde::{Deserialize, Serialize};

/// How bank-conflict replays share an SM's time with the issue of its other instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SharedOverlap {
    /// Replays add to the issue time (the same schedulers issue both): the model as `predict` uses it on
    /// a new GPU.
    #[default]
    Additive,
    /// Replays overlap the issue of the non-FP64, non-memory instructions by a power mean,
    /// `S_requests + (C^p + R^p)^(1/p) + FP64` with `p` = [`REPLAY_OVERLAP_EXPONENT`]: the replays run in
    /// the shared pipe while the schedulers issue other work. Not one law for every GPU (on the NV-DVFS
    /// rows the GTX 1080 Ti's shared-heavy kernels follow it, the GTX 980's do not), so `validate`
    /// offers it (with the fill at the default core clock, [`TimingConfig::structural`]) as a
    /// structural candidate chosen inside the folds; `predict` uses it only through a saved calibration.
    ReplaysOverlapIssue,
}

impl SharedOverlap {
    /// The name reports and calibration files use.
    pub fn label(self) -> &'static str {
        match self {
            SharedOverlap::Additive => "additive",
            SharedOverlap::ReplaysOverlapIssue => "replays-overlap-issue",
        }
    }
}

/// The exponent of [`SharedOverlap::ReplaysOverlapIssue`]'s power mean. **Picked on the NV-DVFS rows**
/// (2 and 8 compared on the GTX 1080 Ti and GTX 980), neither measured
/// nor from a document: a development choice, fixed here so that no fold tunes it.
pub const REPLAY_OVERLAP_EXPONENT: f64 = 2.0;

/// Structural options of the timing model; the default is the model `predict` uses on a new GPU.
/// (Not deserialized: a calibration file spells out each field, and a missing one is an error there,
/// never a default.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TimingConfig {
    pub shared_overlap: SharedOverlap,
}

impl TimingConfig {
    /// The model's structure for a saved calibration's `shared_overlap`: the additive model (the
    /// default), or the structural alternative `validate` offers inside its folds — bank-conflict
    /// replays overlapping issue, with each wave's pipeline fill at the default core clock
    /// ([`TimingConfig::fill_at_default_core_clock`]); the folds choose the two together.
    pub fn structural(shared_overlap: SharedOverlap) -> TimingConfig {
        TimingConfig { shared_overlap }
    }

    /// Whether a wave's pipeline fill (one DRAM latency before the first data arrive) takes the
    /// latency's time at the architecture's default core clock (and the actual memory clock), whatever
    /// the core clock: true for the structural alternative. The GTX 1080 Ti's memory-bound kernels take
    /// the same time from 1600 to 2000 MHz core (vectorAdd 2.77–2.78 ms at 4000 MHz memory), which a
    /// fill in core cycles shortens; the GTX 980's small-workload kernels do follow the core clock, so
    /// it is not one law for every GPU and the additive model keeps the fill in core cycles
    /// ([`ArchProfile::dram_latency_cycles`] at the clocks).
    pub fn fill_at_default_core_clock(self) -> bool {
        self.shared_overlap == SharedOverlap::ReplaysOverlapIssue
    }
}

/// Core and memory clocks, MHz.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Clocks {
    pub core_mhz: f64,
    pub mem_mhz: f64,
}

impl Clocks {
    /// The architecture's default clocks.
    pub fn default_for(arch: &ArchProfile) -> Clocks {
        Clocks { core_mhz: arch.core_mhz.value, mem_mhz: arch.mem_mhz.value }
    }
}

mod inputs;
mod occupancy;
#[cfg(test)]
mod tests;
mod wave;

pub use inputs::TimingInputs;
pub use occupancy::{Occupancy, occupancy};
pub use wave::OVERLAP_EXPONENT;
use wave::{Wave, wave};

/// Components of the timing model, in the order they are reported.
pub const COMPONENTS: [&str; 7] =
    ["global load", "global store", "shared", "bank conflicts", "texture", "compute", "sync"];

/// Predicted time of one launch with its breakdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// Predicted kernel time, seconds (eq. 5.13, generalized).
    pub time_s: f64,
    /// Each component's time over the whole launch, seconds, in the order of [`COMPONENTS`].
    pub components_s: [f64; 7],
    /// The longest pipeline per round × rounds (memory, compute, shared or texture), seconds.
    pub bound_s: f64,
    /// Σ components − bound: the work the model assumes overlapped with the bound, seconds.
    pub overlapped_s: f64,
    /// Barrier time, seconds (never overlapped).
    pub sync_s: f64,
    /// Pipeline fill, seconds: one DRAM latency per round before the first data arrives (0 for a kernel
    /// without global memory traffic). Part of `bound_s` and `time_s`.
    pub fill_s: f64,
    /// Which pipeline is the bound: one of [`PIPELINES`].
    pub bound_kind: &'static str,
    /// The time the kernel's DRAM traffic (read + write bytes; transactions × transaction bytes where the
    /// profile has no byte counts, as for the load and store times; the written bytes per L2 write
    /// transaction where that count is higher, as the store time takes them under
    /// stores go to DRAM per L2 write) needs through the L2 cache at the
    /// architecture's `l2_bandwidth_gbs` scaled with the core clock, seconds. DRAM traffic also crosses
    /// L2, whose throughput scales with the core clock, so at a low core clock it can cap a memory-bound
    /// kernel whatever the memory clock (measured on the GTX 980: ~7 DRAM transactions per core cycle).
    /// Not a component and not part of `time_s`: the time calibration gives it a fitted factor.
    pub l2_s: f64,
    /// The shared and bank-conflict time that overlaps issue under
    /// [`SharedOverlap::ReplaysOverlapIssue`] (Σ of the SM side's components − the SM side), seconds;
    /// 0 for the additive model (then not serialized).
    #[serde(skip_serializing_if = "is_zero")]
    pub replays_hidden_s: f64,
}

pub(super) fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The pipelines whose longest sets a round's time (memory and texture share the memory side, compute and
/// shared the SM side; `latency` is the few-warps bound).
pub const PIPELINES: [&str; 5] = ["memory", "compute", "shared", "texture", "latency"];

impl Timing {
    /// The largest component: the bottleneck, with its share of Σ components.
    pub fn bottleneck(&self) -> (&'static str, f64) {
        let total: f64 = self.components_s.iter().sum();
        let (i, v) = self
            .components_s
            .iter()
            .enumerate()
            .fold((0, f64::MIN), |(bi, bv), (i, &v)| if v > bv { (i, v) } else { (bi, bv) });
        (COMPONENTS[i], if total > 0.0 { v / total } else { 0.0 })
    }

    /// Each component's share of Σ components (paper Fig. 5.7).
    pub fn shares(&self) -> [f64; 7] {
        let total: f64 = self.components_s.iter().sum();
        self.components_s.map(|c| if total > 0.0 { c / total } else { 0.0 })
    }
}

/// Predicts the time of one launch at `clocks` with the resident warps of `occ`.
///
/// The grid runs in **waves**: full waves of `active_blocks_per_sm` blocks on every active SM, then (when
/// the blocks do not divide evenly) one last, partial wave in which the busiest SM runs the leftover blocks
/// with fewer resident warps, so it hides less latency (wave quantization: a grid of 4.6 waves costs
/// four full waves and a fifth with a fraction of the warps, not 4.6 full ones). Work is spread evenly
/// over blocks (counts per block = totals / blocks). One wave on one SM:
///
/// * **memory side** — global loads and stores stream to DRAM one departure delay apart and load L2 hits
///   one L2 delay apart (stores go to DRAM per L2 write transaction: a write-back L2 saves no DRAM write
///   that the counters show), or issue at the LD/ST rate, whichever is slower; DRAM latency and delay follow
///   the clocks ([`ArchProfile::dram_latency_cycles`], [`ArchProfile::dram_delay_cycles`]); the whole
///   GPU's DRAM traffic cannot pass L2 faster than `l2_dram_bytes_per_core_cycle` (L2 runs on the core
///   clock); texture queries stream at the LD/ST rate, their misses at the DRAM delay;
/// * **SM side** — the instructions that are not memory instructions (global and shared requests are
///   charged on the memory side and the shared pipe, not twice) issue-limited, with exposed ALU latency
///   when few warps are resident, or the busiest pipe; plus FP64 instructions at their own, much lower,
///   throughput, plus shared-memory accesses incl. bank conflicts: the same schedulers issue all of them,
///   so they add;
/// * **latency** — with few resident warps a warp's own requests wait one after another: requests per
///   warp (global load requests where the profile counts them, else transactions in 128-byte requests;
///   a request waits once however many sectors it touches) × the average (DRAM or L2-hit) latency;
///
/// a wave takes the latency bound or, when that is shorter, the soft maximum of the memory and SM sides
/// (they overlap across warps, not perfectly: [`OVERLAP_EXPONENT`]), plus one DRAM latency to fill the pipeline (when the kernel
/// touches global memory; in core cycles at the clocks, or its time at the default core clock under
/// [`TimingConfig::fill_at_default_core_clock`]) and the barrier time.
pub fn predict_time(x: &TimingInputs, arch: &ArchProfile, occ: &Occupancy, clocks: Clocks) -> Timing {
    predict_time_with(x, arch, occ, clocks, TimingConfig::default())
}

/// [`predict_time`] with the model's structural options `cfg`.
pub fn predict_time_with(
    x: &TimingInputs,
    arch: &ArchProfile,
    occ: &Occupancy,
    clocks: Clocks,
    cfg: TimingConfig,
) -> Timing {
    let fc = clocks.core_mhz;
    let sms = occ.active_sms.max(1);
    let per_sm = u64::from(occ.active_blocks_per_sm.max(1));
    let wpb = f64::from(occ.warps_per_block.max(1));
    // Total blocks: recorded by `occupancy`; an occupancy built by hand without them runs its rounds as
    // full waves.
    let blocks = if occ.blocks > 0 {
        occ.blocks
    } else {
        (occ.rounds.max(1.0) as u64).saturating_mul(u64::from(sms)).saturating_mul(per_sm)
    };
    let wave_blocks = u64::from(sms) * per_sm;
    let full = blocks / wave_blocks;
    let rest = blocks - full * wave_blocks;
    let mut waves: Vec<(f64, Wave)> = Vec::with_capacity(2);
    if full > 0 {
        let w = f64::from(occ.active_warps_per_sm).max(1.0);
        waves.push((
            full as f64,
            wave(x, arch, per_sm as f64 / blocks as f64, w, f64::from(sms), clocks, cfg),
        ));
    }
    if rest > 0 {
        let last_sms = rest.min(u64::from(sms));
        let last_blocks = rest.div_ceil(last_sms);
        let w = last_blocks as f64 * wpb;
        waves.push((1.0, wave(x, arch, last_blocks as f64 / blocks as f64, w, last_sms as f64, clocks, cfg)));
    }
    let to_s = 1.0 / (fc * 1e6);
    let total = |f: &dyn Fn(&Wave) -> f64| waves.iter().map(|(n, wv)| n * f(wv)).sum::<f64>() * to_s;
    let mut components_s = [0.0; 7];
    for (i, c) in components_s.iter_mut().enumerate() {
        *c = total(&|wv| wv.parts[i]);
    }
    let bound_s = total(&|wv| wv.bound + wv.fill);
    let sync_s = total(&|wv| wv.sync);
    let overlapped_s = total(&|wv| (wv.parts.iter().sum::<f64>() - wv.sync - wv.bound).max(0.0));
    // The bound of the wave that takes the longest in all (the full waves when there are any).
    let bound_kind = waves
        .iter()
        .max_by(|a, b| (a.0 * a.1.bound).total_cmp(&(b.0 * b.1.bound)))
        .map_or("compute", |(_, wv)| wv.kind);
    // L2 runs on the core clock: its bandwidth scales with fc / the default core clock.
    let tx = arch.transaction_bytes.value;
    let tx_bytes = |bytes: Option<f64>, tx_count: f64| bytes.unwrap_or(tx_count * tx);
    // The written bytes that leave for DRAM: per L2 write transaction where that count is higher, as the
    // store side charges them, so L and the store time count the same writes.
    let written = tx_bytes(x.dram_write_bytes, x.store_tx).max(x.l2_write_tx.unwrap_or(0.0) * tx);
    let l2_bytes = tx_bytes(x.dram_read_bytes, x.load_tx) + written;
    let l2_bw = arch.l2_bandwidth_gbs.value * 1e9 * fc / arch.core_mhz.value;
    let l2_s = if l2_bw > 0.0 { l2_bytes / l2_bw } else { 0.0 };
    Timing {
        time_s: bound_s + sync_s,
        components_s,
        bound_s,
        overlapped_s,
        sync_s,
        fill_s: total(&|wv| wv.fill),
        bound_kind,
        l2_s,
        replays_hidden_s: total(&|wv| wv.hidden),
    }
}
