//! One `Dataset` type for every model: records (rows × inputs), targets, feature names and groups, with
//! splits and folds as methods (random k-fold as in the paper, grouped k-fold that leaves whole kernels
//! out, grouped hold-out for validation).

use crate::error::{Error, Result};
use crate::featureset::FeatureSet;
use crate::table::Table;
use ndarray::{Array1, Array2, Axis};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Inputs, targets, names and groups of a set of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Rows × inputs.
    pub records: Array2<f64>,
    /// One target per row.
    pub targets: Array1<f64>,
    /// Input names, in column order.
    pub feature_names: Vec<String>,
    /// Target name.
    pub target_name: String,
    /// Group (kernel / application) of each row.
    pub groups: Vec<String>,
}

/// Train and test row indices of one fold.
#[derive(Debug, Clone, PartialEq)]
pub struct Fold {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

impl Dataset {
    /// Takes the feature set's inputs and target from a table, checking that every value is finite.
    pub fn from_table(table: &Table, fs: &FeatureSet) -> Result<Dataset> {
        fs.check()?;
        fs.check_against(table)?;
        if table.n_rows() == 0 {
            return Err(Error::Invalid(format!("{}: the dataset is empty", table.source)));
        }
        let idx: Vec<usize> =
            fs.inputs.iter().map(|n| table.column_index(n).expect("checked above")).collect();
        let records = table.data.select(Axis(1), &idx);
        let targets = table.column(&fs.target).expect("checked above").to_owned();
        let groups = if fs.group == table.group_column {
            table.groups.clone()
        } else if let Some(g) = table.text_column(&fs.group) {
            g.to_vec()
        } else if let Some(c) = table.column(&fs.group) {
            c.iter().map(|x| x.to_string()).collect()
        } else {
            return Err(Error::Mismatch(format!("{}: group column '{}' not found", table.source, fs.group)));
        };
        let ds = Dataset {
            records,
            targets,
            feature_names: fs.inputs.clone(),
            target_name: fs.target.clone(),
            groups,
        };
        ds.check_finite(&table.source)?;
        Ok(ds)
    }

    /// Rejects NaN and infinite values, naming the first row (1-based data row) and column.
    pub fn check_finite(&self, source: &str) -> Result<()> {
        for (i, row) in self.records.rows().into_iter().enumerate() {
            if let Some(j) = row.iter().position(|x| !x.is_finite()) {
                return Err(Error::Invalid(format!(
                    "{source}: row {} column '{}' is {}: remove or repair the row",
                    i + 1,
                    self.feature_names[j],
                    row[j]
                )));
            }
        }
        if let Some(i) = self.targets.iter().position(|x| !x.is_finite()) {
            return Err(Error::Invalid(format!(
                "{source}: row {} target '{}' is {}: remove or repair the row",
                i + 1,
                self.target_name,
                self.targets[i]
            )));
        }
        Ok(())
    }

    /// Inputs that take a single value on every row (they carry no information, and a model trained on
    /// them would divide by a zero spread), with that value.
    pub fn constant_inputs(&self) -> Vec<(String, f64)> {
        self.records
            .columns()
            .into_iter()
            .zip(&self.feature_names)
            .filter_map(|(c, n)| {
                let first = *c.first()?;
                c.iter().all(|v| *v == first).then(|| (n.clone(), first))
            })
            .collect()
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.records.nrows()
    }

    /// Number of inputs.
    pub fn n_features(&self) -> usize {
        self.records.ncols()
    }

    /// The rows at `rows`, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Dataset {
        Dataset {
            records: self.records.select(Axis(0), rows),
            targets: self.targets.select(Axis(0), rows),
            feature_names: self.feature_names.clone(),
            target_name: self.target_name.clone(),
            groups: rows.iter().map(|&i| self.groups[i].clone()).collect(),
        }
    }

