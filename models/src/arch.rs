//! GPU architecture profiles: the constants of the pipeline timing model (paper §5.5, Table 5.3) and the
//! occupancy ceilings, one TOML file per GPU in `models/arch/`, embedded in the binary.
//!
//! Every number carries its source: each value is written `{ value = …, src = "key" }` and `key` must be
//! defined in the file's `[sources]` table (a paper table, a vendor whitepaper, the CUDA C Programming
//! Guide, a published microbenchmark study, or an explicit assumption). Values that are approximate say so
//! in their source; `gpumodel calibrate` is the way to measure them on a real GPU.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The architecture profiles shipped with gpumodel: (name, TOML text).
const BUILTIN: &[(&str, &str)] = &[
    ("c2075", include_str!("../arch/c2075.toml")),
    ("m2090", include_str!("../arch/m2090.toml")),
    ("gtx980", include_str!("../arch/gtx980.toml")),
    ("titanx", include_str!("../arch/titanx.toml")),
    ("gtx1080ti", include_str!("../arch/gtx1080ti.toml")),
    ("p100", include_str!("../arch/p100.toml")),
    ("v100", include_str!("../arch/v100.toml")),
    ("a100", include_str!("../arch/a100.toml")),
    ("h100", include_str!("../arch/h100.toml")),
];

/// A value with the key of its source in the profile's `[sources]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced<T> {
    pub value: T,
    pub src: String,
}

impl<T: Copy> Sourced<T> {
    /// The value.
    pub fn get(&self) -> T {
        self.value
    }
}

