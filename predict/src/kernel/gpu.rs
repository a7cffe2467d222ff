//! Which GPU a kernel prediction is for: `--arch` when given, else the GPU the kernel profile names
//! (an export's device name or compute capability), else the built-in default, and the answer says which.

use crate::error::Result;
use crate::examples::DEFAULT_ARCH;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::profile::KernelProfile;

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

/// What no run on `arch` can show, one line each: a power above the board limit (`tdp_w`) or not above
/// zero, a time that is not a positive number. Printed as errors, never as notes: such a figure comes
/// from a model used far outside its data (or of another GPU), not from the kernel.
pub fn beyond_the_hardware(arch: &ArchProfile, time_s: f64, power_w: f64) -> Vec<String> {
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
        let c = choose_arch(None, &kernel(Some("NVIDIA B200")), false).unwrap();
        assert_eq!(c.arch.name, DEFAULT_ARCH);
        assert!(c.note.unwrap().contains("names NVIDIA B200, which has no single built-in profile"));
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
        assert!(beyond_the_hardware(&a, 1e-3, 249.0).is_empty());
        let e = beyond_the_hardware(&a, 1e-3, 303.0);
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("303.0 W is above the gtx1080ti board limit of 250 W"), "{e:?}");
        assert_eq!(beyond_the_hardware(&a, 0.0, -1.0).len(), 2);
        assert_eq!(beyond_the_hardware(&a, f64::NAN, 100.0).len(), 1);
    }
}
