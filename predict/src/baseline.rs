//! Peer timing models, computed from the same NV-DVFS rows as ours, so that `gpumodel validate
//! --baseline …` shows side by side whether our model is the better one.
//!
//! * **Wang & Chu 2018** (Q. Wang, X. Chu, "GPGPU Performance Estimation with Core and Memory Frequency
//!   Scaling", ICPADS 2018): one round of the active warps on an SM takes the longer of the SM's
//!   instruction, shared-memory and FP64 work and its memory work, with DRAM latency and departure delay
//!   that depend on `f_core/f_mem`; a few-warps case when the achieved occupancy is low. Written here from
//!   the equations restated in `../shared/papers/timing_baselines.md`, with the per-GPU constants the
//!   authors fitted on microbenchmarks, and **without** the name-based special cases of their code
//!   (texture delay for one kernel, branch delay for another, extra terms on V100, one kernel's cold
//!   miss): a general model applies one formula to every kernel.
//! * **Hong & Kim 2009** (MWP-CWP, ISCA 2009): memory warp parallelism (how many warps' memory requests
//!   overlap: latency / departure delay, bounded by the active warps) against computation warp
//!   parallelism, with the paper's three cases. The DRAM latency and departure delay are Wang & Chu's
//!   clock-dependent ones (the same constants), a memory instruction is a 128-byte warp request (4
//!   transactions of 32 bytes), and everything else counts as a computation instruction at the issue
//!   rate. Wang & Chu's re-implementation of it could only run the 5 kernels without shared memory; this
//!   one runs every kernel (shared accesses count as computation), so its figures are ours, not theirs.
//!
//! Both read each row's own counters, as the authors' code does (the counters barely move with the
//! clocks); ours reads one profile per kernel (its row nearest the default clocks).

use crate::error::{Error, Result};
use gpumodel_models::Table;

/// A peer timing model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Baseline {
    /// Wang & Chu, ICPADS 2018, without name-based special cases.
    WangChu2018,
    /// Hong & Kim, ISCA 2009 (MWP-CWP), with Wang & Chu's DVFS memory constants.
    HongKim2009,
    /// The time measured on another GPU, scaled by the ratio of the two GPUs' throughput in the kernel's
    /// bottleneck ([`crate::validation::from_gpu`]): what a user with a measured time and no model would do.
    Scaled,
    /// Ours, anchored: the time measured on another GPU, times the ratio of the timing model's times on the
    /// two GPUs ([`crate::validation::from_gpu`]).
    ModelScaled,
}

impl Baseline {
    /// Every baseline, in the order reports show them.
    pub const ALL: [Baseline; 4] =
        [Baseline::WangChu2018, Baseline::HongKim2009, Baseline::Scaled, Baseline::ModelScaled];

    /// `wang-chu-2018`, `hong-kim-2009`, `scaled` or `model-scaled`; anything else is an error listing them.
    pub fn parse(s: &str) -> Result<Baseline> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "wang-chu-2018" | "wang-chu" | "wangchu" => Ok(Baseline::WangChu2018),
            "hong-kim-2009" | "hong-kim" | "hongkim" | "mwp-cwp" => Ok(Baseline::HongKim2009),
            "scaled" => Ok(Baseline::Scaled),
            "model-scaled" => Ok(Baseline::ModelScaled),
            other => Err(Error::Invalid(format!(
                "unknown baseline '{other}': use wang-chu-2018, hong-kim-2009, scaled or model-scaled"
            ))),
        }
    }

    /// The name used on the command line and in reports.
    pub fn label(self) -> &'static str {
        match self {
            Baseline::WangChu2018 => "wang-chu-2018",
            Baseline::HongKim2009 => "hong-kim-2009",
            Baseline::Scaled => "scaled",
            Baseline::ModelScaled => "model-scaled",
        }
    }

    /// Whether it starts from a time measured on another GPU (validate's `--from`), not from the counters.
    pub fn needs_a_measured_time(self) -> bool {
        matches!(self, Baseline::Scaled | Baseline::ModelScaled)
    }

    /// Predicted time (seconds) of NV-DVFS table row `row` at its own clocks, for the baselines computed
    /// from counters (`None` for those that start from a measured time).
    pub fn time_s(self, c: &WangChuConstants, x: &PeerInputs, core_mhz: f64, mem_mhz: f64) -> Option<f64> {
        let cycles = match self {
            Baseline::WangChu2018 => wang_chu_cycles(c, x, core_mhz, mem_mhz),
            Baseline::HongKim2009 => hong_kim_cycles(c, x, core_mhz, mem_mhz),
            Baseline::Scaled | Baseline::ModelScaled => return None,
        };
        Some(cycles * x.rounds(c) / (core_mhz * 1e6))
    }
}

