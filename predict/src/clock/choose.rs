//! Which clock model answers `predict --profile`: the one given with `--clock-model`, the user's model of
//! the profile's GPU (`--models-dir`, `GPUMODEL_MODELS`), the shipped model of that GPU, or — for a GPU
//! without one — a shipped model carried over by relative clock onto that GPU's supported clocks (from
//! `--core-clocks` or its architecture profile), each with what it assumes.

use super::sweep::SweepRequest;
use crate::{Error, Result};
use gpumodel_models::arch::{ArchProfile, gpu_model_number};
use gpumodel_models::utilization::UtilizationProfile;
use gpumodel_models::utilization::model::ClockModel;
use std::path::PathBuf;

/// Whether two GPU names can be the same model: they are unless both name a model number and the numbers
/// differ (a name without one, e.g. "Fake GPU", is not held against a clock model the user gives).
pub fn gpu_matches(a: &str, b: &str) -> bool {
    // "Tesla V100-SXM2-16GB" and "NVIDIA Tesla V100 (GV100)" are the same model; "H100" is not.
    match (gpu_model_number(a), gpu_model_number(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// Whether two GPU names are known to be the same model: both name a model number and it is the same
/// (choosing a shipped or user clock model needs this much).
pub fn same_gpu_model(a: &str, b: &str) -> bool {
    matches!((gpu_model_number(a), gpu_model_number(b)), (Some(x), Some(y)) if x == y)
}

/// The clock models shipped with gpumodel (each made by the command in its `provenance.command`); a
/// profile gets the one whose `gpu` names its GPU.
const SHIPPED: &[(&str, &str)] =
    &[("models/dvfs-trained/v100.json", include_str!("../../../models/dvfs-trained/v100.json"))];

/// The shipped clock models, read.
pub fn shipped() -> Result<Vec<ClockModel>> {
    SHIPPED.iter().map(|(name, text)| Ok(ClockModel::from_json(text, name)?)).collect()
}

/// The model that answers, in words, and what the answer assumes or lacks.
pub struct Choice {
    /// `None`: no sweep is possible; the answer is the profile's measured clock alone.
    pub model: Option<ClockModel>,
    pub basis: String,
    pub caveats: Vec<String>,
}

fn range(m: &ClockModel) -> String {
    let l = &m.levels;
    format!("{}: {:.0}–{:.0} MHz", m.gpu, l[0].core_mhz, l[l.len() - 1].core_mhz)
}

/// The clock models in the user's folders (`*.json` files that read as a clock model), with their paths;
/// files that are not clock models (power models, results) are passed over.
fn user_models(dirs: &[PathBuf]) -> Vec<(PathBuf, ClockModel)> {
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(d) else { continue };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
            let Ok(text) = std::fs::read_to_string(&p) else { continue };
            if let Ok(m) = ClockModel::from_json(&text, &p.display().to_string()) {
                out.push((p, m));
            }
        }
    }
    out
}

/// The clock model of the GPU named `gpu`: the user's (the first in `dirs` whose GPU is the same model),
/// else the shipped one; with the basis in words. `None` when neither names that GPU.
pub fn model_for_gpu(gpu: &str, dirs: &[PathBuf]) -> Option<(String, ClockModel)> {
    if let Some((path, m)) = user_models(dirs).into_iter().find(|(_, m)| same_gpu_model(gpu, &m.gpu)) {
        let basis = format!(
            "clock model {} ({}, trained on {})",
            path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
            m.gpu,
            m.provenance.dataset
        );
        return Some((basis, m));
    }
    let m = shipped().ok()?.into_iter().find(|m| same_gpu_model(gpu, &m.gpu))?;
    Some((shipped_basis(&m), m))
}

fn shipped_basis(m: &ClockModel) -> String {
    format!("shipped clock model of the {} (trained on {})", m.gpu, m.provenance.dataset)
}

/// The GPUs the clock models at hand name: `--clock-model`'s, the user's folders' and the shipped ones (a
/// `--gpu` naming one of them is a GPU gpumodel knows).
pub fn known_gpus(req: &SweepRequest) -> Vec<String> {
    let mut gpus: Vec<String> = user_models(&req.model_dirs).into_iter().map(|(_, m)| m.gpu).collect();
    if let Some(m) = req
        .model
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok().map(|t| (p, t)))
        .and_then(|(p, t)| ClockModel::from_json(&t, &p.display().to_string()).ok())
    {
        gpus.push(m.gpu);
    }
    gpus.extend(shipped().unwrap_or_default().into_iter().map(|m| m.gpu));
    gpus
}

