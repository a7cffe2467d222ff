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
    let mut sources = facts.sources.clone();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} ({}, compute capability {}).",
        facts.display_name, facts.chip, facts.compute_capability
    );
    let _ =
        writeln!(s, "# Written by `gpumodel calibrate`: measured constants cite the run with their spread;");
    let _ = writeln!(s, "# the other values come from the driver or the reference they cite.");
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