/// Wang & Chu's per-GPU constants (core cycles; `timing_baselines.md`, from their microbenchmarks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WangChuConstants {
    /// DRAM latency `L_DM = a_l · f_core/f_mem + b_l`.
    pub a_l: f64,
    pub b_l: f64,
    /// DRAM departure delay `D_DM = (a_d / f_mem + b_d) · f_core/f_mem`.
    pub a_d: f64,
    pub b_d: f64,
    /// L2 hit latency and delay.
    pub l_l2: f64,
    pub d_l2: f64,
    /// Instruction latency and delay.
    pub l_inst: f64,
    pub d_inst: f64,
    /// Shared-memory latency and delay.
    pub l_sh: f64,
    pub d_sh: f64,
    /// FP64 and texture delays.
    pub d_dp: f64,
    pub d_tex: f64,
    pub sm_count: f64,
    pub cores_per_sm: f64,
    pub tex_units: f64,
    pub warps_max: f64,
    /// At or below this achieved occupancy the few-warps case applies.
    pub few_warps_occupancy: f64,
}

impl WangChuConstants {
    /// The published constants for an architecture profile name (`gtx980`, `gtx1080ti`, `p100`, `v100`);
    /// `None` for other GPUs.
    pub fn for_arch(name: &str) -> Option<WangChuConstants> {
        let base = |a_l, b_l, a_d, b_d, l_l2, d_l2| WangChuConstants {
            a_l,
            b_l,
            a_d,
            b_d,
            l_l2,
            d_l2,
            l_inst: 4.0,
            d_inst: 1.0,
            l_sh: 28.0,
            d_sh: 1.0,
            d_dp: 20.0,
            d_tex: 1.0,
            sm_count: 16.0,
            cores_per_sm: 128.0,
            tex_units: 8.0,
            warps_max: 64.0,
            few_warps_occupancy: 0.3,
        };
        Some(match name {
            "gtx980" => base(78.417, 97.62, 805.03, 8.1762, 222.0, 1.2),
            "gtx1080ti" => WangChuConstants {
                d_inst: 1.2,
                d_sh: 0.95,
                d_tex: 1.4,
                sm_count: 28.0,
                ..base(178.22, 396.72, 7208.57, 10.0305, 220.0, 1.3)
            },
            "p100" => WangChuConstants {
                l_inst: 8.0,
                d_inst: 1.4,
                d_dp: 1.0,
                d_tex: 2.5,
                sm_count: 56.0,
                cores_per_sm: 64.0,
                tex_units: 4.0,
                ..base(26.73, 266.23, 176.26, 1.8, 263.0, 1.0)
            },
            "v100" => WangChuConstants {
                l_inst: 8.0,
                d_dp: 1.0,
                d_tex: 2.5,
                sm_count: 80.0,
                tex_units: 4.0,
                few_warps_occupancy: 0.25,
                ..base(26.73, 133.23, 251.26, 2.5, 263.0, 1.0)
            },
            _ => return None,
        })
    }

    /// DRAM latency and departure delay at the clocks (MHz), core cycles.
    pub fn dram(&self, core_mhz: f64, mem_mhz: f64) -> (f64, f64) {
        let r = core_mhz / mem_mhz;
        (self.a_l * r + self.b_l, (self.a_d / mem_mhz + self.b_d) * r)
    }
}

