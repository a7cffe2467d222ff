//! A feature set names which columns of a training table feed a model: the inputs (10 by default in
//! the paper), the target (`power_w`), the group column, and the MLR base subset (the paper's MLR leaves
//! the texture events out; MLR+ uses every input).
//!
//! ```toml
//! name = "titanx-utilizations"
//! inputs = ["SP", "INT", "DP", "SFU", "CF", "L2", "Shared", "DRAM", "core_mhz", "mem_mhz"]
//! target = "power_w"
//! group = "kernel"
//! mlr_base = ["SP", "INT", "DP", "SFU", "CF", "L2", "Shared", "DRAM"]
//! ```

use crate::error::{Error, Result};
use crate::table::{GROUP_COLUMN, Table};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Which columns are inputs, target, group, and the MLR base subset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureSet {
    /// A short name, recorded in model artifacts.
    pub name: String,
    /// Input columns, in the order the model sees them.
    pub inputs: Vec<String>,
    /// Target column.
    #[serde(default = "default_target")]
    pub target: String,
    /// Group column (kernel or application) for grouped cross-validation.
    #[serde(default = "default_group")]
    pub group: String,
    /// Inputs used by the MLR baseline (MLR+ uses all inputs). Empty means all.
    #[serde(default)]
    pub mlr_base: Vec<String>,
}

fn default_target() -> String {
    "power_w".into()
}

fn default_group() -> String {
    GROUP_COLUMN.into()
}

impl FeatureSet {
    /// Reads a feature set from a TOML file.
    pub fn from_toml_file(path: &Path) -> Result<FeatureSet> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        FeatureSet::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses a feature set; `source` names it in errors.
    pub fn from_toml_str(text: &str, source: &str) -> Result<FeatureSet> {
        let fs: FeatureSet = toml::from_str(text)
            .map_err(|e| Error::Document { file: source.to_string(), message: e.message().to_string() })?;
        fs.check()?;
        Ok(fs)
    }

    /// Checks the feature set on its own: at least one input, no duplicates, MLR base ⊆ inputs.
    pub fn check(&self) -> Result<()> {
        if self.inputs.is_empty() {
            return Err(Error::Invalid(format!(
                "feature set '{}' has no inputs: list the input columns under `inputs`",
                self.name
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for i in &self.inputs {
            if !seen.insert(i) {
                return Err(Error::Invalid(format!(
                    "feature set '{}' lists input '{i}' twice: remove one",
                    self.name
                )));
            }
        }
        if let Some(b) = self.mlr_base.iter().find(|b| !self.inputs.contains(b)) {
            return Err(Error::Invalid(format!(
                "feature set '{}': MLR base input '{b}' is not among the inputs: add it to `inputs` or remove it from `mlr_base`",
                self.name
            )));
        }
        if self.inputs.contains(&self.target) {
            return Err(Error::Invalid(format!(
                "feature set '{}': the target '{}' is also an input",
                self.name, self.target
            )));
        }
        Ok(())
    }

    /// The MLR base inputs (all inputs when the set names none).
    pub fn base_inputs(&self) -> &[String] {
        if self.mlr_base.is_empty() { &self.inputs } else { &self.mlr_base }
    }

    /// Checks that every column the set names exists in `table` and is numeric; the error names the
    /// missing column and the columns the table has, or the first cell that is not a number.
    pub fn check_against(&self, table: &Table) -> Result<()> {
        for name in self.inputs.iter().chain(std::iter::once(&self.target)) {
            if table.column_index(name).is_some() {
                continue;
            }
            if let Some((line, value)) = table.first_non_numeric(name) {
                return Err(Error::Parse {
                    file: table.source.clone(),
                    line,
                    column: name.clone(),
                    message: format!(
                        "'{value}' is not a number, and feature set '{}' uses this column",
                        self.name
                    ),
                });
            }
            return Err(Error::Mismatch(format!(
                "{}: feature set '{}' names column '{name}', which the table does not have (it has: {})",
                table.source,
                self.name,
                table.columns.join(", ")
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults() {
        let fs = FeatureSet::from_toml_str("name='x'\ninputs=['a','b']\nmlr_base=['a']", "fs").unwrap();
        assert_eq!(fs.target, "power_w");
        assert_eq!(fs.group, "kernel");
        assert_eq!(fs.base_inputs(), ["a".to_string()]);
    }

    #[test]
    fn base_outside_inputs_is_rejected() {
        let err = FeatureSet::from_toml_str("name='x'\ninputs=['a']\nmlr_base=['z']", "fs").unwrap_err();
        assert!(err.to_string().contains("'z' is not among the inputs"));
    }

    #[test]
    fn a_missing_column_is_named() {
        let t = Table::read_csv_bytes(b"kernel,power_w,a\nk,1,2\n", "t.csv", "kernel").unwrap();
        let fs = FeatureSet::from_toml_str("name='x'\ninputs=['a','b']", "fs").unwrap();
        let msg = fs.check_against(&t).unwrap_err().to_string();
        assert!(msg.contains("column 'b'"), "{msg}");
    }
}
