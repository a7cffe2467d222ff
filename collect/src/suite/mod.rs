//! The built-in microbenchmark suite: CUDA C kernels for the execution patterns of paper §5.4-B, each at
//! several intensities, run at each requested clock pair to build a training table for this GPU.
//!
//! The kernels live in `collect/kernels/suite.cu` (embedded), are compiled at run time by NVRTC for the
//! GPU's architecture and launched through the [`SuiteDevice`] trait: [`cuda::CudaSuiteDevice`] on a real
//! GPU, [`FakeSuiteDevice`] in tests. The run loop ([`run_suite`]) writes one table row per kernel × clock
//! pair and flushes it at once, so an interrupted run keeps every finished row and `--resume` continues
//! where it stopped.

pub mod cuda;
mod fake;
pub mod listing;
mod table;

pub use fake::FakeSuiteDevice;
pub use table::{SuiteMetadata, feature_set_path, feature_set_toml, read_done, suite_header};

use crate::nvrtc::NvrtcError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// CUDA C source of every suite kernel.
pub const SOURCE: &str = include_str!("../../kernels/suite.cu");

/// Elements (floats) of the suite's input and output buffers: 16 Mi floats = 64 MiB each, larger than the
/// L2 of every GPU up to Hopper (50 MiB), so strided loads reach DRAM.
pub const BUFFER_ELEMS: u32 = 1 << 24;

/// One CUDA function of `suite.cu`: what it exercises and how to check that the compiler kept it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Function name in `suite.cu`.
    pub name: &'static str,
    /// Execution pattern (paper §5.4-B) in words.
    pub pattern: &'static str,
    /// Canonical counters (models/src/profile.rs) this kernel is meant to drive.
    pub drives: &'static [&'static str],
    /// PTX the function's body must contain (see [`ptx_has`]); proves the work was not optimized away.
    pub ptx: &'static [&'static str],
    /// What the knob means.
    pub knob: &'static str,
}

