//! The BP-ANN's restarts on our own gradient: full-batch Adam (burn's step) or L-BFGS, each restart
//! advanced a slice of iterations at a time, the restarts spread over the cores.

#[cfg(feature = "burn")]
use super::Backend;
use super::{BpannParams, EVAL_EVERY, Outcome, Solver, init_layers};
use crate::lbfgs::Workspace;
use gpumodel_models::artifact::Dense;
use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, mpsc};

/// Early stopping shared by every solver: the weights with the lowest validation MSE so far, and when to
/// give up (`patience` epochs or iterations without a new lowest).
pub(super) struct EarlyStop {
    /// (validation MSE, weights, epoch) of the best weights so far.
    kept: (f64, Vec<Dense>, usize),
    patience: usize,
}

impl EarlyStop {
    pub(super) fn new(v: f64, init: Vec<Dense>, patience: usize) -> EarlyStop {
        EarlyStop { kept: (v, init, 0), patience }
    }

    /// At a validation check of `epoch` with validation MSE `v`: keeps `layers()` when `v` is a new
    /// lowest; true when the fit should stop.
    pub(super) fn should_stop(&mut self, epoch: usize, v: f64, layers: impl FnOnce() -> Vec<Dense>) -> bool {
        if v.is_finite() && v < self.kept.0 {
            self.kept = (v, layers(), epoch);
            false
        } else {
            epoch - self.kept.2 >= self.patience
        }
    }

    pub(super) fn outcome(self, epochs_run: usize) -> Outcome {
        (self.kept, epochs_run)
    }
}

/// Test-only: the restart of this seed panics at its 60th iteration, a stand-in for a bug, so that the
/// tests can check what a panicking restart does to the others.
#[cfg(test)]
pub(super) const PANICKING_SEED: u64 = 0x5EED_DEAD;

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
    /// counter: one per epoch).
    m1: Vec<f64>,
    m2: Vec<f64>,
    steps: usize,
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
        init: Vec<Dense>,
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
            opt: None,
            f: 0.0,
            stop: None,
            init,
            done: 0,
            reported: 0,
        }
    }

    /// Runs up to `slice` more iterations on the training rows `train`; the outcome when the restart
    /// has finished.
    fn advance(
        &mut self,
        p: &BpannParams,
        layout: &crate::lbfgs::Layout,
        train: &mut Workspace,
        val: &mut Workspace,
        slice: usize,
        progress: &mut dyn FnMut(u64),
    ) -> Option<Outcome> {
        let NativeRun { seed, alpha, theta, g, m1, m2, steps, opt, f, stop, init, done, reported } = self;
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
                for epoch in *done + 1..=end {
                    train.loss_grad_into(theta, *alpha, g);
                    *steps += 1;
                    adam.step(theta, g, m1, m2, *steps);
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
/// for the native path.
struct Adam {
    b1: f32,
    b2: f32,
    eps: f32,
    learning_rate: f64,
}

impl Adam {
    fn new(p: &BpannParams) -> Adam {
        let learning_rate = p.learning_rate;
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

impl BpannParams {
    /// Every restart's outcome, in the order of `jobs()`: (validation MSE, layers, epoch) of its best
    /// weights and the epochs it ran, or the message of the panic that ended it. `train` and `val` are
    /// the standardized rows and targets.
    ///
    /// The native paths run up to `threads` restarts at once (each restart depends only on its seed,
    /// so the outcomes are the same as one after the other; tested); burn's runs one at a time. A
    /// native restart that panics (a bug) ends alone: the others run to their end and the caller gets
    /// the panic's message in its place (tested), instead of a panic across the restart threads.
    pub(super) fn restarts_run(
        &self,
        sizes: &[usize],
        train: (&Array2<f64>, &[f64]),
        val: (&Array2<f64>, &[f64]),
        threads: usize,
        progress: &mut dyn FnMut(u64),
    ) -> Vec<std::result::Result<Outcome, String>> {
        // The restart's initial weights.
        let init =
            |r: usize| init_layers(sizes, &mut ChaCha8Rng::seed_from_u64(self.seed.wrapping_add(r as u64)));
        let jobs = self.jobs();
        #[cfg(feature = "burn")]
        if self.solver == Solver::Adam && self.backend == Backend::Burn {
            let (zv, yv) = val;
            let device = burn::tensor::Device::flex().autodiff();
            let val_mse = |layers: &[Dense]| super::burn::std_mse(layers, zv, yv);
            return jobs
                .iter()
                .map(|&(_, r)| Ok(self.adam_burn(&device, train, init(r), &val_mse, progress)))
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
                            if let Some(out) =
                                run.advance(self, &layout, &mut tr, &mut va, self.max_epochs, progress)
                            {
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
                            run.advance(self, layout, &mut tr, &mut va, SLICE, &mut |u| {
                                let _ = tx.send(Msg::Progress(u));
                            })
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
}
