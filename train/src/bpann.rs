//! The BP-ANN power model (Song et al. §5.4): standardized inputs → hidden sigmoid layers (4, 4 by
//! default) → one linear output (power in W, standardized during training), trained by back-propagation,
//! full batch, with Adam (default) or L-BFGS ([`Solver`]); Adam optionally on mini-batches
//! ([`BpannParams::batch_size`]).
//!
//! Where the gradients come from ([`Backend`]): by default our own exact back-propagation
//! ([`crate::lbfgs::Workspace`], vectorized; f32 activations with f64 sums on the 4×4 and 8×8 networks,
//! [`BpannParams::precision`], f64 otherwise and for the validation error) with burn's Adam step, and the restarts run on all
//! cores; `Backend::Burn` runs the same Adam with burn's autodiff on its Flex CPU backend (the general
//! path, one restart at a time; several times slower on the 10-4-4-1 network). L-BFGS always runs
//! natively.
//!
//! Seeded and reproducible: the initial weights come from our own ChaCha RNG (not burn's global one), so
//! one seed gives one model. Several restarts; the kept one has the lowest error on a *grouped*
//! validation split of the training data (whole kernels held out), with early stopping on that split.
//! With an α grid ([`BpannParams::l2_grid`]) the L2 penalty is chosen inside the fit too: on that split,
//! or by inner K-fold CV of the fit's rows ([`BpannParams::l2_folds`]). The test set is never seen here.

use crate::lbfgs::{Precision, Workspace};
use crate::mlr::{input_scaling, standardize};
use crate::{Error, Result};
#[cfg(feature = "burn")]
use burn::module::{Module, Param};
#[cfg(feature = "burn")]
use burn::nn::Linear;
#[cfg(feature = "burn")]
use burn::optim::{AdamConfig, GradientsParams};
#[cfg(feature = "burn")]
use burn::tensor::{DType, Device, Tensor, TensorData, activation::sigmoid};
#[cfg(feature = "burn")]
use gpumodel_models::artifact::Residual;
use gpumodel_models::artifact::{
    Activation, Arithmetic, Dense, FORMAT_VERSION, ModelArtifact, ModelKind, Scaling, TargetTransform,
};
use gpumodel_models::{Dataset, Fold};
use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, mpsc};

/// Unfitted BP-ANN hyper-parameters. Validate with [`BpannParams::check`] before [`BpannParams::fit`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BpannParams {
    /// Hidden layer widths (paper: 4, 4).
    pub hidden: Vec<usize>,
    /// Seed of the first restart; restart r uses `seed + r`.
    pub seed: u64,
    /// Restarts from different initial weights; the best on the validation split is kept.
    pub restarts: usize,
    /// Epoch budget per restart (one epoch = one pass over the training rows: one full-batch Adam step,
    /// or one step per mini-batch with `batch_size`).
    pub max_epochs: usize,
    /// Early stopping: stop a restart when validation error has not improved for this many epochs.
    pub patience: usize,
    /// Adam learning rate of full-batch fits.
    pub learning_rate: f64,
    /// Adam's mini-batch size: 0 for full batch (one step per epoch, as before). N > 0: every epoch
    /// reshuffles the training rows (the restart's seeded RNG, after its initial weights) and takes one
    /// Adam step per batch of N rows on the batch's mean loss (the last batch smaller; scikit-learn's
    /// `batch_size`); Adam's bias correction counts steps. A training side of N rows or fewer is one
    /// batch: full batch. The validation check still runs every 10 epochs. L-BFGS takes no batches.
    pub batch_size: usize,
    /// Adam learning rate of mini-batch fits (`batch_size` > 0): scikit-learn's `learning_rate_init`
    /// by default.
    pub batch_learning_rate: f64,
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
    /// The optimizer: full-batch Adam through burn, or full-batch L-BFGS on ndarray.
    pub solver: Solver,
    /// L2 penalty α on the weights (scikit-learn's `alpha`; used by L-BFGS, whose full-batch steps can
    /// otherwise drive the few weights to extremes). Unused when `l2_grid` is set.
    pub l2: f64,
    /// α chosen inside the fit (`--l2 auto` or a list): every restart is trained once for each α of this
    /// grid (same initial weights for every α), and the (α, restart) pair with the lowest error on the
    /// inner validation split (the one that early-stops and picks the restart) is kept. The penalty then
    /// enters Adam's gradient too (a fixed `l2` is L-BFGS's only, as before). `None`: the fixed `l2`.
    pub l2_grid: Option<Vec<f64>>,
    /// With an α grid: 0 chooses α on the fit's validation split as above; K from 3 to 20 by inner K-fold CV of the
    /// fit's rows instead (whole kernels, or random rows where the fit validates on random rows): for each
    /// α a fit on K − 1 inner folds predicts the K-th, the α with the lowest pooled squared error is kept,
    /// and the network is then fitted on all the rows with that α alone.
    pub l2_folds: usize,
    /// Where Adam's gradients come from: our own back-propagation (default) or burn's autodiff.
    /// L-BFGS always runs natively.
    pub backend: Backend,
    /// The arithmetic of the native training gradient (the validation error is always computed in
    /// f64): f32 activations with f64 sums (default; several times faster) or f64 throughout.
    pub precision: Precision,
    /// What the network is fitted to: power in watts (`Identity`, the default) or ln(power) (`Log`,
    /// `train --target log`; the standardization is then ln(power)'s, and so are the validation error,
    /// early stopping and the restart choice). The artifact records it and predicts in watts either way.
    pub target: TargetTransform,
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
    /// Adam: full batch (one step = one epoch), or one step per mini-batch ([`BpannParams::batch_size`]).
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

/// The α grid of `--l2 auto`, fixed a priori (BENCHMARKS.md, issue 15, session 11): today's default
/// 1e-4 (scikit-learn's), then two decades apart up to 1, the one fixed α that won the GTX 980 grouped
/// cell in session 8. Three values, so a fit costs three times its restarts.
pub const L2_AUTO_GRID: [f64; 3] = [1e-4, 1e-2, 1.0];

impl Default for BpannParams {
    fn default() -> Self {
        BpannParams {
            hidden: vec![4, 4],
            seed: 1,
            restarts: 3,
            max_epochs: 2000,
            patience: 300,
            learning_rate: 0.01,
            batch_size: 0,
            batch_learning_rate: 1e-3,
            epsilon: 1e-8,
            validation_fraction: 0.2,
            grouped_validation: true,
            feature_set: "custom".into(),
            ensemble: false,
            solver: Solver::Adam,
            l2: 1e-4,
            l2_grid: None,
            l2_folds: 0,
            backend: Backend::Native,
            precision: Precision::F32,
            target: TargetTransform::Identity,
        }
    }
}

/// What happened in one restart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestartReport {
    pub seed: u64,
    pub epochs_run: usize,
    pub best_epoch: usize,
    /// Validation RMSE (W; in ln W under a log target) of the kept weights of this restart.
    pub validation_rmse_w: f64,
    /// The L2 penalty α its gradient used (0 for Adam with a fixed `l2`, which Adam does not use).
    pub l2: f64,
}

/// How a fit with an α grid chose its α.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct L2Choice {
    /// The α candidates, in the order tried.
    pub grid: Vec<f64>,
    /// The α kept: the one of the (α, restart) pair with the lowest validation error (an ensemble:
    /// whose averaged network has the lowest validation error).
    pub chosen: f64,
    /// Per α, the validation RMSE (W) it was judged by (the best restart's or the averaged network's on
    /// the validation split; with `l2_folds`, pooled over the inner folds).
    pub validation_rmse_w: Vec<f64>,
}

/// A fitted BP-ANN: the artifact and how it was chosen.
#[derive(Debug, Clone)]
pub struct BpannFit {
    pub artifact: ModelArtifact,
    pub restarts: Vec<RestartReport>,
    /// Index in `restarts` of the kept one.
    pub chosen: usize,
    pub validation_groups: usize,
    /// With an α grid: how α was chosen (also in the artifact's `training.bpann`).
    pub l2_choice: Option<L2Choice>,
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

/// Early stopping shared by every solver: the weights with the lowest validation MSE so far, and when to
/// give up (`patience` epochs or iterations without a new lowest).
struct EarlyStop {
    /// (validation MSE, weights, epoch) of the best weights so far.
    kept: (f64, Vec<Dense>, usize),
    patience: usize,
}

impl EarlyStop {
    fn new(v: f64, init: Vec<Dense>, patience: usize) -> EarlyStop {
        EarlyStop { kept: (v, init, 0), patience }
    }

    /// At a validation check of `epoch` with validation MSE `v`: keeps `layers()` when `v` is a new
    /// lowest; true when the fit should stop.
    fn should_stop(&mut self, epoch: usize, v: f64, layers: impl FnOnce() -> Vec<Dense>) -> bool {
        if v.is_finite() && v < self.kept.0 {
            self.kept = (v, layers(), epoch);
            false
        } else {
            epoch - self.kept.2 >= self.patience
        }
    }

