//! Profiler metrics → canonical counters, per compute capability, with their unit conversions.
//!
//! Sources: the nvprof metrics reference (CUDA Profiler User's Guide, "Metrics Reference", one table per
//! compute capability), Nsight Compute's metrics breakdown (Kernel Profiling Guide, "Metrics Structure")
//! and its nvprof → ncu metric comparison table (Nsight Compute CLI guide, "nvprof Metric Comparison"),
//! the Maxwell, Pascal and Volta tuning guides for what changed between capabilities.
//!
//! What changes meaning with the capability, and how it is read here:
//!
//! * **Instruction counts**: nvprof's `inst_fp_32`, `inst_fp_64`, `inst_fp_16`, `inst_integer`,
//!   `inst_bit_convert` and `flop_count_sp_special` count *thread* operations (non-predicated threads);
//!   the canonical counters are warp instructions, so they are divided by the warp size (32, exact for full
//!   warps). ncu's `…sass_thread_inst_executed…` metrics likewise; `…inst_executed_pipe_…` are warp level.
//! * **Global loads**: nvprof's `gld_transactions` (ncu: `l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum`)
//!   are 32-byte sectors requested from L1. Maxwell and Pascal (5.x, 6.x) cache global loads in L2 only
//!   unless compiled otherwise, so they are read as `uncached_global_load_transaction`, the meaning the
//!   timing model was developed with; Volta and newer (7.0+) cache them in the unified L1 by default, so
//!   they split into `l1_global_load_hit` / `l1_global_load_miss` by `global_hit_rate` (all misses when the
//!   export has no hit rate). The sum the timing model reads is the same either way.
//! * **Texture**: from Maxwell on, L1 and texture are one cache and nvprof's `tex_cache_transactions`
//!   include the global loads: texture-only queries are the excess over `gld_transactions`, misses follow
//!   `tex_cache_hit_rate`. On Kepler (3.x) the texture cache is separate: all its transactions are texture.
//!   On Volta and newer (7.0+) shared memory joins the same unit (Volta tuning guide, "Combined L1 Data
//!   Cache and Shared Memory") and the metric is the unified cache's read transactions to the SM (nvprof
//!   metrics reference, 7.x table): one per global-load request, per shared-load transaction and per
//!   global-store request. On the NV-DVFS V100 rows the three account for the metric within a few percent
//!   in 22 of the 29 kernels (matrixMulShared: 402.8 M shared + 16.8 M load + 0.1 M store requests of
//!   420.0 M), and what exceeds them is the texture fetches of the kernels that use textures
//!   (convolutionTexture 99 %, stereoDisparity 37 %). So texture-only queries are the excess over those
//!   three, never below 0; a request is `transactions / transactions_per_request` (4 sectors, one fully
//!   coalesced warp of 4-byte words, when the export has no per-request figure).
//! * **Shared memory**: nvprof's `shared_load_transactions` are bank-wide accesses (wavefronts); requests
//!   are `transactions / transactions_per_request`, the excess are bank-conflict replays. On 7.0+ (ncu) a
//!   64- or 128-bit access takes 2 or 4 wavefronts without any conflict, so conflicts come only from the
//!   bank-conflict metrics, never from wavefronts − requests; the wavefronts are kept as `shared_wavefronts`
//!   (the shared pipe's work).
//! * **DRAM and L2**: nvprof counts 32-byte transactions (`dram_read_transactions` × 32 = bytes; ncu:
//!   `dram__sectors_read.sum`, `dram__bytes_read.sum`); L2 read / write transactions are 32-byte sectors
//!   (ncu: `lts__t_sectors_op_read.sum` + `…op_atom` + `…op_red`).
//! * **Units on the way in**: thousands separators, `%` (a fraction here), `GB/s` (bytes per second,
//!   decimal prefixes), ncu's scaled units (`Kbyte`, `Msector`, `usecond`) — see `common::value`.

use std::collections::{BTreeMap, BTreeSet};

/// A CUDA compute capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Capability {
    pub major: u32,
    pub minor: u32,
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

impl Capability {
    /// Parses "6.1", "61", "sm_61" or "8.0".
    pub fn parse(s: &str) -> Option<Capability> {
        let t = s.trim().trim_start_matches("sm_").trim_start_matches("SM ");
        if let Some((a, b)) = t.split_once('.') {
            return Some(Capability { major: a.trim().parse().ok()?, minor: b.trim().parse().ok()? });
        }
        let n: u32 = t.parse().ok()?;
        (10..=129).contains(&n).then_some(Capability { major: n / 10, minor: n % 10 })
    }

