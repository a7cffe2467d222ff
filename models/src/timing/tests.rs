//! The timing model's figures checked by hand on the built-in architectures.

use super::*;
use crate::arch::ArchProfile;
use crate::profile::Launch;

pub(crate) fn launch(grid: u32, block: u32, regs: u32, smem: u32) -> Launch {
    Launch {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        registers_per_thread: regs,
        shared_mem_per_block: smem,
    }
}

fn inputs() -> TimingInputs {
    TimingInputs {
        inst: 1e6,
        inst_fp32: 0.0,
        inst_fp64: 0.0,
        inst_int: 0.0,
        inst_sfu: 0.0,
        inst_convert: 0.0,
        load_tx: 0.0,
        store_tx: 0.0,
        load_requests: None,
        dram_read_bytes: None,
        dram_write_bytes: None,
        l2_read_tx: None,
        l2_write_tx: None,
        shared_base: 0.0,
        shared_conflicts: 0.0,
        tex_queries: 0.0,
        tex_misses: 0.0,
        barriers_per_warp: 0.0,
    }
}

#[test]
fn compute_bound_time_by_hand() {
    // C2075: 14 SMs, 2 schedulers, ALU latency 22, 1150 MHz. 1428 blocks of 256 threads = 8 warps;
    // 48 warps/SM → 6 blocks (48 warps), 1428 / (14·6) → 17 full waves. Issue = max(1/2, 22/48) = 0.5
    // cycles per warp instruction; 1e6 instructions / (14·17) per SM per wave · 0.5 + CYC_r (1).
    let a = ArchProfile::builtin("c2075").unwrap();
    let o = occupancy(&launch(1428, 256, 0, 0), &a, None).unwrap();
    assert_eq!((o.active_warps_per_sm, o.rounds), (48, 17.0));
    let t = predict_time(&inputs(), &a, &o, Clocks::default_for(&a));
    let per_round = 1e6 / (14.0 * 17.0) * 0.5 + 1.0;
    let want = 17.0 * per_round / 1150e6;
    assert!((t.time_s - want).abs() / want < 1e-12, "{} vs {want}", t.time_s);
    assert_eq!(t.bottleneck().0, "compute");
    // Compute scales with the core clock only.
    let t2 = predict_time(&inputs(), &a, &o, Clocks { core_mhz: 575.0, mem_mhz: 1566.0 });
    assert!((t2.time_s / t.time_s - 2.0).abs() < 1e-12);
    // With 8 active warps, latency is exposed: 22/8 = 2.75 cycles per instruction (102 waves).
    let o8 = occupancy(&launch(1428, 256, 0, 0), &a, Some(8)).unwrap();
    let t8 = predict_time(&inputs(), &a, &o8, Clocks::default_for(&a));
    let want8 = 102.0 * (1e6 / (14.0 * 102.0) * 2.75 + 1.0) / 1150e6;
    assert!((t8.time_s - want8).abs() / want8 < 1e-12);
}

#[test]
fn memory_bound_time_follows_the_dvfs_departure_delay() {
    // 1e7 DRAM load transactions of 32 B on a GTX 1080 Ti, 100 352 blocks of 256 threads: 64 warps
    // (8 blocks) per SM, 448 full waves. Per SM per round: 1e7 / (28 · 447) transactions, one departure
    // delay D = (a_D / f_mem + b_D) · f_core / f_mem apart, plus one DRAM latency
    // L = a_L · f_core / f_mem + b_L to fill the pipeline (Wang & Chu's constants in the profile).
    let a = ArchProfile::builtin("gtx1080ti").unwrap();
    let mut x = inputs();
    x.inst = 1e5;
    x.load_tx = 1e7;
    let o = occupancy(&launch(100_352, 256, 0, 0), &a, None).unwrap();
    assert_eq!((o.active_warps_per_sm, o.rounds), (64, 448.0));
    for (fc, fm) in [(1582.0, 5505.0), (1600.0, 4000.0), (2000.0, 5500.0)] {
        let t = predict_time(&x, &a, &o, Clocks { core_mhz: fc, mem_mhz: fm });
        let d = (7208.57 / fm + 10.0305) * fc / fm;
        let l = 178.22 * fc / fm + 396.72;
        let want = (1e7 / (28.0 * 448.0) * d + l) * 448.0 / (fc * 1e6);
        assert!((t.time_s / want - 1.0).abs() < 1e-12, "{fc}/{fm}: {} vs {want}", t.time_s);
        assert_eq!(t.bound_kind, "memory");
    }
    // Within reach of the peak bandwidth at the default clocks (484 GB/s: the delay alone gives 435 GB/s,
    // and one DRAM latency per round adds a fifth at 448 rounds), and faster with the memory clock.
    let t = predict_time(&x, &a, &o, Clocks::default_for(&a));
    let ideal = 1e7 * 32.0 / 484e9;
    assert!(t.time_s > ideal && t.time_s < 1.4 * ideal, "{} vs {ideal}", t.time_s);
    let slow = predict_time(&x, &a, &o, Clocks { core_mhz: 1582.0, mem_mhz: 4000.0 });
    assert!(slow.time_s > 1.3 * t.time_s);
}

