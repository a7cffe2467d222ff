//! One wave of resident warps on one SM: the memory side, the SM side, the latency bound and the fill.

use super::{Clocks, REPLAY_OVERLAP_EXPONENT, SharedOverlap, TimingConfig, TimingInputs};
use crate::arch::ArchProfile;

/// The exponent of the power mean `(M^p + S^p)^(1/p)` by which the memory side `M` and the SM side `S`
/// of a round overlap: `∞` would be full overlap (the longer side alone), 1 none. **Chosen on the NV-DVFS
/// rows** (GTX 1080 Ti and GTX 980: 3, 4, 6 and 8 compared; 8, the
/// smallest change from full overlap, brings the GTX 1080 Ti's mean E·D² regret below 5%), not
/// measured nor from a document: a development choice, not an architecture constant.
pub const OVERLAP_EXPONENT: f64 = 8.0;

/// `(a^p + b^p)^(1/p)` with `p` = [`OVERLAP_EXPONENT`]: the longer of `a` and `b` when the other is much
/// shorter, up to `2^(1/p)` times it when they are equal.
pub(super) fn soft_max(a: f64, b: f64) -> f64 {
    power_mean(a, b, OVERLAP_EXPONENT)
}

/// `(a^p + b^p)^(1/p)` for `a, b ≥ 0`.
fn power_mean(a: f64, b: f64, p: f64) -> f64 {
    let m = a.max(b);
    if m <= 0.0 || a.min(b) <= 0.0 {
        return m;
    }
    // Relative to the larger: no overflow whatever the magnitudes.
    m * ((a / m).powf(p) + (b / m).powf(p)).powf(1.0 / p)
}

/// One wave on one SM, core cycles.
pub(super) struct Wave {
    /// The components in the order of [`COMPONENTS`].
    pub(super) parts: [f64; 7],
    pub(super) bound: f64,
    pub(super) kind: &'static str,
    pub(super) fill: f64,
    pub(super) sync: f64,
    /// SM-side components that overlap issue (0 for the additive model).
    pub(super) hidden: f64,
}