    /// The compute capability of a GPU as nvprof's `Device` column or ncu's `Device` names it
    /// ("GeForce GTX 1080 Ti (0)"), for the GPUs whose name says it (NVIDIA CUDA GPUs list).
    pub fn of_device(name: &str) -> Option<Capability> {
        let n = name.to_ascii_lowercase();
        let cc = |major, minor| Some(Capability { major, minor });
        const TABLE: &[(&[&str], u32, u32)] = &[
            (&["h100", "h200", "gh200"], 9, 0),
            (&["rtx 40", "l40", "l4 ", "rtx 6000 ada"], 8, 9),
            (&["a100", "a30", "a800"], 8, 0),
            (&["rtx 30", "a40", "a10", "a6000", "a5000", "a4000"], 8, 6),
            (&["rtx 20", "gtx 16", "t4", "titan rtx", "quadro rtx"], 7, 5),
            (&["v100", "titan v"], 7, 0),
            (&["p100"], 6, 0),
            (&["gtx 10", "titan x (pascal)", "titan xp", "p40", "p4", "p6000"], 6, 1),
            (&["gtx 9", "titan x", "m40", "m60", "m6000"], 5, 2),
            (&["gtx 750", "m10"], 5, 0),
            (&["k80"], 3, 7),
            (&["k40", "k20", "gtx titan", "gtx 780"], 3, 5),
            (&["gtx 680", "gtx 770", "k10"], 3, 0),
            (&["gtx 580", "gtx 480", "c2075", "c2070", "m2090", "c2050"], 2, 0),
        ];
        TABLE
            .iter()
            .find(|(names, _, _)| names.iter().any(|p| n.contains(p)))
            .and_then(|(_, a, b)| cc(*a, *b))
    }

    /// Volta and newer: global loads cached in the unified L1 by default, shared wavefronts per width.
    pub fn unified_l1_caches_global_loads(self) -> bool {
        self.major >= 7
    }

    /// Maxwell and newer: one L1/texture cache whose transactions include global loads.
    pub fn unified_l1_texture(self) -> bool {
        self.major >= 5
    }
}

/// Counters read from one kernel's metrics, and which metrics fed them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mapped {
    /// Canonical counter totals (see `profile::CANONICAL_COUNTERS`).
    pub counters: BTreeMap<String, f64>,
    /// Inputs of the profile's `code` table (`achieved_occupancy`, a fraction of the maximum warps).
    pub code: BTreeMap<String, f64>,
    /// Source metrics that fed a counter or a code input.
    pub used: BTreeSet<String>,
}

/// A metric value that is outside its physical range: the field and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfRange(pub String);

/// Reads a fraction written as a fraction (0.95) or as percent (95): the NV-DVFS rows use the former,
/// nvprof prints the latter (the reader turns a `%` suffix into a fraction already).
fn fraction(name: &str, v: f64) -> Result<f64, OutOfRange> {
    let f = if v > 1.0 { v / 100.0 } else { v };
    if !(0.0..=1.0).contains(&f) {
        return Err(OutOfRange(format!("{name} is {v}: a rate must be within 0–1 (or 0–100%)")));
    }
    Ok(f)
}

/// Warp size: thread-level counts ÷ 32 are warp instructions.
const WARP: f64 = 32.0;

struct Reader<'a> {
    m: &'a BTreeMap<String, f64>,
    out: Mapped,
    /// Whether this reads ncu metrics: every name [`from_ncu`] looks up must then be one [`ncu_reads`]
    /// names, since the streaming reader keeps only those (checked when the unit tests run).
    ncu: bool,
    /// Whether the metrics that fed a counter are noted in `out.used`.
    note_used: bool,
}

impl Reader<'_> {
    fn has(&self, name: &str) -> bool {
        if cfg!(test) {
            assert!(!self.ncu || ncu_reads(name), "from_ncu reads {name}, which ncu_reads does not name");
        }
        self.m.contains_key(name)
    }

    fn get(&mut self, name: &str) -> Option<f64> {
        if cfg!(test) {
            assert!(!self.ncu || ncu_reads(name), "from_ncu reads {name}, which ncu_reads does not name");
        }
        let v = self.m.get(name).copied()?;
        if self.note_used {
            self.out.used.insert(name.to_string());
        }
        Some(v)
    }

    /// The sum of `names`, when every one is there.
    fn sum(&mut self, names: &[&str]) -> Option<f64> {
        if names.iter().any(|n| !self.has(n)) {
            return None;
        }
        names.iter().map(|n| self.get(n)).sum()
    }

    /// The first of `alternatives` (each a sum of metrics times a factor) that the export has.
    fn first(&mut self, alternatives: &[(&[&str], f64)]) -> Option<f64> {
        alternatives.iter().find_map(|(names, k)| self.sum(names).map(|v| v * k))
    }

    fn set(&mut self, counter: &str, alternatives: &[(&[&str], f64)]) {
        let v = self.first(alternatives);
        self.put(counter, v);
    }

    fn put(&mut self, counter: &str, v: Option<f64>) {
        if let Some(v) = v
            && !self.out.counters.contains_key(counter)
        {
            self.out.counters.insert(counter.to_string(), v);
        }
    }
}