#[test]
fn at_a_low_core_clock_l2_caps_dram_traffic() {
    // GTX 980, 256 B of DRAM traffic per core cycle through L2: at 700 MHz the departure delay at
    // 3900 MHz and at 3100 MHz (1.50 and 1.91 cycles per transaction per SM) is below the L2's 2.0
    // (32 B · 16 SMs / 256 B), so the memory clock no longer matters; at 1300 MHz it does again.
    let a = ArchProfile::builtin("gtx980").unwrap();
    let mut x = inputs();
    x.inst = 1e5;
    x.load_tx = 1e7;
    // 782 full waves of 16 SMs · 8 blocks.
    let o = occupancy(&launch(100_096, 256, 0, 0), &a, None).unwrap();
    let t = |fc: f64, fm: f64| predict_time(&x, &a, &o, Clocks { core_mhz: fc, mem_mhz: fm });
    let per_sm_round = 1e7 / (16.0 * o.rounds);
    for fm in [3900.0, 3100.0] {
        let l = 78.417 * 700.0 / fm + 97.62;
        let want = (per_sm_round * 2.0 + l) * o.rounds / 700e6;
        assert!((t(700.0, fm).time_s / want - 1.0).abs() < 1e-12, "{fm}");
    }
    assert!(t(1300.0, 2100.0).time_s > 1.2 * t(1300.0, 3900.0).time_s);
}

#[test]
fn l2_hits_cost_the_l2_delay_not_the_dram_delay() {
    // Half of the L2 read transactions hit: the memory side is DRAM transactions · D + hits · D_L2.
    let a = ArchProfile::builtin("gtx1080ti").unwrap();
    let mut x = inputs();
    x.inst = 1e5;
    x.load_tx = 2e7;
    x.l2_read_tx = Some(2e7);
    x.dram_read_bytes = Some(1e7 * 32.0);
    let o = occupancy(&launch(100_352, 256, 0, 0), &a, None).unwrap();
    let c = Clocks::default_for(&a);
    let t = predict_time(&x, &a, &o, c);
    let per = 1.0 / (28.0 * o.rounds);
    let d = a.dram_delay_cycles(c.core_mhz, c.mem_mhz);
    let stream = (1e7 * d + 1e7 * 1.3).max(2e7 * 0.25) * per;
    let want = (stream + a.dram_latency_cycles(c.core_mhz, c.mem_mhz)) * o.rounds / (c.core_mhz * 1e6);
    assert!((t.time_s / want - 1.0).abs() < 1e-12, "{} vs {want}", t.time_s);
}