/// One GPU. Cycle counts are core-clock cycles measured (or specified) at the default clocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchProfile {
    /// Short name used on the command line (`gtx1080ti`).
    pub name: String,
    /// Marketing name.
    pub display_name: String,
    /// Chip (`GP102`).
    pub chip: String,
    /// CUDA compute capability (`6.1`).
    pub compute_capability: String,
    /// Source key → full citation.
    pub sources: BTreeMap<String, String>,

    // --- the machine
    /// Streaming multiprocessors.
    pub sm_count: Sourced<f64>,
    /// Threads per warp.
    pub warp_size: Sourced<f64>,
    /// Warp schedulers per SM (warp instructions issued per cycle per SM).
    pub schedulers_per_sm: Sourced<f64>,
    /// Default core clock, MHz (the clock the latencies and the utilizations refer to).
    pub core_mhz: Sourced<f64>,
    /// Default memory clock, MHz, as nvidia-smi reports it.
    pub mem_mhz: Sourced<f64>,
    /// Supported (settable) core clocks, MHz, for the clock sweep.
    pub core_clocks_mhz: Sourced<Vec<f64>>,
    /// Supported memory clocks, MHz.
    pub mem_clocks_mhz: Sourced<Vec<f64>>,
    /// Peak DRAM bandwidth at the default memory clock, GB/s (scales linearly with the memory clock).
    pub mem_bandwidth_gbs: Sourced<f64>,
    /// L2 bandwidth at the default core clock, GB/s (scales with the core clock).
    pub l2_bandwidth_gbs: Sourced<f64>,
    /// Bytes of one global memory transaction.
    pub transaction_bytes: Sourced<f64>,
    /// Board power limit, W.
    pub tdp_w: Sourced<f64>,

    // --- occupancy ceilings
    pub max_warps_per_sm: Sourced<f64>,
    pub max_blocks_per_sm: Sourced<f64>,
    pub max_threads_per_block: Sourced<f64>,
    pub registers_per_sm: Sourced<f64>,
    /// Registers are allocated per warp in units of this many.
    pub register_alloc_unit: Sourced<f64>,
    pub max_registers_per_thread: Sourced<f64>,
    /// Shared memory per SM available to blocks, bytes.
    pub shared_mem_per_sm: Sourced<f64>,
    pub max_shared_mem_per_block: Sourced<f64>,

    // --- latencies of paper Table 5.3 (core cycles at the default clocks)
    /// Global load latency (DRAM round trip).
    pub cyc_load: Sourced<f64>,
    /// Global store latency.
    pub cyc_store: Sourced<f64>,
    /// Shared memory access latency.
    pub cyc_s: Sourced<f64>,
    /// Register access.
    pub cyc_r: Sourced<f64>,
    /// Texture cache hit latency.
    pub cyc_t: Sourced<f64>,
    /// Dependent arithmetic instruction latency (how long a warp waits for its previous result).
    pub alu_latency: Sourced<f64>,
    /// Cycles between two memory transactions of one SM leaving for DRAM (departure delay) at the default
    /// clocks: `transaction_bytes / (bandwidth per SM per core cycle)`.
    pub in_warp_delay: Sourced<f64>,
    /// Extra cycles per additional active warp at a barrier.
    pub out_warp_delay: Sourced<f64>,

    // --- instruction costs: issue cycles of one warp instruction on its pipe, per SM (32 / results per
    // clock per SM)
    pub cost_fp32: Sourced<f64>,
    pub cost_fp64: Sourced<f64>,
    pub cost_int: Sourced<f64>,
    pub cost_sfu: Sourced<f64>,
    pub cost_ldst: Sourced<f64>,

    // --- memory under DVFS (optional: without them the DRAM latency and departure delay are fixed in
    // memory-clock time, `cyc_load` and `in_warp_delay` scaled by (f_core/f_core0)·(f_mem0/f_mem))
    /// DRAM latency and departure delay as functions of the core and memory clocks, and the L2 hit
    /// latency and delay (Wang & Chu's microbenchmark constants, see [`DvfsMemory`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dvfs_memory: Option<DvfsMemory>,
    /// Issue cycles of one type-conversion warp instruction (F2F, F2I, I2F, I2I) at the Programming
    /// Guide's rate for "type conversions from and to 64-bit types" (32 / results per clock per SM, the
    /// convention of `cost_fp64`). Charged on the conversions a profile counts (`inst_bit_convert`); the
    /// counter counts every conversion, and the Guide's other conversions run at that rate or faster, so
    /// this is an upper bound of their time. Optional: a profile without it (one written before it
    /// existed) leaves conversions in the issue term with the other instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_conversion64: Option<Sourced<f64>>,
    /// Bytes of DRAM traffic the L2 cache passes per *core* cycle (its slices run on the core clock): at a
    /// low core clock this, not the DRAM, caps a memory-bound kernel. Optional: no cap without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_dram_bytes_per_core_cycle: Option<Sourced<f64>>,
    /// Shared-memory bytes one SM serves per core cycle (banks × bank width: 32 × 4 B on compute
    /// capability 5.x–8.x, 32 × 4 B per two cycles on 2.x). One warp-wide shared access (a wavefront:
    /// a request or one bank-conflict replay) takes `warp_size × 4 / shared_bytes_per_cycle` cycles of
    /// the shared pipe, independently of the SM's LD/ST unit count. Optional: without it a wavefront
    /// costs `cost_ldst`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_bytes_per_cycle: Option<Sourced<f64>>,
    /// Issue cycles of one warp-wide FP16 arithmetic instruction (a packed `half2` instruction, which the
    /// Programming Guide's 16-bit rate counts as two results per thread), per SM. Optional: profiles
    /// written before it existed lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_fp16: Option<Sourced<f64>>,
    /// Measured power of the idle board held at clock pairs: `[core MHz, memory MHz, W]` each. Idle power
    /// rises with either clock, so the highest entry at or below both clocks of a run is a floor no kernel
    /// at those clocks can draw less than ([`ArchProfile::idle_floor`]). Optional: without it no floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_w: Option<Sourced<Vec<[f64; 3]>>>,
}