/// nvprof metrics and events of one kernel (values in base units, `%` as fractions) → canonical
/// counters. `cc` is the kernel's compute capability when known (else Maxwell/Pascal semantics, those of
/// the NV-DVFS rows).
pub fn from_nvprof(m: &BTreeMap<String, f64>, cc: Option<Capability>) -> Result<Mapped, OutOfRange> {
    let cc = cc.unwrap_or(Capability { major: 6, minor: 1 });
    let mut r = Reader { m, out: Mapped::default(), ncu: false, note_used: true };
    // Events with the canonical names (the paper's Fermi events; `gld_request`, `shared_load`, …).
    for (c, _) in crate::profile::CANONICAL_COUNTERS.iter().chain(crate::profile::EXPORT_COUNTERS) {
        if let Some(v) = r.get(c) {
            let v = if THREAD_LEVEL.contains(c) { v / WARP } else { v };
            r.put(c, Some(v));
        }
    }
    r.set("inst_special", &[(&["flop_count_sp_special"], 1.0 / WARP)]);
    r.set("inst_fp_16", &[(&["inst_fp_16"], 1.0 / WARP)]);
    // Global loads: sectors requested from L1 (see the module documentation for the capability split).
    if let Some(ld) = r.get("gld_transactions") {
        if cc.unified_l1_caches_global_loads() {
            let hit = match r.get("global_hit_rate") {
                Some(h) => fraction("global_hit_rate", h)?,
                None => 0.0,
            };
            r.put("l1_global_load_hit", Some(ld * hit));
            r.put("l1_global_load_miss", Some(ld * (1.0 - hit)));
        } else {
            r.put("uncached_global_load_transaction", Some(ld));
        }
        if let Some(per) = m.get("gld_transactions_per_request").copied().filter(|p| *p >= 1.0) {
            r.get("gld_transactions_per_request");
            r.put("gld_request", Some(ld / per));
        }
    }
    r.set("gld_request", &[(&["global_load"], 1.0)]);
    r.set("global_store_transaction", &[(&["gst_transactions"], 1.0)]);
    r.set("local_load", &[(&["local_load_transactions"], 1.0)]);
    r.set("local_store", &[(&["local_store_transactions"], 1.0)]);
    r.set("dram_read_bytes", &[(&["dram_read_bytes"], 1.0), (&["dram_read_transactions"], 32.0)]);
    r.set("dram_write_bytes", &[(&["dram_write_bytes"], 1.0), (&["dram_write_transactions"], 32.0)]);
    r.set("l2_read_transactions", &[(&["l2_read_transactions"], 1.0)]);
    r.set("l2_write_transactions", &[(&["l2_write_transactions"], 1.0)]);
    r.set("branch", &[(&["cf_executed"], 1.0)]);
    if let Some(tex) = m.get("tex_cache_transactions").copied() {
        r.get("tex_cache_transactions");
        let queries = if cc.unified_l1_caches_global_loads() {
            let requests = |tx: &str, per: &str| {
                let per = m.get(per).copied().filter(|p| *p >= 1.0).unwrap_or(SECTORS_PER_REQUEST);
                m.get(tx).copied().unwrap_or(0.0) / per
            };
            let other = requests("gld_transactions", "gld_transactions_per_request")
                + requests("gst_transactions", "gst_transactions_per_request")
                + m.get("shared_load_transactions").copied().unwrap_or(0.0);
            (tex - other).max(0.0)
        } else if cc.unified_l1_texture() {
            (tex - m.get("gld_transactions").copied().unwrap_or(0.0)).max(0.0)
        } else {
            tex
        };
        let hit = match r.get("tex_cache_hit_rate") {
            Some(h) => fraction("tex_cache_hit_rate", h)?,
            None => 0.0,
        };
        r.put("tex0_cache_sector_queries", Some(queries));
        r.put("tex0_cache_sector_misses", Some(queries * (1.0 - hit)));
    }
    // Shared memory: transactions are wavefronts; requests = transactions / per request; the excess are
    // bank-conflict replays.
    let ld_tx = r.get("shared_load_transactions");
    let st_tx = r.get("shared_store_transactions");
    if ld_tx.is_some() || st_tx.is_some() {
        let mut requests = |tx: f64, per: &str| match r.get(per).filter(|p| *p >= 1.0) {
            Some(p) => tx / p,
            None => tx,
        };
        let (ld_tx, st_tx) = (ld_tx.unwrap_or(0.0), st_tx.unwrap_or(0.0));
        let ld_req = requests(ld_tx, "shared_load_transactions_per_request");
        let st_req = requests(st_tx, "shared_store_transactions_per_request");
        r.put("shared_load", Some(ld_req));
        r.put("shared_store", Some(st_req));
        r.put("l1_shared_bank_conflict", Some((ld_tx - ld_req).max(0.0) + (st_tx - st_req).max(0.0)));
        r.put("shared_wavefronts", Some(ld_tx + st_tx));
    }
    if let Some(o) = r.get("achieved_occupancy") {
        if !(o > 0.0 && o <= 1.0) {
            return Err(OutOfRange(format!(
                "achieved_occupancy is {o}: it is the fraction of the maximum resident warps, within (0, 1]"
            )));
        }
        r.out.code.insert("achieved_occupancy".into(), o);
    }
    Ok(r.out)
}

