//! Writing the calibration as an architecture profile in the format of `models/arch/*.toml`
//! (`gpumodel_models::arch::ArchProfile`): every value `{ value = …, src = "key" }`, every key cited in
//! `[sources]`. Measured constants cite the calibration run with their median, quartiles and range.

use super::Estimate;
use super::dvfs::Fitted;
use gpumodel_models::arch::ArchProfile;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What the driver (or a reference profile) says about the GPU: every profile value that calibration
/// does not measure, each with its source key.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceFacts {
    /// Marketing name (`NVIDIA A100-SXM4-40GB`).
    pub display_name: String,
    pub chip: String,
    /// `8.0`.
    pub compute_capability: String,
    /// (profile field, value, source key) for every scalar field not measured here.
    pub values: Vec<(String, f64, String)>,
    pub core_clocks_mhz: (Vec<f64>, String),
    pub mem_clocks_mhz: (Vec<f64>, String),
    /// Source key → citation.
    pub sources: BTreeMap<String, String>,
    /// L2 cache size, bytes (sizes the L2 bandwidth measurement's footprint).
    pub l2_cache_bytes: u64,
}

impl DeviceFacts {
    /// A scalar fact by profile field name.
    pub fn value(&self, field: &str) -> Option<f64> {
        self.values.iter().find(|(f, _, _)| f == field).map(|v| v.1)
    }

    /// Facts taken from an existing profile (the fake GPU uses a built-in one), keeping its sources.
    /// Profiles do not record the L2 size: `l2_cache_bytes` is the caller's.
    pub fn from_profile(p: &ArchProfile, measured: &[&str], l2_cache_bytes: u64) -> DeviceFacts {
        DeviceFacts {
            display_name: p.display_name.clone(),
            chip: p.chip.clone(),
            compute_capability: p.compute_capability.clone(),
            values: p
                .scalars()
                .into_iter()
                .filter(|(f, _)| !measured.contains(f))
                .map(|(f, v)| (f.to_string(), v.value, v.src.clone()))
                .collect(),
            core_clocks_mhz: (p.core_clocks_mhz.value.clone(), p.core_clocks_mhz.src.clone()),
            mem_clocks_mhz: (p.mem_clocks_mhz.value.clone(), p.mem_clocks_mhz.src.clone()),
            sources: p.sources.clone(),
            l2_cache_bytes,
        }
    }
}

/// What `gpumodel arch new` is told about a board: its own specification, everything that is not a
/// property of its compute capability.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardSpec {
    /// Marketing name (`NVIDIA GeForce RTX 4090`).
    pub display_name: String,
    /// `8.9`.
    pub compute_capability: String,
    pub sm_count: f64,
    /// Default (boost) core clock and memory clock as nvidia-smi reports them, MHz.
    pub core_mhz: f64,
    pub mem_mhz: f64,
    /// Peak DRAM bandwidth, GB/s.
    pub mem_bandwidth_gbs: f64,
    /// Board power limit, W (carried over from the reference profile when not given).
    pub tdp_w: Option<f64>,
}

