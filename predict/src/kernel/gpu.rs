//! Which GPU a kernel prediction is for: `--arch` when given, else the GPU the kernel profile names
//! (an export's device name or compute capability), else the built-in default, and the answer says which.

use crate::error::Result;
use crate::examples::DEFAULT_ARCH;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::Clocks;

/// The architecture to predict on and the line that says how it was chosen (`None` for `--arch` and the
/// built-in examples).
#[derive(Debug, Clone)]
pub struct ArchChoice {
    pub arch: ArchProfile,
    pub note: Option<String>,
}

/// `--arch` (a built-in name or a TOML file) when given; else the built-in profile of the GPU `kernel`
/// names; else the built-in default, with a note that names what the profile said and the flag to give.
/// The built-in example kernels are demonstrations on the default GPU (the paper's Titan X): without
/// `--arch` they are predicted there, without a note.
pub fn choose_arch(flag: Option<&str>, kernel: &KernelProfile, builtin_example: bool) -> Result<ArchChoice> {
    if let Some(spec) = flag {
        return Ok(ArchChoice { arch: ArchProfile::resolve(spec)?, note: None });
    }
    if builtin_example {
        return Ok(ArchChoice { arch: ArchProfile::builtin(DEFAULT_ARCH)?, note: None });
    }
    let named = kernel.arch.as_deref().map(str::trim).filter(|g| !g.is_empty());
    if let Some(gpu) = named
        && let Some(arch) = ArchProfile::builtin_for_gpu(gpu)
    {
        let note =
            format!("the GPU the profile names ({gpu}) is the built-in {}; --arch overrides", arch.name);
        return Ok(ArchChoice { arch, note: Some(note) });
    }
    if let Some(gpu) = named
        && let Some((cc, family)) = compute_capability_of(gpu)
        && let Some(arch) = nearest_builtin(cc)
    {
        let note = format!(
            "the profile names {gpu} ({family}, compute capability {cc:.1}), which has no built-in profile: \
             predicted on {}, the nearest built-in by compute capability ({}), whose SMs, clocks and memory \
             are not this GPU's; for its own give --arch FILE (`gpumodel arch new` from its documents, or \
             `gpumodel calibrate` on it)",
            arch.name, arch.compute_capability
        );
        return Ok(ArchChoice { arch, note: Some(note) });
    }
    let arch = ArchProfile::builtin(DEFAULT_ARCH)?;
    let note = match named {
        Some(gpu) => format!(
            "the profile names {gpu}, which has no single built-in profile: predicted on the default {DEFAULT_ARCH}; \
             give --arch (a built-in name from `gpumodel arch list`, or a file from `gpumodel arch new`)"
        ),
        None => format!(
            "the profile names no GPU: predicted on the default {DEFAULT_ARCH}; give --arch for another (`gpumodel \
             arch list`)"
        ),
    };
    Ok(ArchChoice { arch, note: Some(note) })
}

/// The compute capability and architecture family of a GPU named by an export (its device name, or
/// `sm_XY`), from NVIDIA's list of CUDA GPUs and their compute capabilities (developer.nvidia.com/cuda-gpus):
/// for GPUs without a built-in profile, to predict on the nearest one.
fn compute_capability_of(gpu: &str) -> Option<(f64, &'static str)> {
    if let Some(d) =
        gpu.trim().strip_prefix("sm_").filter(|d| d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit()))
    {
        let cc: f64 = format!("{}.{}", &d[..d.len() - 1], &d[d.len() - 1..]).parse().ok()?;
        return Some((cc, "named by its compute capability"));
    }
    let g = gpu.to_ascii_uppercase();
    let has = |keys: &[&str]| keys.iter().any(|k| g.contains(k));
    // Most specific first: "ADA" names before the GeForce series, "A100" before "A10".
    let table: [(&[&str], f64, &str); 10] = [
        (&[" ADA"], 8.9, "Ada Lovelace"),
        (&["RTX 5050", "RTX 5060", "RTX 5070", "RTX 5080", "RTX 5090", "RTX PRO"], 12.0, "Blackwell"),
        (&["B200", "B100", "B300"], 10.0, "Blackwell"),
        (&["H100", "H200", "H800", "H20"], 9.0, "Hopper"),
        (
            &["RTX 4050", "RTX 4060", "RTX 4070", "RTX 4080", "RTX 4090", "L40", "L4", "L20"],
            8.9,
            "Ada Lovelace",
        ),
        (&["A100", "A800", "A30"], 8.0, "Ampere"),
        (
            &["RTX 3050", "RTX 3060", "RTX 3070", "RTX 3080", "RTX 3090", "A40", "A10", "A16", "A2", "RTX A"],
            8.6,
            "Ampere",
        ),
        (&["T4", "RTX 2060", "RTX 2070", "RTX 2080", "QUADRO RTX", "TITAN RTX", "GTX 16"], 7.5, "Turing"),
        (&["V100", "TITAN V"], 7.0, "Volta"),
        (&["P100"], 6.0, "Pascal"),
    ];
    table.iter().find(|(keys, _, _)| has(keys)).map(|(_, cc, family)| (*cc, *family))
}