#[test]
fn the_structural_fill_takes_the_latency_time_of_the_default_core_clock() {
    // A streaming kernel of many waves: under the default structure the fill (one DRAM latency per
    // wave, in core cycles) shortens in time as the core clock rises; under the structural
    // alternative it is the latency's time at the default core clock, whatever the core clock.
    let a = ArchProfile::builtin("gtx1080ti").unwrap();
    let mut x = inputs();
    x.load_tx = 2e7;
    let o = occupancy(&launch(100_352, 256, 0, 0), &a, None).unwrap();
    let fill = |fc: f64, cfg: TimingConfig| {
        predict_time_with(&x, &a, &o, Clocks { core_mhz: fc, mem_mhz: 5500.0 }, cfg).fill_s
    };
    let alt = TimingConfig::structural(SharedOverlap::ReplaysOverlapIssue);
    assert!(alt.fill_at_default_core_clock());
    let fc0 = a.core_mhz.value;
    let want = o.rounds * a.dram_latency_cycles(fc0, 5500.0) / (fc0 * 1e6);
    for fc in [1600.0, 2000.0] {
        assert!((fill(fc, alt) / want - 1.0).abs() < 1e-12, "{fc}: {} vs {want}", fill(fc, alt));
    }
    let d = TimingConfig::default();
    assert_eq!(TimingConfig::structural(SharedOverlap::Additive), d);
    assert!(fill(2000.0, d) < 0.95 * fill(1600.0, d), "{} vs {}", fill(2000.0, d), fill(1600.0, d));
    let own = o.rounds * a.dram_latency_cycles(2000.0, 5500.0) / 2e9;
    assert!((fill(2000.0, d) / own - 1.0).abs() < 1e-12);
}

#[test]
fn stores_go_to_dram_per_l2_write_transaction() {
    // A quarter of the L2 writes do not show as DRAM writes: they still cost the DRAM delay (the
    // L2 is write-back), so the store time is that of all the L2 writes, not of the DRAM count plus
    // cheap hits; with a DRAM count above the L2 count, the DRAM count.
    let a = ArchProfile::builtin("gtx1080ti").unwrap();
    let mut x = inputs();
    x.inst = 1e5;
    x.store_tx = 2e7;
    x.l2_write_tx = Some(2e7);
    x.dram_write_bytes = Some(1.5e7 * 32.0);
    let o = occupancy(&launch(100_352, 256, 0, 0), &a, None).unwrap();
    let c = Clocks::default_for(&a);
    let per = 1.0 / (28.0 * o.rounds);
    let d = a.dram_delay_cycles(c.core_mhz, c.mem_mhz);
    let want = |tx: f64| {
        ((tx * d).max(2e7 * 0.25) * per + a.dram_latency_cycles(c.core_mhz, c.mem_mhz)) * o.rounds
            / (c.core_mhz * 1e6)
    };
    let t = predict_time(&x, &a, &o, c).time_s;
    assert!((t / want(2e7) - 1.0).abs() < 1e-12, "{t} vs {}", want(2e7));
    x.dram_write_bytes = Some(2.2e7 * 32.0);
    let t = predict_time(&x, &a, &o, c).time_s;
    assert!((t / want(2.2e7) - 1.0).abs() < 1e-12, "{t} vs {}", want(2.2e7));
}

#[test]
fn structural_option_labels_are_their_file_names() {
    // Calibration files write the option with serde and name it in messages with `label`.
    for o in [SharedOverlap::Additive, SharedOverlap::ReplaysOverlapIssue] {
        assert_eq!(serde_json::to_value(o).unwrap(), o.label());
    }
}

#[test]
fn fp64_adds_at_its_own_throughput_and_shared_adds_on_the_sm_side() {
    // GTX 980: FP64 warp instructions cost cost_fp64 (8) cycles each on top of the other instructions'
    // issue; shared accesses add to compute (the same schedulers issue both).
    let a = ArchProfile::builtin("gtx980").unwrap();
    // 13 full waves of 16 SMs · 8 blocks.
    let o = occupancy(&launch(1664, 256, 0, 0), &a, None).unwrap();
    let c = Clocks::default_for(&a);
    let mut x = inputs();
    x.inst = 1e6;
    let base = predict_time(&x, &a, &o, c).time_s;
    x.inst_fp64 = 1e5;
    let with_dp = predict_time(&x, &a, &o, c).time_s;
    let per_s = o.rounds / (f64::from(o.active_sms) * o.rounds) / (c.core_mhz * 1e6);
    assert_eq!(a.cost_fp64.value, 8.0);
    let want = (-1e5 * 0.25 + 1e5 * 8.0) * per_s;
    assert!(((with_dp - base) / want - 1.0).abs() < 1e-9, "{} vs {want}", with_dp - base);
    x.inst_fp64 = 0.0;
    x.shared_base = 4e5;
    let with_shared = predict_time(&x, &a, &o, c);
    let per = 1.0 / (f64::from(o.active_sms) * o.rounds);
    // Shared requests cost the shared pipe (1 cycle each + CYC_s) and leave the compute issue (0.25).
    let want = (4e5 * per * (1.0 - 0.25) + 28.0) * o.rounds / (c.core_mhz * 1e6);
    assert!(((with_shared.time_s - base) / want - 1.0).abs() < 1e-9);
    // The SM side bounds the round, and shared is its larger part.
    assert_eq!(with_shared.bound_kind, "shared");
}

