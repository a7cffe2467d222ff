//! The candidate models of `gpumodel train` and their names.
//!
//! A name is also the artifact's file name (`<prefix>-<name>.json`), so it uses only lower-case letters,
//! digits and `-`:
//!
//! - `mlr`, `mlrplus`: multiple linear regression on the activity inputs, and on every input;
//! - `physical`: Guerreiro et al.'s DVFS power model (TPDS'19 form);
//! - `bpann`: the paper's sigmoid network; `physical-bpann`: that network on the physical model's
//!   relative residual, predicting `P·(1 + network)`.
//!
//! A network's options follow its name in this order: `-lbfgs` (full-batch L-BFGS instead of Adam),
//! `-avgK` (the mean of K networks from different initial weights) and, for `physical-bpann`, `-half`
//! (half of the residual network kept: the mean of `physical` and the whole model).

use crate::bpann::{BpannParams, Solver};
use crate::eval::ModelSpec;
use crate::physical::PhysicalParams;
use crate::selection::Complexity;
use crate::{Error, Result};
use gpumodel_models::FeatureSet;
use gpumodel_models::artifact::ModelKind;

/// The default candidate list, in the order tables show it (ties in the selection go to the earlier,
/// simpler entry): the paper's network with both solvers, the physical model, the residual networks
/// whole and halved, the linear baselines, and the mean of five L-BFGS residual networks (one network's
/// figure moves from seed to seed by more than the margins the selection decides on; the mean of five
/// does not).
pub const DEFAULT_CANDIDATES: &[&str] = &[
    "bpann",
    "bpann-lbfgs",
    "physical",
    "physical-bpann",
    "physical-bpann-half",
    "physical-bpann-lbfgs",
    "physical-bpann-lbfgs-half",
    "mlr",
    "mlrplus",
    "physical-bpann-lbfgs-avg5",
    "physical-bpann-lbfgs-avg5-half",
];

/// The names `--models` accepts, for help and error messages.
pub const CANDIDATE_HELP: &str = "bpann, physical, physical-bpann, mlr, mlrplus; a network's options after \
its name in this order: -lbfgs (solver), -avgK (mean of K networks, K 2 to 20), -half (physical-bpann: \
half the residual network)";

/// A candidate as its name spells it: `KIND[-lbfgs][-avgK][-half]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateName {
    pub kind: ModelKind,
    pub solver: Solver,
    /// `-avgK`: the mean of K networks trained from different initial weights; `None`: one network.
    pub members: Option<usize>,
    /// Share of the residual network kept: 1, or ½ (`-half`).
    pub scale: f64,
}

impl CandidateName {
    /// Parses a candidate name.
    pub fn parse(name: &str) -> Result<CandidateName> {
        let bad = |why: &str| {
            Error::Params(format!(
                "unknown model '{name}'{why}: use {CANDIDATE_HELP} (comma-separated in --models)"
            ))
        };
        let mut n = name.trim();
        let mut scale = 1.0;
        if let Some(rest) = n.strip_suffix("-half") {
            scale = 0.5;
            n = rest;
        }
        let mut members = None;
        if let Some((rest, k)) = n.rsplit_once("-avg") {
            match k.parse::<usize>() {
                Ok(k) if (2..=20).contains(&k) => members = Some(k),
                _ => return Err(bad(" (-avgK averages 2 to 20 networks)")),
            }
            n = rest;
        }
        let (n, solver) = match n.strip_suffix("-lbfgs") {
            Some(rest) => (rest, Solver::Lbfgs),
            None => (n, Solver::Adam),
        };
        let kind = match n {
            "bpann" => ModelKind::Bpann,
            "mlr" => ModelKind::Mlr,
            "mlrplus" => ModelKind::MlrPlus,
            "physical" => ModelKind::Physical,
            "physical-bpann" => ModelKind::PhysicalBpann,
            _ => return Err(bad("")),
        };
        let is_net = matches!(kind, ModelKind::Bpann | ModelKind::PhysicalBpann);
        if !is_net && (solver == Solver::Lbfgs || members.is_some()) {
            return Err(bad(" (-lbfgs and -avgK apply to networks)"));
        }
        if scale != 1.0 && kind != ModelKind::PhysicalBpann {
            return Err(bad(" (-half applies to physical-bpann)"));
        }
        Ok(CandidateName { kind, solver, members, scale })
    }

    /// The name as written everywhere: in tables, JSON and artifact file names.
    pub fn name(&self) -> String {
        let mut s = match self.kind {
            ModelKind::Bpann => "bpann",
            ModelKind::Mlr => "mlr",
            ModelKind::MlrPlus => "mlrplus",
            ModelKind::Physical => "physical",
            ModelKind::PhysicalBpann => "physical-bpann",
        }
        .to_string();
        if self.solver == Solver::Lbfgs {
            s += "-lbfgs";
        }
        if let Some(k) = self.members {
            s += &format!("-avg{k}");
        }
        if self.scale == 0.5 {
            s += "-half";
        }
        s
    }
}

/// One candidate model: a fit recipe, and how much of its network's output it keeps (`-half`: the mean
/// of the physical model and `physical-bpann`, i.e. the physical model plus half the residual network).
#[derive(Debug, Clone)]
pub struct CandidateSpec {
    pub name: String,
    pub spec: ModelSpec,
    pub residual_scale: f64,
    /// Networks averaged (`-avgK`); 1 = one network, the best of its restarts.
    pub members: usize,
}

