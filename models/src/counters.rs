//! Per-chip counter maps (`models/counters/<chip>.toml`): which CUPTI metrics give each canonical counter
//! (see [`crate::profile::CANONICAL_COUNTERS`]), once for the Range Profiler (`range`: exact equivalents
//! of the paper's Table 5.2, per-kernel totals) and once for PM sampling (`pm`: what the ~60 Hz time series
//! can have in one run; stand-ins are explained in `pm_notes`), plus further PM-sampling groups
//! (`[[pm_pass]]`), each one hardware pass, that application replay records in separate runs of the
//! program (`gpumodel collect --pm-passes all`).
//!
//! The maps are compiled into the binary so `gpumodel counters --chip GH100` works anywhere.

use crate::error::{Error, Result};
use crate::profile::{CANONICAL_COUNTERS, MODEL_INPUTS};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The built-in maps: (chip, TOML text).
const BUILTIN: &[(&str, &str)] = &[
    ("TU102", include_str!("../counters/tu102.toml")),
    ("GA100", include_str!("../counters/ga100.toml")),
    ("GA102", include_str!("../counters/ga102.toml")),
    ("AD102", include_str!("../counters/ad102.toml")),
    ("GH100", include_str!("../counters/gh100.toml")),
];

/// Which profiler a map is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    /// Range Profiler, per-kernel totals.
    Range,
    /// PM sampling, time series.
    Pm,
}

/// One chip's counter maps.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterMap {
    /// Chip name as CUPTI spells it (e.g. "GA102").
    pub chip: String,
    /// Canonical counter → metrics summed, for the Range Profiler.
    pub range: BTreeMap<String, Vec<String>>,
    /// Canonical counter → metrics summed, for PM sampling: pass 1, the group a single run records.
    pub pm: BTreeMap<String, Vec<String>>,
    /// Further PM-sampling groups (pass 2, 3, …), each one hardware pass, recorded by application replay
    /// (one run of the program per group). A canonical counter is in at most one group.
    #[serde(default)]
    pub pm_pass: Vec<BTreeMap<String, Vec<String>>>,
    /// How a `pm` entry differs from the exact counter, or why it is missing.
    #[serde(default)]
    pub pm_notes: BTreeMap<String, String>,
}