/// The per-warp inputs of the peer models, from one NV-DVFS row (nvprof metrics).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerInputs {
    /// Warps launched.
    pub warps: f64,
    /// L2 read and write transactions per warp.
    pub n_gld: f64,
    pub n_gst: f64,
    /// Shared load and store transactions per warp.
    pub shared_load: f64,
    pub shared_store: f64,
    /// Texture cache transactions per warp (computed, not used by the general form).
    pub tex: f64,
    /// L2 hit rate, `1 − min(1, DRAM transactions / L2 transactions)`.
    pub l2_hit: f64,
    /// FP64 warp instructions per warp.
    pub dp: f64,
    /// Warp instructions per warp that are neither global nor shared memory instructions.
    pub insts: f64,
    /// Achieved occupancy (fraction of the maximum warps per SM).
    pub occupancy: f64,
}

/// The NV-DVFS columns the peer models read, and the nvprof metric each one is.
pub const PEER_COLUMNS: [&str; 11] = [
    "warps",
    "l2_read_transactions",
    "l2_write_transactions",
    "shared_load_transactions",
    "shared_store_transactions",
    "dram_read_transactions",
    "dram_write_transactions",
    "inst_fp_64",
    "inst_per_warp",
    "achieved_occupancy",
    "tex_cache_transactions",
];

impl PeerInputs {
    /// Reads table row `row` (0-based; errors name its CSV line). A missing column names the nvprof metric
    /// that measures it.
    pub fn from_row(t: &Table, row: usize) -> Result<PeerInputs> {
        let missing: Vec<&str> =
            PEER_COLUMNS.iter().copied().filter(|c| *c != "warps" && t.column_index(c).is_none()).collect();
        if !missing.is_empty() {
            return Err(Error::Mismatch(format!(
                "{}: the peer timing models need nvprof metric(s) {} per kernel and clock pair: measure them with `nvprof --metrics {}`",
                t.source,
                missing.join(", "),
                missing.join(",")
            )));
        }
        let get = |c: &str| t.column_index(c).map_or(0.0, |j| t.data[[row, j]]);
        let line = row + 2;
        // `warps` is a column of the NV-DVFS files; without it, the launch's blocks × warps per block.
        let warps = if t.column_index("warps").is_some() {
            get("warps")
        } else {
            let blocks = get("grid_x") * get("grid_y") * get("grid_z");
            blocks * (get("block_x") * get("block_y") * get("block_z") / 32.0).ceil()
        };
        let occupancy = get("achieved_occupancy");
        if !(warps.is_finite() && warps > 0.0) {
            return Err(Error::Invalid(format!("{} line {line}: warps must be > 0, got {warps}", t.source)));
        }
        if !(occupancy > 0.0 && occupancy <= 1.0) {
            return Err(Error::Invalid(format!(
                "{} line {line}: achieved_occupancy must be in (0, 1], got {occupancy}",
                t.source
            )));
        }
        let per = |c: &str| get(c) / warps;
        let (n_gld, n_gst) = (per("l2_read_transactions"), per("l2_write_transactions"));
        let (shared_load, shared_store) = (per("shared_load_transactions"), per("shared_store_transactions"));
        let n_mem = n_gld + n_gst;
        let dram = get("dram_read_transactions") + get("dram_write_transactions");
        let l2_hit = if n_mem > 0.0 { 1.0 - (dram / (n_mem * warps)).min(1.0) } else { 0.0 };
        let insts = (get("inst_per_warp") - (n_gld + n_gst + shared_load + shared_store / 4.0)).max(0.0);
        Ok(PeerInputs {
            warps,
            n_gld,
            n_gst,
            shared_load,
            shared_store,
            tex: per("tex_cache_transactions").max(0.0),
            l2_hit,
            dp: get("inst_fp_64") / (32.0 * warps),
            insts,
            occupancy,
        })
    }

    /// Active warps per SM.
    fn active_warps(&self, c: &WangChuConstants) -> f64 {
        c.warps_max * self.occupancy
    }

    /// Rounds of active warps: warps / (warps per SM · SMs · occupancy).
    pub fn rounds(&self, c: &WangChuConstants) -> f64 {
        self.warps / (c.warps_max * c.sm_count * self.occupancy)
    }
}