/// Every function of `suite.cu`.
pub const ENTRIES: &[Entry] = &[
    Entry {
        name: "global_load",
        pattern: "global loads, coalesced (stride 1) to uncoalesced (stride >= 32)",
        drives: &["gld_request", "l1_global_load_miss", "dram_read_bytes"],
        ptx: &["ld.global.cg.f32"],
        knob: "stride between neighbouring threads, elements",
    },
    Entry {
        name: "global_store",
        pattern: "global stores, coalesced to uncoalesced",
        drives: &["global_store_transaction", "dram_write_bytes"],
        ptx: &["st.global.f32"],
        knob: "stride between neighbouring threads, elements",
    },
    Entry {
        name: "l1_hit",
        pattern: "L1 hits: a small per-block footprint re-read through L1",
        drives: &["gld_request", "l1_global_load_hit"],
        ptx: &["ld.global.ca.f32"],
        knob: "footprint, floats (power of two)",
    },
    Entry {
        name: "l1_miss",
        pattern: "L1 misses: one line per thread over the whole buffer, cached in L2 only",
        drives: &["gld_request", "l1_global_load_miss", "dram_read_bytes"],
        ptx: &["ld.global.cg.f32"],
        knob: "extra offset per step, elements",
    },
    Entry {
        name: "shared_conflict",
        pattern: "shared memory with 1- to 32-way bank conflicts",
        drives: &["shared_load", "shared_store", "l1_shared_bank_conflict"],
        ptx: &["ld.shared.f32", "st.shared.f32"],
        knob: "lanes per bank (conflict ways)",
    },
    Entry {
        name: "texture_fetch",
        pattern: "texture fetches, high hit rate (small footprint) or low (whole buffer)",
        drives: &["tex0_cache_sector_queries", "tex0_cache_sector_misses"],
        ptx: &["tex.1d.v4.f32.s32"],
        knob: "footprint, elements (power of two)",
    },
    Entry {
        name: "fp32_fma",
        pattern: "FP32 fused multiply-add",
        drives: &["inst_executed", "inst_fp_32"],
        ptx: &["fma.rn.f32"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "fp64_fma",
        pattern: "FP64 fused multiply-add",
        drives: &["inst_executed", "inst_fp_64"],
        ptx: &["fma.rn.f64"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "sfu",
        pattern: "special functions (sin, rsqrt, exp2) on the SFU",
        drives: &["inst_executed", "inst_special"],
        ptx: &["sin.approx.f32", "rsqrt.approx.f32", "ex2.approx"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "integer",
        pattern: "integer multiply-add, shift, xor",
        drives: &["inst_executed", "inst_integer"],
        ptx: &["mad.lo.s32", "xor.b32", "shr.u32"],
        knob: "unused (intensity = fraction of the grid)",
    },
    Entry {
        name: "branch_divergence",
        pattern: "branch divergence: lanes split over 1 to 32 paths",
        drives: &["branch", "divergent_branch", "inst_executed"],
        ptx: &[LANE_DEPENDENT_BRANCH, "%tid.x"],
        knob: "paths per warp",
    },
    Entry {
        name: "local_spill",
        pattern: "local-memory spills (a run-time indexed per-thread array)",
        drives: &["local_load", "local_store"],
        ptx: &["ld.local.f32", "st.local.f32"],
        knob: "live array size, floats (power of two, <= 64)",
    },
    Entry {
        name: "mix_compute_memory",
        pattern: "compute/memory mix",
        drives: &["gld_request", "inst_fp_32", "dram_read_bytes"],
        ptx: &["ld.global.cg.f32", "fma.rn.f32"],
        knob: "FP32 FMAs per global load",
    },
    Entry {
        name: "idle",
        pattern: "idle: resident warps that only sleep",
        drives: &[],
        ptx: &["nanosleep.u32"],
        knob: "nanoseconds per nap",
    },
];

/// One run of the suite: a function of `suite.cu` at one intensity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteKernel {
    /// Unique name, the table's group label (`global_load_s32`).
    pub name: String,
    /// Function in `suite.cu`.
    pub entry: String,
    /// The pattern's knob.
    pub knob: i32,
    /// Fraction of the full grid launched (1 = every SM busy at full occupancy of the suite's blocks).
    pub grid_fraction: f64,
    /// Inner-loop repetitions per launch.
    pub iters: i32,
}

impl SuiteKernel {
    /// The [`Entry`] this kernel runs.
    pub fn entry(&self) -> Option<&'static Entry> {
        ENTRIES.iter().find(|e| e.name == self.entry)
    }
}

fn k(name: &str, entry: &str, knob: i32, grid_fraction: f64, iters: i32) -> SuiteKernel {
    SuiteKernel { name: name.into(), entry: entry.into(), knob, grid_fraction, iters }
}

/// The whole suite, in run order: every pattern at several intensities (48 kernels).
pub fn kernels() -> Vec<SuiteKernel> {
    let mut v = Vec::new();
    for s in [1, 2, 4, 8, 32] {
        v.push(k(&format!("global_load_s{s}"), "global_load", s, 1.0, 256));
    }
    v.push(k("global_load_s1_quarter", "global_load", 1, 0.25, 256));
    for s in [1, 4, 32] {
        v.push(k(&format!("global_store_s{s}"), "global_store", s, 1.0, 256));
    }
    v.push(k("global_store_s1_quarter", "global_store", 1, 0.25, 256));
    for f in [256, 4096] {
        v.push(k(&format!("l1_hit_f{f}"), "l1_hit", f, 1.0, 1024));
    }
    v.push(k("l1_miss", "l1_miss", 1, 1.0, 256));
    v.push(k("l1_miss_quarter", "l1_miss", 1, 0.25, 256));
    for w in [1, 2, 4, 8, 16, 32] {
        v.push(k(&format!("shared_conflict_{w}way"), "shared_conflict", w, 1.0, 2048));
    }
    v.push(k("texture_hit_high", "texture_fetch", 1024, 1.0, 1024));
    v.push(k("texture_hit_low", "texture_fetch", BUFFER_ELEMS as i32, 1.0, 256));
    v.push(k("texture_hit_high_quarter", "texture_fetch", 1024, 0.25, 1024));
    for (e, iters) in [("fp32_fma", 8192), ("fp64_fma", 2048), ("sfu", 2048), ("integer", 8192)] {
        for (frac, tag) in [(1.0, "full"), (0.5, "half"), (0.125, "eighth")] {
            v.push(k(&format!("{e}_{tag}"), e, 1, frac, iters));
        }
    }
    for p in [1, 2, 4, 8, 32] {
        v.push(k(&format!("branch_divergence_{p}paths"), "branch_divergence", p, 1.0, 512));
    }
    for a in [16, 64] {
        v.push(k(&format!("local_spill_{a}"), "local_spill", a, 1.0, 2048));
    }
    for r in [1, 4, 16, 64, 256] {
        v.push(k(&format!("mix_fma{r}_per_load"), "mix_compute_memory", r, 1.0, 256));
    }
    v.push(k("idle_sleep", "idle", 100_000, 1.0, 64));
    v
}

/// The [`ptx_has`] pattern for a branch that can diverge: a predicated, non-`.uni` `bra` whose predicate is
/// computed (through any chain of instructions) from the thread's lane — `%tid.*` or `%laneid`. A loop's
/// back-edge on a kernel parameter does not match it; a plain `@%p bra` search would.
pub const LANE_DEPENDENT_BRANCH: &str = "@%p(lane) bra";

/// Whether `ptx` contains `pattern`. `@%p bra` matches any predicated branch (`@%p12 bra`, `@!%p3 bra`);
/// [`LANE_DEPENDENT_BRANCH`] only one whose predicate depends on the lane.
pub fn ptx_has(ptx: &str, pattern: &str) -> bool {
    if pattern == LANE_DEPENDENT_BRANCH {
        return has_lane_dependent_branch(ptx);
    }
    if pattern == "@%p bra" {
        // `bra.uni` is a branch the compiler knows to be uniform; a divergent one is a plain `bra`.
        return ptx.lines().map(str::trim_start).any(|l| {
            let mut words = l.split_whitespace();
            let guard = words.next().unwrap_or("");
            (guard.starts_with("@%p") || guard.starts_with("@!%p")) && words.next() == Some("bra")
        });
    }
    ptx.contains(pattern)
}

/// The guard register of a predicated plain `bra` line (`@%p3 bra $L;` or `@!%p3 bra $L;` → `%p3`).
fn branch_guard(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let guard = words.next()?.strip_prefix('@')?;
    let guard = guard.strip_prefix('!').unwrap_or(guard);
    (guard.starts_with("%p") && words.next() == Some("bra")).then_some(guard)
}

/// The registers and special registers named in a PTX operand list (`%r12`, `%rd3`, `%tid.x`, `%laneid`).
fn ptx_registers(operands: &str) -> impl Iterator<Item = &str> {
    operands
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '.' || c == '_'))
        .filter(|t| t.starts_with('%'))
}

