//! What `gpumodel collect --suite` prints when it ends: the training table written, its rows, and the
//! command that trains on it; over two or more clock pairs also the utilization profiles and the command
//! that trains a clock model on them.

use super::{Plan, SuiteMetadata, Summary, feature_set_path};
use gpumodel_models::export::{Cell, Column, Export, Section};
use serde::Serialize;

/// The result of one `gpumodel collect --suite` run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteReport {
    /// The training table (CSV), its metadata (JSON) and its feature set (TOML), as the caller named them.
    pub table: String,
    pub metadata: String,
    pub feature_set: String,
    /// Rows written by this run, and rows a resumed table already had.
    pub rows_written: usize,
    pub rows_kept: usize,
    /// Stopped early (Ctrl-C): every finished row is in the table; `--resume` continues it.
    pub interrupted: bool,
    pub warnings: Vec<String>,
    /// The command that trains the power model on the table.
    pub train_command: String,
    /// The utilization profiles written beside a table over two or more clock pairs, and the command that
    /// trains a clock model on them.
    pub profiles: Option<String>,
    pub clock_train_command: Option<String>,
}

impl SuiteReport {
    pub fn new(plan: &Plan, summary: &Summary) -> SuiteReport {
        let table = plan.out.display().to_string();
        let feature_set = feature_set_path(&plan.out).display().to_string();
        let profiles = summary.profiles.as_ref().map(|p| p.display().to_string());
        SuiteReport {
            clock_train_command: profiles
                .as_ref()
                .map(|p| format!("gpumodel train --data {p} --no-test --out-dir models")),
            profiles,
            metadata: SuiteMetadata::path_for(&plan.out).display().to_string(),
            train_command: format!("gpumodel train --data {table} --import table --features {feature_set}"),
            table,
            feature_set,
            rows_written: summary.rows_written,
            rows_kept: summary.rows_kept,
            interrupted: summary.interrupted,
            warnings: summary.warnings.clone(),
        }
    }
}

impl Export for SuiteReport {
    const COMMAND: &'static str = "collect-suite";

    fn sections(&self) -> Vec<Section> {
        let mut s = Section::new(vec![
            Column::new("table", "table"),
            Column::new("rows_written", "rows written"),
            Column::new("rows_kept", "kept from before"),
            Column::new("interrupted", "interrupted"),
            Column::new("metadata", "metadata"),
            Column::new("feature_set", "feature set"),
        ]);
        let count = |n: usize| Cell::int(i64::try_from(n).unwrap_or(i64::MAX));
        s.push(vec![
            Cell::text(&self.table),
            count(self.rows_written),
            count(self.rows_kept),
            Cell::text(if self.interrupted { "yes" } else { "no" }),
            Cell::text(&self.metadata),
            Cell::text(&self.feature_set),
        ]);
        vec![s]
    }

    fn notes(&self) -> Vec<String> {
        if self.interrupted {
            vec![format!("interrupted: continue with --resume --out {}", self.table)]
        } else {
            let mut n = vec![format!("train with: {}", self.train_command)];
            if let Some(c) = &self.clock_train_command {
                n.push(format!("train a clock model with: {c}"));
            }
            n
        }
    }
}