/// A shared wavefront (request or replay) holds the banks for one warp-wide 32-bit access: one cycle at
/// the P100's 128 bytes per SM per cycle, although its SM has half the LD/ST units of a GTX 1080 Ti
/// (`cost_ldst` 2); a profile without the shared bandwidth keeps charging `cost_ldst`.
#[test]
fn shared_wavefronts_cost_the_bank_bandwidth_not_the_ld_st_rate() {
    let mut a = ArchProfile::builtin("p100").unwrap();
    assert_eq!((a.cost_ldst.value, a.shared_cycles_per_wavefront()), (2.0, 1.0));
    let o = occupancy(&launch(56 * 8 * 10, 256, 0, 0), &a, None).unwrap();
    let c = Clocks::default_for(&a);
    let mut x = inputs();
    x.inst = 1e3;
    let base = predict_time(&x, &a, &o, c);
    x.shared_base = 4e6;
    x.shared_conflicts = 2e6;
    let with_shared = predict_time(&x, &a, &o, c);
    let per = 1.0 / (f64::from(o.active_sms) * o.rounds);
    let to_s = o.rounds / (c.core_mhz * 1e6);
    let shared_s = with_shared.components_s[2];
    let conflicts_s = with_shared.components_s[3];
    assert!((shared_s / ((4e6 * per + a.cyc_s.value) * to_s) - 1.0).abs() < 1e-9, "{shared_s}");
    assert!((conflicts_s / (2e6 * per * to_s) - 1.0).abs() < 1e-9, "{conflicts_s}");
    assert_eq!(with_shared.bound_kind, "shared");
    assert!(with_shared.time_s > base.time_s);
    // Without the field: the LD/ST rate, twice the time of both components.
    a.shared_bytes_per_cycle = None;
    let ldst = predict_time(&x, &a, &o, c);
    assert!((ldst.components_s[3] / conflicts_s - 2.0).abs() < 1e-9);
    assert!((ldst.components_s[2] - a.cyc_s.value * to_s) / (shared_s - a.cyc_s.value * to_s) - 2.0 < 1e-9);
}

#[test]
fn counted_conversions_cost_the_64_bit_conversion_rate_and_absent_ones_change_nothing() {
    // GTX 1080 Ti: 28 SMs, 4 schedulers (a warp instruction issues every 0.25 cycles), conversions from
    // and to 64-bit types at 4 per clock per SM: 32 / 4 = 8 cycles per warp instruction.
    let a = ArchProfile::builtin("gtx1080ti").unwrap();
    // 10 full waves of 28 SMs · 8 blocks of 256 threads.
    let o = occupancy(&launch(2240, 256, 0, 0), &a, None).unwrap();
    assert_eq!((o.active_sms, o.rounds), (28, 10.0));
    let c = Clocks::default_for(&a);
    let mut x = inputs();
    x.inst = 1e6;
    x.inst_fp64 = 1e5;
    let base = predict_time(&x, &a, &o, c);
    // The counter absent (0, as `from_profile` reads a missing one): every output bit-identical to
    // the same profile with the field never set.
    x.inst_convert = 0.0;
    assert_eq!(predict_time(&x, &a, &o, c), base);
    // 2e5 conversions, of the 1e6 instructions: they leave the issue term (0.25 cycles each) and cost 8
    // cycles each, over 28 SMs and 10 rounds at 1582 MHz.
    x.inst_convert = 2e5;
    let with_cvt = predict_time(&x, &a, &o, c);
    let want = 2e5 * (8.0 - 0.25) / 28.0 / 1582e6;
    let got = with_cvt.time_s - base.time_s;
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    assert_eq!(with_cvt.bound_kind, "compute");
    // The compute component moves by the same amount; nothing else does.
    let d: Vec<f64> = with_cvt.components_s.iter().zip(&base.components_s).map(|(p, q)| p - q).collect();
    assert!((d[5] / want - 1.0).abs() < 1e-9 && d.iter().enumerate().all(|(i, v)| i == 5 || *v == 0.0));
    // A profile without the constant leaves conversions in the issue term as before.
    let mut old = a.clone();
    old.cost_conversion64 = None;
    assert_eq!(predict_time(&x, &old, &o, c), base);
}