/// DRAM latency `L = latency_a · f_core/f_mem + latency_b` and departure delay
/// `D = (delay_a / f_mem + delay_b) · f_core/f_mem` in core cycles (clocks in MHz), the form Q. Wang and
/// X. Chu fitted on microbenchmarks across clock pairs (ICPADS 2018): a part fixed in memory-clock time
/// and a part fixed in core-clock time; the delay's `delay_a / f_mem` term grows as the memory clock
/// falls (more time per transaction than bandwidth alone). L2 hits cost `l2_latency` and `l2_delay` core
/// cycles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DvfsMemory {
    pub latency_a: Sourced<f64>,
    pub latency_b: Sourced<f64>,
    pub delay_a: Sourced<f64>,
    pub delay_b: Sourced<f64>,
    pub l2_latency: Sourced<f64>,
    pub l2_delay: Sourced<f64>,
}

impl DvfsMemory {
    fn scalars(&self) -> Vec<(&'static str, &Sourced<f64>)> {
        vec![
            ("dvfs_memory.latency_a", &self.latency_a),
            ("dvfs_memory.latency_b", &self.latency_b),
            ("dvfs_memory.delay_a", &self.delay_a),
            ("dvfs_memory.delay_b", &self.delay_b),
            ("dvfs_memory.l2_latency", &self.l2_latency),
            ("dvfs_memory.l2_delay", &self.l2_delay),
        ]
    }
}

