//! The experiment behind `gpumodel train`: which roles the physical model's inputs play on each kind of
//! data, and the honest choice of the default model — by grouped cross-validation on the training data
//! only, never by the held-out test set.

use crate::metrics::Metrics;
use crate::physical::PhysicalParams;
use crate::{Error, Result};
use gpumodel_models::Table;
use gpumodel_models::artifact::ModelKind;
use gpumodel_models::import::Format;
use serde::Serialize;

/// NV-DVFS counters that play Guerreiro's component utilizations in the physical model, fixed a priori
/// by the component each one measures (SP, DP, INT, SFU, CF, L2, shared, texture / global traffic; DRAM
/// for the memory domain) — not by correlation with power, so nothing is chosen on the evaluation data.
/// Each becomes events per cycle of its clock domain (`count / time_ms / clock_mhz`), which is what a
/// utilization measures; the model multiplies it by V²·f again. The non-negative least squares of the
/// fit drops (β = 0) the ones that do not help, inside each training fold.
pub const NVDVFS_ACTIVITIES: &[&str] = &[
    "inst_fp_32",
    "inst_fp_64",
    "inst_integer",
    "flop_count_sp_special",
    "cf_executed",
    "l2_read_transactions",
    "l2_write_transactions",
    "shared_load_transactions",
    "shared_store_transactions",
    "tex_cache_transactions",
    "gld_transactions",
    "gst_transactions",
    "dram_read_transactions",
    "dram_write_transactions",
];

/// The physical model's roles on `table` (imported as `format`), or `None` with the reason when the data
/// cannot feed it (no clock columns, one core clock level, no activity columns).
pub fn physical_roles(
    table: &Table,
    format: Format,
    feature_set: &str,
    feature_inputs: &[String],
) -> std::result::Result<PhysicalParams, String> {
    let has = |c: &str| table.column_index(c).is_some();
    if !has("core_mhz") || !has("mem_mhz") {
        return Err("the data has no core_mhz and mem_mhz columns".into());
    }
    let core_levels = table.distinct_values("core_mhz");
    if core_levels.len() < 2 {
        return Err(format!(
            "the data has a single core clock level ({} MHz), so there is no DVFS to model",
            core_levels.first().copied().unwrap_or(f64::NAN)
        ));
    }
    let activities: Vec<String> = match format {
        Format::Guerreiro => {
            table.columns.iter().filter(|c| *c != "power_w" && !c.ends_with("_mhz")).cloned().collect()
        }
        Format::Nvdvfs => {
            if !has("time_ms") {
                return Err("the NV-DVFS data has no time_ms column to turn counters into rates".into());
            }
            NVDVFS_ACTIVITIES
                .iter()
                .filter(|c| has(c))
                .map(|c| {
                    let clock = if c.starts_with("dram") { "mem_mhz" } else { "core_mhz" };
                    format!("{c}/time_ms/{clock}")
                })
                .collect()
        }
        Format::Table => {
            feature_inputs.iter().filter(|i| *i != "core_mhz" && *i != "mem_mhz").cloned().collect()
        }
    };
    if activities.is_empty() {
        return Err("the data has no activity columns for the physical model".into());
    }
    let mut p = PhysicalParams::from_activities(&activities, feature_set);
    // Guerreiro's files carry the default clocks the utilizations were measured at: the reference.
    let first = |c: &str| table.column(c).and_then(|v| v.first().copied());
    p.ref_core_mhz = first("default_core_mhz");
    p.ref_mem_mhz = first("default_mem_mhz");
    Ok(p)
}

/// One candidate of the default-model choice with the grouped-CV figures it was judged by.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub model: String,
    pub group_kfold: Metrics,
}

/// The choice of the default model and the evidence for it.
#[derive(Debug, Clone, Serialize)]
pub struct Selection {
    pub chosen: String,
    /// `grouped cross-validation on the training data` or `fixed by --select`.
    pub how: String,
    pub criterion: &'static str,
    pub candidates: Vec<Candidate>,
}

/// Picks the candidate with the lowest grouped-CV MAPE (ties: the first listed, i.e. the simpler model
/// in `gpumodel train`'s order). `fixed` names a model to take regardless.
pub fn select_default(candidates: Vec<Candidate>, fixed: Option<ModelKind>) -> Result<Selection> {
    if let Some(kind) = fixed {
        let chosen = kind.name().to_string();
        return Ok(Selection { chosen, how: "fixed by --select".into(), criterion: "none", candidates });
    }
    let best = candidates
        .iter()
        .filter(|c| c.group_kfold.mape_pct.is_finite())
        .min_by(|a, b| a.group_kfold.mape_pct.total_cmp(&b.group_kfold.mape_pct))
        .ok_or_else(|| {
            Error::Invalid(
                "choosing the default model needs grouped cross-validation: keep --group-folds ≥ 2, or fix \
                 the choice with --select MODEL"
                    .into(),
            )
        })?;
    Ok(Selection {
        chosen: best.model.clone(),
        how: "grouped cross-validation on the training data".into(),
        criterion: "lowest group-kfold MAPE",
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(model: &str, mape_pct: f64) -> Candidate {
        let m = Metrics::score(&[100.0 * (1.0 + mape_pct / 100.0)], &[100.0], &["k".to_string()]).unwrap();
        Candidate { model: model.into(), group_kfold: m }
    }

    #[test]
    fn the_lowest_grouped_cv_error_is_chosen_unless_the_choice_is_fixed() {
        let c = vec![cand("bpann", 6.0), cand("physical", 5.0), cand("mlr+", 9.0)];
        let s = select_default(c.clone(), None).unwrap();
        assert_eq!(s.chosen, "physical");
        assert_eq!(s.candidates.len(), 3);
        let s = select_default(c, Some(ModelKind::Bpann)).unwrap();
        assert_eq!((s.chosen.as_str(), s.how.as_str()), ("bpann", "fixed by --select"));
        let msg = select_default(Vec::new(), None).unwrap_err().to_string();
        assert!(msg.contains("--group-folds") && msg.contains("--select"), "{msg}");
    }
}