/// Taint analysis over one function's PTX: which registers hold values computed from the lane
/// (`%tid.*`, `%laneid`), iterated to a fixed point so values carried around loops are covered; then
/// whether some predicated `bra` tests such a register. Stores (`st.*`) write memory, not a register, and
/// are skipped; memory is not tracked (a value stored and reloaded loses its taint, so this can miss a
/// divergent branch but does not invent one).
fn has_lane_dependent_branch(ptx: &str) -> bool {
    // (destinations, sources) of every register-writing instruction.
    let mut defs: Vec<(Vec<&str>, Vec<&str>)> = Vec::new();
    let mut guards: Vec<&str> = Vec::new();
    for line in ptx.lines().map(str::trim) {
        if let Some(g) = branch_guard(line) {
            guards.push(g);
            continue;
        }
        let body = match line.strip_prefix('@') {
            // A predicated non-branch instruction: drop the guard, keep the instruction.
            Some(rest) => rest.split_once(char::is_whitespace).map_or("", |(_, i)| i.trim_start()),
            None => line,
        };
        let Some((opcode, operands)) = body.split_once(char::is_whitespace) else { continue };
        if opcode.starts_with('.') || opcode.starts_with("//") || opcode.starts_with("st.") || opcode == "bra"
        {
            continue;
        }
        let operands = operands.trim_end_matches(';');
        // The destination is the first operand (`setp` may name two: `%p1|%p2`; vector loads a brace list
        // `{%r1, %r2}`).
        let operands = operands.trim_start();
        let split = if operands.starts_with('{') {
            operands.find('}').map(|i| (&operands[..=i], operands[i + 1..].trim_start_matches(',')))
        } else {
            operands.split_once(',')
        };
        let (dst, src) = split.unwrap_or((operands, ""));
        let dst: Vec<&str> = ptx_registers(dst).collect();
        if !dst.is_empty() {
            defs.push((dst, ptx_registers(src).collect()));
        }
    }
    let lane = |r: &str| r.starts_with("%tid.") || r == "%laneid";
    let mut tainted: std::collections::HashSet<&str> = std::collections::HashSet::new();
    loop {
        let before = tainted.len();
        for (dst, src) in &defs {
            if src.iter().any(|r| lane(r) || tainted.contains(r)) {
                tainted.extend(dst.iter().copied());
            }
        }
        if tainted.len() == before {
            break;
        }
    }
    guards.iter().any(|g| tainted.contains(g))
}