    fn outcome(self, epochs_run: usize) -> Outcome {
        (self.kept, epochs_run)
    }
}

/// Test-only: the restart of this seed panics at its 60th iteration, a stand-in for a bug, so that the
/// tests can check what a panicking restart does to the others.
#[cfg(test)]
const PANICKING_SEED: u64 = 0x5EED_DEAD;

#[cfg(test)]
fn forced_panic(seed: u64, iteration: usize) {
    if seed == PANICKING_SEED && iteration == 60 {
        panic!("forced panic in the restart of seed {seed} (test hook)");
    }
}

/// What a restart that panicked said (its panic message), for the error the fit returns.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Iterations a worker runs of one restart before it takes the next restart in line.
const SLICE: usize = 50;

/// One restart on our own gradient in progress — full-batch Adam (burn's step, on burn's loss
/// `mean((f − y)²)`, so that it follows `Backend::Burn`'s trajectory up to rounding; tested) or full-batch
/// L-BFGS — with the early stopping shared by both, advanced a slice of iterations at a time.
///
/// Why in slices: the restarts share the threads evenly. Run start to finish, 3 restarts on 2 cores left
/// one core idle for the whole of the third restart (restarts run 500–2000 iterations, so the last one
/// alone was often the longest part of a fit). Each restart's arithmetic depends only on its own state
/// here (the workspaces hold the rows and scratch only), so the outcome is the same however the slices
/// are scheduled (tested against one thread).
struct NativeRun {
    /// The restart's seed (its initial weights).
    seed: u64,
    /// The L2 penalty α of its gradient.
    alpha: f64,
    theta: Vec<f64>,
    g: Vec<f64>,
    /// Adam's first and second moments (unused by L-BFGS), and the steps taken (its bias correction's
    /// counter: one per epoch in full batch, one per batch with mini-batches).
    m1: Vec<f64>,
    m2: Vec<f64>,
    steps: usize,
    /// Mini-batch Adam: the restart's RNG (after its initial weights were drawn), which reshuffles
    /// `order`, the training rows in the current epoch's order.
    rng: ChaCha8Rng,
    order: Vec<usize>,
    /// L-BFGS's memory and current loss, once started.
    opt: Option<crate::lbfgs::Lbfgs>,
    f: f64,
    /// Set up at the first slice (it needs the validation rows); the initial weights until then.
    stop: Option<EarlyStop>,
    init: Vec<Dense>,
    /// Iterations (epochs) run so far, and the progress units reported so far (L-BFGS).
    done: usize,
    reported: usize,
}

impl NativeRun {
    fn new(
        p: &BpannParams,
        layout: &crate::lbfgs::Layout,
        seed: u64,
        alpha: f64,
        (init, rng): (Vec<Dense>, ChaCha8Rng),
    ) -> NativeRun {
        let theta = layout.flatten(&init);
        let np = theta.len();
        let moments = if p.solver == Solver::Adam { np } else { 0 };
        NativeRun {
            seed,
            alpha,
            theta,
            g: vec![0.0; np],
            m1: vec![0.0; moments],
            m2: vec![0.0; moments],
            steps: 0,
            rng,
            order: Vec::new(),
            opt: None,
            f: 0.0,
            stop: None,
            init,
            done: 0,
            reported: 0,
        }
    }

    /// Runs up to `slice` more iterations; the outcome when the restart has finished. `train` holds the
    /// training rows (full batch) or is where mini-batches of `rows` (the training rows and targets)
    /// are dealt.
    #[allow(clippy::too_many_arguments)]
    fn advance(
        &mut self,
        p: &BpannParams,
        layout: &crate::lbfgs::Layout,
        train: &mut Workspace,
        rows: (ArrayView2<'_, f64>, &[f64]),
        val: &mut Workspace,
        slice: usize,
        progress: &mut dyn FnMut(u64),
    ) -> Option<Outcome> {
        let NativeRun {
            seed,
            alpha,
            theta,
            g,
            m1,
            m2,
            steps,
            rng,
            order,
            opt,
            f,
            stop,
            init,
            done,
            reported,
        } = self;
        #[cfg(not(test))]
        let _ = seed;
        let max = p.max_epochs;
        let end = done.saturating_add(slice).min(max);
        let mut finished = *done >= max;
        match p.solver {
            Solver::Adam => {
                let stop = stop
                    .get_or_insert_with(|| EarlyStop::new(val.mse(theta), std::mem::take(init), p.patience));
                let adam = Adam::new(p);
                let batch = p.mini_batch(rows.0.nrows());
                for epoch in *done + 1..=end {
                    match batch {
                        None => {
                            train.loss_grad_into(theta, *alpha, g);
                            *steps += 1;
                            adam.step(theta, g, m1, m2, *steps);
                        }
                        Some(b) => {
                            reshuffle(order, rows.0.nrows(), rng);
                            for chunk in order.chunks(b) {
                                train.deal(rows.0, rows.1, chunk);
                                train.loss_grad_into(theta, *alpha, g);
                                *steps += 1;
                                adam.step(theta, g, m1, m2, *steps);
                            }
                        }
                    }
                    *done = epoch;
                    #[cfg(test)]
                    forced_panic(*seed, epoch);
                    if epoch % EVAL_EVERY == 0 || epoch == max {
                        progress(EVAL_EVERY.min(epoch) as u64);
                        if stop.should_stop(epoch, val.mse(theta), || layout.layers(theta)) {
                            finished = true;
                            break;
                        }
                    }
                }
                if finished || *done >= max {
                    progress(((max - *done) / EVAL_EVERY * EVAL_EVERY) as u64);
                }
            }
            Solver::Lbfgs => {
                let alpha = *alpha;
                let mut eval = |t: &[f64], g: &mut [f64]| train.loss_grad_into(t, alpha, g);
                if opt.is_none() {
                    *f = eval(theta, g);
                    *opt = Some(crate::lbfgs::Lbfgs::new(10));
                }
                let stop = stop
                    .get_or_insert_with(|| EarlyStop::new(val.mse(theta), std::mem::take(init), p.patience));
                if let Some(opt) = opt.as_mut() {
                    for it in *done + 1..=end {
                        let moved = opt.step(theta, f, g, &mut eval);
                        *done = it;
                        #[cfg(test)]
                        forced_panic(*seed, it);
                        if it % EVAL_EVERY == 0 || it == max || !moved {
                            progress((it - *reported) as u64);
                            *reported = it;
                            if stop.should_stop(it, val.mse(theta), || layout.layers(theta)) {
                                finished = true;
                                break;
                            }
                        }
                        if !moved {
                            finished = true;
                            break;
                        }
                    }
                }
                if finished || *done >= max {
                    progress((max - *reported) as u64);
                }
            }
        }
        if finished || *done >= max {
            return stop.take().map(|s| s.outcome(*done));
        }
        None
    }
}

/// burn's Adam step (β 0.9 and 0.999, ε from the params) on burn's loss `mean((f − y)²)`, written out
/// for the native path, at the learning rate of the fit (full batch or mini-batch).
struct Adam {
    b1: f32,
    b2: f32,
    eps: f32,
    learning_rate: f64,
}

impl Adam {
    fn new(p: &BpannParams) -> Adam {
        let learning_rate = p.adam_learning_rate();
        Adam { b1: 0.9, b2: 0.999, eps: p.epsilon as f32, learning_rate }
    }

    /// Step `t` (from 1) with the gradient `g` of `Workspace`'s ½·mean((f − y)²).
    fn step(&self, theta: &mut [f64], g: &[f64], m1: &mut [f64], m2: &mut [f64], t: usize) {
        let Adam { b1, b2, eps, learning_rate } = *self;
        let (f1, f2) = (f64::from(1.0 - b1), f64::from(1.0 - b2));
        let t = i32::try_from(t).unwrap_or(i32::MAX);
        let bc2 = (1.0 - b2.powi(t)).sqrt();
        let step = f64::from(bc2 / (1.0 - b1.powi(t)));
        let floor = f64::from(eps * bc2);
        for (((w, gj), m), v) in theta.iter_mut().zip(g).zip(m1.iter_mut()).zip(m2.iter_mut()) {
            let gj = 2.0 * gj;
            *m = *m * f64::from(b1) + gj * f1;
            *v = *v * f64::from(b2) + gj * gj * f2;
            *w -= *m * step / (v.sqrt() + floor) * learning_rate;
        }
    }
}

/// The next epoch's order of `n` training rows: `order` (the identity at the first epoch) reshuffled
/// by `rng`, as scikit-learn reshuffles its rows every epoch. The native and the burn paths share it.
fn reshuffle(order: &mut Vec<usize>, n: usize, rng: &mut ChaCha8Rng) {
    use rand::seq::SliceRandom;
    if order.len() != n {
        *order = (0..n).collect();
    }
    order.shuffle(rng);
}

#[cfg(feature = "burn")]
#[derive(Module, Debug)]
struct Net {
    layers: Vec<Linear>,
}

#[cfg(feature = "burn")]
impl Net {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let last = self.layers.len() - 1;
        let mut h = x;
        for (k, l) in self.layers.iter().enumerate() {
            h = l.forward(h);
            if k < last {
                h = sigmoid(h);
            }
        }
        h
    }