/// The built-in profile of the highest compute capability not above `cc` (the oldest built-in when all
/// are above it); among equals, the one with the most SMs.
fn nearest_builtin(cc: f64) -> Option<ArchProfile> {
    let all: Vec<(f64, ArchProfile)> = ArchProfile::builtin_names()
        .into_iter()
        .filter_map(|n| ArchProfile::builtin(n).ok())
        .filter_map(|a| a.compute_capability.parse::<f64>().ok().map(|c| (c, a)))
        .collect();
    let key = |x: &(f64, ArchProfile)| (x.0, x.1.sm_count.value);
    let below =
        all.iter().filter(|(c, _)| *c <= cc + 1e-9).max_by(|a, b| key(a).partial_cmp(&key(b)).unwrap());
    let lowest = || all.iter().min_by(|a, b| a.0.total_cmp(&b.0));
    below.or_else(lowest).map(|(_, a)| a.clone())
}

/// The timing model's time MAPE (%) on the NV-DVFS kernels, as is, with each GPU's profile written from
/// documents by `gpumodel arch new` (latencies carried over from another GPU's built-in profile) and with
/// its built-in profile: (dataset, from documents, built-in). Measured by `benches/arch_new_nvdvfs.sh`;
/// `tests/arch.rs` checks the first column against `validate` on each file.
pub const FROM_DOCUMENTS_ERROR: &[(&str, f64, f64)] = &[
    ("nvdvfs-p100", 23.1, 20.5),
    ("nvdvfs-gtx1080ti", 22.7, 13.6),
    ("nvdvfs-gtx980", 27.2, 15.2),
    ("nvdvfs-v100", 21.9, 16.9),
];

/// The built-in profile `arch`'s DRAM latency was carried over from (`gpumodel arch new`), when it was.
pub fn carried_from(arch: &ArchProfile) -> Option<String> {
    let src = arch.cyc_load.src.strip_prefix("carried_")?;
    Some(src.strip_suffix("_scaled").unwrap_or(src).to_string())
}

/// The answer's line for a profile whose latencies were carried over from `like`: what such profiles
/// scored ([`FROM_DOCUMENTS_ERROR`]) and the fix.
pub fn carried_note(like: &str) -> String {
    let range = |col: fn(&(&str, f64, f64)) -> f64| {
        let v: Vec<f64> = FROM_DOCUMENTS_ERROR.iter().map(col).collect();
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{lo:.1}–{hi:.1}%")
    };
    format!(
        "latencies carried over from {like}, not measured on this GPU: profiles so written scored {} time MAPE \
         on the NV-DVFS GPUs, their built-in profiles {}; `gpumodel calibrate` on this GPU measures them",
        range(|r| r.1),
        range(|r| r.2)
    )
}