/// 32-byte sectors in one fully coalesced warp request of 4-byte words: what a transaction count is divided
/// by when an export has no per-request figure.
const SECTORS_PER_REQUEST: f64 = 4.0;

/// Canonical counters that nvprof counts per thread (divided by the warp size on import).
pub const THREAD_LEVEL: &[&str] =
    &["inst_fp_32", "inst_fp_64", "inst_fp_16", "inst_integer", "inst_bit_convert"];

/// The ncu metrics (and details-page display names) [`from_ncu`] reads, besides the per-opcode FP counts
/// `{sm,smsp}__sass_thread_inst_executed_op_{f,d,h}{fma,mul,add}_pred_on.sum`.
const NCU_READS: &[&str] = &[
    "sm__inst_executed.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sass__inst_executed_global_loads",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "dram__sectors_read.sum",
    "dram__sectors_write.sum",
    "dram__bytes.sum",
    "dram__sectors.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_atom.sum",
    "lts__t_sectors_op_red.sum",
    "lts__t_bytes.sum",
    "lts__t_sectors.sum",
    "sass__inst_executed_shared_loads",
    "sass__inst_executed_shared_stores",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "sm__inst_executed_pipe_tensor.sum",
    "smsp__inst_executed_pipe_tensor.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "Achieved Occupancy",
];