/// Wang & Chu's cycles for one round of the active warps on an SM.
pub fn wang_chu_cycles(c: &WangChuConstants, x: &PeerInputs, core_mhz: f64, mem_mhz: f64) -> f64 {
    let (l_dm, d_dm) = c.dram(core_mhz, mem_mhz);
    let h = x.l2_hit;
    let w = x.active_warps(c);
    let n_mem = x.n_gld + x.n_gst;
    let avg_lat = (l_dm + d_dm) * (1.0 - h) + c.l_l2 * h;
    let avg_del = d_dm * (1.0 - h) + c.d_l2 * h;
    let mem_del = n_mem * avg_del * w;
    let n_shm = x.shared_load + x.shared_store;
    let sm_del = c.d_inst * x.insts * w * 32.0 / c.cores_per_sm
        + c.l_inst
        + c.d_sh * n_shm * w
        + c.l_sh
        + x.dp * w * c.d_dp;
    if x.occupancy <= c.few_warps_occupancy {
        let c_off = if n_mem > 0.0 { x.insts / n_mem * c.l_inst } else { 0.0 };
        let lack_wait = avg_lat + c_off + avg_del * w + (c_off + avg_lat) * (n_mem - 1.0) / 4.0;
        let lack_no_wait = c_off * (w - 1.0) + (c_off + avg_lat) * n_mem / 4.0;
        return lack_wait.max(lack_no_wait);
    }
    sm_del.max(mem_del) + l_dm
}