    /// Only the named inputs (e.g. the MLR base subset).
    pub fn select_features(&self, names: &[String]) -> Result<Dataset> {
        let idx = names
            .iter()
            .map(|n| {
                self.feature_names.iter().position(|f| f == n).ok_or_else(|| {
                    Error::Mismatch(format!(
                        "input '{n}' is not in this dataset ({})",
                        self.feature_names.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Dataset {
            records: self.records.select(Axis(1), &idx),
            targets: self.targets.clone(),
            feature_names: names.to_vec(),
            target_name: self.target_name.clone(),
            groups: self.groups.clone(),
        })
    }

    /// Distinct groups in order of first appearance, with their row indices.
    pub fn group_rows(&self) -> Vec<(String, Vec<usize>)> {
        let mut order: Vec<String> = Vec::new();
        let mut rows: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, g) in self.groups.iter().enumerate() {
            let e = rows.entry(g.as_str()).or_default();
            if e.is_empty() {
                order.push(g.clone());
            }
            e.push(i);
        }
        order
            .into_iter()
            .map(|g| {
                let r = rows.remove(g.as_str()).unwrap_or_default();
                (g, r)
            })
            .collect()
    }

    /// Paper protocol: k folds over rows shuffled with `seed`.
    pub fn kfold(&self, k: usize, seed: u64) -> Result<Vec<Fold>> {
        let n = self.n_rows();
        check_k(k, n, "rows")?;
        let mut idx: Vec<usize> = (0..n).collect();
        idx.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        Ok(folds_from_parts(&split_parts(&idx, k)))
    }

    /// Grouped k-fold: whole groups (kernels) are shuffled with `seed` and dealt into k folds, so no group
    /// is ever in both the train and the test side of a fold.
    pub fn group_kfold(&self, k: usize, seed: u64) -> Result<Vec<Fold>> {
        let groups = self.group_rows();
        check_k(k, groups.len(), "groups")?;
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let parts: Vec<Vec<usize>> = split_parts(&order, k)
            .into_iter()
            .map(|gs| gs.iter().flat_map(|&g| groups[g].1.iter().copied()).collect())
            .collect();
        Ok(folds_from_parts(&parts))
    }

    /// Grouped hold-out: about `fraction` of the groups (at least one, never all) go to the second set.
    pub fn group_split(&self, fraction: f64, seed: u64) -> Result<(Vec<usize>, Vec<usize>)> {
        if !(0.0..1.0).contains(&fraction) || fraction == 0.0 {
            return Err(Error::Invalid(format!("validation fraction {fraction} must be in (0, 1)")));
        }
        let groups = self.group_rows();
        if groups.len() < 2 {
            return Err(Error::Invalid(
                "a grouped split needs at least two groups (kernels) in the data".into(),
            ));
        }
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let n_held = ((groups.len() as f64 * fraction).round() as usize).clamp(1, groups.len() - 1);
        let mut train = Vec::new();
        let mut held = Vec::new();
        for (pos, &g) in order.iter().enumerate() {
            let target = if pos < n_held { &mut held } else { &mut train };
            target.extend(groups[g].1.iter().copied());
        }
        train.sort_unstable();
        held.sort_unstable();
        Ok((train, held))
    }
}

fn check_k(k: usize, n: usize, what: &str) -> Result<()> {
    if k < 2 || k > n {
        return Err(Error::Invalid(format!(
            "{k}-fold cross-validation needs 2 ≤ k ≤ the number of {what} ({n}): lower --group-folds / --folds, or add data"
        )));
    }
    Ok(())
}

fn split_parts(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    let n = items.len();
    (0..k).map(|f| items[f * n / k..(f + 1) * n / k].to_vec()).collect()
}

fn folds_from_parts(parts: &[Vec<usize>]) -> Vec<Fold> {
    (0..parts.len())
        .map(|f| {
            let mut test = parts[f].clone();
            let mut train: Vec<usize> = parts
                .iter()
                .enumerate()
                .filter(|(g, _)| *g != f)
                .flat_map(|(_, p)| p.iter().copied())
                .collect();
            test.sort_unstable();
            train.sort_unstable();
            Fold { train, test }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn toy() -> Dataset {
        let n = 30;
        Dataset {
            records: Array2::from_shape_fn((n, 2), |(i, j)| (i * 2 + j) as f64),
            targets: Array1::from_shape_fn(n, |i| i as f64),
            feature_names: vec!["a".into(), "b".into()],
            target_name: "power_w".into(),
            groups: (0..n).map(|i| format!("g{}", i % 7)).collect(),
        }
    }

    #[test]
    fn kfold_covers_every_row_once() {
        let ds = toy();
        let folds = ds.kfold(10, 1).unwrap();
        let mut all: Vec<usize> = folds.iter().flat_map(|f| f.test.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..30).collect::<Vec<_>>());
        for f in &folds {
            assert_eq!(f.train.len() + f.test.len(), 30);
        }
    }

    #[test]
    fn group_kfold_never_shares_a_group() {
        let ds = toy();
        for f in ds.group_kfold(3, 7).unwrap() {
            let tr: BTreeSet<&str> = f.train.iter().map(|&i| ds.groups[i].as_str()).collect();
            let te: BTreeSet<&str> = f.test.iter().map(|&i| ds.groups[i].as_str()).collect();
            assert!(tr.is_disjoint(&te));
            assert!(!te.is_empty());
        }
    }

    #[test]
    fn group_split_holds_whole_groups_out() {
        let ds = toy();
        let (tr, va) = ds.group_split(0.3, 3).unwrap();
        let trg: BTreeSet<&str> = tr.iter().map(|&i| ds.groups[i].as_str()).collect();
        let vag: BTreeSet<&str> = va.iter().map(|&i| ds.groups[i].as_str()).collect();
        assert!(trg.is_disjoint(&vag));
        assert_eq!(vag.len(), 2); // round(7 * 0.3)
        assert_eq!(tr.len() + va.len(), 30);
    }

    #[test]
    fn too_many_folds_is_an_error() {
        assert!(toy().group_kfold(8, 0).is_err());
    }

    #[test]
    fn nan_is_named() {
        let mut ds = toy();
        ds.records[[4, 1]] = f64::NAN;
        let msg = ds.check_finite("x.csv").unwrap_err().to_string();
        assert!(msg.contains("row 5 column 'b' is NaN"), "{msg}");
    }
}
