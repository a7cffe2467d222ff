//! The counter-based pipeline timing model (paper §5.5, eq. 5.2–5.13), generalized to any architecture
//! profile and to core and memory clocks.
//!
//! The paper models one *round* of active warps on one SM — global loads leave the SM one
//! `in_warp_delay` apart after the first pays the full latency `CYC_load` (eq. 5.4), stores likewise
//! (eq. 5.5), shared accesses and bank conflicts cost `CYC_s` each (eq. 5.9), warps meet at barriers
//! `out_warp_delay` apart (eq. 5.12) — and multiplies by the number of rounds (eq. 5.11, 5.13). Here:
//!
//! * counts come from counters when the profile has them, from its `code` table otherwise (same names);
//! * per-round counts are totals / (active SMs · rounds), so a round is "what one SM does while its
//!   active warps are resident";
//! * compute (eq. 5.6, ignored by the paper's final sum because its kernels were memory bound) is issue
//!   time, `max(1/schedulers, alu_latency/active_warps)` cycles per warp instruction, or the busiest pipe
//!   (Σ inst_type · cost_type), whichever is larger — fewer active warps hide less latency;
//! * the memory, compute, shared and texture pipelines overlap across warps, so one round takes the
//!   longest of them plus the barrier time; the breakdown still reports every component, the largest is
//!   the bottleneck (paper Fig. 5.7);
//! * clocks: compute cycles are core cycles; DRAM latency and departure delay are fixed in memory-clock
//!   time, so in core cycles they scale by `(f_core/f_core0)·(f_mem0/f_mem)`.

use crate::arch::ArchProfile;
use crate::error::{Error, Result};
use crate::profile::{KernelProfile, Launch};
use serde::Serialize;

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

/// Resident blocks and warps per SM, like the CUDA occupancy calculator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub warps_per_block: u32,
    pub active_blocks_per_sm: u32,
    pub active_warps_per_sm: u32,
    /// Which ceiling set the active blocks (`warps`, `blocks`, `registers`, `shared memory`,
    /// `--warps`, `grid size`).
    pub limiter: String,
    /// Blocks per SM each ceiling allows.
    pub ceilings: Vec<(String, u32)>,
    /// SMs that receive blocks.
    pub active_sms: u32,
    /// Rounds (waves) of resident blocks per SM.
    pub rounds: f64,
    /// Warps that saturate DRAM bandwidth (DESIGN.md): `CYC_load · (bandwidth / active SMs) / 128`
    /// bytes per warp request, at the default clocks. More active warps than this do not speed up
    /// the memory side.
    pub bandwidth_warps: f64,
}