/// The PTX text of one `.entry` (from its header to the next `.entry` or the end).
pub fn ptx_function<'a>(ptx: &'a str, entry: &str) -> Option<&'a str> {
    let start = ptx.find(&format!(".entry {entry}("))?;
    let rest = &ptx[start..];
    let end = rest[1..].find(".entry ").map_or(rest.len(), |e| e + 1);
    Some(&rest[..end])
}

/// A core/memory clock pair, MHz.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockPair {
    pub core_mhz: f64,
    pub mem_mhz: f64,
}

impl ClockPair {
    /// The label written in the table's `clocks` column (`1410/1215`).
    pub fn label(&self) -> String {
        format!("{}/{}", self.core_mhz, self.mem_mhz)
    }
}

/// Parses `--clocks`: `current`, or a comma-separated list of `CORE:MEM` pairs in MHz.
pub fn parse_clocks(spec: &str) -> Result<Vec<Option<ClockPair>>, SuiteError> {
    let bad = |what: &str| {
        SuiteError::Invalid(format!(
            "--clocks '{spec}': {what}; use `current` or pairs like 1410:1215,1095:1215 (core:memory MHz)"
        ))
    };
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part.eq_ignore_ascii_case("current") {
            out.push(None);
            continue;
        }
        let (c, m) = part.split_once(':').ok_or_else(|| bad(&format!("'{part}' is not CORE:MEM")))?;
        let parse = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0);
        match (parse(c), parse(m)) {
            (Some(core_mhz), Some(mem_mhz)) => out.push(Some(ClockPair { core_mhz, mem_mhz })),
            _ => return Err(bad(&format!("'{part}' does not hold two clocks > 0"))),
        }
    }
    if out.is_empty() {
        return Err(bad("no clocks given"));
    }
    Ok(out)
}

/// Selects suite kernels by name or entry (`--kernels shared_conflict,fp32_fma_full`); empty = all.
pub fn select_kernels(filter: &[String]) -> Result<Vec<SuiteKernel>, SuiteError> {
    let all = kernels();
    if filter.is_empty() {
        return Ok(all);
    }
    let mut out: Vec<SuiteKernel> = Vec::new();
    for f in filter {
        let hits: Vec<&SuiteKernel> = all.iter().filter(|k| &k.name == f || &k.entry == f).collect();
        if hits.is_empty() {
            let entries: Vec<&str> = ENTRIES.iter().map(|e| e.name).collect();
            return Err(SuiteError::Invalid(format!(
                "--kernels: no suite kernel '{f}': use a pattern ({}) or a kernel name from `gpumodel collect --suite --list-kernels`",
                entries.join(", ")
            )));
        }
        for h in hits {
            if !out.iter().any(|k| k.name == h.name) {
                out.push(h.clone());
            }
        }
    }
    Ok(out)
}

