//! Which clock model answers `predict --profile`: the one given with `--model`, the shipped model of the
//! profile's GPU, or — for a GPU without one — a shipped model carried over by relative clock onto that
//! GPU's supported clocks (from `--core-clocks` or its architecture profile), each with what it assumes.

use super::*;
use gpumodel_models::arch::ArchProfile;

/// The clock models shipped with gpumodel (each made by the command in its `provenance.command`); a
/// profile gets the one whose `gpu` names its GPU.
const SHIPPED: &[(&str, &str)] =
    &[("models/dvfs-trained/v100.json", include_str!("../../../models/dvfs-trained/v100.json"))];

/// The shipped clock models, read.
pub(super) fn shipped() -> anyhow::Result<Vec<ClockModel>> {
    SHIPPED.iter().map(|(name, text)| Ok(ClockModel::from_json(text, name)?)).collect()
}

/// The model that answers, in words, and what the answer assumes or lacks.
pub(super) struct Choice {
    /// `None`: no sweep is possible; the answer is the profile's measured clock alone.
    pub model: Option<ClockModel>,
    pub basis: String,
    pub caveats: Vec<String>,
}

fn range(m: &ClockModel) -> String {
    let l = &m.levels;
    format!("{}: {:.0}–{:.0} MHz", m.gpu, l[0].core_mhz, l[l.len() - 1].core_mhz)
}

/// Chooses the clock model for `p`: `given` is `--model`, `clocks` is `--core-clocks`.
pub(super) fn choose(given: Option<&str>, p: &UtilizationProfile, clocks: &[f64]) -> anyhow::Result<Choice> {
    if let Some(path) = given {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading the clock model {path}"))?;
        let m = ClockModel::from_json(&text, path)?;
        if let Some(g) = &p.gpu
            && !gpu_matches(g, &m.gpu)
        {
            bail!(
                "the profile is of a {g} and the clock model {path} of a {}: give a model of that GPU with \
                 --model, or leave --model out for the shipped one or an estimate",
                m.gpu
            );
        }
        let basis = format!("clock model {path} ({}, trained on {})", m.gpu, m.provenance.dataset);
        return Ok(Choice { model: Some(m), basis, caveats: vec![] });
    }
    let all = shipped()?;
    let own = |m: &ClockModel| {
        format!("shipped clock model of the {} (trained on {})", m.gpu, m.provenance.dataset)
    };
    match &p.gpu {
        Some(g) => match all.iter().find(|m| same_gpu_model(g, &m.gpu)) {
            Some(m) => Ok(Choice { basis: own(m), model: Some(m.clone()), caveats: vec![] }),
            None => carried_over(g, p, clocks, &all),
        },
        None => match all.iter().find(|m| m.check_profile(p).is_ok()) {
            Some(m) => Ok(Choice {
                basis: own(m),
                model: Some(m.clone()),
                caveats: vec![format!(
                    "the profile does not name its GPU: the {} model is used because {:.0} MHz is in its \
                     clock range; name the GPU with --gpu to be sure",
                    m.gpu, p.core_mhz
                )],
            }),
            None => bail!(
                "the profile does not name its GPU and {:.0} MHz is outside every shipped clock model ({}): \
                 name the GPU with --gpu NAME, or give a clock model of it with --model FILE",
                p.core_mhz,
                all.iter().map(range).collect::<Vec<_>>().join("; ")
            ),
        },
    }
}

/// The built-in architecture profile of a GPU named `gpu`, when there is one.
fn arch_of(gpu: &str) -> Option<ArchProfile> {
    ArchProfile::builtin_names()
        .into_iter()
        .filter_map(|n| ArchProfile::builtin(n).ok())
        .find(|a| gpu_key(gpu).is_some_and(|k| Some(&k) == gpu_key(&a.display_name).as_ref()))
}

/// A GPU without a shipped clock model: a shipped model carried over by relative clock when its supported
/// clocks are known, else the profile's measured clock alone with what is missing.
fn carried_over(
    gpu: &str,
    p: &UtilizationProfile,
    clocks: &[f64],
    all: &[ClockModel],
) -> anyhow::Result<Choice> {
    if p.power_w.is_none() {
        bail!(
            "no clock model of the {gpu} is shipped and the profile has no power: record POWER (`dcgmi dmon -e \
             …,155`) for an estimate, or give a clock model of this GPU with --model"
        );
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
                 FILE --no-test --out-dir DIR, then --model DIR/<name>.json";
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
            let what = if levels.len() < 2 {
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