#[test]
fn replays_overlap_issue_only_when_the_option_says_so() {
    // GTX 980, 13 full waves; compute issue and bank-conflict replays on one SM of one wave.
    let a = ArchProfile::builtin("gtx980").unwrap();
    let o = occupancy(&launch(1664, 256, 0, 0), &a, None).unwrap();
    let c = Clocks::default_for(&a);
    let overlap = TimingConfig { shared_overlap: SharedOverlap::ReplaysOverlapIssue };
    let mut x = inputs();
    x.inst = 1e6;
    x.shared_base = 1e5;
    x.shared_conflicts = 3e5;
    let add = predict_time(&x, &a, &o, c);
    assert_eq!(add, predict_time_with(&x, &a, &o, c, TimingConfig::default()));
    assert_eq!(add.replays_hidden_s, 0.0);
    let ov = predict_time_with(&x, &a, &o, c, overlap);
    // Per SM per wave: issue C = (1e6 − 1e5)·per·0.25, replays R = 3e5·per·1: (C² + R²)^½ replaces C + R.
    let per = 1.0 / (f64::from(o.active_sms) * o.rounds);
    let (ci, r) = ((1e6 - 1e5) * per * 0.25, 3e5 * per);
    let saved = (ci + r - (ci * ci + r * r).sqrt()) * o.rounds / (c.core_mhz * 1e6);
    assert!(((add.time_s - ov.time_s) / saved - 1.0).abs() < 1e-9, "{} vs {saved}", add.time_s - ov.time_s);
    assert!((ov.replays_hidden_s / saved - 1.0).abs() < 1e-9);
    // The breakdown is the same; only how its SM parts combine differs.
    assert_eq!(ov.components_s, add.components_s);
    // No replays: nothing to overlap, the same time.
    x.shared_conflicts = 0.0;
    assert_eq!(predict_time_with(&x, &a, &o, c, overlap).time_s, predict_time(&x, &a, &o, c).time_s);
}

#[test]
fn a_partial_last_wave_runs_with_fewer_warps() {
    // C2075, compute only: 98 blocks of 8 warps = one full wave (14 SMs · 6 blocks, 48 warps, issue
    // 0.5 cycles per instruction) and a last wave of one block per SM (8 warps: the ALU latency is
    // exposed, 22/8 = 2.75 cycles per instruction). Each block has 1e6/98 instructions.
    let a = ArchProfile::builtin("c2075").unwrap();
    let o = occupancy(&launch(98, 256, 0, 0), &a, None).unwrap();
    assert_eq!((o.active_blocks_per_sm, o.rounds, o.blocks), (6, 2.0, 98));
    let t = predict_time(&inputs(), &a, &o, Clocks::default_for(&a));
    let per_block = 1e6 / 98.0;
    let want = ((6.0 * per_block * 0.5 + 1.0) + (per_block * 2.75 + 1.0)) / 1150e6;
    assert!((t.time_s / want - 1.0).abs() < 1e-12, "{} vs {want}", t.time_s);
    // Spreading the work evenly over two full rounds would have said less.
    let even = 2.0 * (1e6 / (14.0 * 2.0) * 0.5 + 1.0) / 1150e6;
    assert!(t.time_s > 1.2 * even);
}

