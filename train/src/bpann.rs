//! The BP-ANN power model (Song et al. §5.4): standardized inputs → hidden sigmoid layers (4, 4 by
//! default) → one linear output (power in W, standardized during training), trained by back-propagation
//! on full batches with Adam (default) or L-BFGS ([`Solver`]).
//!
//! Where the gradients come from ([`Backend`]): by default our own exact back-propagation
//! ([`crate::lbfgs::Workspace`], vectorized; f32 activations with f64 sums on the 4×4 and 8×8 networks,
//! [`BpannParams::precision`], f64 otherwise and for the validation error) with burn's Adam step, and the
//! restarts run on all cores ([`native`]); `Backend::Burn` runs the same Adam with burn's autodiff on its
//! Flex CPU backend ([`burn`]: the general path, one restart at a time; several times slower on the
//! 10-4-4-1 network). L-BFGS always runs natively.
//!
//! Seeded and reproducible: the initial weights come from our own ChaCha RNG (not burn's global one), so
//! one seed gives one model. Several restarts; the kept one has the lowest error on a *grouped*
//! validation split of the training data (whole kernels held out), with early stopping on that split.
//! The test set is never seen here.

#[cfg(feature = "burn")]
mod burn;
mod native;
#[cfg(test)]
mod tests;

#[cfg(feature = "burn")]
pub use burn::burn_forward;

use crate::lbfgs::Precision;
use crate::mlr::{input_scaling, standardize};
use crate::{Error, Result};
use gpumodel_models::Dataset;
use gpumodel_models::artifact::{
    Activation, Arithmetic, Dense, FORMAT_VERSION, ModelArtifact, ModelKind, Scaling,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Unfitted BP-ANN hyper-parameters. Validate with [`BpannParams::check`] before [`BpannParams::fit`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BpannParams {
    /// Hidden layer widths (paper: 4, 4).
    pub hidden: Vec<usize>,
    /// Seed of the first restart; restart r uses `seed + r`.
    pub seed: u64,
    /// Restarts from different initial weights; the best on the validation split is kept.
    pub restarts: usize,
    /// Epoch budget per restart (one epoch = one pass over the training rows: one full-batch step).
    pub max_epochs: usize,
    /// Early stopping: stop a restart when validation error has not improved for this many epochs.
    pub patience: usize,
    /// Adam learning rate.
    pub learning_rate: f64,
    /// Adam epsilon (burn's default is 1e-5; PyTorch and scikit-learn use 1e-8).
    pub epsilon: f64,
    /// Fraction of the training groups (kernels) held out for validation.
    pub validation_fraction: f64,
    /// Hold out whole kernels for validation (true), or a random fraction of the rows (false: what
    /// random k-fold, whose test rows share kernels with the training rows, should stop on).
    pub grouped_validation: bool,
    /// Name of the feature set, recorded in the artifact.
    pub feature_set: String,
    /// Keep every restart and average them (one wider network with block-diagonal hidden layers, so the
    /// artifact format is unchanged) instead of keeping the best one. Off by default: the paper's model
    /// is one 10-4-4-1 network.
    pub ensemble: bool,
    /// The optimizer: full-batch Adam or full-batch L-BFGS.
    pub solver: Solver,
    /// L2 penalty α on the weights of L-BFGS fits (scikit-learn's `alpha`: full-batch L-BFGS steps can
    /// otherwise drive the few weights to extremes). Adam's fits take no penalty.
    pub l2: f64,
    /// Where Adam's gradients come from: our own back-propagation (default) or burn's autodiff.
    /// L-BFGS always runs natively.
    pub backend: Backend,
    /// The arithmetic of the native training gradient (the validation error is always computed in
    /// f64): f32 activations with f64 sums (default; several times faster) or f64 throughout.
    pub precision: Precision,
}

/// Where the full-batch Adam steps run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// Our hand-written exact gradient ([`crate::lbfgs::Workspace`]), restarts on all cores: the same Adam
    /// step as burn's, several times faster on the 10-4-4-1 network.
    #[default]
    Native,
    /// burn's autodiff on its Flex CPU backend (f64), one restart at a time: the general path.
    Burn,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Native => "native",
            Backend::Burn => "burn",
        }
    }
}

/// How the BP-ANN's weights are optimized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Solver {
    /// Full-batch Adam (one step = one epoch).
    #[default]
    Adam,
    /// Full-batch L-BFGS with a hand-written gradient (one step = one iteration, see [`crate::lbfgs`]).
    Lbfgs,
}