/// One wave on one SM that runs the fraction `per` of the launch's work (its share of the blocks) with
/// `w` resident warps, while `sms` SMs share the L2.
pub(super) fn wave(
    x: &TimingInputs,
    arch: &ArchProfile,
    per: f64,
    w: f64,
    sms: f64,
    clocks: Clocks,
    cfg: TimingConfig,
) -> Wave {
    let (fc, fm) = (clocks.core_mhz, clocks.mem_mhz);
    let lat_dram = arch.dram_latency_cycles(fc, fm);
    let delay = arch.dram_delay_cycles(fc, fm);
    // Without measured L2 constants a hit costs only its LD/ST issue and the DRAM latency (no L2 model).
    let (l2_lat, l2_delay) =
        arch.dvfs_memory.as_ref().map_or((lat_dram, 0.0), |d| (d.l2_latency.value, d.l2_delay.value));
    let tx = arch.transaction_bytes.value;
    let ldst = arch.cost_ldst.value;
    // The LD/ST units serve one 128-byte warp request (32 threads × 4 bytes) per `cost_ldst` cycles, so a
    // 32-byte sector costs a quarter of that.
    let ldst_tx = ldst * tx / 128.0;

    // Global memory (eq. 5.3–5.5 in throughput form): DRAM transactions one departure delay apart, L2
    // load hits one L2 delay apart (hits = L2 read transactions − DRAM read transactions, where the
    // profile has both).
    let ld = x.load_tx * per;
    let st = x.store_tx * per;
    let ld_dram = x.dram_read_bytes.map_or(x.load_tx, |b| b / tx) * per;
    // Stores leave for DRAM per L2 write transaction, not per counted DRAM write: the L2 is write-back,
    // so a written sector still goes to DRAM when its line is evicted. nvprof's DRAM write count can be
    // lower (GTX 1080 Ti quasirandomGenerator: 74% of its L2 writes, a kernel that writes each output
    // once), yet that kernel's memory-bound time follows all its L2 writes at the rate SobolQRNG's writes
    // run at, so a store "hit" is no cheaper than a miss here.
    let st_dram =
        (x.dram_write_bytes.map_or(x.store_tx, |b| b / tx) * per).max(x.l2_write_tx.unwrap_or(0.0) * per);
    let ld_l2 = x.l2_read_tx.map_or(ld_dram, |v| v * per);
    let st_l2 = x.l2_write_tx.map_or(st_dram, |v| v * per);
    let (ld_hits, st_hits) = ((ld_l2 - ld_dram).max(0.0), (st_l2 - st_dram).max(0.0));
    let mut t_load = if ld > 0.0 { (ld_dram * delay + ld_hits * l2_delay).max(ld * ldst_tx) } else { 0.0 };
    let mut t_store = if st > 0.0 { (st_dram * delay + st_hits * l2_delay).max(st * ldst_tx) } else { 0.0 };
    // L2 runs on the core clock: all SMs' DRAM traffic together cannot pass it faster than its bytes per
    // core cycle (measured on the GTX 980: ~7 DRAM transactions per core cycle whatever the memory clock).
    if let Some(b) = &arch.l2_dram_bytes_per_core_cycle {
        let cap = (ld_dram + st_dram) * tx * sms / b.value;
        let stream = t_load + t_store;
        if cap > stream && stream > 0.0 {
            t_load *= cap / stream;
            t_store *= cap / stream;
        }
    }
    // Shared memory (eq. 5.9), conflicts separately (the paper's last term of eq. 5.13): each wavefront
    // (request or replay) holds the banks for one warp-wide access at the SM's shared bandwidth.
    let s = x.shared_base * per;
    let cs = arch.shared_cycles_per_wavefront();
    let t_shared = if s > 0.0 { arch.cyc_s.value + s * cs } else { 0.0 };
    let t_conf = x.shared_conflicts * per * cs;
    // Texture (eq. 5.8 in throughput form): the first query pays CYC_t (a miss, the DRAM latency);
    // queries then stream at the LD/ST rate and misses leave for DRAM one departure delay apart. (The
    // paper's per-warp form, (hits·CYC_t + misses·CYC_load) / warps, assumes no overlap of one warp's
    // misses and overestimated texture kernels several-fold on NV-DVFS.)
    let hits = (x.tex_queries - x.tex_misses).max(0.0) * per;
    let t_tex = if x.tex_queries > 0.0 {
        let first = if hits > 0.0 { arch.cyc_t.value } else { lat_dram };
        first + (x.tex_queries * per * ldst_tx).max((x.tex_misses * per - 1.0).max(0.0) * delay)
    } else {
        0.0
    };
    // Compute (eq. 5.6): issue-limited or pipe-limited; FP64 at its own throughput on top (on GPUs with
    // few FP64 units a warp's FP64 instruction holds its scheduler for many cycles). Memory instructions
    // are charged where they are served (global requests on the memory side, shared ones on the shared
    // pipe), so they are not issue time here too. Counted type conversions, where the profile has them
    // and the architecture its `cost_conversion64`, are charged like FP64 at that cost (the Guide's
    // rate for conversions from and to 64-bit types: an upper bound for the others) instead of issuing
    // with the other instructions; without either, `c_cvt` is 0 and nothing else moves.
    let issue = (1.0 / arch.schedulers_per_sm.value).max(arch.alu_latency.value / w);
    let pipes = x.inst_fp32 * arch.cost_fp32.value
        + x.inst_int * arch.cost_int.value
        + x.inst_sfu * arch.cost_sfu.value;
    let (cvt, cost_cvt) = match &arch.cost_conversion64 {
        Some(c) => (x.inst_convert, c.value),
        None => (0.0, 0.0),
    };
    let other = (x.inst - x.inst_fp64 - cvt - x.memory_instructions(tx)).max(0.0);
    let c_issue = (other * issue).max(pipes) * per;
    let c_fp64 = x.inst_fp64 * arch.cost_fp64.value * per;
    let c_cvt = cvt * cost_cvt * per;
    let t_comp = c_issue + c_fp64 + c_cvt + arch.cyc_r.value;
    // Barriers (eq. 5.12): every barrier waits for the other active warps.
    let t_sync = x.barriers_per_warp * (w - 1.0) * arch.out_warp_delay.value;
    // Latency-bound (few warps): each warp's requests one after another at the average latency.
    let l2_tx = ld_l2 + st_l2;
    let dram_tx = ld_dram + st_dram;
    let hit_rate = if l2_tx > 0.0 { (1.0 - dram_tx / l2_tx).clamp(0.0, 1.0) } else { 0.0 };
    let avg_lat = (lat_dram + delay) * (1.0 - hit_rate) + l2_lat * hit_rate;
    // Requests that leave the SM: a warp waits once per request, however many sectors it touches (an
    // uncoalesced load of 14 sectors is one wait, not 3.5). Global load requests (`gld_request`) where
    // the profile has them, at most one per L2 read transaction (L1/texture hits never wait for memory);
    // else the L2 transactions in 128-byte warp requests. Stores: one request per 128 bytes.
    let load_requests = x.load_requests.map_or(ld_l2 * tx / 128.0, |r| (r * per).min(ld_l2));
    let requests_per_warp = (load_requests + st_l2 * tx / 128.0) / w;
    let t_latency = requests_per_warp * avg_lat;

    let mem_side = t_load + t_store + t_tex;
    let (sm_side, hidden) = match cfg.shared_overlap {
        SharedOverlap::Additive => (t_comp + t_shared + t_conf, 0.0),
        SharedOverlap::ReplaysOverlapIssue => {
            // Replays run in the shared pipe while the schedulers issue the other (non-FP64) work; the
            // shared requests themselves and FP64 still take issue slots, so they add.
            let overlapped = power_mean(c_issue, t_conf, REPLAY_OVERLAP_EXPONENT);
            let side = t_shared + overlapped + c_fp64 + c_cvt + arch.cyc_r.value;
            (side, (t_comp + t_shared + t_conf - side).max(0.0))
        }
    };
    let (kind, bound) = if t_latency > mem_side.max(sm_side) {
        ("latency", t_latency)
    } else if mem_side >= sm_side {
        (if t_tex > t_load + t_store { "texture" } else { "memory" }, mem_side)
    } else {
        (if t_shared + t_conf > t_comp { "shared" } else { "compute" }, sm_side)
    };
    // The two sides overlap across warps, but not perfectly: when both are nearly equally loaded, warps
    // stall on each in turn, so the round takes more than the longer side (a soft maximum).
    let bound = if kind == "latency" { bound } else { soft_max(mem_side, sm_side) };
    let fill_cycles = if cfg.fill_at_default_core_clock() {
        // The latency's time at the default core clock, in core cycles at this one.
        let fc0 = arch.core_mhz.value;
        arch.dram_latency_cycles(fc0, fm) * fc / fc0
    } else {
        lat_dram
    };
    Wave {
        parts: [t_load, t_store, t_shared, t_conf, t_tex, t_comp, t_sync],
        bound,
        kind,
        fill: if ld + st > 0.0 { fill_cycles } else { 0.0 },
        sync: t_sync,
        hidden,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_and_sm_sides_overlap_by_a_soft_maximum() {
        // Equal sides: 2^(1/p) times one of them, not the one alone (full overlap) nor the sum.
        assert!((soft_max(1.0, 1.0) - 2f64.powf(1.0 / OVERLAP_EXPONENT)).abs() < 1e-15);
        // A side a third as long adds almost nothing (3^-8 of the longer one, under the root).
        assert!((soft_max(3.0, 1.0) / 3.0 - 1.0).abs() < 2e-5);
        assert_eq!(soft_max(2.0, 0.0), 2.0);
        assert_eq!(soft_max(0.0, 0.0), 0.0);
        // Symmetric and never below the longer side.
        assert_eq!(soft_max(0.7, 1.9), soft_max(1.9, 0.7));
        assert!(soft_max(0.7, 1.9) >= 1.9);
    }
}