impl CandidateSpec {
    /// The candidate `name` on feature set `fs`, with the run's network settings and physical roles.
    pub fn new(
        name: &str,
        fs: &FeatureSet,
        bp: &BpannParams,
        phys: &PhysicalParams,
    ) -> Result<CandidateSpec> {
        let c = CandidateName::parse(name)?;
        let mut bp = BpannParams { solver: c.solver, ..bp.clone() };
        let members = c.members.unwrap_or(1);
        if members > 1 {
            // Restarts from different initial weights, averaged: the seed ensemble.
            bp.restarts = members;
            bp.ensemble = true;
        }
        let spec = ModelSpec::for_feature_set(c.kind, fs, &bp, phys);
        Ok(CandidateSpec { name: c.name(), spec, residual_scale: c.scale, members })
    }

    /// Candidates that differ only in their residual scale share every fit.
    pub(super) fn fit_key(&self) -> String {
        let c = CandidateName {
            kind: self.spec.kind,
            solver: self.spec.bpann.solver,
            members: (self.members > 1).then_some(self.members),
            scale: 1.0,
        };
        c.name()
    }

    /// The candidate's complexity for the one-standard-error rule (see [`crate::selection::Complexity`]).
    pub fn complexity(&self) -> Complexity {
        let rank = match self.spec.kind {
            ModelKind::Mlr => 0,
            ModelKind::MlrPlus => 4,
            ModelKind::Physical => 8,
            ModelKind::Bpann => 12,
            // The physical model plus a share s of a network: 8 + 8·s (½ → 12 = a network, 1 → 16).
            ModelKind::PhysicalBpann => 8 + (8.0 * self.residual_scale).round() as u32,
        };
        let params = match self.spec.kind {
            ModelKind::Bpann | ModelKind::PhysicalBpann => {
                let mut prev = self.spec.inputs.len();
                let mut n = 0;
                for &h in &self.spec.bpann.hidden {
                    n += (prev + 1) * h;
                    prev = h;
                }
                (n + prev + 1) * self.members
            }
            _ => self.spec.inputs.len() + 1,
        };
        Complexity { rank, params }
    }

    /// Whether the candidate has a network (its figures then depend on the seed).
    pub fn is_network(&self) -> bool {
        matches!(self.spec.kind, ModelKind::Bpann | ModelKind::PhysicalBpann)
    }

    /// Whether the candidate reads the physical model.
    pub fn is_physical(&self) -> bool {
        matches!(self.spec.kind, ModelKind::Physical | ModelKind::PhysicalBpann)
    }
}

/// Whether `name` (a valid candidate name) needs the physical model.
pub fn needs_physical(name: &str) -> bool {
    name.starts_with("physical")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_print_back_and_are_file_names() {
        for n in DEFAULT_CANDIDATES {
            let c = CandidateName::parse(n).unwrap();
            assert_eq!(c.name(), *n);
            assert!(n.chars().all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-'), "{n}");
        }
        let c = CandidateName::parse("physical-bpann-lbfgs-avg5-half").unwrap();
        assert_eq!(
            (c.kind, c.solver, c.members, c.scale),
            (ModelKind::PhysicalBpann, Solver::Lbfgs, Some(5), 0.5)
        );
        assert_eq!(CandidateName::parse(" mlrplus ").unwrap().kind, ModelKind::MlrPlus);
        for bad in [
            "svm",
            "mlr+",
            "physical+bpann",
            "mlr-lbfgs",
            "bpann-half",
            "physical-half",
            "bpann-avg1",
            "bpann-avg21",
            "bpann-avgx",
            "physical-bpann-half-lbfgs",
        ] {
            let msg = CandidateName::parse(bad).unwrap_err().to_string();
            assert!(msg.contains("unknown model") && msg.contains("physical-bpann"), "{bad}: {msg}");
        }
    }

    #[test]
    fn simpler_candidates_rank_lower_and_averages_count_every_network() {
        let fs = gpumodel_models::features::builtin("titanx-utilizations").unwrap();
        let phys = PhysicalParams::from_activities(
            &["SP", "INT", "DP", "SFU", "CF", "L2", "Shared", "DRAM"].map(String::from),
            &fs.name,
        );
        let spec = |n: &str| CandidateSpec::new(n, &fs, &BpannParams::default(), &phys).unwrap();
        // Ranks: linear < physical < half a residual = a network < a whole residual.
        let ranks: Vec<Complexity> = ["mlr", "mlrplus", "physical", "bpann", "physical-bpann"]
            .iter()
            .map(|n| spec(n).complexity())
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{ranks:?}");
        assert_eq!(spec("physical-bpann-half").complexity().rank, spec("bpann").complexity().rank);
        // 10 inputs → 4 → 4 → 1: 44 + 20 + 5 weights; the mean of five networks counts five.
        assert_eq!(spec("bpann-lbfgs").complexity().params, 69);
        let avg = spec("physical-bpann-lbfgs-avg5-half");
        assert_eq!((avg.spec.bpann.restarts, avg.spec.bpann.ensemble, avg.members), (5, true, 5));
        assert_eq!(avg.fit_key(), "physical-bpann-lbfgs-avg5");
        assert_eq!(avg.complexity().params, 5 * spec("physical-bpann-lbfgs").complexity().params);
    }
}