    /// Builds the network from artifact layers (`weights[out][in]`; burn's Linear holds `[in, out]`).
    fn from_layers(layers: &[Dense], device: &Device) -> Net {
        let layers = layers
            .iter()
            .map(|d| {
                let (o, i) = (d.bias.len(), d.weights.first().map_or(0, Vec::len));
                let mut w = Vec::with_capacity(o * i);
                for r in 0..i {
                    for row in &d.weights {
                        w.push(row[r]);
                    }
                }
                let w = Tensor::<2>::from_data(TensorData::new(w, [i, o]), (device, DType::F64));
                let b = Tensor::<1>::from_data(TensorData::new(d.bias.clone(), [o]), (device, DType::F64));
                Linear { weight: Param::from_tensor(w), bias: Some(Param::from_tensor(b)) }
            })
            .collect();
        Net { layers }
    }

    fn to_layers(&self) -> Vec<Dense> {
        let last = self.layers.len() - 1;
        self.layers
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let w = l.weight.val();
                let [i, o] = w.dims();
                let w: Vec<f64> = w.into_data().convert::<f64>().try_to_vec::<f64>().unwrap_or_default();
                let b: Vec<f64> = match &l.bias {
                    Some(b) => b.val().into_data().convert::<f64>().try_to_vec::<f64>().unwrap_or_default(),
                    None => vec![0.0; o],
                };
                Dense {
                    weights: (0..o).map(|c| (0..i).map(|r| w[r * o + c]).collect()).collect(),
                    bias: b,
                    activation: if k < last { Activation::Sigmoid } else { Activation::Identity },
                }
            })
            .collect()
    }
}

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

/// Mean squared error of `layers` on standardized rows `z` and targets `y` (standardized units).
fn std_mse(layers: &[Dense], z: &Array2<f64>, y: &[f64]) -> f64 {
    let p = forward_std(layers, z);
    p.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / y.len().max(1) as f64
}

/// Index of the first smallest value; a NaN never wins (index 0 if all are NaN).
fn first_min(v: &[f64]) -> usize {
    (0..v.len()).fold(0, |i, j| if v[j] < v[i] || v[i].is_nan() { j } else { i })
}

/// Plain-Rust forward pass of standardized rows through `layers` (standardized output).
fn forward_std(layers: &[Dense], z: &Array2<f64>) -> Vec<f64> {
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
        residual: Default::default(),
        target_transform: Default::default(),
    };
    art.predict(z.view()).to_vec()
}