impl DeviceFacts {
    /// The facts of a GPU without a profile, from documents: `board` (the numbers its specification
    /// gives), the Programming Guide's and whitepapers' per-SM facts of its compute capability
    /// ([`gpumodel_models::capability`]), the departure delay derived from the bandwidth per SM, and the
    /// latencies no document gives carried over from the built-in profile `like` — the DRAM ones
    /// (`cyc_load`, `cyc_store`) kept in time (scaled by the core clocks), the others in core cycles — and
    /// its L2 bandwidth scaled by SMs × core clock. `like`'s DVFS memory constants are not carried over
    /// (they are a board's), so the DRAM latency follows the clocks in memory time.
    pub fn from_documents(
        board: &BoardSpec,
        like: &ArchProfile,
    ) -> Result<DeviceFacts, gpumodel_models::Error> {
        use gpumodel_models::capability::{self, CapabilityFacts};
        let invalid = |m: String| gpumodel_models::Error::Invalid(m);
        let cc = board.compute_capability.trim();
        let doc = capability::require(cc)?;
        for (what, v) in [
            ("--sms", board.sm_count),
            ("--core-mhz", board.core_mhz),
            ("--mem-mhz", board.mem_mhz),
            ("--bandwidth-gbs", board.mem_bandwidth_gbs),
            ("--tdp-w", board.tdp_w.unwrap_or(1.0)),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(format!("{what} must be a positive number, got {v}")));
            }
        }
        let carried = format!("carried_{}", like.name);
        let scaled = format!("carried_{}_scaled", like.name);
        let core_ratio = board.core_mhz / like.core_mhz.value;
        let per_sm_per_cycle = board.mem_bandwidth_gbs * 1e9 / board.sm_count / (board.core_mhz * 1e6);
        let cost = CapabilityFacts::cost;
        let mut values: Vec<(String, f64, String)> = [
            ("sm_count", board.sm_count, "board"),
            ("warp_size", 32.0, "guide"),
            ("schedulers_per_sm", doc.schedulers_per_sm, "guide"),
            ("core_mhz", board.core_mhz, "board"),
            ("mem_mhz", board.mem_mhz, "board"),
            ("mem_bandwidth_gbs", board.mem_bandwidth_gbs, "board"),
            (
                "l2_bandwidth_gbs",
                like.l2_bandwidth_gbs.value * board.sm_count * board.core_mhz
                    / (like.sm_count.value * like.core_mhz.value),
                &scaled,
            ),
            ("transaction_bytes", 32.0, "guide_tx"),
            ("max_warps_per_sm", doc.max_warps_per_sm, "guide"),
            ("max_blocks_per_sm", doc.max_blocks_per_sm, "guide"),
            ("max_threads_per_block", 1024.0, "guide"),
            ("registers_per_sm", 65536.0, "guide"),
            ("register_alloc_unit", 256.0, "guide"),
            ("max_registers_per_thread", 255.0, "guide"),
            ("shared_mem_per_sm", doc.shared_mem_per_sm, "guide"),
            ("max_shared_mem_per_block", doc.max_shared_mem_per_block, "guide"),
            ("cyc_load", like.cyc_load.value * core_ratio, &scaled),
            ("cyc_store", like.cyc_store.value * core_ratio, &scaled),
            ("cyc_s", like.cyc_s.value, &carried),
            ("cyc_r", like.cyc_r.value, &carried),
            ("cyc_t", like.cyc_t.value, &carried),
            ("alu_latency", like.alu_latency.value, &carried),
            ("in_warp_delay", 32.0 / per_sm_per_cycle, "derived"),
            ("out_warp_delay", like.out_warp_delay.value, &carried),
            ("cost_fp32", cost(doc.fp32), "guide"),
            ("cost_fp64", cost(doc.fp64), "guide"),
            ("cost_int", cost(doc.int32), "guide"),
            ("cost_sfu", cost(doc.sfu), "guide"),
            ("cost_ldst", cost(doc.ldst_units), "guide"),
            ("cost_conversion64", cost(doc.conversion64), "guide"),
            ("shared_bytes_per_cycle", 128.0, "guide_smem"),
        ]
        .into_iter()
        .map(|(f, v, s)| (f.to_string(), v, s.to_string()))
        .collect();
        let tdp = match board.tdp_w {
            Some(w) => (w, "board".to_string()),
            None => (like.tdp_w.value, carried.clone()),
        };
        values.push(("tdp_w".into(), tdp.0, tdp.1));
        let like_name = format!(
            "'{}' ({}, {}, compute capability {})",
            like.name, like.display_name, like.chip, like.compute_capability
        );
        let sources: BTreeMap<String, String> = [
            ("board".to_string(), "the board's specification, as given to `gpumodel arch new`".to_string()),
            ("guide".into(), capability::SOURCE.into()),
            ("guide_tx".into(), "CUDA C++ Programming Guide, global memory accesses: 32-byte sectors on compute capability 5.x and newer".into()),
            ("guide_smem".into(), "CUDA C++ Programming Guide, shared memory of compute capability 5.x to 9.0: 32 banks of 32 bits per clock cycle, 128 bytes per SM per cycle".into()),
            ("derived".into(), "derived: transaction_bytes / (mem_bandwidth_gbs / sm_count / core_mhz), the per-SM departure delay (Hong & Kim, ISCA 2009)".into()),
            (carried.clone(), format!("carried over from the built-in profile {like_name} in core cycles: no document gives it for this GPU, and it was not measured here (`gpumodel calibrate` measures it)")),
            (scaled.clone(), format!("carried over from the built-in profile {like_name}, scaled to this board: DRAM latencies kept in time (× this core clock / {:.0} MHz), L2 bandwidth × (SMs × core clock) / ({:.0} × {:.0} MHz); approximate, not measured here (`gpumodel calibrate` measures it)", like.core_mhz.value, like.sm_count.value, like.core_mhz.value)),
        ]
        .into_iter()
        .collect();
        Ok(DeviceFacts {
            display_name: board.display_name.clone(),
            chip: format!("{} sm_{}", doc.architecture, cc.replace('.', "")),
            compute_capability: cc.to_string(),
            values,
            core_clocks_mhz: (vec![board.core_mhz], "board".into()),
            mem_clocks_mhz: (vec![board.mem_mhz], "board".into()),
            sources,
            l2_cache_bytes: 0,
        })
    }
}