/// What no run on `arch` at `clocks` can show, one line each: a power above the board limit (`tdp_w`),
/// below the board's measured idle power at those clocks (`idle_w`, where the profile has it) or not
/// above zero, a time that is not a positive number. Printed as errors, never as notes: such a figure
/// comes from a model used far outside its data (or of another GPU), not from the kernel.
pub fn beyond_the_hardware(arch: &ArchProfile, clocks: Clocks, time_s: f64, power_w: f64) -> Vec<String> {
    let mut out = Vec::new();
    let limit = arch.tdp_w.value;
    if !power_w.is_finite() || power_w <= 0.0 {
        out.push(format!(
            "power {power_w:.1} W is not a power a running GPU draws: the power model is outside its data"
        ));
    } else if power_w > limit {
        out.push(format!(
            "power {power_w:.1} W is above the {} board limit of {limit:.0} W: the power model is outside its data \
             (or describes another GPU); train one on this GPU (`gpumodel collect --suite`, `gpumodel train`)",
            arch.name
        ));
    } else if let Some([core, mem, idle]) = arch.idle_floor(clocks.core_mhz, clocks.mem_mhz)
        && power_w < idle
    {
        out.push(format!(
            "power {power_w:.1} W is below the {} idle power of {idle:.1} W (measured idle at {core:.0} / {mem:.0} \
             MHz, at or below this run's clocks): the power model is outside its data (or describes another GPU)",
            arch.name
        ));
    }
    if !time_s.is_finite() || time_s <= 0.0 {
        out.push(format!("time {time_s} s is not a positive time"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(arch: Option<&str>) -> KernelProfile {
        let mut k: KernelProfile = toml::from_str(crate::examples::REDUCTION).unwrap();
        k.arch = arch.map(str::to_string);
        k
    }

    #[test]
    fn the_flag_wins_then_the_profile_then_the_default() {
        let c = choose_arch(Some("v100"), &kernel(Some("NVIDIA A100-SXM4-40GB")), false).unwrap();
        assert_eq!((c.arch.name.as_str(), c.note), ("v100", None));
        let c = choose_arch(None, &kernel(Some("NVIDIA A100-SXM4-40GB")), false).unwrap();
        assert_eq!(c.arch.name, "a100");
        assert!(c.note.unwrap().contains("(NVIDIA A100-SXM4-40GB) is the built-in a100"));
        let c = choose_arch(None, &kernel(Some("sm_70")), false).unwrap();
        assert_eq!(c.arch.name, "v100");
        // A GPU without a built-in profile: the nearest built-in by its compute capability, said so.
        let c = choose_arch(None, &kernel(Some("NVIDIA B200")), false).unwrap();
        assert_eq!(c.arch.name, "h100");
        let note = c.note.unwrap();
        assert!(note.contains("NVIDIA B200 (Blackwell, compute capability 10.0)"), "{note}");
        assert!(
            note.contains("nearest built-in by compute capability (9.0)") && note.contains("--arch FILE")
        );
        for (gpu, arch) in [
            ("NVIDIA GeForce RTX 4090", "a100"),
            ("NVIDIA A10", "a100"),
            ("NVIDIA A100-PCIE-40GB", "a100"),
            ("Tesla T4", "v100"),
            ("NVIDIA H200", "h100"),
            ("sm_86", "a100"),
            ("NVIDIA RTX 6000 Ada Generation", "a100"),
            ("Quadro RTX 5000", "v100"),
            ("sm_35", "m2090"),
        ] {
            assert_eq!(choose_arch(None, &kernel(Some(gpu)), false).unwrap().arch.name, arch, "{gpu}");
        }
        let c = choose_arch(None, &kernel(Some("Some Future GPU")), false).unwrap();
        assert_eq!(c.arch.name, DEFAULT_ARCH);
        assert!(c.note.unwrap().contains("names Some Future GPU, which has no single built-in profile"));
        let c = choose_arch(None, &kernel(None), false).unwrap();
        assert_eq!(c.arch.name, DEFAULT_ARCH);
        assert!(c.note.unwrap().contains("names no GPU"));
        // A built-in example (measured on a GTX 980) is a demonstration on the default GPU.
        let c = choose_arch(None, &kernel(Some("gtx980")), true).unwrap();
        assert_eq!((c.arch.name.as_str(), c.note), (DEFAULT_ARCH, None));
    }

    #[test]
    fn power_above_the_board_limit_and_impossible_times_are_named() {
        let a = ArchProfile::builtin("gtx1080ti").unwrap();
        let at = Clocks::default_for(&a);
        assert!(beyond_the_hardware(&a, at, 1e-3, 249.0).is_empty());
        // No idle table for this board: no floor above zero.
        assert!(a.idle_w.is_none() && beyond_the_hardware(&a, at, 1e-3, 1.0).is_empty());
        let e = beyond_the_hardware(&a, at, 1e-3, 303.0);
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("303.0 W is above the gtx1080ti board limit of 250 W"), "{e:?}");
        assert_eq!(beyond_the_hardware(&a, at, 0.0, -1.0).len(), 2);
        assert_eq!(beyond_the_hardware(&a, at, f64::NAN, 100.0).len(), 1);
    }

    #[test]
    fn power_below_the_measured_idle_at_the_run_s_clocks_is_named() {
        let a = ArchProfile::builtin("titanx").unwrap();
        // Default clocks 975 / 3505 MHz: the Titan X idles at 75.5 W there.
        let at = Clocks::default_for(&a);
        let e = beyond_the_hardware(&a, at, 1e-3, 60.0);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("60.0 W is below the titanx idle power of 75.5 W"), "{e:?}");
        assert!(e[0].contains("975 / 3505 MHz"), "{e:?}");
        assert!(beyond_the_hardware(&a, at, 1e-3, 76.0).is_empty());
        // At a memory clock between the table's, the next lower one bounds it: 1000 / 3400 MHz → 975 / 3300.
        let e = beyond_the_hardware(&a, Clocks { core_mhz: 1000.0, mem_mhz: 3400.0 }, 1e-3, 60.0);
        assert!(e[0].contains("73.9 W") && e[0].contains("975 / 3300 MHz"), "{e:?}");
        // Below every measured pair: no floor.
        assert!(beyond_the_hardware(&a, Clocks { core_mhz: 500.0, mem_mhz: 810.0 }, 1e-3, 10.0).is_empty());
    }
}