/// Chooses the clock model for `p`: `--model`, else the model of the profile's GPU ([`model_for_gpu`]:
/// the user's from `req.model_dirs`, else the shipped one), else a shipped one carried over.
pub fn choose(req: &SweepRequest, p: &UtilizationProfile) -> Result<Choice> {
    if let Some(path) = &req.model {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: shown.clone(), source: e })?;
        let m = ClockModel::from_json(&text, &shown)?;
        if let Some(g) = &p.gpu
            && !gpu_matches(g, &m.gpu)
        {
            return Err(Error::Mismatch(format!(
                "the profile is of a {g} and the clock model {shown} of a {}: give a model of that GPU with \
                 --clock-model, or leave it out for the shipped one or an estimate",
                m.gpu
            )));
        }
        let basis = format!("clock model {shown} ({}, trained on {})", m.gpu, m.provenance.dataset);
        return Ok(Choice { model: Some(m), basis, caveats: vec![] });
    }
    if let Some(g) = &p.gpu
        && let Some((basis, m)) = model_for_gpu(g, &req.model_dirs)
    {
        return Ok(Choice { model: Some(m), basis, caveats: vec![] });
    }
    let all = shipped()?;
    match &p.gpu {
        // No model of this GPU, the user's or shipped (above): a shipped one carried over.
        Some(g) => carried_over(g, p, &req.core_clocks, &all),
        None => match all.iter().find(|m| m.check_profile(p).is_ok()) {
            Some(m) => Ok(Choice {
                basis: shipped_basis(m),
                model: Some(m.clone()),
                caveats: vec![format!(
                    "the profile does not name its GPU: the {} model is used because {:.0} MHz is in its \
                     clock range; name the GPU with --gpu to be sure",
                    m.gpu, p.core_mhz
                )],
            }),
            None => Err(Error::Invalid(format!(
                "the profile does not name its GPU and {:.0} MHz is outside every shipped clock model ({}): \
                 name the GPU with --gpu NAME, or give a clock model of it with --clock-model FILE",
                p.core_mhz,
                all.iter().map(range).collect::<Vec<_>>().join("; ")
            ))),
        },
    }
}

/// The built-in architecture profile of a GPU named `gpu`, when there is one.
fn arch_of(gpu: &str) -> Option<ArchProfile> {
    ArchProfile::builtin_names().into_iter().filter_map(|n| ArchProfile::builtin(n).ok()).find(|a| {
        gpu_model_number(gpu).is_some_and(|k| Some(&k) == gpu_model_number(&a.display_name).as_ref())
    })
}

/// A GPU without a shipped clock model: a shipped model carried over by relative clock when its supported
/// clocks are known, else the profile's measured clock alone with what is missing.
fn carried_over(gpu: &str, p: &UtilizationProfile, clocks: &[f64], all: &[ClockModel]) -> Result<Choice> {
    if p.power_w.is_none() {
        return Err(Error::Invalid(format!(
            "no clock model of the {gpu} is shipped or in your models and the profile has no power: record POWER \
             (`dcgmi dmon -e …,155`) for an estimate, or train one on this GPU (`gpumodel collect --suite \
             --clocks …`, then `gpumodel train`) and give it with --clock-model"
        )));
    }
    let arch = arch_of(gpu);
    let (levels, from, why) = if !clocks.is_empty() {
        (clocks.to_vec(), "--core-clocks".to_string(), String::new())
    } else if let Some(a) = &arch {
        let src = a.sources.get(&a.core_clocks_mhz.src).map_or(String::new(), |s| format!(" ({s})"));
        (a.core_clocks_mhz.value.clone(), format!("models/arch/{}.toml", a.name), src)
    } else {
        (vec![], "no built-in architecture profile of this GPU".to_string(), String::new())
    };
    let train = "a clock model of this GPU comes from its profiles at several clocks: gpumodel train --data \
                 FILE --no-test --out-dir DIR, then --clock-model DIR/<name>.json";
    let (lo, hi) = levels.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &f| (a.min(f), b.max(f)));
    let covers = p.core_mhz >= lo * 0.98 && p.core_mhz <= hi * 1.02;
    let source = &all[0];
    match source.rebased(&levels, gpu).filter(|_| covers) {
        Some(model) => Ok(Choice {
            basis: format!(
                "no clock model of the {gpu} is shipped: an estimate, the {} clock model carried over by \
                 relative clock (time form and static share as fitted there, its voltage curve at the same \
                 fraction of the highest clock); its error on this GPU is not measured",
                source.gpu
            ),
            caveats: vec![format!("supported clocks from {from}"), train.to_string()],
            model: Some(model),
        }),
        None => {
            let listed = levels.iter().map(|f| format!("{f:.0}")).collect::<Vec<_>>().join(", ");
            let what = if levels.is_empty() {
                format!("{from} lists its core clocks")
            } else if levels.len() < 2 {
                format!("{from} lists {} core clock(s) [{listed}]{why}", levels.len())
            } else {
                format!("the clocks of {from} [{listed} MHz] do not span {:.0} MHz", p.core_mhz)
            };
            Ok(Choice {
                model: None,
                basis: format!("no clock model of the {gpu} is shipped: the profile's measured clock only"),
                caveats: vec![
                    format!(
                        "no sweep: {what}; give the GPU's supported clocks with --core-clocks (from \
                         `nvidia-smi -q -d SUPPORTED_CLOCKS`) for an estimate at every clock"
                    ),
                    train.to_string(),
                ],
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_names_match_by_their_model_number() {
        assert!(gpu_matches("Tesla V100-SXM2-16GB", "NVIDIA Tesla V100 (GV100)"));
        assert!(!gpu_matches("NVIDIA H100 80GB HBM3", "NVIDIA Tesla V100 (GV100)"));
        // A name without a model number may go with a model the user gives, but picks no shipped one.
        assert!(gpu_matches("Fake GPU", "NVIDIA Tesla V100 (GV100)"));
        assert!(!same_gpu_model("Fake GPU", "NVIDIA Tesla V100 (GV100)"));
        assert!(same_gpu_model("Tesla V100-PCIE-16GB", "NVIDIA Tesla V100 (GV100)"));
    }

    #[test]
    fn the_shipped_models_read() {
        for m in shipped().unwrap() {
            assert!(m.levels.len() >= 2, "{}", m.gpu);
        }
    }
}
