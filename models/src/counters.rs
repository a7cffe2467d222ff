//! Per-chip counter maps (`models/counters/<chip>.toml`): which CUPTI metrics give each canonical counter
//! (see [`crate::profile::CANONICAL_COUNTERS`]), once for the Range Profiler (`range`: exact equivalents
//! of the paper's Table 5.2, per-kernel totals) and once for PM sampling (`pm`: what the ~60 Hz time series
//! can have; stand-ins are explained in `pm_notes`).
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
    /// Canonical counter → metrics summed, for PM sampling.
    pub pm: BTreeMap<String, Vec<String>>,
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
        for (section, m) in [("range", &self.range), ("pm", &self.pm)] {
            for (k, metrics) in m {
                if !CANONICAL_COUNTERS.iter().any(|(c, _)| c == k) {
                    return Err(Error::Invalid(format!(
                        "{source}: [{section}] unknown canonical counter '{k}'"
                    )));
                }
                if metrics.is_empty() || metrics.iter().any(|s| s.trim().is_empty()) {
                    return Err(Error::Invalid(format!(
                        "{source}: [{section}] {k}: give at least one metric name"
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
        let mut v: Vec<String> = self.map(kind).values().flatten().cloned().collect();
        v.sort();
        v.dedup();
        v
    }

    /// Canonical counters from metric values (sums per the map); a counter is left out when one of its
    /// metrics has no value.
    pub fn canonical(&self, kind: MapKind, metric_values: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
        self.map(kind)
            .iter()
            .filter_map(|(c, ms)| {
                let s = ms.iter().map(|m| metric_values.get(m).copied()).sum::<Option<f64>>()?;
                Some((c.clone(), s))
            })
            .collect()
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
            // Every canonical counter missing from pm is explained.
            for (c, _) in CANONICAL_COUNTERS {
                if !m.pm.contains_key(*c) && m.range.contains_key(*c) {
                    assert!(m.pm_notes.contains_key(*c), "{chip}: pm lacks {c} without a note");
                }
            }
        }
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

    #[test]
    fn bad_counter_name_is_refused() {
        let e = CounterMap::parse("chip='X'\n[range]\nfoo=['a.sum']\n[pm]\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("unknown canonical counter 'foo'"), "{e}");
    }
}