impl Solver {
    pub fn name(self) -> &'static str {
        match self {
            Solver::Adam => "adam",
            Solver::Lbfgs => "lbfgs",
        }
    }

    /// Parses `adam` or `lbfgs`.
    pub fn parse(s: &str) -> Result<Solver> {
        match s.trim() {
            "adam" => Ok(Solver::Adam),
            "lbfgs" | "l-bfgs" => Ok(Solver::Lbfgs),
            other => Err(Error::Params(format!("unknown solver '{other}': use adam or lbfgs"))),
        }
    }
}

impl Default for BpannParams {
    fn default() -> Self {
        BpannParams {
            hidden: vec![4, 4],
            seed: 1,
            restarts: 3,
            max_epochs: 2000,
            patience: 300,
            learning_rate: 0.01,
            epsilon: 1e-8,
            validation_fraction: 0.2,
            grouped_validation: true,
            feature_set: "custom".into(),
            ensemble: false,
            solver: Solver::Adam,
            l2: 1e-4,
            backend: Backend::Native,
            precision: Precision::F32,
        }
    }
}

/// What happened in one restart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestartReport {
    pub seed: u64,
    pub epochs_run: usize,
    pub best_epoch: usize,
    /// Validation RMSE (W) of the kept weights of this restart.
    pub validation_rmse_w: f64,
    /// The L2 penalty α its gradient used (0 for Adam).
    pub l2: f64,
}

/// A fitted BP-ANN: the artifact and how it was chosen.
#[derive(Debug, Clone)]
pub struct BpannFit {
    pub artifact: ModelArtifact,
    pub restarts: Vec<RestartReport>,
    /// Index in `restarts` of the kept one.
    pub chosen: usize,
    pub validation_groups: usize,
}

/// A random hold-out of about `fraction` of `n` rows (at least one, never all): (train, held), sorted.
fn row_split(n: usize, fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    use rand::seq::SliceRandom;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let n_held = ((n as f64 * fraction).round() as usize).clamp(1, n.saturating_sub(1).max(1));
    let mut held = order[..n_held].to_vec();
    let mut train = order[n_held..].to_vec();
    held.sort_unstable();
    train.sort_unstable();
    (train, held)
}

/// How often (epochs) the validation error is checked.
const EVAL_EVERY: usize = 10;

/// The burn backend the Adam fits of `Backend::Burn` run on, named once for the artifact's two records
/// (keep in step with the burn version in Cargo.toml).
macro_rules! burn_backend {
    () => {
        "burn 0.22.1 Flex"
    };
}
const BURN_BACKEND: &str = burn_backend!();
/// Why `Backend::Burn` is refused by a build without the `burn` feature, and what to do.
#[cfg(not(feature = "burn"))]
const BURN_NOT_BUILT: &str =
    "--backend burn: this gpumodel was built without burn; rebuild it with `--features burn`";

/// One restart's result: (validation MSE, layers, epoch) of its best weights, and the epochs it ran.
type Outcome = ((f64, Vec<Dense>, usize), usize);

/// Glorot-uniform initial weights, with scikit-learn's factor 2 for logistic units
/// (bound = √(2 / (fan_in + fan_out)), sklearn `_init_coef`), biases drawn the same way.
fn init_layers(sizes: &[usize], rng: &mut ChaCha8Rng) -> Vec<Dense> {
    let last = sizes.len() - 2;
    sizes
        .windows(2)
        .enumerate()
        .map(|(k, w)| {
            let (i, o) = (w[0], w[1]);
            let bound = (2.0 / (i + o) as f64).sqrt();
            let mut draw = || rng.random_range(-bound..bound);
            let weights = (0..o).map(|_| (0..i).map(|_| draw()).collect()).collect();
            let bias = (0..o).map(|_| draw()).collect();
            Dense {
                weights,
                bias,
                activation: if k < last { Activation::Sigmoid } else { Activation::Identity },
            }
        })
        .collect()
}

/// One network that outputs the mean of `nets` (same input width, same depth): the first layers are
/// stacked, the hidden-to-hidden layers block-diagonal, and the output layer concatenated and divided by
/// the number of networks. Exact, because the output layer is linear.
pub fn average_networks(nets: &[Vec<Dense>]) -> Vec<Dense> {
    let k = nets.len() as f64;
    let depth = nets[0].len();
    (0..depth)
        .map(|l| {
            let act = nets[0][l].activation;
            if l + 1 == depth {
                let mut w = Vec::new();
                for n in nets {
                    w.extend(n[l].weights[0].iter().map(|x| x / k));
                }
                let b = nets.iter().map(|n| n[l].bias[0]).sum::<f64>() / k;
                return Dense { weights: vec![w], bias: vec![b], activation: act };
            }
            let in_widths: Vec<usize> = nets.iter().map(|n| n[l].weights[0].len()).collect();
            let total_in: usize = if l == 0 { in_widths[0] } else { in_widths.iter().sum() };
            let mut weights = Vec::new();
            let mut bias = Vec::new();
            let mut offset = 0;
            for (n, &wi) in nets.iter().zip(&in_widths) {
                for (row, b) in n[l].weights.iter().zip(&n[l].bias) {
                    let mut full = vec![0.0; total_in];
                    let at = if l == 0 { 0 } else { offset };
                    full[at..at + wi].copy_from_slice(row);
                    weights.push(full);
                    bias.push(*b);
                }
                offset += wi;
            }
            Dense { weights, bias, activation: act }
        })
        .collect()
}