/// Hong & Kim's (MWP-CWP) cycles for one round of the active warps on an SM.
pub fn hong_kim_cycles(c: &WangChuConstants, x: &PeerInputs, core_mhz: f64, mem_mhz: f64) -> f64 {
    let (mem_l, departure) = c.dram(core_mhz, mem_mhz);
    let n = x.active_warps(c).max(1.0);
    // Memory instructions per warp: 128-byte requests of 4 transactions.
    let mem_insts = ((x.n_gld + x.n_gst) / 4.0).max(0.0);
    let comp_insts = x.insts + x.shared_load + x.shared_store + x.dp * c.d_dp;
    // Issue cycles per warp instruction: a warp's 32 threads over the SM's cores.
    let issue = c.d_inst * 32.0 / c.cores_per_sm;
    let mem_cycles = mem_l * mem_insts;
    let comp_cycles = issue * comp_insts;
    if mem_insts <= 0.0 {
        return comp_cycles * n;
    }
    // MWP: requests in flight, bounded by the departure delay and by the active warps.
    let mwp = (mem_l / departure.max(1e-12)).min(n).max(1.0);
    let cwp = if comp_cycles > 0.0 { ((mem_cycles + comp_cycles) / comp_cycles).min(n) } else { n };
    if (mwp - n).abs() < 1e-9 && (cwp - n).abs() < 1e-9 {
        mem_cycles + comp_cycles + comp_cycles / mem_insts * (mwp - 1.0)
    } else if cwp >= mwp || comp_cycles > mem_cycles {
        mem_cycles * n / mwp + comp_cycles / mem_insts * (mwp - 1.0)
    } else {
        mem_l + comp_cycles * n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> PeerInputs {
        PeerInputs {
            warps: 64.0 * 28.0 * 0.5 * 10.0,
            n_gld: 8.0,
            n_gst: 4.0,
            shared_load: 0.0,
            shared_store: 0.0,
            tex: 0.0,
            l2_hit: 0.25,
            dp: 0.0,
            insts: 100.0,
            occupancy: 0.5,
        }
    }

    /// The equations of timing_baselines.md evaluated by hand for one input (GTX 1080 Ti constants,
    /// 1600/5000 MHz).
    #[test]
    fn wang_chu_by_hand() {
        let c = WangChuConstants::for_arch("gtx1080ti").unwrap();
        let x = inputs();
        let r: f64 = 1600.0 / 5000.0;
        let l_dm = 178.22 * r + 396.72;
        let d_dm = (7208.57 / 5000.0 + 10.0305) * r;
        let avg_del = d_dm * 0.75 + 1.3 * 0.25;
        let w = 32.0;
        let mem = 12.0 * avg_del * w;
        let sm = 1.2 * 100.0 * w * 32.0 / 128.0 + 4.0 + 28.0;
        let want = sm.max(mem) + l_dm;
        assert!((wang_chu_cycles(&c, &x, 1600.0, 5000.0) - want).abs() < 1e-9);
        // Rounds: 8960 warps / (64 · 28 · 0.5) = 10.
        assert!((x.rounds(&c) - 10.0).abs() < 1e-12);
        let t = Baseline::WangChu2018.time_s(&c, &x, 1600.0, 5000.0).unwrap();
        assert!((t - want * 10.0 / 1600e6).abs() < 1e-18);
    }

    #[test]
    fn few_warps_case_by_hand() {
        let c = WangChuConstants::for_arch("gtx980").unwrap();
        let x = PeerInputs { occupancy: 0.25, ..inputs() };
        let (l_dm, d_dm) = c.dram(1000.0, 3000.0);
        let avg_lat = (l_dm + d_dm) * 0.75 + 222.0 * 0.25;
        let avg_del = d_dm * 0.75 + 1.2 * 0.25;
        let w = 16.0;
        let c_off = 100.0 / 12.0 * 4.0;
        let wait = avg_lat + c_off + avg_del * w + (c_off + avg_lat) * 11.0 / 4.0;
        let no_wait = c_off * (w - 1.0) + (c_off + avg_lat) * 12.0 / 4.0;
        assert!((wang_chu_cycles(&c, &x, 1000.0, 3000.0) - wait.max(no_wait)).abs() < 1e-9);
    }

    #[test]
    fn hong_kim_memory_bound_case_by_hand() {
        // Memory bound: few instructions, many requests; MWP = latency / departure delay < N.
        let c = WangChuConstants::for_arch("gtx980").unwrap();
        let x = PeerInputs { insts: 4.0, n_gld: 40.0, n_gst: 0.0, occupancy: 1.0, ..inputs() };
        let (mem_l, dep) = c.dram(1000.0, 3500.0);
        let (n, mem_insts) = (64.0, 10.0);
        let (mem_cycles, comp_cycles) = (mem_l * mem_insts, 4.0 * 32.0 / 128.0);
        let mwp = (mem_l / dep).min(n);
        let cwp = ((mem_cycles + comp_cycles) / comp_cycles).min(n);
        assert!(mwp < n && cwp >= mwp);
        let want = mem_cycles * n / mwp + comp_cycles / mem_insts * (mwp - 1.0);
        assert!((hong_kim_cycles(&c, &x, 1000.0, 3500.0) - want).abs() < 1e-9);
    }

    /// A table without the metrics the peers need names each one and the nvprof command that measures
    /// them; a row with no occupancy names its line.
    #[test]
    fn missing_metrics_and_bad_rows_are_named() {
        let table = |columns: &[&str], row: Vec<f64>| Table {
            source: "t.csv".into(),
            group_column: "app".into(),
            groups: vec!["k".into()],
            text: Vec::new(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            data: ndarray::Array2::from_shape_vec((1, row.len()), row).unwrap(),
        };
        let t = table(&["warps", "l2_read_transactions"], vec![100.0, 5.0]);
        let msg = PeerInputs::from_row(&t, 0).unwrap_err().to_string();
        assert!(
            msg.contains("l2_write_transactions")
                && msg.contains("achieved_occupancy")
                && msg.contains("nvprof --metrics l2_write_transactions,"),
            "{msg}"
        );
        let mut row = vec![100.0; PEER_COLUMNS.len()];
        row[9] = 0.0; // achieved_occupancy
        let msg = PeerInputs::from_row(&table(&PEER_COLUMNS, row), 0).unwrap_err().to_string();
        assert!(msg.contains("t.csv line 2") && msg.contains("achieved_occupancy"), "{msg}");
    }

    #[test]
    fn names_parse_and_unknown_ones_list_the_known() {
        assert_eq!(Baseline::parse("wang-chu-2018").unwrap(), Baseline::WangChu2018);
        assert_eq!(Baseline::parse("Hong-Kim-2009").unwrap(), Baseline::HongKim2009);
        let msg = Baseline::parse("song-2013").unwrap_err().to_string();
        assert!(msg.contains("wang-chu-2018") && msg.contains("hong-kim-2009"), "{msg}");
        assert_eq!(Baseline::parse("scaled").unwrap(), Baseline::Scaled);
        assert!(
            Baseline::Scaled
                .time_s(&WangChuConstants::for_arch("p100").unwrap(), &inputs(), 1e3, 1e3)
                .is_none()
        );
        assert!(WangChuConstants::for_arch("a100").is_none());
    }
}