#[test]
fn memory_instructions_are_not_issue_time_twice() {
    // 1e6 warp instructions of which 1e5 global load requests (gld_request) and 5e4 shared requests:
    // the compute side issues the other 8.5e5 (plus 1e5 / 4 store requests when 1e5 store
    // transactions of 32 B are written, one request per 128 bytes).
    let mut x = inputs();
    x.load_requests = Some(1e5);
    x.shared_base = 5e4;
    x.store_tx = 1e5;
    assert_eq!(x.memory_instructions(32.0), 1e5 + 5e4 + 2.5e4);
    // Without gld_request, one load request per 128 bytes of load transactions.
    x.load_requests = None;
    x.load_tx = 4e5;
    assert_eq!(x.memory_instructions(32.0), 1e5 + 5e4 + 2.5e4);
    // GTX 980 (32-byte transactions): 13 full waves of 16 SMs · 8 blocks, one warp instruction issued per 1/4 cycle.
    let a = ArchProfile::builtin("gtx980").unwrap();
    let o = occupancy(&launch(1664, 256, 0, 0), &a, None).unwrap();
    let t = predict_time(&x, &a, &o, Clocks::default_for(&a));
    let want = (1e6 - 1.75e5) / (16.0 * 13.0) * 0.25 + 1.0;
    let got = t.components_s[5] * a.core_mhz.value * 1e6 / 13.0;
    assert!((got / want - 1.0).abs() < 1e-12, "{got} vs {want}");
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
fn l2_time_counts_the_writes_the_store_side_sends_to_dram() {
    // 2e6 written bytes counted by DRAM, but 1e5 L2 write transactions (3.2e6 B): stores go to DRAM
    // per L2 write, and L counts the same bytes.
    let a = ArchProfile::builtin("gtx980").unwrap();
    let mut x = inputs();
    x.load_tx = 1e7;
    x.store_tx = 1e5;
    x.dram_write_bytes = Some(2e6);
    x.l2_write_tx = Some(1e5);
    let o = occupancy(&launch(100_000, 256, 0, 0), &a, None).unwrap();
    let c = Clocks::default_for(&a);
    let bw = a.l2_bandwidth_gbs.value * 1e9;
    let t = predict_time(&x, &a, &o, c);
    let want = (1e7 * 32.0 + 1e5 * 32.0) / bw;
    assert!((t.l2_s - want).abs() / want < 1e-12, "{} vs {want}", t.l2_s);
}

#[test]
fn a_few_warps_wait_once_per_request_not_per_sector() {
    // GTX 1080 Ti, one warp per SM (28 blocks of 32 threads, one wave): 1e5 uncoalesced load requests
    // of 14 sectors each, all DRAM misses. The latency bound is requests per warp × (DRAM latency +
    // departure delay), plus one DRAM latency to fill; 14 sectors per request do not wait 3.5 times.
    let a = ArchProfile::builtin("gtx1080ti").unwrap();
    let mut x = inputs();
    x.inst = 1e4;
    x.load_tx = 1.4e6;
    x.l2_read_tx = Some(1.4e6);
    x.dram_read_bytes = Some(1.4e6 * 32.0);
    x.load_requests = Some(1e5);
    let o = occupancy(&launch(28, 32, 0, 0), &a, None).unwrap();
    assert_eq!((o.active_warps_per_sm, o.rounds), (1, 1.0));
    let c = Clocks::default_for(&a);
    let (l, d) = (a.dram_latency_cycles(c.core_mhz, c.mem_mhz), a.dram_delay_cycles(c.core_mhz, c.mem_mhz));
    let t = predict_time(&x, &a, &o, c);
    let want = (1e5 / 28.0 * (l + d) + l) / (c.core_mhz * 1e6);
    assert_eq!(t.bound_kind, "latency");
    assert!((t.time_s / want - 1.0).abs() < 1e-12, "{} vs {want}", t.time_s);
    // Without gld_request the requests are the L2 transactions in 128-byte requests: 3.5× as many.
    x.load_requests = None;
    let sectors = predict_time(&x, &a, &o, c);
    let want = (1.4e6 / 4.0 / 28.0 * (l + d) + l) / (c.core_mhz * 1e6);
    assert!((sectors.time_s / want - 1.0).abs() < 1e-12);
}