impl BpannParams {
    /// Validates the hyper-parameters; each error says which one and what is allowed.
    pub fn check(self) -> Result<BpannParams> {
        let bad = |m: String| Err(Error::Params(m));
        if self.hidden.is_empty() || self.hidden.iter().any(|&h| h == 0 || h > 64) {
            return bad(format!(
                "--hidden {:?}: give one or more layer widths between 1 and 64, e.g. --hidden 4,4",
                self.hidden
            ));
        }
        if self.restarts == 0 || self.restarts > 100 {
            return bad(format!("--restarts {} must be between 1 and 100", self.restarts));
        }
        if self.max_epochs == 0 {
            return bad("--epochs must be at least 1".into());
        }
        if !(self.learning_rate > 0.0 && self.learning_rate < 10.0) {
            return bad(format!("--learning-rate {} must be in (0, 10)", self.learning_rate));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return bad(format!("Adam epsilon {} must be in (0, 1)", self.epsilon));
        }
        if !(self.l2 >= 0.0 && self.l2 < 1e6) {
            return bad(format!("--l2 {} must be in [0, 1e6)", self.l2));
        }
        if !(self.validation_fraction > 0.0 && self.validation_fraction < 0.9) {
            return bad(format!("--validation {} must be in (0, 0.9)", self.validation_fraction));
        }
        #[cfg(not(feature = "burn"))]
        if self.backend == Backend::Burn {
            return bad(BURN_NOT_BUILT.into());
        }
        Ok(self)
    }

    /// Fits the network (see the module docs) and returns the artifact.
    pub fn fit(&self, ds: &Dataset) -> Result<ModelArtifact> {
        Ok(self.fit_report(ds, &mut |_| {})?.artifact)
    }