impl ArchProfile {
    /// Names of the built-in profiles.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in profile by name; an unknown name lists the known ones.
    pub fn builtin(name: &str) -> Result<ArchProfile> {
        let key = name.to_ascii_lowercase().replace(['-', '_', ' '], "");
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == key).ok_or_else(|| {
            Error::Invalid(format!(
                "unknown architecture '{name}': known architectures are {} (or give the path of an arch TOML file)",
                Self::builtin_names().join(", ")
            ))
        })?;
        ArchProfile::from_toml_str(text, &format!("models/arch/{key}.toml"))
    }

    /// A built-in name, or the path of a TOML file.
    pub fn resolve(spec: &str) -> Result<ArchProfile> {
        let p = Path::new(spec);
        if spec.ends_with(".toml") || p.is_file() {
            return ArchProfile::from_file(p);
        }
        ArchProfile::builtin(spec)
    }

    /// Reads and checks a profile file.
    pub fn from_file(path: &Path) -> Result<ArchProfile> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        ArchProfile::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and checks a profile; `source` names it in errors.
    pub fn from_toml_str(text: &str, source: &str) -> Result<ArchProfile> {
        let a: ArchProfile = toml::from_str(text).map_err(|e| Error::Document {
            file: source.to_string(),
            message: format!("not an architecture profile: {}", e.message()),
        })?;
        a.check().map_err(|e| Error::Document { file: source.to_string(), message: e.to_string() })?;
        Ok(a)
    }

    /// Every scalar value with its name, for checks and display.
    pub fn scalars(&self) -> Vec<(&'static str, &Sourced<f64>)> {
        vec![
            ("sm_count", &self.sm_count),
            ("warp_size", &self.warp_size),
            ("schedulers_per_sm", &self.schedulers_per_sm),
            ("core_mhz", &self.core_mhz),
            ("mem_mhz", &self.mem_mhz),
            ("mem_bandwidth_gbs", &self.mem_bandwidth_gbs),
            ("l2_bandwidth_gbs", &self.l2_bandwidth_gbs),
            ("transaction_bytes", &self.transaction_bytes),
            ("tdp_w", &self.tdp_w),
            ("max_warps_per_sm", &self.max_warps_per_sm),
            ("max_blocks_per_sm", &self.max_blocks_per_sm),
            ("max_threads_per_block", &self.max_threads_per_block),
            ("registers_per_sm", &self.registers_per_sm),
            ("register_alloc_unit", &self.register_alloc_unit),
            ("max_registers_per_thread", &self.max_registers_per_thread),
            ("shared_mem_per_sm", &self.shared_mem_per_sm),
            ("max_shared_mem_per_block", &self.max_shared_mem_per_block),
            ("cyc_load", &self.cyc_load),
            ("cyc_store", &self.cyc_store),
            ("cyc_s", &self.cyc_s),
            ("cyc_r", &self.cyc_r),
            ("cyc_t", &self.cyc_t),
            ("alu_latency", &self.alu_latency),
            ("in_warp_delay", &self.in_warp_delay),
            ("out_warp_delay", &self.out_warp_delay),
            ("cost_fp32", &self.cost_fp32),
            ("cost_fp64", &self.cost_fp64),
            ("cost_int", &self.cost_int),
            ("cost_sfu", &self.cost_sfu),
            ("cost_ldst", &self.cost_ldst),
        ]
        .into_iter()
        .chain(self.dvfs_memory.iter().flat_map(DvfsMemory::scalars))
        .chain(self.l2_dram_bytes_per_core_cycle.iter().map(|v| ("l2_dram_bytes_per_core_cycle", v)))
        .chain(self.cost_conversion64.iter().map(|v| ("cost_conversion64", v)))
        .chain(self.shared_bytes_per_cycle.iter().map(|v| ("shared_bytes_per_cycle", v)))
        .chain(self.cost_fp16.iter().map(|v| ("cost_fp16", v)))
        .collect()
    }

    /// Whether `gpu` (a profile's `arch`: a profile name, or the GPU name an export gives) is this GPU:
    /// its short name, its display name in any case, or a name with the same model number (the driver's
    /// "NVIDIA A100-SXM4-40GB" is the profile "NVIDIA A100 (SXM4 40 GB)"; see [`gpu_model_number`]).
    pub fn names_gpu(&self, gpu: &str) -> bool {
        gpu == self.name
            || gpu.trim().eq_ignore_ascii_case(&self.display_name)
            || gpu_model_number(gpu).is_some_and(|k| gpu_model_number(&self.display_name) == Some(k))
    }

    /// The built-in profile of the GPU a kernel profile names (its `arch`): by name or model number, or,
    /// for a GPU known only by its compute capability (`sm_80`), the one built-in profile of that
    /// capability. `None` when no built-in profile is that GPU, or several share the capability.
    pub fn builtin_for_gpu(gpu: &str) -> Option<ArchProfile> {
        let all: Vec<ArchProfile> =
            Self::builtin_names().into_iter().filter_map(|n| ArchProfile::builtin(n).ok()).collect();
        if let Some(a) = all.iter().find(|a| a.names_gpu(gpu)) {
            return Some(a.clone());
        }
        let cc = gpu
            .trim()
            .strip_prefix("sm_")
            .filter(|d| d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit()))?;
        let want = format!("{}.{}", &cc[..cc.len() - 1], &cc[cc.len() - 1..]);
        let mut same = all.into_iter().filter(|a| a.compute_capability == want);
        match (same.next(), same.next()) {
            (Some(a), None) => Some(a),
            _ => None,
        }
    }

    /// Core cycles of the shared pipe per wavefront (one warp-wide 32-bit access, a request or a
    /// bank-conflict replay): `warp_size × 4 / shared_bytes_per_cycle` where the profile has the shared
    /// bandwidth, else `cost_ldst`.
    pub fn shared_cycles_per_wavefront(&self) -> f64 {
        match &self.shared_bytes_per_cycle {
            Some(b) => self.warp_size.value * 4.0 / b.value,
            None => self.cost_ldst.value,
        }
    }

    /// DRAM latency in core cycles at `core_mhz`/`mem_mhz`: [`DvfsMemory`]'s form when the profile has
    /// it, else `cyc_load` fixed in memory-clock time.
    pub fn dram_latency_cycles(&self, core_mhz: f64, mem_mhz: f64) -> f64 {
        match &self.dvfs_memory {
            Some(d) => d.latency_a.value * core_mhz / mem_mhz + d.latency_b.value,
            None => self.cyc_load.value * self.mem_scale(core_mhz, mem_mhz),
        }
    }

    /// DRAM departure delay (cycles between two transactions of one SM leaving for DRAM) in core cycles:
    /// [`DvfsMemory`]'s form when the profile has it, else `in_warp_delay` fixed in memory-clock time.
    pub fn dram_delay_cycles(&self, core_mhz: f64, mem_mhz: f64) -> f64 {
        match &self.dvfs_memory {
            Some(d) => (d.delay_a.value / mem_mhz + d.delay_b.value) * core_mhz / mem_mhz,
            None => self.in_warp_delay.value * self.mem_scale(core_mhz, mem_mhz),
        }
    }

    /// Core cycles per memory-clock cycle relative to the default clocks: a time fixed in memory-clock
    /// cycles at the defaults, in core cycles at `core_mhz`/`mem_mhz`.
    pub fn mem_scale(&self, core_mhz: f64, mem_mhz: f64) -> f64 {
        (core_mhz / self.core_mhz.value) * (self.mem_mhz.value / mem_mhz)
    }

    /// Every value is finite and > 0, every source key is defined, clock lists are not empty.
    pub fn check(&self) -> Result<()> {
        let src_ok = |field: &str, src: &str| -> Result<()> {
            if self.sources.get(src).is_none_or(|s| s.trim().is_empty()) {
                return Err(Error::Invalid(format!(
                    "{field}: source '{src}' is not defined in [sources]: every value needs its source"
                )));
            }
            Ok(())
        };
        for (field, v) in self.scalars() {
            src_ok(field, &v.src)?;
            if !v.value.is_finite() || v.value <= 0.0 {
                return Err(Error::Invalid(format!(
                    "{field} is {}: it must be a finite number > 0",
                    v.value
                )));
            }
        }
        if let Some(idle) = &self.idle_w {
            src_ok("idle_w", &idle.src)?;
            if idle.value.is_empty() || idle.value.iter().flatten().any(|x| !x.is_finite() || *x <= 0.0) {
                return Err(Error::Invalid(
                    "idle_w must list at least one [core MHz, memory MHz, W] entry, each number > 0".into(),
                ));
            }
        }
        for (field, v) in
            [("core_clocks_mhz", &self.core_clocks_mhz), ("mem_clocks_mhz", &self.mem_clocks_mhz)]
        {
            src_ok(field, &v.src)?;
            if v.value.is_empty() || v.value.iter().any(|x| !x.is_finite() || *x <= 0.0) {
                return Err(Error::Invalid(format!("{field} must list at least one clock > 0 MHz")));
            }
        }
        Ok(())
    }

    /// The idle power no kernel running at `core_mhz`/`mem_mhz` can draw less than, as `[core MHz, memory
    /// MHz, W]` of the measured entry it comes from: the highest measured idle power at clocks no higher
    /// than these (idle power rises with both clocks). `None` without an idle table or below its clocks.
    pub fn idle_floor(&self, core_mhz: f64, mem_mhz: f64) -> Option<[f64; 3]> {
        // Half a MHz of slack: tables and runs round clocks differently.
        self.idle_w
            .as_ref()?
            .value
            .iter()
            .filter(|e| e[0] <= core_mhz + 0.5 && e[1] <= mem_mhz + 0.5)
            .max_by(|a, b| a[2].total_cmp(&b[2]))
            .copied()
    }

    /// The citation of a value's source.
    pub fn source_of(&self, v: &Sourced<f64>) -> &str {
        self.sources.get(&v.src).map_or("", String::as_str)
    }

    /// Peak DRAM bandwidth at a memory clock, bytes/s (linear in the memory clock).
    pub fn bandwidth_bytes_per_s(&self, mem_mhz: f64) -> f64 {
        self.mem_bandwidth_gbs.value * 1e9 * mem_mhz / self.mem_mhz.value
    }

    /// Warps per block for a block of `threads` threads.
    pub fn warps_per_block(&self, threads: u32) -> u32 {
        let w = self.warp_size.value as u32;
        threads.div_ceil(w.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_parses_and_cites_every_value() {
        for name in ArchProfile::builtin_names() {
            let a = ArchProfile::builtin(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(a.name, name);
            for (field, v) in a.scalars() {
                assert!(!a.source_of(v).is_empty(), "{name}.{field}");
            }
            assert!(a.core_clocks_mhz.value.contains(&a.core_mhz.value) || a.core_clocks_mhz.value.len() > 1);
            // Optional for profiles users wrote before it existed, but every built-in one has it.
            let cvt = a.cost_conversion64.as_ref().unwrap_or_else(|| panic!("{name}: no cost_conversion64"));
            assert!(a.scalars().iter().any(|(f, v)| *f == "cost_conversion64" && *v == cvt), "{name}");
        }
    }

    /// The Guide's 64-bit conversion rate per compute capability: 4 per clock per SM on 5.x and 6.1 (8
    /// cycles per warp instruction, as FP64 arithmetic there), 16 on 2.0, 6.0 and 7.x (2 cycles).
    #[test]
    fn conversion_cost_follows_the_compute_capability() {
        for name in ArchProfile::builtin_names() {
            let a = ArchProfile::builtin(name).unwrap();
            let want = if ["5.2", "6.1"].contains(&a.compute_capability.as_str()) {
                32.0 / 4.0
            } else {
                32.0 / 16.0
            };
            assert_eq!(a.cost_conversion64.unwrap().value, want, "{name} ({})", a.compute_capability);
        }
    }

    /// The shared bandwidth per compute capability (the Guide: 32 banks of 32 bits per clock from 5.x on,
    /// per two clocks on 2.x), so one wavefront costs 1 cycle, or 2 on Fermi, whatever the LD/ST units; a
    /// profile without the field falls back to `cost_ldst`, which must then give the same cost.
    #[test]
    fn shared_bandwidth_follows_the_compute_capability() {
        let mut with_field = 0;
        for name in ArchProfile::builtin_names() {
            let a = ArchProfile::builtin(name).unwrap();
            let fermi = a.compute_capability.starts_with("2.");
            if let Some(b) = &a.shared_bytes_per_cycle {
                assert_eq!(b.value, if fermi { 64.0 } else { 128.0 }, "{name}");
                with_field += 1;
            }
            assert_eq!(a.shared_cycles_per_wavefront(), if fermi { 2.0 } else { 1.0 }, "{name}");
        }
        // The GP100 (cost_ldst 2 from its 16 LD/ST units) is the one that needs it, and has it.
        assert!(ArchProfile::builtin("p100").unwrap().shared_bytes_per_cycle.is_some());
        assert!(with_field >= 7, "{with_field}");
    }

    /// in_warp_delay is written in the files as a number; it must agree with its definition
    /// (transaction bytes over the per-SM bandwidth per core cycle) to the rounding used in the files.
    #[test]
    fn in_warp_delay_matches_its_definition() {
        for name in ArchProfile::builtin_names() {
            let a = ArchProfile::builtin(name).unwrap();
            let per_sm_per_cycle =
                a.bandwidth_bytes_per_s(a.mem_mhz.value) / a.sm_count.value / (a.core_mhz.value * 1e6);
            let derived = a.transaction_bytes.value / per_sm_per_cycle;
            let rel = (a.in_warp_delay.value - derived).abs() / derived;
            assert!(rel < 0.1, "{name}: in_warp_delay {} but derived {derived:.2}", a.in_warp_delay.value);
        }
    }

    #[test]
    fn paper_c2075_constants() {
        // Paper Table 5.3: 392, 210, 4, 1, 18 cycles; 14 SMs at 1.15 GHz; 48 warps.
        let a = ArchProfile::builtin("c2075").unwrap();
        let got: Vec<f64> =
            [&a.cyc_load, &a.cyc_store, &a.cyc_s, &a.cyc_r, &a.cyc_t].iter().map(|v| v.value).collect();
        assert_eq!(got, vec![392.0, 210.0, 4.0, 1.0, 18.0]);
        assert_eq!((a.sm_count.value, a.core_mhz.value, a.max_warps_per_sm.value), (14.0, 1150.0, 48.0));
        assert_eq!((a.cost_fp32.value, a.cost_sfu.value, a.cost_fp64.value), (1.0, 8.0, 2.0));
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let msg = ArchProfile::builtin("gtx9999").unwrap_err().to_string();
        assert!(msg.contains("gtx1080ti") && msg.contains("c2075"), "{msg}");
    }

    #[test]
    fn an_undefined_source_key_is_an_error() {
        let text = BUILTIN[0].1.replacen("src = \"paper\"", "src = \"nowhere\"", 1);
        let msg = ArchProfile::from_toml_str(&text, "x.toml").unwrap_err().to_string();
        assert!(msg.contains("source 'nowhere'"), "{msg}");
    }
}

/// A GPU name's model number, upper-case: the first word of three or more letters and digits that holds a
/// digit, with a following `Ti` or `Super` ("Tesla V100-SXM2-16GB" → `V100`, "NVIDIA GeForce GTX 1080 Ti"
/// → `1080TI`, "NVIDIA GeForce RTX 4090" → `4090`); `None` for a name without one ("GTX TITAN X").
pub fn gpu_model_number(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    let words: Vec<&str> =
        upper.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let i = words.iter().position(|w| w.len() >= 3 && w.chars().any(|c| c.is_ascii_digit()))?;
    let mut key = words[i].to_string();
    if let Some(next) = words.get(i + 1).filter(|n| matches!(**n, "TI" | "SUPER")) {
        key.push_str(next);
    }
    Some(key)
}

#[cfg(test)]
mod gpu_name_tests {
    use super::*;

    #[test]
    fn model_numbers_tell_boards_apart_and_join_spellings_of_one() {
        assert_eq!(gpu_model_number("Tesla V100-SXM2-16GB").as_deref(), Some("V100"));
        assert_eq!(gpu_model_number("NVIDIA A100-SXM4-40GB (fake)").as_deref(), Some("A100"));
        assert_eq!(gpu_model_number("NVIDIA GeForce GTX 1080 Ti").as_deref(), Some("1080TI"));
        assert_eq!(gpu_model_number("NVIDIA GeForce GTX 1080").as_deref(), Some("1080"));
        assert_eq!(gpu_model_number("GeForce GTX TITAN X"), None);
        let a100 = ArchProfile::builtin("a100").unwrap();
        assert!(a100.names_gpu("NVIDIA A100-SXM4-40GB"));
        assert!(!a100.names_gpu("NVIDIA H100 80GB HBM3"));
        let name = |g: &str| ArchProfile::builtin_for_gpu(g).map(|a| a.name);
        assert_eq!(name("NVIDIA A100-SXM4-40GB").as_deref(), Some("a100"));
        assert_eq!(name("GeForce GTX 1080 Ti").as_deref(), Some("gtx1080ti"));
        assert_eq!(name("sm_80").as_deref(), Some("a100"));
        assert_eq!(name("sm_90").as_deref(), Some("h100"));
        // Two built-in profiles are compute capability 5.2 (GTX 980, Titan X): no single answer.
        assert_eq!(name("sm_52"), None);
        assert_eq!(name("NVIDIA B200"), None);
        assert_eq!(name("sm_"), None);
        let ti = ArchProfile::builtin("gtx1080ti").unwrap();
        assert!(ti.names_gpu("GeForce GTX 1080 Ti") && !ti.names_gpu("GeForce GTX 1080"));
    }
}