/// Active blocks and warps per SM for a launch, with at most `warps_cap` active warps per SM (`--warps`).
pub fn occupancy(launch: &Launch, arch: &ArchProfile, warps_cap: Option<u32>) -> Result<Occupancy> {
    let threads = launch.threads_per_block();
    let blocks = launch.blocks();
    if threads == 0 || blocks == 0 {
        return Err(Error::Invalid(
            "launch.grid and launch.block must be at least 1 in every dimension".into(),
        ));
    }
    let over = |what: &str, got: f64, limit: f64| {
        Error::Invalid(format!(
            "the launch is over a hardware limit of {}: {what} is {got}, the limit is {limit}",
            arch.display_name
        ))
    };
    if f64::from(threads) > arch.max_threads_per_block.value {
        return Err(over("threads per block", f64::from(threads), arch.max_threads_per_block.value));
    }
    if f64::from(launch.registers_per_thread) > arch.max_registers_per_thread.value {
        return Err(over(
            "registers per thread",
            f64::from(launch.registers_per_thread),
            arch.max_registers_per_thread.value,
        ));
    }
    if f64::from(launch.shared_mem_per_block) > arch.max_shared_mem_per_block.value {
        return Err(over(
            "shared memory per block (bytes)",
            f64::from(launch.shared_mem_per_block),
            arch.max_shared_mem_per_block.value,
        ));
    }
    let wpb = arch.warps_per_block(threads);
    let max_warps = arch.max_warps_per_sm.value as u32;
    let mut ceilings: Vec<(String, u32)> =
        vec![("warps".into(), max_warps / wpb), ("blocks".into(), arch.max_blocks_per_sm.value as u32)];
    if launch.registers_per_thread > 0 {
        let unit = arch.register_alloc_unit.value;
        let per_warp = (f64::from(launch.registers_per_thread) * arch.warp_size.value / unit).ceil() * unit;
        let warps = (arch.registers_per_sm.value / per_warp).floor() as u32;
        ceilings.push(("registers".into(), warps / wpb));
    }
    if launch.shared_mem_per_block > 0 {
        let b = (arch.shared_mem_per_sm.value / f64::from(launch.shared_mem_per_block)).floor() as u32;
        ceilings.push(("shared memory".into(), b));
    }
    if let Some(cap) = warps_cap {
        if cap == 0 || cap > max_warps {
            return Err(Error::Invalid(format!(
                "--warps {cap} is outside 1..={max_warps}, the warps per SM of {}",
                arch.display_name
            )));
        }
        if cap < wpb {
            return Err(Error::Invalid(format!(
                "--warps {cap} is fewer than one block of this kernel ({wpb} warps of {threads} threads): use --warps ≥ {wpb}"
            )));
        }
        ceilings.push(("--warps".into(), cap / wpb));
    }
    let active_sms = (arch.sm_count.value as u64).min(blocks) as u32;
    let blocks_per_sm = blocks.div_ceil(u64::from(active_sms)).min(u64::from(u32::MAX)) as u32;
    ceilings.push(("grid size".into(), blocks_per_sm));
    let (limiter, active_blocks) = ceilings
        .iter()
        .min_by_key(|(_, b)| *b)
        .map(|(n, b)| (n.clone(), *b))
        .unwrap_or_else(|| ("warps".into(), 1));
    if active_blocks == 0 {
        return Err(Error::Invalid(format!(
            "not one block fits on an SM of {}: the {limiter} limit allows 0 blocks of {threads} threads \
             ({} registers/thread, {} bytes shared memory/block)",
            arch.display_name, launch.registers_per_thread, launch.shared_mem_per_block
        )));
    }
    let rounds = (blocks as f64 / (f64::from(active_sms) * f64::from(active_blocks))).ceil();
    let per_sm_per_cycle =
        arch.bandwidth_bytes_per_s(arch.mem_mhz.value) / f64::from(active_sms) / (arch.core_mhz.value * 1e6);
    let bandwidth_warps = arch.cyc_load.value * per_sm_per_cycle / 128.0;
    Ok(Occupancy {
        warps_per_block: wpb,
        active_blocks_per_sm: active_blocks,
        active_warps_per_sm: active_blocks * wpb,
        limiter,
        ceilings,
        active_sms,
        rounds,
        bandwidth_warps,
    })
}

/// What the timing model reads from a kernel profile: totals over one launch, all SMs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingInputs {
    /// Warp instructions executed.
    pub inst: f64,
    pub inst_fp32: f64,
    pub inst_fp64: f64,
    pub inst_int: f64,
    pub inst_sfu: f64,
    /// Global load transactions (L1 hits + misses + uncached).
    pub load_tx: f64,
    pub store_tx: f64,
    /// DRAM bytes, when the profile has them (else every transaction is assumed to reach DRAM).
    pub dram_read_bytes: Option<f64>,
    pub dram_write_bytes: Option<f64>,
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
                "kernel profile '{}' lacks {} (write 0 for a kernel that has none)",
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
            load_tx: loads.iter().sum(),
            store_tx: store.unwrap_or(0.0),
            dram_read_bytes: get("dram_read_bytes"),
            dram_write_bytes: get("dram_write_bytes"),
            shared_base: opt("shared_load") + opt("shared_store"),
            shared_conflicts: opt("l1_shared_bank_conflict"),
            tex_queries: opt("tex0_cache_sector_queries"),
            tex_misses: opt("tex0_cache_sector_misses"),
            barriers_per_warp: k.code.get("barriers").copied().unwrap_or(0.0),
        })
    }
}

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
    /// Which pipeline is the bound: one of [`PIPELINES`].
    pub bound_kind: &'static str,
    /// The time the kernel's DRAM traffic (read + write bytes; transactions × transaction bytes where the
    /// profile has no byte counts, as for the load and store times) needs through the L2 cache at the
    /// architecture's `l2_bandwidth_gbs` scaled with the core clock, seconds. DRAM traffic also crosses
    /// L2, whose throughput scales with the core clock, so at a low core clock it can cap a memory-bound
    /// kernel whatever the memory clock (measured on the GTX 980: ~7 DRAM transactions per core cycle).
    /// Not a component and not part of `time_s`: the time calibration gives it a fitted factor.
    pub l2_s: f64,
}