    /// Fits the network, calling `progress(epochs)` as epochs complete, and reports every restart.
    pub fn fit_report(&self, ds: &Dataset, progress: &mut dyn FnMut(u64)) -> Result<BpannFit> {
        #[cfg(not(feature = "burn"))]
        if self.backend == Backend::Burn {
            return Err(Error::Params(BURN_NOT_BUILT.into()));
        }
        if ds.n_rows() < 10 {
            return Err(Error::Invalid(format!(
                "the BP-ANN needs at least 10 training rows; the data has {}",
                ds.n_rows()
            )));
        }
        ds.check_finite("training data")?;
        let (train_rows, val_rows) = if self.grouped_validation {
            ds.group_split(self.validation_fraction, self.seed)?
        } else {
            row_split(ds.n_rows(), self.validation_fraction, self.seed)
        };
        let validation_groups = ds.select_rows(&val_rows).group_rows().len();
        let train = ds.select_rows(&train_rows);
        let val = ds.select_rows(&val_rows);
        let xs = input_scaling(&train.records);
        let tm = train.targets.mean().unwrap_or(0.0);
        let mut ts = train.targets.std(0.0);
        if ts <= 1e-12 {
            ts = 1.0;
        }
        let zt = standardize(&train.records, &xs);
        let zv = standardize(&val.records, &xs);
        let yt: Vec<f64> = train.targets.iter().map(|y| (y - tm) / ts).collect();
        let yv: Vec<f64> = val.targets.iter().map(|y| (y - tm) / ts).collect();

        let mut sizes = vec![ds.n_features()];
        sizes.extend(&self.hidden);
        sizes.push(1);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let outcomes = self.restarts_run(&sizes, (&zt, &yt), (&zv, &yv), threads, progress);
        let jobs = self.jobs();
        let n = self.restarts;
        let outcomes = outcomes
            .into_iter()
            .zip(&jobs)
            .map(|(o, &(_, r))| {
                o.map_err(|m| {
                    Error::Invalid(format!(
                        "BP-ANN restart {} of {n} (seed {}) failed: {m} (the other restarts finished; this is a bug, please report it)",
                        r + 1,
                        self.seed.wrapping_add(r as u64)
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;

        let mut reports = Vec::new();
        let mut kept_layers: Vec<(f64, Vec<Dense>)> = Vec::new();
        for ((kept, epochs_run), &(alpha, r)) in outcomes.into_iter().zip(&jobs) {
            reports.push(RestartReport {
                seed: self.seed.wrapping_add(r as u64),
                epochs_run,
                best_epoch: kept.2,
                validation_rmse_w: kept.0.sqrt() * ts,
                l2: alpha,
            });
            kept_layers.push((kept.0, kept.1));
        }
        if kept_layers.is_empty() {
            return Err(Error::Invalid("no restart finished".into()));
        }
        // The restart with the lowest validation MSE (the first of equals), or the average of all of them.
        let chosen =
            (0..kept_layers.len()).fold(0, |i, j| if kept_layers[j].0 < kept_layers[i].0 { j } else { i });
        let layers = if self.ensemble && kept_layers.len() > 1 {
            average_networks(&kept_layers.iter().map(|k| k.1.clone()).collect::<Vec<_>>())
        } else {
            kept_layers[chosen].1.clone()
        };
        let artifact = ModelArtifact {
            format_version: FORMAT_VERSION,
            kind: ModelKind::Bpann,
            inputs: ds.feature_names.clone(),
            target: ds.target_name.clone(),
            feature_set: self.feature_set.clone(),
            input_scaling: xs,
            target_scaling: Scaling { mean: vec![tm], std: vec![ts] },
            layers,
            base_columns: gpumodel_models::features::base_columns(&ds.feature_names)?,
            training: serde_json::Value::Null,
            physical: None,
            arithmetic: Some(self.arithmetic(&sizes)),
            residual: None,
            subset: None,
        };
        Ok(BpannFit { artifact, restarts: reports, chosen, validation_groups })
    }

    /// The arithmetic a fit of the network `sizes` runs in on this CPU, for the artifact.
    pub fn arithmetic(&self, sizes: &[usize]) -> Arithmetic {
        if self.solver == Solver::Adam && self.backend == Backend::Burn {
            return Arithmetic { instructions: BURN_BACKEND.into(), precision: "f64".into() };
        }
        let layout = crate::lbfgs::Layout { sizes: sizes.to_vec() };
        let precision = match layout.runs_in(self.precision) {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        };
        Arithmetic { instructions: crate::lbfgs::instruction_path().into(), precision: precision.into() }
    }

    /// What computes the steps, for the artifact's training record.
    pub fn backend_description(&self) -> &'static str {
        match (self.solver, self.backend, self.precision) {
            (Solver::Adam, Backend::Burn, _) => concat!(burn_backend!(), " (f64), full-batch Adam"),
            (Solver::Adam, Backend::Native, Precision::F64) => {
                "gpumodel-train native gradient (f64, vectorized blocks of rows), full-batch Adam (burn's step), restarts in parallel"
            }
            (Solver::Adam, Backend::Native, Precision::F32) => {
                "gpumodel-train native gradient (f32 activations with f64 sums on 4x4 and 8x8 networks, else f64; validation in f64), full-batch Adam (burn's step), restarts in parallel"
            }
            (Solver::Lbfgs, _, Precision::F64) => {
                "gpumodel-train native gradient (f64, vectorized blocks of rows), full-batch L-BFGS (m = 10, Armijo backtracking), restarts in parallel"
            }
            (Solver::Lbfgs, _, Precision::F32) => {
                "gpumodel-train native gradient (f32 activations with f64 sums on 4x4 and 8x8 networks, else f64; validation in f64), full-batch L-BFGS (m = 10, Armijo backtracking), restarts in parallel"
            }
        }
    }

    /// Total progress units (epochs) a fit reports, for a progress bar.
    pub fn progress_len(&self) -> u64 {
        (self.restarts * self.max_epochs) as u64
    }

    /// The restarts a fit trains, in order: (α of its gradient, restart index r: seed `seed + r`). Adam's
    /// α is 0: it takes no penalty.
    fn jobs(&self) -> Vec<(f64, usize)> {
        let a = if self.solver == Solver::Lbfgs { self.l2 } else { 0.0 };
        (0..self.restarts).map(|r| (a, r)).collect()
    }
}

/// The artifact's forward pass of standardized rows through `layers` (standardized output).
#[cfg(any(test, feature = "burn"))]
fn forward_std(layers: &[Dense], z: &ndarray::Array2<f64>) -> Vec<f64> {
    let art = ModelArtifact {
        format_version: FORMAT_VERSION,
        kind: ModelKind::Bpann,
        inputs: vec![String::new(); z.ncols()],
        target: String::new(),
        feature_set: String::new(),
        input_scaling: Scaling { mean: vec![0.0; z.ncols()], std: vec![1.0; z.ncols()] },
        target_scaling: Scaling { mean: vec![0.0], std: vec![1.0] },
        layers: layers.to_vec(),
        base_columns: Vec::new(),
        training: serde_json::Value::Null,
        physical: None,
        arithmetic: None,
        residual: None,
        subset: None,
    };
    art.predict(z.view()).to_vec()
}