#[cfg(feature = "burn")]
fn tensor2(a: &Array2<f64>, device: &Device) -> Tensor<2> {
    let data = TensorData::new(a.iter().copied().collect::<Vec<f64>>(), [a.nrows(), a.ncols()]);
    Tensor::<2>::from_data(data, (device, DType::F64))
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
        if !(self.batch_learning_rate > 0.0 && self.batch_learning_rate < 10.0) {
            return bad(format!("--batch-learning-rate {} must be in (0, 10)", self.batch_learning_rate));
        }
        if self.batch_size > 0 && self.solver != Solver::Adam {
            return bad(format!(
                "--batch-size {}: mini-batches are Adam's; L-BFGS takes full batches (give --batch-size 0)",
                self.batch_size
            ));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return bad(format!("Adam epsilon {} must be in (0, 1)", self.epsilon));
        }
        if !(self.l2 >= 0.0 && self.l2 < 1e6) {
            return bad(format!("--l2 {} must be in [0, 1e6)", self.l2));
        }
        if let Some(grid) = &self.l2_grid {
            if grid.is_empty() || grid.len() > 10 {
                return bad(format!("--l2: give 1 to 10 α values to choose from, not {}", grid.len()));
            }
            if let Some(a) = grid.iter().find(|a| !(**a >= 0.0 && **a < 1e6)) {
                return bad(format!("--l2 {a}: every α must be in [0, 1e6)"));
            }
            if (1..3).contains(&self.l2_folds) || self.l2_folds > 20 {
                return bad(format!(
                    "--l2-folds {} must be 0 (the validation split) or 3 to 20",
                    self.l2_folds
                ));
            }
        }
        if self.l2_folds != 0 && self.l2_grid.is_none() {
            return bad(format!(
                "--l2-folds {} chooses α from several: give --l2 auto or a list of values, or drop --l2-folds",
                self.l2_folds
            ));
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
        if self.target == TargetTransform::Log {
            return self.fit_log(ds, progress);
        }
        ds.check_finite("training data")?;
        if let Some(grid) = self.l2_grid.as_ref().filter(|g| g.len() > 1)
            && let Some(folds) = self.inner_folds(ds)?
        {
            return self.fit_l2_by_inner_cv(ds, grid, folds, progress);
        }
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
            .map(|(o, &(alpha, r))| {
                o.map_err(|m| {
                    let alpha = if self.l2_grid.is_some() { format!(", α {alpha}") } else { String::new() };
                    Error::Invalid(format!(
                        "BP-ANN restart {} of {n} (seed {}{alpha}) failed: {m} (the other restarts finished; this is a bug, please report it)",
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
        // Each α's restarts (one block with a fixed α), judged by their validation MSE: the best restart
        // of the block, or the averaged network of an ensemble.
        let blocks: Vec<std::ops::Range<usize>> =
            (0..kept_layers.len()).step_by(n).map(|i| i..(i + n).min(kept_layers.len())).collect();
        let judged: Vec<(f64, usize, Vec<Dense>)> = blocks
            .iter()
            .map(|b| {
                let best =
                    b.clone().fold(b.start, |i, j| if kept_layers[j].0 < kept_layers[i].0 { j } else { i });
                if self.ensemble && b.len() > 1 {
                    let nets: Vec<Vec<Dense>> = kept_layers[b.clone()].iter().map(|k| k.1.clone()).collect();
                    let avg = average_networks(&nets);
                    // With a fixed α the average is kept as it is: no validation pass is needed.
                    let v = if self.l2_grid.is_some() { std_mse(&avg, &zv, &yv) } else { 0.0 };
                    (v, best, avg)
                } else {
                    (kept_layers[best].0, best, kept_layers[best].1.clone())
                }
            })
            .collect();
        // The first block with the lowest validation MSE.
        let k = first_min(&judged.iter().map(|j| j.0).collect::<Vec<_>>());
        let (_, chosen, layers) = judged[k].clone();
        let l2_choice = self.l2_grid.as_ref().map(|grid| L2Choice {
            grid: grid.clone(),
            chosen: grid[k],
            validation_rmse_w: judged.iter().map(|j| j.0.sqrt() * ts).collect(),
        });
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
            // The α chosen inside the fit rides here to the training record (`experiment` keeps it).
            training: match &l2_choice {
                Some(c) => serde_json::json!({ "bpann": {
                    "l2": c.chosen, "l2_grid": c.grid, "l2_validation_rmse_w": c.validation_rmse_w,
                    "l2_chosen_by": "lowest error on the fit's inner validation split (the split that early-stops and picks the restart), each alpha with the same restarts",
                }}),
                None => serde_json::Value::Null,
            },
            physical: None,
            arithmetic: Some(self.arithmetic(&sizes)),
            residual: Default::default(),
            target_transform: Default::default(),
        };
        Ok(BpannFit { artifact, restarts: reports, chosen, validation_groups, l2_choice })
    }

    /// The fit of ln(power): the same fit on `ds` with its targets replaced by their logarithms, whose
    /// artifact then predicts exp of the network's (un-standardized) output. Every power must be
    /// positive.
    fn fit_log(&self, ds: &Dataset, progress: &mut dyn FnMut(u64)) -> Result<BpannFit> {
        check_log_target(ds)?;
        let mut logs = ds.clone();
        logs.targets.mapv_inplace(f64::ln);
        let inner = BpannParams { target: TargetTransform::Identity, ..self.clone() };
        let mut fit = inner.fit_report(&logs, progress)?;
        fit.artifact.target_transform = TargetTransform::Log;
        Ok(fit)
    }

    /// The inner folds α is chosen by on `ds`: `l2_folds`, at most one per kernel (row, under random-row
    /// validation). None — α is then chosen on the validation split — when `l2_folds` is 0 or the data
    /// is too small for inner folds: fewer than 3 folds, or an inner training side with fewer than 20
    /// rows or (whole kernels) 3 kernels, too few for a fit with its own validation split.
    fn inner_folds(&self, ds: &Dataset) -> Result<Option<Vec<Fold>>> {
        let units = if self.grouped_validation { ds.group_rows().len() } else { ds.n_rows() };
        let k = self.l2_folds.min(units);
        if self.l2_folds < 3 || k < 3 || ds.n_rows() < 20 {
            return Ok(None);
        }
        let folds =
            if self.grouped_validation { ds.group_kfold(k, self.seed)? } else { ds.kfold(k, self.seed)? };
        let fits = |f: &Fold| {
            f.train.len() >= 20
                && (!self.grouped_validation || ds.select_rows(&f.train).group_rows().len() >= 3)
        };
        Ok(folds.iter().all(fits).then_some(folds))
    }

    /// α chosen by inner `k`-fold CV of `ds` (see [`BpannParams::l2_folds`]), then the fit on all of `ds`
    /// with that α alone.
    fn fit_l2_by_inner_cv(
        &self,
        ds: &Dataset,
        grid: &[f64],
        folds: Vec<Fold>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<BpannFit> {
        let k = folds.len();
        let one = |a: f64| BpannParams { l2_grid: Some(vec![a]), l2_folds: 0, ..self.clone() };
        let mut sse = vec![0.0; grid.len()];
        for f in &folds {
            let (train, held) = (ds.select_rows(&f.train), ds.select_rows(&f.test));
            for (e, &a) in sse.iter_mut().zip(grid) {
                let m = one(a).fit_report(&train, progress)?.artifact;
                let pred = m.predict(held.records.view());
                *e += pred.iter().zip(held.targets.iter()).map(|(p, y)| (p - y) * (p - y)).sum::<f64>();
            }
        }
        // The first α with the lowest pooled squared error.
        let best = first_min(&sse);
        let mut fit = one(grid[best]).fit_report(ds, progress)?;
        let rmse: Vec<f64> = sse.iter().map(|e| (e / ds.n_rows() as f64).sqrt()).collect();
        fit.artifact.training = serde_json::json!({ "bpann": {
            "l2": grid[best], "l2_grid": grid, "l2_validation_rmse_w": rmse, "l2_folds": k,
            "l2_chosen_by": format!("lowest squared error pooled over {k} inner folds of the fit's rows ({}), each alpha fitted on the other folds; then fitted on all the rows with that alpha", if self.grouped_validation { "whole kernels" } else { "random rows" }),
        }});
        fit.l2_choice = Some(L2Choice { grid: grid.to_vec(), chosen: grid[best], validation_rmse_w: rmse });
        Ok(fit)
    }

    /// Every restart's outcome, in the order of `jobs()` (restart order; with an α grid, every restart of
    /// the first α, then of the second, …): (validation MSE, layers, epoch) of its best weights and
    /// the epochs it ran, or the message of the panic that ended it. `train` and `val` are the
    /// standardized rows and targets.
    ///
    /// The native paths run up to `threads` restarts at once (each restart depends only on its seed,
    /// so the outcomes are the same as one after the other; tested); burn's runs one at a time. A
    /// native restart that panics (a bug) ends alone: the others run to their end and the caller gets
    /// the panic's message in its place (tested), instead of a panic across the restart threads.
    fn restarts_run(
        &self,
        sizes: &[usize],
        train: (&Array2<f64>, &[f64]),
        val: (&Array2<f64>, &[f64]),
        threads: usize,
        progress: &mut dyn FnMut(u64),
    ) -> Vec<std::result::Result<Outcome, String>> {
        // The restart's initial weights, and its RNG after drawing them (mini-batch Adam's shuffles).
        let init = |r: usize| {
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed.wrapping_add(r as u64));
            (init_layers(sizes, &mut rng), rng)
        };
        let jobs = self.jobs();
        #[cfg(feature = "burn")]
        if self.solver == Solver::Adam && self.backend == Backend::Burn {
            let (zv, yv) = val;
            let device = Device::flex().autodiff();
            let val_mse = |layers: &[Dense]| std_mse(layers, zv, yv);
            return jobs
                .iter()
                .map(|&(alpha, r)| Ok(self.adam_burn(&device, train, alpha, init(r), &val_mse, progress)))
                .collect();
        }
        let layout = crate::lbfgs::Layout { sizes: sizes.to_vec() };
        let buffers = || {
            (
                Workspace::with_precision(&layout, train.0.view(), train.1, self.precision),
                crate::lbfgs::Workspace::new(&layout, val.0.view(), val.1),
            )
        };
        let threads = threads.clamp(1, jobs.len().max(1));
        let run = |&(alpha, r): &(f64, usize)| {
            NativeRun::new(self, &layout, self.seed.wrapping_add(r as u64), alpha, init(r))
        };
        if threads == 1 {
            let (mut tr, mut va) = buffers();
            return jobs
                .iter()
                .map(|job| {
                    let mut run = run(job);
                    // The buffers are scratch that every evaluation rewrites, so the next restart may
                    // reuse them after a panic.
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        loop {
                            if let Some(out) = run.advance(
                                self,
                                &layout,
                                &mut tr,
                                (train.0.view(), train.1),
                                &mut va,
                                self.max_epochs,
                                progress,
                            ) {
                                return out;
                            }
                        }
                    }))
                    .map_err(|e| panic_message(e.as_ref()))
                })
                .collect();
        }
        // Workers take the restart first in line, run a slice of it and put it back at the end of the
        // line until it finishes (so all restarts advance together and no core waits for the last one),
        // and send progress and outcomes here; this thread forwards the progress (the callback need not
        // be Send) and files outcomes by restart.
        enum Msg {
            Progress(u64),
            Done(usize, std::result::Result<Outcome, String>),
        }
        // The restarts waiting for a worker, and how many have not finished yet.
        let line: Line = Mutex::new((jobs.iter().map(run).enumerate().collect(), jobs.len()));
        let moved = Condvar::new();
        type Line = Mutex<(VecDeque<(usize, NativeRun)>, usize)>;
        struct Abandon<'a>(&'a Line, &'a Condvar);
        impl Drop for Abandon<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    let mut l = self.0.lock().unwrap_or_else(|e| e.into_inner());
                    l.0.clear();
                    l.1 = 0;
                    self.1.notify_all();
                }
            }
        }
        let mut outcomes: Vec<Option<std::result::Result<Outcome, String>>> = vec![None; jobs.len()];
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            for _ in 0..threads {
                let tx = tx.clone();
                let (line, moved, buffers, layout) = (&line, &moved, &buffers, &layout);
                scope.spawn(move || {
                    // A panic inside a restart is caught below and ends that restart alone. One anywhere
                    // else in a worker would take the worker with it, and with it the count of
                    // unfinished restarts: the guard then empties the line and wakes the others so
                    // that they stop, and the scope re-raises the panic (instead of every thread
                    // waiting forever).
                    let _abandon = Abandon(line, moved);
                    let (mut tr, mut va) = buffers();
                    let lock = || line.lock().unwrap_or_else(|e| e.into_inner());
                    loop {
                        let next = {
                            let mut l = lock();
                            loop {
                                if let Some(item) = l.0.pop_front() {
                                    break Some(item);
                                }
                                if l.1 == 0 {
                                    break None;
                                }
                                l = moved.wait(l).unwrap_or_else(|e| e.into_inner());
                            }
                        };
                        let Some((r, mut run)) = next else { break };
                        // The buffers are scratch that every evaluation rewrites, so this worker may go on
                        // with the other restarts after a panic in this one.
                        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            run.advance(
                                self,
                                layout,
                                &mut tr,
                                (train.0.view(), train.1),
                                &mut va,
                                SLICE,
                                &mut |u| {
                                    let _ = tx.send(Msg::Progress(u));
                                },
                            )
                        }));
                        let mut l = lock();
                        match out {
                            Ok(Some(out)) => {
                                let _ = tx.send(Msg::Done(r, Ok(out)));
                                l.1 -= 1;
                            }
                            Ok(None) => l.0.push_back((r, run)),
                            Err(e) => {
                                let _ = tx.send(Msg::Done(r, Err(panic_message(e.as_ref()))));
                                l.1 -= 1;
                            }
                        }
                        moved.notify_all();
                    }
                });
            }
            drop(tx);
            for msg in rx {
                match msg {
                    Msg::Progress(u) => progress(u),
                    Msg::Done(r, out) => outcomes[r] = Some(out),
                }
            }
        });
        // A worker that panicked outside a restart has already re-raised its panic at the end of the
        // scope, so every restart has an outcome here.
        outcomes.into_iter().flatten().collect()
    }

    /// One restart of Adam (full batch, or mini-batches dealt as the native path deals them) from
    /// `init` with burn's autodiff on the standardized rows `zt`, `yt` (the general path, kept for
    /// reference and for networks the native path does not cover).
    #[cfg(feature = "burn")]
    fn adam_burn(
        &self,
        device: &Device,
        (zt, yt): (&Array2<f64>, &[f64]),
        alpha: f64,
        (init, mut rng): (Vec<Dense>, ChaCha8Rng),
        val_mse: &dyn Fn(&[Dense]) -> f64,
        progress: &mut dyn FnMut(u64),
    ) -> Outcome {
        let rows = |idx: &[usize]| {
            let x = tensor2(&zt.select(ndarray::Axis(0), idx), device);
            let y: Vec<f64> = idx.iter().map(|&r| yt[r]).collect();
            (x, Tensor::<2>::from_data(TensorData::new(y, [idx.len(), 1]), (device, DType::F64)))
        };
        let n = zt.nrows();
        let batch = self.mini_batch(n);
        let whole = if batch.is_none() { Some(rows(&(0..n).collect::<Vec<_>>())) } else { None };
        let learning_rate = self.adam_learning_rate();
        let mut order = Vec::new();
        let mut net = Net::from_layers(&init, device);
        let mut opt = AdamConfig::new().with_epsilon(self.epsilon as f32).init();
        let mut stop = EarlyStop::new(val_mse(&init), init, self.patience);
        let mut epochs_run = 0;
        for epoch in 1..=self.max_epochs {
            let batches: Vec<(Tensor<2>, Tensor<2>)> = match (&whole, batch) {
                (Some(xy), _) => vec![xy.clone()],
                (None, Some(b)) => {
                    reshuffle(&mut order, n, &mut rng);
                    order.chunks(b).map(rows).collect()
                }
                (None, None) => unreachable!("full batch builds `whole`"),
            };
            for (x, y) in batches {
                let pred = net.forward(x.clone());
                let diff = pred - y;
                let mut loss = (diff.clone() * diff).mean();
                if alpha > 0.0 {
                    // The native path's penalty on the same scale: α/n·‖W‖² (weights, not biases) added to
                    // mean((f − y)²), n the rows of the batch.
                    let n = x.dims()[0].max(1) as f64;
                    for l in &net.layers {
                        let w = l.weight.val();
                        loss = loss + (w.clone() * w).sum().mul_scalar(alpha / n);
                    }
                }
                let grads = GradientsParams::from_grads(loss.backward(), &net);
                net = opt.step(learning_rate, net, grads);
            }
            epochs_run = epoch;
            if epoch % EVAL_EVERY == 0 || epoch == self.max_epochs {
                progress(EVAL_EVERY.min(epoch) as u64);
                let layers = net.to_layers();
                if stop.should_stop(epoch, val_mse(&layers), || layers) {
                    break;
                }
            }
        }
        progress(((self.max_epochs - epochs_run) / EVAL_EVERY * EVAL_EVERY) as u64);
        stop.outcome(epochs_run)
    }

    /// Adam's step size: `batch_learning_rate` once a batch size is given (also when the batch holds all
    /// the rows), else `learning_rate`. The native and the burn paths take it from here.
    fn adam_learning_rate(&self) -> f64 {
        if self.batch_size > 0 { self.batch_learning_rate } else { self.learning_rate }
    }

    /// The mini-batch size of an Adam fit on `n` training rows: None for full batch (`batch_size` 0, or
    /// a batch of all the rows).
    fn mini_batch(&self, n: usize) -> Option<usize> {
        (self.batch_size > 0 && self.batch_size < n).then_some(self.batch_size)
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

    /// Total progress units (epochs) a fit reports, for a progress bar (with inner folds, at most: data
    /// with fewer kernels than `l2_folds` runs fewer).
    pub fn progress_len(&self) -> u64 {
        let fits = match &self.l2_grid {
            // Each α on each inner fold, then the fit with the chosen α.
            Some(g) if g.len() > 1 && self.l2_folds >= 3 => self.l2_folds * g.len() + 1,
            _ => 1,
        };
        let per_fit = if fits > 1 { self.restarts } else { self.jobs().len() };
        (fits * per_fit * self.max_epochs) as u64
    }

    /// The restarts a fit trains, in order: (α of its gradient, restart index r: seed `seed + r`). With a
    /// fixed α, the `restarts` restarts (Adam's α 0: it does not use the fixed penalty); with a grid,
    /// every restart for each α in turn.
    fn jobs(&self) -> Vec<(f64, usize)> {
        match &self.l2_grid {
            Some(grid) => grid.iter().flat_map(|&a| (0..self.restarts).map(move |r| (a, r))).collect(),
            None => {
                let a = if self.solver == Solver::Lbfgs { self.l2 } else { 0.0 };
                (0..self.restarts).map(|r| (a, r)).collect()
            }
        }
    }
}