/// The FMA, MUL and ADD thread counts of one precision: per SM sub-partition, then per SM.
type FpOpcodeMetrics = [[&'static str; 3]; 2];

/// Per FP counter, the per-opcode thread counts (FMA, MUL, ADD) that give it, per SM sub-partition then
/// per SM: `{smsp,sm}__sass_thread_inst_executed_op_{f,d,h}{fma,mul,add}_pred_on.sum`.
static FP_OPCODE_METRICS: std::sync::LazyLock<Vec<(&str, FpOpcodeMetrics)>> =
    std::sync::LazyLock::new(|| {
        let name = |unit: &str, prefix: &str, op: &str| -> &'static str {
            format!("{unit}__sass_thread_inst_executed_op_{prefix}{op}_pred_on.sum").leak()
        };
        [("inst_fp_32", "f"), ("inst_fp_64", "d"), ("inst_fp_16", "h")]
            .into_iter()
            .map(|(counter, p)| {
                let ops = |unit| [name(unit, p, "fma"), name(unit, p, "mul"), name(unit, p, "add")];
                (counter, [ops("smsp"), ops("sm")])
            })
            .collect()
    });

/// Whether [`from_ncu`] may read the metric `name` (the streaming reader keeps only these as numbers).
pub fn ncu_reads(name: &str) -> bool {
    if NCU_READS.contains(&name) {
        return true;
    }
    let Some(rest) = name.strip_prefix("sm__").or_else(|| name.strip_prefix("smsp__")) else { return false };
    let Some(op) =
        rest.strip_prefix("sass_thread_inst_executed_op_").and_then(|r| r.strip_suffix("_pred_on.sum"))
    else {
        return false;
    };
    matches!(op.as_bytes().first(), Some(b'f' | b'd' | b'h')) && ["fma", "mul", "add"].contains(&&op[1..])
}

/// ncu metrics beyond the chip's range map (values in base units): each canonical counter from the first
/// alternative the export has, as the nvprof → ncu comparison table pairs them. `counters` already holds
/// what the range map gave; nothing there is replaced.
pub fn from_ncu(m: &BTreeMap<String, f64>, mapped: &mut Mapped) -> Result<(), OutOfRange> {
    from_ncu_noting(m, mapped, true)
}

/// As [`from_ncu`]; `mapped.used` is left as it is unless `note_used`.
pub(super) fn from_ncu_noting(
    m: &BTreeMap<String, f64>,
    mapped: &mut Mapped,
    note_used: bool,
) -> Result<(), OutOfRange> {
    let mut r = Reader { m, out: std::mem::take(mapped), ncu: true, note_used };
    let thread = 1.0 / WARP;
    r.set("inst_executed", &[(&["sm__inst_executed.sum"], 1.0)]);
    r.set(
        "gld_request",
        &[
            (&["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"], 1.0),
            (&["sass__inst_executed_global_loads"], 1.0),
        ],
    );
    // Global load sectors without the hit/miss split: all counted as L1 misses (sm_70+ caches global
    // loads in L1; without a hit count, the conservative reading).
    if !r.out.counters.contains_key("l1_global_load_hit") {
        r.set("l1_global_load_miss", &[(&["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], 1.0)]);
    }
    r.set("dram_read_bytes", &[(&["dram__sectors_read.sum"], 32.0)]);
    r.set("dram_write_bytes", &[(&["dram__sectors_write.sum"], 32.0)]);
    if !(r.out.counters.contains_key("dram_read_bytes") && r.out.counters.contains_key("dram_write_bytes")) {
        r.set("dram_bytes", &[(&["dram__bytes.sum"], 1.0), (&["dram__sectors.sum"], 32.0)]);
    }
    r.set(
        "l2_read_transactions",
        &[
            (&["lts__t_sectors_op_read.sum", "lts__t_sectors_op_atom.sum", "lts__t_sectors_op_red.sum"], 1.0),
            (&["lts__t_sectors_op_read.sum"], 1.0),
        ],
    );
    r.set(
        "l2_write_transactions",
        &[
            (
                &["lts__t_sectors_op_write.sum", "lts__t_sectors_op_atom.sum", "lts__t_sectors_op_red.sum"],
                1.0,
            ),
            (&["lts__t_sectors_op_write.sum"], 1.0),
        ],
    );
    if !(r.out.counters.contains_key("l2_read_transactions")
        && r.out.counters.contains_key("l2_write_transactions"))
    {
        r.set("l2_bytes", &[(&["lts__t_bytes.sum"], 1.0), (&["lts__t_sectors.sum"], 32.0)]);
    }
    // Shared memory: requests are instructions; wavefronts are the pipe's work (not requests + conflicts
    // on sm_70+, see the module documentation).
    r.set("shared_load", &[(&["sass__inst_executed_shared_loads"], 1.0)]);
    r.set("shared_store", &[(&["sass__inst_executed_shared_stores"], 1.0)]);
    r.set("l1_shared_bank_conflict", &[(&["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"], 1.0)]);
    r.set(
        "shared_wavefronts",
        &[
            (&["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"], 1.0),
            (
                &[
                    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                ],
                1.0,
            ),
        ],
    );
    // FP instructions from the per-opcode thread counts (FMA, MUL, ADD), when the pipe counts are absent.
    for (counter, by_unit) in FP_OPCODE_METRICS.iter() {
        for names in by_unit {
            let v = r.first(&[(names, thread)]);
            r.put(counter, v);
        }
    }
    r.set(
        "inst_tensor",
        &[(&["sm__inst_executed_pipe_tensor.sum"], 1.0), (&["smsp__inst_executed_pipe_tensor.sum"], 1.0)],
    );
    let occupancy = r.first(&[
        (&["sm__warps_active.avg.pct_of_peak_sustained_active"], 1.0),
        (&["Achieved Occupancy"], 1.0),
    ]);
    if let Some(o) = occupancy {
        // ncu prints occupancy in percent; the reader has made it a fraction.
        if !(o > 0.0 && o <= 1.0) {
            return Err(OutOfRange(format!(
                "achieved occupancy is {}%: it must be within 0–100%",
                o * 100.0
            )));
        }
        r.out.code.insert("achieved_occupancy".into(), o);
    }
    *mapped = r.out;
    Ok(())
}