impl CounterMap {
    /// Chips with a built-in map.
    pub fn builtin_chips() -> Vec<&'static str> {
        BUILTIN.iter().map(|(c, _)| *c).collect()
    }

    /// The built-in map of `chip` (case-insensitive).
    pub fn builtin(chip: &str) -> Result<CounterMap> {
        let (name, text) = BUILTIN.iter().find(|(c, _)| c.eq_ignore_ascii_case(chip)).ok_or_else(|| {
            Error::Invalid(format!(
                "no counter map for chip '{chip}': known chips are {} (write models/counters/<chip>.toml to add one)",
                Self::builtin_chips().join(", ")
            ))
        })?;
        Self::parse(text, &format!("models/counters/{}.toml", name.to_lowercase()))
    }

    /// Parses and checks a map.
    pub fn parse(text: &str, source: &str) -> Result<CounterMap> {
        let map: CounterMap = toml::from_str(text).map_err(|e| Error::Document {
            file: source.into(),
            message: format!("not a counter map: {}", e.message()),
        })?;
        map.check(source)?;
        Ok(map)
    }

    fn check(&self, source: &str) -> Result<()> {
        let mut sections: Vec<(String, &BTreeMap<String, Vec<String>>)> =
            vec![("[range]".into(), &self.range), ("[pm]".into(), &self.pm)];
        for (i, g) in self.pm_pass.iter().enumerate() {
            if g.is_empty() {
                return Err(Error::Invalid(format!(
                    "{source}: [[pm_pass]] number {} is empty; give it counters or remove it",
                    i + 1
                )));
            }
            sections.push((format!("[[pm_pass]] number {}", i + 1), g));
        }
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (pass, g) in self.pm_groups().iter().enumerate() {
            for k in g.keys() {
                if let Some(first) = seen.insert(k, pass + 1) {
                    return Err(Error::Invalid(format!(
                        "{source}: '{k}' is in PM-sampling pass {first} and pass {}; keep it in one",
                        pass + 1
                    )));
                }
            }
        }
        for (section, m) in sections {
            for (k, metrics) in m {
                if !CANONICAL_COUNTERS.iter().any(|(c, _)| c == k) {
                    return Err(Error::Invalid(format!(
                        "{source}: {section} unknown canonical counter '{k}'"
                    )));
                }
                if metrics.is_empty() || metrics.iter().any(|s| s.trim().is_empty()) {
                    return Err(Error::Invalid(format!(
                        "{source}: {section} {k}: give at least one metric name"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The map of one kind.
    pub fn map(&self, kind: MapKind) -> &BTreeMap<String, Vec<String>> {
        match kind {
            MapKind::Range => &self.range,
            MapKind::Pm => &self.pm,
        }
    }

    /// Distinct metric names of one map, sorted.
    pub fn metrics(&self, kind: MapKind) -> Vec<String> {
        group_metrics(self.map(kind))
    }

    /// The PM-sampling groups in pass order: `[pm]` (pass 1), then each `[[pm_pass]]`.
    pub fn pm_groups(&self) -> Vec<&BTreeMap<String, Vec<String>>> {
        std::iter::once(&self.pm).chain(self.pm_pass.iter()).collect()
    }

    /// PM-sampling group `pass` (0 = `[pm]`), or a clear error naming how many there are.
    pub fn pm_group(&self, pass: usize) -> Result<&BTreeMap<String, Vec<String>>> {
        let n = self.pm_pass.len() + 1;
        self.pm_groups().get(pass).copied().ok_or_else(|| {
            Error::Invalid(format!(
                "{}: PM-sampling pass {} does not exist (it has {n})",
                self.chip,
                pass + 1
            ))
        })
    }

    /// Canonical counters from metric values (sums per the map); a counter is left out when one of its
    /// metrics has no value.
    pub fn canonical(&self, kind: MapKind, metric_values: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
        canonical_of(self.map(kind), metric_values)
    }

    /// For each of the ten model inputs: the metrics that feed it in a map (empty when one of its
    /// canonical counters is not in the map).
    pub fn input_metrics(&self, kind: MapKind) -> Vec<(&'static str, Vec<String>)> {
        let m = self.map(kind);
        MODEL_INPUTS
            .iter()
            .map(|(input, parts)| {
                let ms: Option<Vec<String>> =
                    parts.iter().map(|p| m.get(*p).cloned()).collect::<Option<Vec<_>>>().map(|v| v.concat());
                (*input, ms.unwrap_or_default())
            })
            .collect()
    }
}

/// Distinct metric names of one group (canonical counter → metrics), sorted.
pub fn group_metrics(group: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut v: Vec<String> = group.values().flatten().cloned().collect();
    v.sort();
    v.dedup();
    v
}

/// Perfworks metrics named `…sass_thread_inst_executed…` count thread instructions; the canonical
/// instruction counters are warp instructions, so such a metric is divided by the warp size (exact for
/// full warps, as nvprof's thread-level counts are on import).
fn warp_scale(metric: &str) -> f64 {
    if metric.contains("sass_thread_inst_executed") { 1.0 / 32.0 } else { 1.0 }
}

/// Canonical counters of one group from metric values (sums per the group, thread-level metrics in warp
/// instructions, see [`warp_scale`]); a counter is left out when one of its metrics has no value.
pub fn canonical_of(
    group: &BTreeMap<String, Vec<String>>,
    metric_values: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    group
        .iter()
        .filter_map(|(c, ms)| {
            let s =
                ms.iter().map(|m| metric_values.get(m).map(|v| v * warp_scale(m))).sum::<Option<f64>>()?;
            Some((c.clone(), s))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_map_parses_and_covers_table_5_2_in_range() {
        for chip in CounterMap::builtin_chips() {
            let m = CounterMap::builtin(chip).unwrap();
            assert_eq!(m.chip, chip);
            // The range map gives every one of the ten inputs (the paper's Table 5.2).
            for (input, ms) in m.input_metrics(MapKind::Range) {
                assert!(!ms.is_empty(), "{chip}: range map lacks {input}");
            }
            // Every canonical counter in no PM-sampling group is explained.
            for (c, _) in CANONICAL_COUNTERS {
                if !m.pm_groups().iter().any(|g| g.contains_key(*c)) {
                    assert!(m.pm_notes.contains_key(*c), "{chip}: no PM pass has {c} and no note says why");
                }
            }
        }
    }

    /// Application replay needs the extra groups: every built-in map has [pm] plus at least one
    /// [[pm_pass]], and the paper's global, local and texture counters are in some pass.
    #[test]
    fn builtin_maps_have_extra_pm_passes_for_memory_counters() {
        for chip in CounterMap::builtin_chips() {
            let m = CounterMap::builtin(chip).unwrap();
            assert!(m.pm_groups().len() >= 2, "{chip}");
            for c in ["l1_global_load_hit", "local_load", "tex0_cache_sector_queries", "inst_integer"] {
                let n = m.pm_groups().iter().filter(|g| g.contains_key(c)).count();
                assert_eq!(n, 1, "{chip}: {c} is in {n} PM groups");
            }
            assert!(m.pm_group(m.pm_groups().len()).is_err());
            // `gpumodel counters` shows the pass-1 map; the notes say where the other counters are.
            for (k, g) in m.pm_groups().iter().enumerate().skip(1) {
                for c in g.keys() {
                    let note = m.pm_notes.get(c).map_or("", String::as_str);
                    assert!(note.contains(&format!("PM-sampling pass {} ", k + 1)), "{chip} {c}: '{note}'");
                }
            }
        }
    }

    #[test]
    fn a_counter_in_two_pm_passes_is_refused() {
        let text = "chip='X'\n[range]\n[pm]\nbranch=['a.sum']\n[[pm_pass]]\nbranch=['b.sum']\n";
        let e = CounterMap::parse(text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("'branch' is in PM-sampling pass 1 and pass 2"), "{e}");
        let e = CounterMap::parse("chip='X'\n[range]\n[pm]\n[[pm_pass]]\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("[[pm_pass]] number 1 is empty"), "{e}");
    }

    #[test]
    fn unknown_chip_lists_known_ones() {
        let e = CounterMap::builtin("GK110").unwrap_err().to_string();
        assert!(e.contains("GK110") && e.contains("GH100"), "{e}");
    }

    #[test]
    fn canonical_sums_metrics_and_skips_incomplete() {
        let m = CounterMap::builtin("ga102").unwrap();
        let mut v = BTreeMap::new();
        v.insert("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum".to_string(), 3.0);
        v.insert("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum".to_string(), 4.0);
        v.insert("smsp__inst_executed.sum".to_string(), 10.0);
        let c = m.canonical(MapKind::Range, &v);
        assert_eq!(c.get("l1_shared_bank_conflict"), Some(&7.0));
        assert_eq!(c.get("inst_executed"), Some(&10.0));
        assert_eq!(c.get("branch"), None);
    }

    /// The conversion metric counts threads: 3200 thread conversions are 100 warp instructions, on every
    /// chip's range map.
    #[test]
    fn thread_level_conversions_become_warp_instructions() {
        for chip in CounterMap::builtin_chips() {
            let m = CounterMap::builtin(chip).unwrap();
            let mut v = BTreeMap::new();
            v.insert("smsp__sass_thread_inst_executed_op_conversion_pred_on.sum".to_string(), 3200.0);
            assert_eq!(m.canonical(MapKind::Range, &v).get("inst_bit_convert"), Some(&100.0), "{chip}");
        }
    }

    #[test]
    fn bad_counter_name_is_refused() {
        let e = CounterMap::parse("chip='X'\n[range]\nfoo=['a.sum']\n[pm]\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("unknown canonical counter 'foo'"), "{e}");
    }
}