/// Checks that every power of `ds` can be fitted as ln(power): finite and positive. The error names the
/// first bad row and says what to do.
pub fn check_log_target(ds: &Dataset) -> Result<()> {
    match ds.targets.iter().position(|y| !(y.is_finite() && *y > 0.0)) {
        None => Ok(()),
        Some(i) => Err(Error::Invalid(format!(
            "--target log fits ln(power), but row {} of the training data has power {} W: remove the rows whose power is not a positive number, or use --target watts",
            i + 1,
            ds.targets[i]
        ))),
    }
}

/// Evaluates an artifact's network with burn (Flex backend, f64), for checking that burn's forward pass
/// and `ModelArtifact::predict` agree. `records` are raw inputs in the artifact's input order. A residual
/// gate (`physical.residual_gate`, `train --gate nearest`) is not applied: for a gated artifact this is
/// the ungated model, and callers that compare gated artifacts apply the gate themselves (the agreement
/// test does).
#[cfg(feature = "burn")]
pub fn burn_forward(artifact: &ModelArtifact, records: &Array2<f64>) -> Vec<f64> {
    let device = Device::flex();
    let net = Net::from_layers(&artifact.layers, &device);
    let z = standardize(records, &artifact.input_scaling);
    let out = net.forward(tensor2(&z, &device));
    let v: Vec<f64> = out.into_data().convert::<f64>().try_to_vec::<f64>().unwrap_or_default();
    let (m, s) = (artifact.target_scaling.mean[0], artifact.target_scaling.std[0]);
    // A physical+bpann network models the residual of the physical terms, in watts or relative to them.
    // The combination is written out here rather than taken from `Residual::apply`, so that this pass
    // stays independent of the one it is compared with.
    let base = artifact.physical.as_ref().and_then(|p| p.predict(&artifact.inputs, records.view()).ok());
    v.into_iter()
        .enumerate()
        .map(|(i, y)| {
            let net = y * s + m;
            match (&base, artifact.residual) {
                (None, _) if artifact.target_transform == TargetTransform::Log => net.exp(),
                (None, _) => net,
                (Some(b), Residual::Absolute) => b[i] + net,
                (Some(b), Residual::Relative) => b[i] * (1.0 + net),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array1;

    fn smooth(n: usize) -> Dataset {
        // power = 60 + 80·σ(3a − 1) + 20·b, a smooth function a 2-4-4-1 net can learn.
        let records = Array2::from_shape_fn((n, 2), |(i, j)| ((i * (3 + 4 * j)) % 17) as f64 / 17.0);
        let targets = Array1::from_shape_fn(n, |i| {
            let (a, b) = (records[[i, 0]], records[[i, 1]]);
            60.0 + 80.0 / (1.0 + (-(3.0 * a - 1.0)).exp()) + 20.0 * b
        });
        Dataset {
            records,
            targets,
            feature_names: vec!["a".into(), "b".into()],
            target_name: "power_w".into(),
            groups: (0..n).map(|i| format!("g{}", i % 10)).collect(),
        }
    }

    /// `Log` is the fit of ln(power) with everything else unchanged: the same network and scalings as
    /// the watts fit of the logged data, marked so that it predicts exp of its output. A power that is
    /// not positive is one line that says what to do.
    #[test]
    fn a_log_target_fits_the_logarithm_and_refuses_non_positive_power() {
        let ds = smooth(120);
        let p = BpannParams { restarts: 2, max_epochs: 200, ..Default::default() };
        let log = BpannParams { target: TargetTransform::Log, ..p.clone() }.fit(&ds).unwrap();
        let mut logged = ds.clone();
        logged.targets.mapv_inplace(f64::ln);
        let plain = p.fit(&logged).unwrap();
        assert_eq!(log.target_transform, TargetTransform::Log);
        assert_eq!((&log.layers, &log.target_scaling), (&plain.layers, &plain.target_scaling));
        // Standardized by ln(power)'s own mean: between ln 60 and ln 160.
        assert!((60f64.ln()..160f64.ln()).contains(&log.target_scaling.mean[0]), "{:?}", log.target_scaling);
        let got = log.predict(ds.records.view());
        let net = plain.predict(ds.records.view());
        for (g, n) in got.iter().zip(net.iter()) {
            assert_eq!(*g, n.exp());
        }
        for bad in [0.0, -3.0, f64::INFINITY, f64::NAN] {
            let mut d = ds.clone();
            d.targets[7] = bad;
            let e =
                BpannParams { target: TargetTransform::Log, ..p.clone() }.fit(&d).unwrap_err().to_string();
            assert!(e.contains("row 8") && e.contains("--target watts"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn averaged_network_is_the_mean_of_its_members() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let nets: Vec<Vec<Dense>> = (0..3).map(|_| init_layers(&[3, 4, 2, 1], &mut rng)).collect();
        let avg = average_networks(&nets);
        let z = Array2::from_shape_fn((7, 3), |(i, j)| (i as f64 - 3.0) * 0.4 + j as f64 * 0.3);
        let mean: Vec<f64> =
            (0..7).map(|r| nets.iter().map(|n| forward_std(n, &z)[r]).sum::<f64>() / 3.0).collect();
        for (a, b) in forward_std(&avg, &z).iter().zip(&mean) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn bad_params_are_rejected_before_work() {
        let p = BpannParams { hidden: vec![0], ..Default::default() };
        assert!(p.check().unwrap_err().to_string().contains("--hidden"));
        let p = BpannParams { restarts: 0, ..Default::default() };
        assert!(p.check().is_err());
        let p = BpannParams { learning_rate: f64::NAN, ..Default::default() };
        assert!(p.check().is_err());
    }

    /// The L-BFGS path fits the same network to the same function, reproducibly, within far fewer
    /// iterations than Adam's epochs.
    #[test]
    fn lbfgs_learns_a_smooth_function_reproducibly() {
        let ds = smooth(200);
        let p = BpannParams { restarts: 2, max_epochs: 300, solver: Solver::Lbfgs, ..Default::default() }
            .check()
            .unwrap();
        let a = p.fit_report(&ds, &mut |_| {}).unwrap();
        assert_eq!(a.artifact, p.fit(&ds).unwrap(), "same seed, same model");
        let pred = a.artifact.predict(ds.records.view());
        let rmse = crate::metrics::rmse(pred.as_slice().unwrap(), ds.targets.as_slice().unwrap()).unwrap();
        assert!(rmse < 1.5, "rmse {rmse}");
        assert!(a.restarts.iter().all(|r| r.epochs_run <= 300));
        // The artifact says which arithmetic fitted it: this CPU's path, f32 on the 4×4 network.
        let arith = a.artifact.arithmetic.as_ref().expect("recorded");
        assert_eq!(
            (arith.instructions.as_str(), arith.precision.as_str()),
            (crate::lbfgs::instruction_path(), "f32")
        );
        let f64_net = BpannParams { hidden: vec![3], ..p.clone() }.arithmetic(&[2, 3, 1]);
        assert_eq!(f64_net.precision, "f64", "layouts without the fused kernel run in f64");
        #[cfg(feature = "burn")]
        for (x, y) in burn_forward(&a.artifact, &ds.records).iter().zip(pred.iter()) {
            assert!((x - y).abs() < 1e-9);
        }
    }

    /// The native Adam path is burn's Adam on our own gradient: the same trajectory up to rounding, so
    /// the weights after a few hundred steps agree to many digits in f64 (a wrong step formula, a
    /// missing bias correction or the loss off by the factor 2 would drift by far more), and to f32
    /// rounding with the default single-precision gradient (measured 6e-7 here; bound 1e-5) — without
    /// a penalty and with an α chosen from a grid (the penalty on the same scale on both paths).
    #[cfg(feature = "burn")]
    #[test]
    fn native_adam_follows_burns_adam() {
        let ds = smooth(120);
        let mut unpenalized = Vec::new();
        for l2_grid in [None, Some(vec![0.5])] {
            let p = BpannParams {
                restarts: 1,
                max_epochs: 300,
                patience: usize::MAX,
                precision: Precision::F64,
                l2_grid: l2_grid.clone(),
                ..Default::default()
            };
            let a = native_follows_burn(&ds, &p, &format!("{l2_grid:?}"));
            // And not trivially: the penalty moved the weights elsewhere than no penalty.
            if l2_grid.is_none() {
                unpenalized = a;
            } else {
                let apart = a.iter().zip(&unpenalized).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
                assert!(apart > 1e-3, "the penalty changed nothing ({apart})");
            }
        }
    }

    /// An artifact's weights and biases, flattened.
    #[cfg(feature = "burn")]
    fn flat(a: &ModelArtifact) -> Vec<f64> {
        a.layers
            .iter()
            .flat_map(|d| d.weights.iter().flatten().chain(&d.bias).copied().collect::<Vec<_>>())
            .collect()
    }

    /// Fits `p` on our gradient (f64 and f32) and on burn's autodiff, checks that the fits agree (f64 to
    /// 1e-7, f32 to 1e-5, relative to burn's weights) and that the weights moved away from their initial
    /// values; returns the native f64 weights.
    #[cfg(feature = "burn")]
    fn native_follows_burn(ds: &Dataset, p: &BpannParams, what: &str) -> Vec<f64> {
        let fit = |q: BpannParams| flat(&q.check().unwrap().fit(ds).unwrap());
        let a = fit(p.clone());
        let single = fit(BpannParams { precision: Precision::F32, ..p.clone() });
        let b = fit(BpannParams { backend: Backend::Burn, ..p.clone() });
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= 1e-7 * x.abs().max(1.0), "{what}: native {x} vs burn {y}");
        }
        for (x, y) in single.iter().zip(&b) {
            assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{what}: native f32 {x} vs burn {y}");
        }
        let init = init_layers(&[2, 4, 4, 1], &mut ChaCha8Rng::seed_from_u64(p.seed));
        let moved = a.iter().zip(init.iter().flat_map(|d| d.weights.iter().flatten().chain(&d.bias)));
        assert!(
            moved.map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) > 0.1,
            "{what}: the weights did not move"
        );
        a
    }

    /// The restart tests' data: 150 smooth rows standardized, the first 100 to train on and the last
    /// 50 to validate on, and the rescaled targets of all 150.
    fn restart_fixture() -> (Array2<f64>, Array2<f64>, Vec<f64>) {
        let ds = smooth(150);
        let z = standardize(&ds.records, &input_scaling(&ds.records));
        let y: Vec<f64> = ds.targets.iter().map(|v| (v - 100.0) / 30.0).collect();
        (z.slice(ndarray::s![..100, ..]).to_owned(), z.slice(ndarray::s![100.., ..]).to_owned(), y)
    }

    /// Restarts on several threads give exactly the outcomes of one thread (each restart depends only
    /// on its seed, however its slices are scheduled), for both native solvers; 120 iterations are
    /// several slices.
    #[test]
    fn parallel_restarts_equal_sequential_ones() {
        let (zt, zv, y) = restart_fixture();
        // Mini-batch Adam too: its shuffling RNG and step counter live in the run and must carry over
        // from slice to slice, whichever thread advances it.
        for (solver, batch_size) in [(Solver::Lbfgs, 0), (Solver::Adam, 0), (Solver::Adam, 30)] {
            let p = BpannParams { restarts: 3, max_epochs: 120, solver, batch_size, ..Default::default() };
            let run = |threads| {
                let mut units = 0;
                let out =
                    p.restarts_run(&[2, 4, 4, 1], (&zt, &y[..100]), (&zv, &y[100..]), threads, &mut |u| {
                        units += u
                    });
                (out, units)
            };
            let (one, units_one) = run(1);
            // Two threads for three restarts: the restarts are run in slices and change threads.
            let (two, units_two) = run(2);
            let (three, units_three) = run(3);
            assert_eq!(one, two, "{solver:?}, batch {batch_size}");
            assert_eq!(one, three, "{solver:?}, batch {batch_size}");
            assert_eq!(units_one, units_two, "{solver:?}, batch {batch_size}: progress units");
            assert_eq!(units_one, units_three, "{solver:?}, batch {batch_size}: progress units");
            assert_eq!(one.len(), 3);
        }
    }

    /// A restart that panics (a bug; forced here by the test-only hook at its 60th iteration) ends
    /// alone: the restart threads do not hang, the other restarts run to their end with the outcomes
    /// they have when run by themselves, and the fit returns an error naming the failed restart — with
    /// one thread and with the restarts sliced across two, for both native solvers.
    #[test]
    fn a_panicking_restart_fails_the_fit_alone_and_the_others_finish() {
        let (zt, zv, y) = restart_fixture();
        for solver in [Solver::Lbfgs, Solver::Adam] {
            // Restart 2 of 3 has the panicking seed.
            let p = BpannParams {
                restarts: 3,
                max_epochs: 120,
                seed: PANICKING_SEED - 1,
                solver,
                ..Default::default()
            };
            for threads in [1, 2] {
                // The deadlock guard: the restarts run on their own thread and this one gives up
                // waiting after a generous time (a hang, not a speed check: the fits take milliseconds).
                let (tx, rx) = mpsc::channel();
                let (p2, zt2, zv2, y2) = (p.clone(), zt.clone(), zv.clone(), y.clone());
                std::thread::spawn(move || {
                    let out = p2.restarts_run(
                        &[2, 4, 4, 1],
                        (&zt2, &y2[..100]),
                        (&zv2, &y2[100..]),
                        threads,
                        &mut |_| {},
                    );
                    let _ = tx.send(out);
                });
                let out = rx.recv_timeout(std::time::Duration::from_secs(300)).unwrap_or_else(|e| match e {
                    std::sync::mpsc::RecvTimeoutError::Timeout => {
                        panic!("{solver:?}, {threads} threads: the restarts hung after a panic")
                    }
                    std::sync::mpsc::RecvTimeoutError::Disconnected => {
                        panic!("{solver:?}, {threads} threads: the panic crossed the restart threads")
                    }
                });
                assert_eq!(out.len(), 3);
                let failed = out[1].as_ref().expect_err("restart 2 panicked");
                assert!(failed.contains("forced panic"), "{failed}");
                for r in [0, 2] {
                    let alone = BpannParams { restarts: 1, seed: p.seed + r as u64, ..p.clone() }
                        .restarts_run(&[2, 4, 4, 1], (&zt, &y[..100]), (&zv, &y[100..]), 1, &mut |_| {});
                    assert_eq!(
                        out[r],
                        alone[0],
                        "{solver:?}, {threads} threads: restart {} finished as alone",
                        r + 1
                    );
                    assert_eq!(out[r].as_ref().map(|o| o.1), Ok(120), "{solver:?}: ran to its end");
                }
            }
        }
        let p = BpannParams { restarts: 3, max_epochs: 120, seed: PANICKING_SEED - 1, ..Default::default() };
        let err = p.fit_report(&smooth(150), &mut |_| {}).expect_err("a restart panicked");
        let msg = err.to_string();
        assert!(msg.contains("restart 2 of 3") && msg.contains("forced panic"), "{msg}");
    }

    /// Rows of 8 kernels (groups), each a tight cluster in a 6-input space around its own centre, with
    /// power = 100 + 10·(first input) + an offset of its own kernel. The offsets do not follow the
    /// inputs, so a network that fits them on the training kernels (a weak penalty: the lowest training
    /// error) mispredicts other kernels, and a validation split of whole kernels prefers a stronger α.
    fn clustered(n: usize, seed: u64) -> Dataset {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let centre: Vec<Vec<f64>> =
            (0..8).map(|_| (0..6).map(|_| rng.random_range(-1.0..1.0)).collect()).collect();
        let offset: Vec<f64> = (0..8).map(|_| rng.random_range(-20.0..20.0)).collect();
        let records = Array2::from_shape_fn((n, 6), |(i, j)| centre[i % 8][j] + rng.random_range(-0.1..0.1));
        let targets = Array1::from_shape_fn(n, |i| 100.0 + 10.0 * records[[i, 0]] + offset[i % 8]);
        Dataset {
            records,
            targets,
            feature_names: (0..6).map(|j| format!("x{j}")).collect(),
            target_name: "power_w".into(),
            groups: (0..n).map(|i| format!("g{}", i % 8)).collect(),
        }
    }

    /// With an α grid, every restart is trained once per α (exactly the restarts of a one-α fit of each
    /// α), and the α kept is the one whose best restart has the lowest error on the inner validation
    /// split, with that restart's network: not the α with the lowest training error, and not the grid's
    /// first (the fixed default), which this fixture makes differ — for both solvers.
    #[test]
    fn l2_grid_keeps_the_alpha_with_the_lowest_validation_error() {
        let ds = clustered(160, 5);
        let grid = vec![1e-4, 0.1, 10.0];
        let (train_rows, _) = ds.group_split(0.2, 1).unwrap();
        let train = ds.select_rows(&train_rows);
        for solver in [Solver::Lbfgs, Solver::Adam] {
            let p = BpannParams {
                restarts: 2,
                max_epochs: 300,
                solver,
                l2_grid: Some(grid.clone()),
                ..Default::default()
            }
            .check()
            .unwrap();
            let fit = p.fit_report(&ds, &mut |_| {}).unwrap();
            let choice = fit.l2_choice.clone().expect("a grid fit reports its choice");
            assert!(grid.contains(&choice.chosen), "{solver:?}: {choice:?}");
            // Each α alone: its restarts, its validation error and its training error.
            let alone: Vec<BpannFit> = grid
                .iter()
                .map(|&a| {
                    BpannParams { l2_grid: Some(vec![a]), ..p.clone() }.fit_report(&ds, &mut |_| {}).unwrap()
                })
                .collect();
            let reports: Vec<RestartReport> = alone.iter().flat_map(|f| f.restarts.clone()).collect();
            assert_eq!(fit.restarts, reports, "{solver:?}: every restart once per α");
            let val: Vec<f64> = alone
                .iter()
                .map(|f| f.restarts.iter().map(|r| r.validation_rmse_w).fold(f64::INFINITY, f64::min))
                .collect();
            assert_eq!(choice.validation_rmse_w, val, "{solver:?}");
            let train_rmse: Vec<f64> = alone
                .iter()
                .map(|f| {
                    let pred = f.artifact.predict(train.records.view());
                    crate::metrics::rmse(pred.as_slice().unwrap(), train.targets.as_slice().unwrap()).unwrap()
                })
                .collect();
            let argmin = |v: &[f64]| (0..v.len()).fold(0, |i, j| if v[j] < v[i] { j } else { i });
            let k = argmin(&val);
            assert_eq!(choice.chosen, grid[k], "{solver:?}: validation {val:?}");
            assert_eq!(fit.artifact.layers, alone[k].artifact.layers, "{solver:?}: that α's network");
            assert_eq!(fit.restarts[fit.chosen].l2, grid[k], "{solver:?}");
            // The fixture is one where looking at anything else would choose otherwise.
            assert_ne!(k, 0, "{solver:?}: validation {val:?}");
            assert_ne!(k, argmin(&train_rmse), "{solver:?}: training {train_rmse:?}, validation {val:?}");
            let rec = &fit.artifact.training["bpann"];
            assert_eq!(
                (rec["l2"].as_f64(), rec["l2_grid"].as_array().map(Vec::len)),
                (Some(grid[k]), Some(3))
            );
        }
        // A fixed α: no choice, no record, and Adam's fits do not use it (bit-identical to α 0).
        let fixed = BpannParams { restarts: 2, max_epochs: 100, ..Default::default() };
        let f = fixed.fit_report(&ds, &mut |_| {}).unwrap();
        assert!(f.l2_choice.is_none() && f.artifact.training.is_null());
        assert_eq!(f.artifact, BpannParams { l2: 5.0, ..fixed.clone() }.fit(&ds).unwrap());
        // Bad grids are refused before any work.
        for g in [vec![], vec![1e-4, f64::NAN], vec![-1.0], vec![0.1; 11]] {
            let msg = BpannParams { l2_grid: Some(g), ..Default::default() }.check().unwrap_err().to_string();
            assert!(msg.contains("--l2"), "{msg}");
        }
    }

    /// `l2_folds`: α is the one with the lowest squared error pooled over the inner folds (each α fitted
    /// on the other folds; recomputed here from one-α fits), and the network is the one-α fit of all the
    /// rows with it — for grouped and random-row validation.
    #[test]
    fn l2_folds_choose_alpha_by_inner_cv_then_fit_all_rows() {
        let ds = clustered(160, 5);
        let grid = vec![1e-4, 0.1, 10.0];
        for grouped in [true, false] {
            // In an order where the fixture's best α is not the first (random rows favour 1e-4).
            let grid: Vec<f64> = if grouped { grid.clone() } else { grid.iter().rev().copied().collect() };
            let p = BpannParams {
                restarts: 1,
                max_epochs: 200,
                solver: Solver::Lbfgs,
                grouped_validation: grouped,
                l2_grid: Some(grid.clone()),
                l2_folds: 4,
                ..Default::default()
            }
            .check()
            .unwrap();
            let fit = p.fit_report(&ds, &mut |_| {}).unwrap();
            let one = |a: f64| BpannParams { l2_grid: Some(vec![a]), l2_folds: 0, ..p.clone() };
            let folds = if grouped { ds.group_kfold(4, 1).unwrap() } else { ds.kfold(4, 1).unwrap() };
            let sse: Vec<f64> = grid
                .iter()
                .map(|&a| {
                    folds
                        .iter()
                        .map(|f| {
                            let m = one(a).fit(&ds.select_rows(&f.train)).unwrap();
                            let held = ds.select_rows(&f.test);
                            let pred = m.predict(held.records.view());
                            pred.iter().zip(held.targets.iter()).map(|(p, y)| (p - y).powi(2)).sum::<f64>()
                        })
                        .sum()
                })
                .collect();
            let k = (0..3).fold(0, |i, j| if sse[j] < sse[i] { j } else { i });
            // The best α is not the grid's first, so always taking grid[0] would fail.
            assert_ne!(k, 0, "grouped {grouped}: pooled {sse:?}");
            let choice = fit.l2_choice.clone().unwrap();
            assert_eq!(choice.chosen, grid[k], "grouped {grouped}: pooled {sse:?}");
            let rmse: Vec<f64> = sse.iter().map(|e| (e / 160.0).sqrt()).collect();
            assert_eq!(choice.validation_rmse_w, rmse);
            let all = one(grid[k]).fit(&ds).unwrap();
            assert_eq!(fit.artifact.layers, all.layers, "grouped {grouped}: refitted on all rows");
            assert_eq!(fit.artifact.training["bpann"]["l2_folds"], 4);
            // Progress covers the 4 × 3 inner fits and the final one.
            assert_eq!(p.progress_len(), 13 * 200);
        }
        // Fewer kernels than folds: one inner fold per kernel; too few kernels for inner folds: α is
        // chosen on the validation split instead (said so in the record).
        let p = BpannParams {
            restarts: 1,
            max_epochs: 50,
            l2_grid: Some(grid.clone()),
            l2_folds: 20,
            ..Default::default()
        };
        let few = p.fit_report(&clustered(160, 5), &mut |_| {}).unwrap();
        assert_eq!(few.artifact.training["bpann"]["l2_folds"], 8, "8 kernels");
        let mut two = clustered(40, 5);
        two.groups = (0..40).map(|i| format!("g{}", i % 2)).collect();
        let split = p.fit_report(&two, &mut |_| {}).unwrap();
        assert!(split.l2_choice.is_some() && split.artifact.training["bpann"].get("l2_folds").is_none());
        assert_eq!(split.restarts.len(), 3, "every α once on the split");
        let bad = BpannParams { l2_folds: 5, ..Default::default() }.check().unwrap_err().to_string();
        assert!(bad.contains("--l2-folds 5") && bad.contains("--l2 auto"), "{bad}");
        // An inner training side too small to fit (leaving out the one big kernel leaves 4 rows): α is
        // chosen on the validation split, as the fixed-α fit of the same data would train.
        let mut uneven = clustered(24, 5);
        uneven.groups =
            (0..24).map(|i| ["big", "a", "b"][(i >= 20) as usize + (i >= 22) as usize].into()).collect();
        let fit = BpannParams { l2_folds: 5, ..p.clone() }.fit_report(&uneven, &mut |_| {}).unwrap();
        assert!(fit.l2_choice.is_some() && fit.artifact.training["bpann"].get("l2_folds").is_none());
        for k in [1, 2, 21] {
            let bad = BpannParams { l2_folds: k, l2_grid: Some(grid.clone()), ..Default::default() }.check();
            assert!(bad.unwrap_err().to_string().contains("3 to 20"), "--l2-folds {k}");
        }
    }

    #[test]
    fn learns_a_smooth_function_reproducibly_and_burn_agrees() {
        let ds = smooth(200);
        let p = BpannParams { restarts: 2, max_epochs: 600, learning_rate: 0.03, ..Default::default() }
            .check()
            .unwrap();
        let a = p.fit(&ds).unwrap();
        let b = p.fit(&ds).unwrap();
        assert_eq!(a, b, "same seed, same model");
        let pred = a.predict(ds.records.view());
        let rmse = crate::metrics::rmse(pred.as_slice().unwrap(), ds.targets.as_slice().unwrap()).unwrap();
        // The target spans ~60-160 W; the mean predictor would have an RMSE of ~25 W.
        assert!(rmse < 3.0, "rmse {rmse}");
        #[cfg(feature = "burn")]
        for (x, y) in burn_forward(&a, &ds.records).iter().zip(pred.iter()) {
            assert!((x - y).abs() < 1e-9);
        }
    }

    /// Mini-batch size and step size are checked like the other parameters: one line that names the flag.
    #[test]
    fn bad_mini_batch_params_are_rejected_before_work() {
        let p = BpannParams { batch_size: 200, solver: Solver::Lbfgs, ..Default::default() };
        assert!(p.check().unwrap_err().to_string().contains("--batch-size 200"));
        for lr in [0.0, -1.0, f64::NAN, 10.0] {
            let p = BpannParams { batch_size: 200, batch_learning_rate: lr, ..Default::default() };
            assert!(p.check().unwrap_err().to_string().contains("--batch-learning-rate"), "{lr}");
        }
        assert!(BpannParams { batch_size: 200, ..Default::default() }.check().is_ok());
    }

    /// `batch_size` 0 (the default) is full-batch Adam exactly as before mini-batches existed, and so is
    /// a batch of all the rows: a restart's outcome equals, bit for bit, the one of the full-batch loop
    /// as `NativeRun::advance` ran it until session 11 (written out here), in f32 and f64.
    #[test]
    fn full_batch_adam_is_the_loop_before_mini_batches_bit_for_bit() {
        let (zt, zv, y) = restart_fixture();
        let sizes = [2, 4, 4, 1];
        let layout = crate::lbfgs::Layout { sizes: sizes.to_vec() };
        for precision in [Precision::F32, Precision::F64] {
            let p =
                BpannParams { restarts: 1, max_epochs: 200, patience: 60, precision, ..Default::default() };
            let before = {
                let init = init_layers(&sizes, &mut ChaCha8Rng::seed_from_u64(p.seed));
                let mut tr = Workspace::with_precision(&layout, zt.view(), &y[..100], precision);
                let mut va = Workspace::new(&layout, zv.view(), &y[100..]);
                let mut theta = layout.flatten(&init);
                let np = theta.len();
                let (mut g, mut m1, mut m2) = (vec![0.0; np], vec![0.0; np], vec![0.0; np]);
                let mut stop = EarlyStop::new(va.mse(&theta), init, p.patience);
                let (b1, b2, eps) = (0.9_f32, 0.999_f32, p.epsilon as f32);
                let (f1, f2) = (f64::from(1.0 - b1), f64::from(1.0 - b2));
                let mut done = 0;
                for epoch in 1..=p.max_epochs {
                    tr.loss_grad_into(&theta, 0.0, &mut g);
                    let t = i32::try_from(epoch).unwrap_or(i32::MAX);
                    let bc2 = (1.0 - b2.powi(t)).sqrt();
                    let step = f64::from(bc2 / (1.0 - b1.powi(t)));
                    let floor = f64::from(eps * bc2);
                    for (((w, gj), m), v) in
                        theta.iter_mut().zip(g.iter()).zip(m1.iter_mut()).zip(m2.iter_mut())
                    {
                        let gj = 2.0 * gj;
                        *m = *m * f64::from(b1) + gj * f1;
                        *v = *v * f64::from(b2) + gj * gj * f2;
                        *w -= *m * step / (v.sqrt() + floor) * p.learning_rate;
                    }
                    done = epoch;
                    if (epoch % EVAL_EVERY == 0 || epoch == p.max_epochs)
                        && stop.should_stop(epoch, va.mse(&theta), || layout.layers(&theta))
                    {
                        break;
                    }
                }
                stop.outcome(done)
            };
            // A batch of all 100 rows (or more) at the full-batch step size is the full batch.
            for (batch_size, batch_learning_rate) in
                [(0, 1e-3), (100, p.learning_rate), (1000, p.learning_rate)]
            {
                // One restart runs on one thread whatever is asked; the sliced multi-thread path is
                // `parallel_restarts_equal_sequential_ones`'s.
                let q = BpannParams { batch_size, batch_learning_rate, ..p.clone() };
                let out = q.restarts_run(&sizes, (&zt, &y[..100]), (&zv, &y[100..]), 1, &mut |_| {});
                assert_eq!(out, vec![Ok(before.clone())], "{precision:?}, batch {batch_size}");
            }
        }
    }

    /// With mini-batches a restart takes one Adam step per batch (its bias-correction counter counts
    /// steps), deals every training row once per epoch in an order its own RNG reshuffles every epoch,
    /// and is reproducible from its seed; and it is not the full-batch fit.
    #[test]
    fn mini_batch_adam_steps_per_batch_on_rows_reshuffled_every_epoch() {
        let (zt, zv, y) = restart_fixture();
        let sizes = [2, 4, 4, 1];
        let layout = crate::lbfgs::Layout { sizes: sizes.to_vec() };
        let p = BpannParams {
            restarts: 1,
            max_epochs: 40,
            patience: usize::MAX,
            batch_size: 30,
            ..Default::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
        let init = init_layers(&sizes, &mut rng);
        let mut run = NativeRun::new(&p, &layout, p.seed, 0.0, (init, rng));
        let mut tr = Workspace::with_precision(&layout, zt.view(), &y[..100], p.precision);
        let mut va = Workspace::new(&layout, zv.view(), &y[100..]);
        let mut orders = Vec::new();
        let mut out = None;
        for epoch in 1..=p.max_epochs {
            out = run.advance(&p, &layout, &mut tr, (zt.view(), &y[..100]), &mut va, 1, &mut |_| {});
            // 100 rows in batches of 30: 30, 30, 30 and 10, four steps per epoch.
            assert_eq!(run.steps, 4 * epoch);
            let mut sorted = run.order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..100).collect::<Vec<_>>(), "epoch {epoch}: every row once");
            orders.push(run.order.clone());
        }
        assert!(orders.windows(2).all(|w| w[0] != w[1]), "reshuffled every epoch");
        assert_ne!(orders[0], (0..100).collect::<Vec<_>>());
        let out = out.expect("the restart ends at its epoch budget");
        assert_eq!(out.1, p.max_epochs);
        // The same restart through the fit's own runner: the same outcome (several restarts sliced
        // across threads: `parallel_restarts_equal_sequential_ones`).
        let again = p.restarts_run(&sizes, (&zt, &y[..100]), (&zv, &y[100..]), 1, &mut |_| {});
        assert_eq!(again, vec![Ok(out.clone())]);
        let full = BpannParams { batch_size: 0, learning_rate: p.batch_learning_rate, ..p.clone() }
            .restarts_run(&sizes, (&zt, &y[..100]), (&zv, &y[100..]), 1, &mut |_| {});
        assert_ne!(full, vec![Ok(out)], "mini-batches changed nothing");
    }

    /// Mini-batch Adam on our gradient follows mini-batch Adam on burn's autodiff (the same batches:
    /// both deal them from the restart's RNG) to rounding, as the full-batch paths do.
    #[cfg(feature = "burn")]
    #[test]
    fn native_mini_batch_adam_follows_burns() {
        let ds = smooth(120);
        let p = BpannParams {
            restarts: 1,
            max_epochs: 80,
            patience: usize::MAX,
            precision: Precision::F64,
            batch_size: 25,
            batch_learning_rate: 0.005,
            ..Default::default()
        };
        let a = native_follows_burn(&ds, &p, "batches of 25");
        // Not trivially: elsewhere than burn's full-batch fit at the same step size.
        let full =
            BpannParams { batch_size: 0, learning_rate: p.batch_learning_rate, backend: Backend::Burn, ..p };
        let apart = a
            .iter()
            .zip(&flat(&full.check().unwrap().fit(&ds).unwrap()))
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        assert!(apart > 1e-3, "mini-batches changed nothing ({apart})");
    }
}