/// What the GPU is, for the table's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Name as the driver reports it.
    pub name: String,
    /// Chip (`GA102`) or, from NVML on a real GPU, the architecture family (`Ampere`): NVML does not name chips.
    pub chip: Option<String>,
    /// Driver version.
    pub driver: Option<String>,
    /// Compute capability (major, minor).
    pub compute_capability: Option<(u32, u32)>,
    /// Streaming multiprocessors.
    pub sm_count: Option<u32>,
}

/// What one kernel run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Wall time of the measured launches, seconds.
    pub seconds: f64,
    /// Launches in that time.
    pub launches: u64,
    /// Mean board power over the power samples, W.
    pub power_w: f64,
    /// Power samples averaged.
    pub power_samples: usize,
    /// Mean core and memory clock seen during the run, MHz.
    pub clocks: ClockPair,
    /// Canonical counter rates (events per second of the run).
    pub counter_rates: BTreeMap<String, f64>,
}

/// Whether a clock request took effect.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockOutcome {
    /// The clocks are set.
    Applied,
    /// The GPU refuses (no permission, or the pair is unsupported): the reason, in one line.
    Refused(String),
}

/// A GPU as the suite uses it. The real one is [`cuda::CudaSuiteDevice`]; tests use [`FakeSuiteDevice`].
pub trait SuiteDevice {
    /// The GPU, for the metadata.
    fn info(&self) -> GpuInfo;
    /// Sets application / locked clocks.
    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, SuiteError>;
    /// Returns the clocks to the driver's defaults.
    fn reset_clocks(&mut self) -> Result<(), SuiteError>;
    /// Runs `kernel` repeatedly for at least `min_seconds` while sampling power and counters.
    fn run(&mut self, kernel: &SuiteKernel, min_seconds: f64) -> Result<Measurement, SuiteError>;
}

/// Errors of the suite and of calibration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuiteError {
    /// Bad options.
    #[error("{0}")]
    Invalid(String),
    /// No CUDA driver (libcuda.so) on this machine.
    #[error(
        "no CUDA driver: {0}; run on a machine with an NVIDIA GPU and driver, or import existing measurements \
         with `gpumodel import`"
    )]
    NoCudaDriver(String),
    /// A CUDA driver call failed.
    #[error("CUDA {call} failed: {message}")]
    Cuda { call: &'static str, message: String },
    /// NVRTC could not be loaded or could not compile.
    #[error(transparent)]
    Nvrtc(#[from] NvrtcError),
    /// The collector layer (NVML, CUPTI, sampler) failed.
    #[error(transparent)]
    Collect(#[from] crate::Error),
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    /// The output file exists and `--resume` was not given, or cannot be resumed.
    #[error("{0}")]
    Output(String),
}

impl SuiteError {
    pub(crate) fn io(path: &Path, e: impl std::fmt::Display) -> SuiteError {
        SuiteError::Io { path: path.to_path_buf(), message: e.to_string() }
    }
}

/// What to run and where to write it.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kernels: Vec<SuiteKernel>,
    /// Clock pairs to sweep; `None` means the current clocks.
    pub clocks: Vec<Option<ClockPair>>,
    /// Minimum measured duration per kernel × clock pair, seconds.
    pub min_seconds: f64,
    /// The training table (CSV); the metadata goes beside it as `<out>.json`.
    pub out: PathBuf,
    /// Continue an existing table, skipping the kernel × clock rows it already holds.
    pub resume: bool,
}

/// Progress of a run, for the progress bar.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// The run starts: total kernel × clock runs, and how many a resumed table already holds.
    Start { total: usize, already_done: usize },
    /// One kernel × clock run finished (or was skipped because the table has it).
    Step { kernel: String, clocks: String },
    /// A warning to show once (e.g. clocks cannot be set).
    Warning(String),
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Rows written by this run.
    pub rows_written: usize,
    /// Rows the resumed table already had.
    pub rows_kept: usize,
    /// Whether the run stopped early (Ctrl-C); every finished row is in the table.
    pub interrupted: bool,
    /// Warnings issued (clock control refused, …).
    pub warnings: Vec<String>,
}