/// A profile name from a GPU name: `NVIDIA GeForce RTX 4090` → `rtx4090`.
pub fn profile_name(display_name: &str) -> String {
    let lower = display_name.to_ascii_lowercase();
    let trimmed = lower
        .trim_start_matches("nvidia")
        .trim()
        .trim_start_matches("geforce")
        .trim()
        .trim_start_matches("tesla");
    let name: String = trimmed.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    if name.is_empty() { "calibrated".into() } else { name }
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { format!("{x:.4}") }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The profile TOML. `name` is the profile's short name, `gpu` the GPU the run measured, `when` the date;
/// `dvfs` the constants of the clock-pair sweep (the `[dvfs_memory]` table is written when all six of its
/// constants are there, `l2_dram_bytes_per_core_cycle` on its own). An estimate replaces a fact of the same
/// field. The text is checked by parsing it with the models crate's loader before it is returned.
pub fn arch_toml(
    name: &str,
    facts: &DeviceFacts,
    estimates: &[Estimate],
    dvfs: &[Fitted],
    gpu: &str,
    when: &str,
) -> Result<String, gpumodel_models::Error> {
    arch_toml_with_idle(name, facts, estimates, dvfs, &[], (gpu, when))
}

/// [`arch_toml`] with the idle power measured after each clock pair, written as the profile's `idle_w`
/// table (one entry per distinct clock pair, the lowest reading where several share one).
pub fn arch_toml_with_idle(
    name: &str,
    facts: &DeviceFacts,
    estimates: &[Estimate],
    dvfs: &[Fitted],
    idle: &[super::IdlePower],
    (gpu, when): (&str, &str),
) -> Result<String, gpumodel_models::Error> {
    let header = [
        "Written by `gpumodel calibrate`: measured constants cite the run with their spread;",
        "the other values come from the driver or the reference they cite.",
    ];
    let text = profile_toml(&header, name, facts, (estimates, dvfs, gpu, when))?;
    if idle.is_empty() {
        return Ok(text);
    }
    let mut entries: BTreeMap<(u32, u32), f64> = BTreeMap::new();
    for i in idle.iter().filter(|i| i.watts.is_finite() && i.watts > 0.0) {
        let e = entries.entry((i.clocks.core_mhz, i.clocks.mem_mhz)).or_insert(i.watts);
        *e = e.min(i.watts);
    }
    if entries.is_empty() {
        return Ok(text);
    }
    // Rounded down to 0.1 W: a floor never above what was read.
    let list: Vec<String> =
        entries.iter().map(|((c, m), w)| format!("[{c}, {m}, {:.1}]", (w * 10.0).floor() / 10.0)).collect();
    let readings = idle.iter().map(|i| i.readings).max().unwrap_or(0);
    let line = format!("idle_w = {{ value = [{}], src = \"calibrate_idle_w\" }}\n", list.join(", "));
    let source = quote(&format!(
        "measured on this GPU ({gpu}) by `gpumodel calibrate` on {when}: NVML power of the idle board (median of \
         {readings} readings 50 ms apart, 1.2 s after the last launch, rounded down to 0.1 W), at the clocks NVML \
         reported meanwhile"
    ));
    // The entry goes with the top-level values, after the clock lists (before any table), its citation
    // into the sources table.
    let after_clocks =
        text.find("\nmem_clocks_mhz = ").and_then(|i| text[i + 1..].find('\n').map(|j| i + j + 2));
    let at = after_clocks.unwrap_or(0);
    let mut out = format!("{}{line}{}", &text[..at], &text[at..]);
    out = out.replacen("\n[sources]\n", &format!("\n[sources]\ncalibrate_idle_w = {source}\n"), 1);
    ArchProfile::from_toml_str(&out, "the calibrated profile")?;
    Ok(out)
}

/// The profile of a GPU from documents alone (`gpumodel arch new`): `facts` as
/// [`DeviceFacts::from_documents`] builds them, nothing measured.
pub fn documents_toml(name: &str, facts: &DeviceFacts) -> Result<String, gpumodel_models::Error> {
    let header = [
        "Written by `gpumodel arch new` from the board's numbers and NVIDIA's documents for its compute",
        "capability; latencies carried over from a built-in profile (see their sources). Nothing here was",
        "measured on this GPU: `gpumodel calibrate` on it measures the constants and writes a new profile.",
    ];
    profile_toml(&header, name, facts, (&[], &[], "", ""))
}

/// The profile TOML under `header`; `measured` = (estimates, DVFS fits, the GPU measured, the date).
fn profile_toml(
    header: &[&str],
    name: &str,
    facts: &DeviceFacts,
    measured: (&[Estimate], &[Fitted], &str, &str),
) -> Result<String, gpumodel_models::Error> {
    let (estimates, dvfs, gpu, when) = measured;
    let mut sources = facts.sources.clone();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} ({}, compute capability {}).",
        facts.display_name, facts.chip, facts.compute_capability
    );
    for line in header {
        let _ = writeln!(s, "# {line}");
    }
    let _ = writeln!(s, "name = {}", quote(name));
    let _ = writeln!(s, "display_name = {}", quote(&facts.display_name));
    let _ = writeln!(s, "chip = {}", quote(&facts.chip));
    let _ = writeln!(s, "compute_capability = {}", quote(&facts.compute_capability));
    let _ = writeln!(s);
    // A measured value replaces the looked-up one of the same field (LOOKED_UP_UNLESS_MEASURED).
    for (field, value, src) in facts.values.iter().filter(|(f, _, _)| !estimates.iter().any(|e| e.field == f))
    {
        let _ = writeln!(s, "{field} = {{ value = {}, src = {} }}", num(*value), quote(src));
    }
    for (field, (v, src)) in
        [("core_clocks_mhz", &facts.core_clocks_mhz), ("mem_clocks_mhz", &facts.mem_clocks_mhz)]
    {
        let list: Vec<String> = v.iter().map(|x| num(*x)).collect();
        let _ = writeln!(s, "{field} = {{ value = [{}], src = {} }}", list.join(", "), quote(src));
    }
    for e in estimates {
        let key = format!("calibrate_{}", e.field);
        let _ = writeln!(s, "{} = {{ value = {}, src = {} }}", e.field, num(e.median), quote(&key));
        sources.insert(
            key,
            format!(
                "measured on this GPU ({gpu}) by `gpumodel calibrate` on {when}, median of {} repetitions \
                 (quartiles {:.3}-{:.3}, range {:.3}-{:.3} {}): {}",
                e.n, e.q1, e.q3, e.min, e.max, e.unit, e.method
            ),
        );
    }
    let cite = |f: &Fitted| {
        format!("measured on this GPU ({gpu}) by `gpumodel calibrate` on {when}: {} ({})", f.method, f.unit)
    };
    for f in dvfs.iter().filter(|f| !f.field.contains('.')) {
        let key = format!("calibrate_{}", f.field);
        let _ = writeln!(s, "{} = {{ value = {}, src = {} }}", f.field, num(f.value), quote(&key));
        sources.insert(key, cite(f));
    }
    let table: Vec<&Fitted> = dvfs.iter().filter(|f| f.field.starts_with("dvfs_memory.")).collect();
    if table.len() == 6 {
        let _ = writeln!(
            s,
            "\n# DRAM latency L = latency_a*f_core/f_mem + latency_b and departure delay \
             D = (delay_a/f_mem + delay_b)*f_core/f_mem,\n# core cycles, clocks in MHz; L2 hit latency and delay. \
             Measured at several clock pairs."
        );
        let _ = writeln!(s, "[dvfs_memory]");
        for f in table {
            let field = f.field.trim_start_matches("dvfs_memory.");
            let key = format!("calibrate_{field}");
            let _ = writeln!(s, "{field} = {{ value = {}, src = {} }}", num(f.value), quote(&key));
            sources.insert(key, cite(f));
        }
    }
    let _ = writeln!(s, "\n[sources]");
    for (k, v) in &sources {
        let _ = writeln!(s, "{k} = {}", quote(v));
    }
    ArchProfile::from_toml_str(&s, &format!("{name}.toml"))?;
    Ok(s)
}