/// The pipelines whose longest sets a round's time.
pub const PIPELINES: [&str; 4] = ["memory", "compute", "shared", "texture"];

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
pub fn predict_time(x: &TimingInputs, arch: &ArchProfile, occ: &Occupancy, clocks: Clocks) -> Timing {
    let fc = clocks.core_mhz;
    let rounds = occ.rounds.max(1.0);
    let per = 1.0 / (f64::from(occ.active_sms) * rounds);
    let w = f64::from(occ.active_warps_per_sm).max(1.0);
    // Memory-side latencies are fixed in memory-clock time: in core cycles they scale like this.
    let mem_scale = (fc / arch.core_mhz.value) * (arch.mem_mhz.value / clocks.mem_mhz);
    let lat_load = arch.cyc_load.value * mem_scale;
    let lat_store = arch.cyc_store.value * mem_scale;
    let delay = arch.in_warp_delay.value * mem_scale;
    let tx = arch.transaction_bytes.value;
    let ldst = arch.cost_ldst.value;
    // The LD/ST units serve one 128-byte warp request (32 threads × 4 bytes) per `cost_ldst` cycles, so a
    // 32-byte sector costs a quarter of that.
    let ldst_tx = ldst * tx / 128.0;

    // Global loads (eq. 5.3–5.4): the first pays the latency, the rest leave one departure delay apart
    // for DRAM, or one LD/ST issue apart, whichever is slower.
    let ld = x.load_tx * per;
    let ld_dram = x.dram_read_bytes.map_or(x.load_tx, |b| b / tx) * per;
    let t_load = if ld > 0.0 { lat_load + ((ld_dram - 1.0).max(0.0) * delay).max(ld * ldst_tx) } else { 0.0 };
    let st = x.store_tx * per;
    let st_dram = x.dram_write_bytes.map_or(x.store_tx, |b| b / tx) * per;
    let t_store =
        if st > 0.0 { lat_store + ((st_dram - 1.0).max(0.0) * delay).max(st * ldst_tx) } else { 0.0 };
    // Shared memory (eq. 5.9), conflicts separately (the paper's last term of eq. 5.13).
    let s = x.shared_base * per;
    let t_shared = if s > 0.0 { arch.cyc_s.value + s * ldst } else { 0.0 };
    let t_conf = x.shared_conflicts * per * ldst;
    // Texture (eq. 5.8): hits cost CYC_t, misses a global load, overlapped over the active warps.
    let hits = (x.tex_queries - x.tex_misses).max(0.0) * per;
    // Texture (eq. 5.8 in throughput form): the first query pays CYC_t (a miss, CYC_load); queries then
    // stream at the LD/ST rate and misses leave for DRAM one departure delay apart. (The paper's
    // per-warp form, (hits·CYC_t + misses·CYC_load) / warps, assumes no overlap of one warp's misses
    // and overestimated texture kernels several-fold on NV-DVFS.)
    let t_tex = if x.tex_queries > 0.0 {
        let first = if hits > 0.0 { arch.cyc_t.value } else { lat_load };
        first + (x.tex_queries * per * ldst_tx).max((x.tex_misses * per - 1.0).max(0.0) * delay)
    } else {
        0.0
    };
    // Compute (eq. 5.6): issue-limited or pipe-limited.
    let issue = (1.0 / arch.schedulers_per_sm.value).max(arch.alu_latency.value / w);
    let pipes = x.inst_fp32 * arch.cost_fp32.value
        + x.inst_fp64 * arch.cost_fp64.value
        + x.inst_int * arch.cost_int.value
        + x.inst_sfu * arch.cost_sfu.value;
    let t_comp = (x.inst * issue).max(pipes) * per + arch.cyc_r.value;
    // Barriers (eq. 5.12): every barrier waits for the other active warps.
    let t_sync = x.barriers_per_warp * (w - 1.0) * arch.out_warp_delay.value;

    let parts = [t_load, t_store, t_shared, t_conf, t_tex, t_comp, t_sync];
    let pipelines = [t_load + t_store, t_comp, t_shared + t_conf, t_tex];
    let (bound_kind, bound) = pipelines
        .iter()
        .enumerate()
        .fold((0, 0.0f64), |(bk, bv), (k, &v)| if v > bv { (k, v) } else { (bk, bv) });
    let sum: f64 = parts.iter().sum();
    let to_s = rounds / (fc * 1e6);
    // L2 runs on the core clock: its bandwidth scales with fc / the default core clock.
    let tx_bytes = |bytes: Option<f64>, tx_count: f64| bytes.unwrap_or(tx_count * tx);
    let l2_bytes = tx_bytes(x.dram_read_bytes, x.load_tx) + tx_bytes(x.dram_write_bytes, x.store_tx);
    let l2_bw = arch.l2_bandwidth_gbs.value * 1e9 * fc / arch.core_mhz.value;
    let l2_s = if l2_bw > 0.0 { l2_bytes / l2_bw } else { 0.0 };
    Timing {
        time_s: (bound + t_sync) * to_s,
        components_s: parts.map(|p| p * to_s),
        bound_s: bound * to_s,
        overlapped_s: (sum - t_sync - bound).max(0.0) * to_s,
        sync_s: t_sync * to_s,
        bound_kind: PIPELINES[bound_kind],
        l2_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(grid: u32, block: u32, regs: u32, smem: u32) -> Launch {
        Launch {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            registers_per_thread: regs,
            shared_mem_per_block: smem,
        }
    }

    #[test]
    fn occupancy_like_the_calculator() {
        let a = ArchProfile::builtin("gtx1080ti").unwrap();
        // 256 threads = 8 warps; 64 warps/SM → 8 blocks; 32 regs → 32·32 = 1024 regs/warp → 64 warps.
        let o = occupancy(&launch(10_000, 256, 32, 0), &a, None).unwrap();
        assert_eq!((o.active_blocks_per_sm, o.active_warps_per_sm), (8, 64));
        // 64 regs/thread → 2048 regs/warp → 32 warps → 4 blocks, limited by registers.
        let o = occupancy(&launch(10_000, 256, 64, 0), &a, None).unwrap();
        assert_eq!((o.active_blocks_per_sm, o.limiter.as_str()), (4, "registers"));
        // 40 KB shared per block → 96 KB / 40 KB = 2 blocks.
        let o = occupancy(&launch(10_000, 256, 0, 40 * 1024), &a, None).unwrap();
        assert_eq!((o.active_blocks_per_sm, o.limiter.as_str()), (2, "shared memory"));
        // --warps 32 caps to 4 blocks; rounds = ceil(10000 / (28 · 4)) = 90.
        let o = occupancy(&launch(10_000, 256, 0, 0), &a, Some(32)).unwrap();
        assert_eq!((o.active_warps_per_sm, o.rounds), (32, 90.0));
        // One block uses one SM.
        let o = occupancy(&launch(1, 512, 0, 0), &a, None).unwrap();
        assert_eq!((o.active_sms, o.active_warps_per_sm, o.limiter.as_str()), (1, 16, "grid size"));
    }

    #[test]
    fn launches_over_the_limits_name_the_limit() {
        let a = ArchProfile::builtin("c2075").unwrap();
        let msg = occupancy(&launch(1, 2048, 0, 0), &a, None).unwrap_err().to_string();
        assert!(msg.contains("threads per block is 2048, the limit is 1024"), "{msg}");
        let msg = occupancy(&launch(1, 256, 100, 0), &a, None).unwrap_err().to_string();
        assert!(msg.contains("registers per thread is 100, the limit is 63"), "{msg}");
        let msg = occupancy(&launch(1, 256, 0, 0), &a, Some(49)).unwrap_err().to_string();
        assert!(msg.contains("1..=48"), "{msg}");
    }

    fn inputs() -> TimingInputs {
        TimingInputs {
            inst: 1e6,
            inst_fp32: 0.0,
            inst_fp64: 0.0,
            inst_int: 0.0,
            inst_sfu: 0.0,
            load_tx: 0.0,
            store_tx: 0.0,
            dram_read_bytes: None,
            dram_write_bytes: None,
            shared_base: 0.0,
            shared_conflicts: 0.0,
            tex_queries: 0.0,
            tex_misses: 0.0,
            barriers_per_warp: 0.0,
        }
    }

    #[test]
    fn compute_bound_time_by_hand() {
        // C2075: 14 SMs, 2 schedulers, ALU latency 22, 1150 MHz. 1400 blocks of 256 threads = 8 warps;
        // 48 warps/SM → 6 blocks (48 warps), 1400 / (14·6) → 17 rounds. Issue = max(1/2, 22/48) = 0.5
        // cycles per warp instruction; 1e6 instructions / (14·17) per SM per round · 0.5 + CYC_r (1).
        let a = ArchProfile::builtin("c2075").unwrap();
        let o = occupancy(&launch(1400, 256, 0, 0), &a, None).unwrap();
        assert_eq!((o.active_warps_per_sm, o.rounds), (48, 17.0));
        let t = predict_time(&inputs(), &a, &o, Clocks::default_for(&a));
        let per_round = 1e6 / (14.0 * 17.0) * 0.5 + 1.0;
        let want = 17.0 * per_round / 1150e6;
        assert!((t.time_s - want).abs() / want < 1e-12, "{} vs {want}", t.time_s);
        assert_eq!(t.bottleneck().0, "compute");
        // Compute scales with the core clock only.
        let t2 = predict_time(&inputs(), &a, &o, Clocks { core_mhz: 575.0, mem_mhz: 1566.0 });
        assert!((t2.time_s / t.time_s - 2.0).abs() < 1e-12);
        // With 8 active warps, latency is exposed: 22/8 = 2.75 cycles per instruction.
        let o8 = occupancy(&launch(1400, 256, 0, 0), &a, Some(8)).unwrap();
        let t8 = predict_time(&inputs(), &a, &o8, Clocks::default_for(&a));
        let want8 = 100.0 * (1e6 / (14.0 * 100.0) * 2.75 + 1.0) / 1150e6;
        assert!((t8.time_s - want8).abs() / want8 < 1e-12);
    }

    #[test]
    fn memory_bound_time_scales_with_the_memory_clock() {
        // 1e7 DRAM load transactions of 32 B on a GTX 1080 Ti: the departure delays dominate, so the time
        // is close to bytes / bandwidth and halves when the memory clock doubles.
        let a = ArchProfile::builtin("gtx1080ti").unwrap();
        let mut x = inputs();
        x.inst = 1e5;
        x.load_tx = 1e7;
        let o = occupancy(&launch(100_000, 256, 0, 0), &a, None).unwrap();
        let c = Clocks::default_for(&a);
        let t = predict_time(&x, &a, &o, c);
        let ideal = 1e7 * 32.0 / 484e9;
        assert!(t.time_s > ideal && t.time_s < 1.3 * ideal, "{} vs {ideal}", t.time_s);
        assert_eq!(t.bottleneck().0, "global load");
        let t2 = predict_time(&x, &a, &o, Clocks { core_mhz: c.core_mhz, mem_mhz: 2.0 * c.mem_mhz });
        assert!((t2.time_s / t.time_s - 0.5).abs() < 0.01, "{}", t2.time_s / t.time_s);
    }

    #[test]
    fn l2_time_scales_with_the_core_clock_only() {
        // 1e7 load transactions of 32 B and 2e6 written bytes through the GTX 980's L2 (500 GB/s at its
        // 1126 MHz default core clock): 3.22e8 B / 500e9 B/s at the default clock.
        let a = ArchProfile::builtin("gtx980").unwrap();
        let mut x = inputs();
        x.load_tx = 1e7;
        x.dram_write_bytes = Some(2e6);
        let o = occupancy(&launch(100_000, 256, 0, 0), &a, None).unwrap();
        let c = Clocks::default_for(&a);
        let t = predict_time(&x, &a, &o, c);
        let want = (1e7 * 32.0 + 2e6) / (a.l2_bandwidth_gbs.value * 1e9);
        assert!((t.l2_s - want).abs() / want < 1e-12, "{} vs {want}", t.l2_s);
        let doubled = predict_time(&x, &a, &o, Clocks { core_mhz: 2.0 * c.core_mhz, mem_mhz: c.mem_mhz });
        assert!((doubled.l2_s / t.l2_s - 0.5).abs() < 1e-12);
        let mem = predict_time(&x, &a, &o, Clocks { core_mhz: c.core_mhz, mem_mhz: 0.5 * c.mem_mhz });
        assert_eq!(mem.l2_s, t.l2_s);
        // Not part of the uncalibrated time.
        assert!((t.time_s - (t.bound_s + t.sync_s)).abs() <= 1e-15 * t.time_s);
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
            msg.contains("global_store_transaction") && msg.contains("uncached_global_load_transaction"),
            "{msg}"
        );
    }
}
