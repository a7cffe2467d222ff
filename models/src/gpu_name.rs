//! `--gpu NAME`: the GPU a file was measured on, when the file does not say. A name is taken when gpumodel
//! knows the GPU — a built-in architecture profile by its name (`a100`), its display name or its model
//! number (`H100`, `Tesla V100-SXM2-16GB`), or a GPU a clock model names — and an unknown name only with
//! its compute capability (`--gpu-cc 8.9`), so that a typo ("RTX 9090") never passes as a new GPU. A
//! rejected name comes back with the known names closest to it.

use crate::arch::{ArchProfile, gpu_model_number};
use crate::error::{Error, Result};

/// Compute capabilities gpumodel can be told about: 1.0 (Tesla) to 12.x (Blackwell GeForce).
const CC_MAJOR: std::ops::RangeInclusive<u32> = 1..=12;

/// The GPU name to record for `given`: the name as given when a built-in profile or one of `also` (the
/// GPUs of the clock models at hand) names it; with a compute capability `cc` (`8.9`), any name, recorded
/// as `NAME (sm_89)`. Otherwise an error naming the closest known GPUs.
pub fn check(given: &str, cc: Option<&str>, also: &[String]) -> Result<String> {
    let name = given.trim();
    if name.is_empty() {
        return Err(Error::Invalid(
            "--gpu is empty: give the GPU's name, e.g. --gpu \"Tesla V100-SXM2-16GB\"".into(),
        ));
    }
    let builtins: Vec<ArchProfile> =
        ArchProfile::builtin_names().into_iter().filter_map(|n| ArchProfile::builtin(n).ok()).collect();
    let known = builtins.iter().any(|a| a.names_gpu(name) || a.name.eq_ignore_ascii_case(name))
        || also.iter().any(|g| {
            g.trim().eq_ignore_ascii_case(name)
                || matches!((gpu_model_number(g), gpu_model_number(name)), (Some(x), Some(y)) if x == y)
        });
    match cc {
        Some(cc) => {
            let sm = sm_of(cc)?;
            Ok(if known || name.contains(&sm) { name.to_string() } else { format!("{name} ({sm})") })
        }
        None if known => Ok(name.to_string()),
        None => {
            let mut candidates: Vec<String> = builtins.iter().map(|a| a.display_name.clone()).collect();
            candidates.extend(also.iter().map(|g| g.trim().to_string()));
            // One name per GPU model ("NVIDIA Tesla V100 (SXM2)" and a clock model's "Tesla V100-SXM2-16GB").
            let mut seen = std::collections::BTreeSet::new();
            candidates.retain(|c| seen.insert(gpu_model_number(c).unwrap_or_else(|| c.to_ascii_lowercase())));
            let close = closest(name, &candidates);
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!(
                    "did you mean {}? ",
                    close.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(" or ")
                )
            };
            Err(Error::Invalid(format!(
                "--gpu \"{name}\" is no GPU gpumodel knows: {hint}Known GPUs are listed by `gpumodel arch \
                 list`; for another GPU give its compute capability too (--gpu-cc 8.9)"
            )))
        }
    }
}

/// `sm_XY` from a compute capability written `X.Y` (or `sm_XY`, `XY`).
fn sm_of(cc: &str) -> Result<String> {
    let t = cc.trim();
    let digits = t.strip_prefix("sm_").unwrap_or(t);
    let (major, minor) = match digits.split_once('.') {
        Some((a, b)) => (a.parse::<u32>().ok(), b.parse::<u32>().ok()),
        None if digits.len() >= 2 => {
            let (a, b) = digits.split_at(digits.len() - 1);
            (a.parse::<u32>().ok(), b.parse::<u32>().ok())
        }
        None => (None, None),
    };
    match (major, minor) {
        (Some(a), Some(b)) if CC_MAJOR.contains(&a) && b <= 9 => Ok(format!("sm_{a}{b}")),
        _ => Err(Error::Invalid(format!(
            "--gpu-cc {t}: a compute capability is MAJOR.MINOR with major 1–12 (e.g. 8.9; `nvidia-smi \
             --query-gpu=compute_cap --format=csv` prints it)"
        ))),
    }
}

/// Up to three of `candidates` closest to `name` (letters and digits compared case-blind, the model number
/// weighed in), those similar enough to be a misspelling.
fn closest(name: &str, candidates: &[String]) -> Vec<String> {
    let norm =
        |s: &str| s.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    let strip = |s: &str| {
        let n = norm(s);
        ["nvidia", "geforce", "tesla", "quadro"].iter().fold(n, |acc, w| acc.replace(w, ""))
    };
    let given = strip(name);
    let number = gpu_model_number(name).map(|n| n.to_ascii_lowercase());
    let mut scored: Vec<(f64, &String)> = candidates
        .iter()
        .map(|c| {
            let whole = strsim::normalized_damerau_levenshtein(&given, &strip(c));
            let by_number = match (&number, gpu_model_number(c)) {
                (Some(a), Some(b)) => strsim::normalized_damerau_levenshtein(a, &b.to_ascii_lowercase()),
                _ => 0.0,
            };
            (whole.max(by_number), c)
        })
        .filter(|(s, _)| *s >= 0.6)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, c)| c.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_gpus_pass_by_name_display_name_or_model_number() {
        for g in ["a100", "H100", "Tesla V100-SXM2-16GB", "NVIDIA GeForce GTX 1080 Ti", "GTX 980"] {
            assert_eq!(check(g, None, &[]).unwrap(), g);
        }
        // A clock model's GPU counts as known.
        assert_eq!(check("Fake GPU", None, &["Fake GPU".into()]).unwrap(), "Fake GPU");
    }

    #[test]
    fn a_typo_is_refused_with_the_closest_names() {
        let e = check("RTX 9090", None, &[]).unwrap_err().to_string();
        assert!(e.contains("no GPU gpumodel knows") && e.contains("--gpu-cc"), "{e}");
        let e = check("Tesla V10", None, &[]).unwrap_err().to_string();
        assert!(e.contains("did you mean \"NVIDIA Tesla V100 (SXM2)\""), "{e}");
        // One suggestion per GPU model, whoever names it.
        let e = check("Tesla V10", None, &["NVIDIA Tesla V100 (GV100)".into()]).unwrap_err().to_string();
        assert_eq!(e.matches("V100").count(), 1, "{e}");
        let e = check("GTX 1080 Tj", None, &[]).unwrap_err().to_string();
        assert!(e.contains("GTX 1080 Ti"), "{e}");
        assert!(check("  ", None, &[]).is_err());
    }

    #[test]
    fn an_unknown_gpu_passes_with_its_compute_capability() {
        assert_eq!(
            check("NVIDIA GeForce RTX 4090", Some("8.9"), &[]).unwrap(),
            "NVIDIA GeForce RTX 4090 (sm_89)"
        );
        assert_eq!(check("RTX 4090", Some("sm_89"), &[]).unwrap(), "RTX 4090 (sm_89)");
        assert_eq!(check("B200", Some("10.0"), &[]).unwrap(), "B200 (sm_100)");
        // A known GPU keeps its name.
        assert_eq!(check("a100", Some("8.0"), &[]).unwrap(), "a100");
        for bad in ["abc", "8", "13.0", "8.x", ""] {
            let e = check("RTX 4090", Some(bad), &[]).unwrap_err().to_string();
            assert!(e.contains("--gpu-cc"), "{bad}: {e}");
        }
    }
}