/// Runs the suite: for each clock pair (outer loop, since clock changes are slow), each kernel; one row
/// per run, flushed at once. `stop` is checked before every run (set it from a Ctrl-C handler).
pub fn run_suite(
    dev: &mut dyn SuiteDevice,
    plan: &Plan,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary, SuiteError> {
    if !(plan.min_seconds.is_finite() && plan.min_seconds > 0.0) {
        return Err(SuiteError::Invalid(format!(
            "--min-seconds {} must be a number > 0 (the sampler needs time to see each kernel)",
            plan.min_seconds
        )));
    }
    if plan.kernels.is_empty() || plan.clocks.is_empty() {
        return Err(SuiteError::Invalid("nothing to run: no kernels or no clocks selected".into()));
    }
    let done = if plan.out.exists() {
        if !plan.resume {
            return Err(SuiteError::Output(format!(
                "{} exists: pass --resume to continue it, or choose another --out (nothing was changed)",
                plan.out.display()
            )));
        }
        read_done(&plan.out)?
    } else {
        Default::default()
    };
    let info = dev.info();
    let mut writer = table::RowWriter::open(&plan.out, done.is_empty() && !plan.out.exists())?;
    let mut meta = SuiteMetadata::new(&info, plan);
    meta.write(&plan.out)?;

    let total = plan.kernels.len() * plan.clocks.len();
    let mut summary =
        Summary { rows_written: 0, rows_kept: done.len(), interrupted: false, warnings: Vec::new() };
    progress(Progress::Start { total, already_done: done.len() });
    let mut clock_control = true;
    let mut touched_clocks = false;
    let mut seen_labels: Vec<String> = Vec::new();
    'clocks: for req in &plan.clocks {
        let mut req = if clock_control { *req } else { None };
        if let Some(pair) = req {
            let pending = plan.kernels.iter().any(|k| !done.contains(&(k.name.clone(), pair.label())));
            if pending && !stop.load(Ordering::SeqCst) {
                match dev.set_clocks(pair)? {
                    ClockOutcome::Applied => touched_clocks = true,
                    ClockOutcome::Refused(why) => {
                        clock_control = false;
                        let w = format!("cannot set clocks ({why}); running at the current clocks instead");
                        progress(Progress::Warning(w.clone()));
                        summary.warnings.push(w);
                        req = None;
                    }
                }
            }
        }
        if req.is_none() && touched_clocks {
            // "current" means the driver's own clocks, not the last pair this run set.
            dev.reset_clocks()?;
            touched_clocks = false;
        }
        let label = req.map_or_else(|| "current".to_string(), |p| p.label());
        let repeat = seen_labels.contains(&label);
        seen_labels.push(label.clone());
        for kernel in &plan.kernels {
            if stop.load(Ordering::SeqCst) {
                summary.interrupted = true;
                break 'clocks;
            }
            if repeat || done.contains(&(kernel.name.clone(), label.clone())) {
                progress(Progress::Step { kernel: kernel.name.clone(), clocks: label.clone() });
                continue;
            }
            let m = dev.run(kernel, plan.min_seconds)?;
            writer.write(kernel, &label, &m)?;
            summary.rows_written += 1;
            progress(Progress::Step { kernel: kernel.name.clone(), clocks: label.clone() });
        }
    }
    if touched_clocks {
        dev.reset_clocks()?;
    }
    meta.warnings = summary.warnings.clone();
    meta.interrupted = summary.interrupted;
    meta.write(&plan.out)?;
    write_feature_set(&plan.out)?;
    Ok(summary)
}

/// Writes `<out>.features.toml` from the table as it is on disk (resumed rows included).
fn write_feature_set(out: &Path) -> Result<(), SuiteError> {
    let table = match gpumodel_models::Table::read_csv(out, gpumodel_models::table::GROUP_COLUMN) {
        Ok(t) => t,
        Err(_) => return Ok(()), // no rows yet (interrupted before the first): nothing to describe
    };
    let path = feature_set_path(out);
    std::fs::write(&path, feature_set_toml(&table)).map_err(|e| SuiteError::io(&path, e))
}

#[cfg(test)]
mod tests;
