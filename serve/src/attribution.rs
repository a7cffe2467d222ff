//! Splitting one tick's energy into idle, per-process and unattributed parts.
//!
//! Each tick the energy counter gives `ΔE`. The idle (static) part is `min(ΔE, P_idle · Δt)`; the dynamic
//! rest `D = ΔE − idle` goes to the processes that were active, in proportion to each one's predicted
//! dynamic power, so the parts always sum to `ΔE` (conservation, to rounding):
//!
//! * **model** (the default): a process's dynamic power is predicted from its activity by the activity
//!   model `p = w_sm · sm + w_mem · mem` (watts per unit of SM and device-memory utilization), so
//!   memory-bound work gets its share. The energy counter then corrects each process's intensity: over a
//!   window of recent ticks, per-process factors `k_j ≥ 0` are fitted to
//!   `D_t / Δt ≈ Σ_j k_j · p_j(t)`, with a ridge pull of each `k_j` towards 1 (the activity model) whose
//!   weight is `prior_weight` times that process's own `Σ_t p_j(t)²`. When the processes' mix does not vary
//!   the data cannot tell them apart and the factors stay at the prior; when it does, a process that draws
//!   more power per unit of activity than the model says is found from the board's own energy.
//! * **ratio**: the split by SM utilization alone (the method of Kepler's GPU power attribution), kept as
//!   the baseline every figure is compared with.
//!
//! Each process also gets an idle component: the idle energy times the share of the tick it held the GPU
//! (`min(sm, 1)`, normalised when the shares add up to more than 1). It is a split of the GPU's idle
//! energy, not added to it.

use std::collections::{BTreeMap, VecDeque};

/// How the dynamic energy is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Activity model, corrected by the energy counter over a window.
    #[default]
    Model,
    /// SM-utilization ratio (the baseline).
    Ratio,
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Method, String> {
        match s {
            "model" => Ok(Method::Model),
            "ratio" => Ok(Method::Ratio),
            _ => Err(format!("unknown attribution `{s}`: use `model` or `ratio`")),
        }
    }
}

/// Dynamic power per unit of activity, W (1.0 of SM utilization; 1.0 of memory utilization).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActivityPower {
    pub sm_w: f64,
    pub mem_w: f64,
}

impl ActivityPower {
    /// Predicted dynamic power of one process, W.
    pub fn predict(&self, a: &Activity) -> f64 {
        (self.sm_w * a.sm.max(0.0) + self.mem_w * a.mem.max(0.0)).max(0.0)
    }

    /// Fits `dyn_w ≈ sm_w · sm + mem_w · mem` with both weights ≥ 0 (least squares on the two-variable
    /// non-negative orthant, solved exactly by trying the four active sets). `None` without data.
    pub fn fit(rows: &[(Activity, f64)]) -> Option<ActivityPower> {
        let (mut ss, mut sm_, mut mm, mut sy, mut my) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (a, y) in rows {
            ss += a.sm * a.sm;
            sm_ += a.sm * a.mem;
            mm += a.mem * a.mem;
            sy += a.sm * y;
            my += a.mem * y;
        }
        let sse = |w: ActivityPower| {
            rows.iter().map(|(a, y)| (y - w.sm_w * a.sm - w.mem_w * a.mem).powi(2)).sum::<f64>()
        };
        let mut candidates = vec![ActivityPower { sm_w: 0.0, mem_w: 0.0 }];
        if ss > 0.0 {
            candidates.push(ActivityPower { sm_w: (sy / ss).max(0.0), mem_w: 0.0 });
        }
        if mm > 0.0 {
            candidates.push(ActivityPower { sm_w: 0.0, mem_w: (my / mm).max(0.0) });
        }
        let det = ss * mm - sm_ * sm_;
        if det.abs() > 1e-12 * (ss * mm).max(1e-300) {
            let w = ActivityPower { sm_w: (sy * mm - my * sm_) / det, mem_w: (my * ss - sy * sm_) / det };
            if w.sm_w >= 0.0 && w.mem_w >= 0.0 {
                candidates.push(w);
            }
        }
        if rows.is_empty() {
            return None;
        }
        candidates.into_iter().min_by(|a, b| sse(*a).total_cmp(&sse(*b)))
    }
}

/// One process's activity over a tick, as ratios (1.0 = 100 %).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Activity {
    pub sm: f64,
    pub mem: f64,
}

/// One process's part of a tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    pub pid: u32,
    pub dynamic_j: f64,
    pub idle_j: f64,
}

/// A tick's energy, split. `idle_j + unattributed_j + Σ dynamic_j = energy_j`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Split {
    pub energy_j: f64,
    pub idle_j: f64,
    pub unattributed_j: f64,
    pub shares: Vec<Share>,
}

/// Settings of the model split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub method: Method,
    pub activity: ActivityPower,
    /// Ticks in the correction window.
    pub window: usize,
    /// Weight of the activity model against the window's data (see the module docs); large = no correction.
    pub prior_weight: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            method: Method::Model,
            activity: DEFAULT_ACTIVITY,
            window: 60,
            prior_weight: DEFAULT_PRIOR_WEIGHT,
        }
    }
}

/// The activity model: fitted (non-negative least squares, dynamic power = board power − idle) on the Tesla
/// V100 microbenchmarks of `nvdvfs-dcgm-v100-micro` at 1380 MHz, SM and DRAM activity as DCGM measures them
/// (`benches/corun.rs` prints the fit). Only the ratio of the two weights matters to the split; other GPUs
/// carry it over, and the energy-counter correction adjusts each process from there.
pub const DEFAULT_ACTIVITY: ActivityPower = ActivityPower { sm_w: 98.2, mem_w: 3.8 };

/// The ridge weight of the activity model, chosen on co-runs built from the microbenchmarks only
/// (`benches/corun.rs`: the most regularized setting within 0.1 point of the best); the real applications
/// those figures are reported on played no part.
pub const DEFAULT_PRIOR_WEIGHT: f64 = 0.01;

/// One GPU's attribution: the split and the correction's fit.
#[derive(Debug, Clone)]
pub struct Attributor {
    pub params: Params,
    fit: Fit,
}

impl Attributor {
    pub fn new(params: Params) -> Attributor {
        Attributor { params, fit: Fit::default() }
    }

    /// Splits one tick: `energy_j` measured over `dt_s`, idle power `idle_w` (None: unknown, all energy
    /// is dynamic), the active processes' activity.
    pub fn split(
        &mut self,
        energy_j: f64,
        dt_s: f64,
        idle_w: Option<f64>,
        procs: &[(u32, Activity)],
    ) -> Split {
        let energy_j = if energy_j.is_finite() { energy_j.max(0.0) } else { 0.0 };
        let finite = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
        let procs: Vec<(u32, Activity)> =
            procs.iter().map(|(pid, a)| (*pid, Activity { sm: finite(a.sm), mem: finite(a.mem) })).collect();
        let procs = procs.as_slice();
        let idle_j =
            idle_w.filter(|w| w.is_finite() && *w > 0.0).map_or(0.0, |w| (w * dt_s.max(0.0)).min(energy_j));
        let dynamic = energy_j - idle_j;
        let held: Vec<f64> = procs.iter().map(|(_, a)| a.sm.clamp(0.0, 1.0)).collect();
        let held_sum: f64 = held.iter().sum();
        let idle_norm = held_sum.max(1.0);
        let weights = self.weights(dynamic, dt_s, procs);
        let total: f64 = weights.iter().sum();
        let mut shares = Vec::with_capacity(procs.len());
        let mut attributed = 0.0;
        for (i, (pid, _)) in procs.iter().enumerate() {
            let dynamic_j = if total > 0.0 { dynamic * weights[i] / total } else { 0.0 };
            attributed += dynamic_j;
            shares.push(Share { pid: *pid, dynamic_j, idle_j: idle_j * held[i] / idle_norm });
        }
        // Whatever was not given (no active process, or none with activity) is unattributed; computed as a
        // difference so the parts sum to the counter's increment.
        let unattributed_j = (energy_j - idle_j - attributed).max(0.0);
        Split { energy_j, idle_j, unattributed_j, shares }
    }

    /// Each process's weight in the dynamic split.
    fn weights(&mut self, dynamic_j: f64, dt_s: f64, procs: &[(u32, Activity)]) -> Vec<f64> {
        match self.params.method {
            Method::Ratio => procs.iter().map(|(_, a)| a.sm.max(0.0)).collect(),
            Method::Model => {
                let predicted: Vec<f64> =
                    procs.iter().map(|(_, a)| self.params.activity.predict(a)).collect();
                if dt_s > 0.0 && !procs.is_empty() {
                    let entries = procs.iter().zip(&predicted).map(|((pid, _), p)| (*pid, *p));
                    self.fit.push(dynamic_j / dt_s, entries, self.params.window.max(1));
                }
                let prior = self.params.prior_weight;
                if !prior.is_finite() {
                    return predicted;
                }
                self.fit.solve(prior);
                procs.iter().zip(&predicted).map(|((pid, _), p)| p * self.fit.factor(*pid)).collect()
            }
        }
    }

    /// Forgets a process (it exited).
    pub fn forget(&mut self, pid: u32) {
        self.fit.forget(pid);
    }

    /// The fitted factor of every process in the window.
    #[cfg(test)]
    fn factors(&self) -> BTreeMap<u32, f64> {
        self.fit.slots.iter().map(|(pid, s)| (*pid, self.fit.k[*s])).collect()
    }
}

/// Most coordinate-descent sweeps in one tick, where the exact solve cannot be used (no ridge). A descent
/// that has not converged by then goes on from where it stopped at the next tick.
const MAX_SWEEPS: usize = 50;
/// The descent has converged when a whole sweep moves no factor by more than this.
const TOLERANCE: f64 = 1e-9;

/// The correction's ridge least-squares problem over the window, kept as its normal equations.
///
/// With `p_jt` process `j`'s activity-model power in tick `t` and `y_t` the tick's dynamic power, the
/// problem `min ½ Σ_t (y_t − Σ_j k_j p_jt)² + ½ Σ_j λ_j (k_j − 1)²`, `k ≥ 0`, `λ_j = prior_weight · G_jj`,
/// depends on the window only through `G_ij = Σ_t p_it p_jt` and `c_j = Σ_t p_jt y_t`. Those sums are
/// updated as a tick enters or leaves the window (the products of that tick's own processes), so the
/// window's length does not enter the fit's cost: one tick costs a Cholesky factorization over the n
/// processes of the window (`n³/6` multiply-adds), started from the last tick's factors.
#[derive(Debug, Clone, Default)]
struct Fit {
    /// The window's ticks: dynamic power and each process's (slot, activity-model power), by slot.
    ticks: VecDeque<Tick>,
    /// The slot of each process in the window.
    slots: BTreeMap<u32, usize>,
    /// Per slot: the process holding it, the ticks of the window it is in, its factor and `c_j`.
    owner: Vec<Option<u32>>,
    count: Vec<usize>,
    k: Vec<f64>,
    c: Vec<f64>,
    /// `G`, `stride × stride`, row-major. Rows and columns of free slots are zero.
    gram: Vec<f64>,
    stride: usize,
    /// Ticks entered since the sums were last computed afresh from the window (bounds rounding drift).
    entered: usize,
    /// Scratch of the exact solve: the Cholesky factor of the free factors' `H` and their minimum.
    chol: Vec<f64>,
    z: Vec<f64>,
    /// The factors minimize the current window's problem for this prior weight.
    solved_for: Option<f64>,
}

#[derive(Debug, Clone)]
struct Tick {
    y: f64,
    ps: Vec<(usize, f64)>,
}

impl Fit {
    /// Enters one tick, then drops the oldest ticks beyond `window`. A process listed twice counts once,
    /// with the sum of its powers.
    fn push(&mut self, y: f64, entries: impl Iterator<Item = (u32, f64)>, window: usize) {
        let mut ps: Vec<(usize, f64)> = entries.map(|(pid, p)| (self.slot(pid), p)).collect();
        ps.sort_unstable_by_key(|e| e.0);
        ps.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        let tick = Tick { y, ps };
        self.add(&tick, 1.0);
        for (s, _) in &tick.ps {
            self.count[*s] += 1;
        }
        self.ticks.push_back(tick);
        while self.ticks.len() > window {
            let Some(old) = self.ticks.pop_front() else { break };
            self.add(&old, -1.0);
            for (s, _) in &old.ps {
                self.count[*s] -= 1;
                if self.count[*s] == 0 {
                    self.release(*s);
                }
            }
        }
        self.entered += 1;
        if self.entered >= window {
            self.recompute();
        }
        self.solved_for = None;
    }

    /// Adds (`sign` 1) or removes (−1) one tick's terms of `G` and `c`.
    fn add(&mut self, tick: &Tick, sign: f64) {
        let stride = self.stride;
        for &(a, pa) in &tick.ps {
            self.c[a] += sign * pa * tick.y;
            let row = &mut self.gram[a * stride..(a + 1) * stride];
            for &(b, pb) in &tick.ps {
                row[b] += sign * pa * pb;
            }
        }
    }

    /// `G` and `c` afresh from the window's ticks.
    fn recompute(&mut self) {
        self.gram.iter_mut().for_each(|g| *g = 0.0);
        self.c.iter_mut().for_each(|c| *c = 0.0);
        let ticks = std::mem::take(&mut self.ticks);
        for t in &ticks {
            self.add(t, 1.0);
        }
        self.ticks = ticks;
        self.entered = 0;
    }

    /// The slot of `pid`, taking the lowest free one (a new process starts at the prior, `k = 1`).
    fn slot(&mut self, pid: u32) -> usize {
        if let Some(s) = self.slots.get(&pid) {
            return *s;
        }
        let s = match self.owner.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                let s = self.owner.len();
                self.owner.push(None);
                self.count.push(0);
                self.k.push(1.0);
                self.c.push(0.0);
                if s == self.stride {
                    self.grow();
                }
                s
            }
        };
        self.owner[s] = Some(pid);
        self.count[s] = 0;
        self.k[s] = 1.0;
        self.c[s] = 0.0;
        self.slots.insert(pid, s);
        s
    }

    /// Doubles `G`'s stride, keeping its entries.
    fn grow(&mut self) {
        let old = self.stride;
        let new = (2 * old).max(8);
        let mut gram = vec![0.0; new * new];
        for i in 0..old {
            gram[i * new..i * new + old].copy_from_slice(&self.gram[i * old..(i + 1) * old]);
        }
        self.gram = gram;
        self.stride = new;
    }

    /// Frees slot `s`: its process has no tick left in the window (or exited).
    fn release(&mut self, s: usize) {
        let stride = self.stride;
        if let Some(pid) = self.owner[s].take() {
            self.slots.remove(&pid);
        }
        self.count[s] = 0;
        self.k[s] = 1.0;
        self.c[s] = 0.0;
        self.gram[s * stride..(s + 1) * stride].iter_mut().for_each(|g| *g = 0.0);
        for i in 0..self.owner.len() {
            self.gram[i * stride + s] = 0.0;
        }
        while self.owner.last() == Some(&None) {
            self.owner.pop();
            self.count.pop();
            self.k.pop();
            self.c.pop();
        }
    }

    /// Removes a process from the window (it exited): its terms leave every tick, as if it never ran.
    fn forget(&mut self, pid: u32) {
        let Some(&s) = self.slots.get(&pid) else { return };
        for t in self.ticks.iter_mut() {
            t.ps.retain(|(q, _)| *q != s);
        }
        // Its row and column of G and its c_j hold exactly its terms.
        self.release(s);
        self.solved_for = None;
    }

    /// The factor of `pid`: 1 (the activity model) for a process not in the window.
    fn factor(&self, pid: u32) -> f64 {
        self.slots.get(&pid).map_or(1.0, |s| self.k[*s])
    }

    /// Fits the factors to the current window: the exact minimum (to rounding) by a primal active-set
    /// method on `min ½ kᵀHk − qᵀk`, `k ≥ 0`, with `H = G + diag(λ)` and `q = c + λ`, started from the
    /// last factors and their zero set (so a window that moved by one tick usually takes one Cholesky
    /// solve of the free factors). Without a ridge (`prior_weight` 0) `H` may be singular: coordinate
    /// descent from the last factors then takes over, as it does should the active set not settle.
    fn solve(&mut self, prior_weight: f64) {
        if self.solved_for == Some(prior_weight) {
            return;
        }
        let stride = self.stride;
        // A process whose powers in the window are all 0 has no data: it keeps the prior.
        let mut live = Vec::with_capacity(self.owner.len());
        for (j, owner) in self.owner.iter().enumerate() {
            if owner.is_some() {
                if self.gram[j * stride + j] > 0.0 {
                    live.push(j);
                } else {
                    self.k[j] = 1.0;
                }
            }
        }
        let exact = prior_weight > 0.0 && self.active_set(&live, prior_weight);
        if exact || self.descend(prior_weight) {
            self.solved_for = Some(prior_weight);
        }
    }

    /// The active-set iterations over the slots `live`; false if `H` is not positive definite on the free
    /// factors or the iterations do not settle.
    fn active_set(&mut self, live: &[usize], prior_weight: f64) -> bool {
        let n = self.owner.len();
        let stride = self.stride;
        let (mut free, mut zero): (Vec<usize>, Vec<usize>) = live.iter().partition(|&&j| self.k[j] > 0.0);
        for _ in 0..3 * live.len() + 10 {
            if !self.solve_free(&free, prior_weight) {
                return false;
            }
            // The first factor the step from k to the free minimum z drives to zero, if any.
            let mut step = 1.0;
            let mut blocking = None;
            for (a, &j) in free.iter().enumerate() {
                let (k, z) = (self.k[j], self.z[a]);
                if z < 0.0 && k / (k - z) < step {
                    step = k / (k - z);
                    blocking = Some(j);
                }
            }
            for (a, &j) in free.iter().enumerate() {
                self.k[j] += step * (self.z[a] - self.k[j]);
            }
            if let Some(b) = blocking {
                self.k[b] = 0.0;
                free.retain(|&j| {
                    let keep = self.k[j] > 0.0;
                    if !keep {
                        self.k[j] = 0.0;
                        zero.push(j);
                    }
                    keep
                });
                continue;
            }
            // The free factors are at their minimum: optimal unless the objective falls as some factor at
            // zero rises (its negative gradient q_j − (Hk)_j is positive). Every term of (Hk)_j and q_j is
            // ≥ 0, so their sum is the scale of its rounding.
            let mut rising: Option<(usize, f64)> = None;
            for (pos, &j) in zero.iter().enumerate() {
                let q = self.c[j] + prior_weight * self.gram[j * stride + j];
                let hk = dot(&self.gram[j * stride..j * stride + n], &self.k[..n]);
                let w = q - hk;
                if w > 1e-9 * (q.abs() + hk.abs()) && rising.is_none_or(|r| w > r.1) {
                    rising = Some((pos, w));
                }
            }
            match rising {
                None => return true,
                Some((pos, _)) => free.push(zero.swap_remove(pos)),
            }
        }
        false
    }

    /// Solves `H_FF z = q_F` for the free slots `free` (the others at zero) into `self.z`, by Cholesky;
    /// false if `H_FF` is not positive definite.
    fn solve_free(&mut self, free: &[usize], prior_weight: f64) -> bool {
        let Fit { gram, stride, c, chol, z, .. } = self;
        let (m, stride) = (free.len(), *stride);
        chol.clear();
        chol.resize(m * m, 0.0);
        for (a, &i) in free.iter().enumerate() {
            for (b, &j) in free[..=a].iter().enumerate() {
                chol[a * m + b] = gram[i * stride + j];
            }
            chol[a * m + a] *= 1.0 + prior_weight;
        }
        // H_FF = L Lᵀ, L's rows in place of H_FF's lower triangle.
        for i in 0..m {
            let (above, below) = chol.split_at_mut(i * m);
            let row = &mut below[..m];
            for j in 0..i {
                row[j] = (row[j] - dot(&row[..j], &above[j * m..j * m + j])) / above[j * m + j];
            }
            let d = row[i] - dot(&row[..i], &row[..i]);
            if !(d.is_finite() && d > 1e-12 * gram[free[i] * stride + free[i]]) {
                return false;
            }
            row[i] = d.sqrt();
        }
        z.clear();
        z.extend(free.iter().map(|&j| c[j] + prior_weight * gram[j * stride + j]));
        for a in 0..m {
            z[a] = (z[a] - dot(&chol[a * m..a * m + a], &z[..a])) / chol[a * m + a];
        }
        for b in (0..m).rev() {
            z[b] /= chol[b * m + b];
            let zb = z[b];
            for (za, l) in z[..b].iter_mut().zip(&chol[b * m..b * m + b]) {
                *za -= l * zb;
            }
        }
        true
    }

    /// Projected coordinate descent from the current factors (each step the exact minimum in one `k_j`,
    /// kept ≥ 0), at most [`MAX_SWEEPS`] sweeps; true once a sweep moves no factor by more than
    /// [`TOLERANCE`].
    fn descend(&mut self, prior_weight: f64) -> bool {
        let n = self.owner.len();
        let stride = self.stride;
        for _ in 0..MAX_SWEEPS {
            let mut moved = 0.0f64;
            for j in 0..n {
                let row = &self.gram[j * stride..j * stride + n];
                let norm = row[j];
                if self.owner[j].is_none() || norm <= 0.0 {
                    continue;
                }
                // Σ_t p_jt r_t with r_t = y_t − Σ_i k_i p_it.
                let g = self.c[j] - dot(row, &self.k[..n]);
                let lam = prior_weight * norm;
                let new = ((norm * self.k[j] + g + lam) / (norm + lam)).max(0.0);
                moved = moved.max((new - self.k[j]).abs());
                self.k[j] = new;
            }
            if moved < TOLERANCE {
                return true;
            }
        }
        false
    }
}

/// `Σ a_i b_i`, in four running sums (so the compiler can keep them in vector registers).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a4.remainder().iter().zip(b4.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a4.zip(b4) {
        for i in 0..4 {
            acc[i] += x[i] * y[i];
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(sm: f64, mem: f64) -> Activity {
        Activity { sm, mem }
    }

    fn sums_to_energy(s: &Split) -> bool {
        let parts = s.idle_j + s.unattributed_j + s.shares.iter().map(|x| x.dynamic_j).sum::<f64>();
        (parts - s.energy_j).abs() <= 1e-9 * s.energy_j.max(1.0)
    }

    #[test]
    fn parts_sum_to_the_counter_increment() {
        let mut a = Attributor::new(Params::default());
        for (e, idle, procs) in [
            (250.0, Some(50.0), vec![(1, act(0.6, 0.1)), (2, act(0.3, 0.8))]),
            (40.0, Some(50.0), vec![(1, act(0.6, 0.1))]),
            (90.0, None, vec![]),
            (120.0, Some(60.0), vec![(3, act(0.0, 0.0))]),
        ] {
            let s = a.split(e, 1.0, idle, &procs);
            assert!(sums_to_energy(&s), "{s:?}");
        }
    }

    #[test]
    fn energy_below_idle_is_all_idle_and_no_process_gets_dynamic_energy() {
        let mut a = Attributor::new(Params::default());
        let s = a.split(40.0, 1.0, Some(50.0), &[(1, act(0.5, 0.5))]);
        assert_eq!(s.idle_j, 40.0);
        assert_eq!(s.shares[0].dynamic_j, 0.0);
        assert_eq!(s.shares[0].idle_j, 20.0);
    }

    #[test]
    fn memory_bound_work_gets_a_share_the_ratio_split_denies_it() {
        // Same SM utilization, one process also keeps device memory busy.
        let procs = [(1, act(0.4, 0.0)), (2, act(0.4, 0.9))];
        let mut ratio = Attributor::new(Params { method: Method::Ratio, ..Params::default() });
        let r = ratio.split(200.0, 1.0, Some(50.0), &procs);
        assert!((r.shares[0].dynamic_j - r.shares[1].dynamic_j).abs() < 1e-9);
        let equal = ActivityPower { sm_w: 100.0, mem_w: 100.0 };
        let mut model =
            Attributor::new(Params { activity: equal, prior_weight: f64::INFINITY, ..Params::default() });
        let m = model.split(200.0, 1.0, Some(50.0), &procs);
        assert!(m.shares[1].dynamic_j > 2.0 * m.shares[0].dynamic_j, "{m:?}");
    }

    #[test]
    fn the_energy_counter_corrects_a_process_the_activity_model_underrates() {
        // Truth: process 2 draws 3× what the activity model predicts for it. The mix varies tick to tick.
        let w = DEFAULT_ACTIVITY;
        let mut a = Attributor::new(Params { prior_weight: 0.01, ..Params::default() });
        let mut last = Split::default();
        for t in 0..40 {
            let f1 = 0.2 + 0.6 * ((t * 7 % 11) as f64 / 10.0);
            let f2 = 1.0 - f1;
            let (a1, a2) = (act(f1 * 0.9, f1 * 0.2), act(f2 * 0.5, f2 * 0.1));
            let truth1 = w.predict(&a1);
            let truth2 = 3.0 * w.predict(&a2);
            last = a.split(50.0 + truth1 + truth2, 1.0, Some(50.0), &[(1, a1), (2, a2)]);
            if t == 39 {
                let got2 = last.shares[1].dynamic_j;
                assert!((got2 - truth2).abs() / truth2 < 0.02, "{got2} vs {truth2}");
            }
        }
        assert!(sums_to_energy(&last));
    }

    #[test]
    fn the_two_weight_fit_recovers_a_known_law_and_stays_non_negative() {
        let rows: Vec<(Activity, f64)> = (0..20)
            .map(|i| {
                let a = act(i as f64 / 20.0, ((i * 3) % 7) as f64 / 7.0);
                (a, 120.0 * a.sm + 40.0 * a.mem)
            })
            .collect();
        let w = ActivityPower::fit(&rows).unwrap();
        assert!((w.sm_w - 120.0).abs() < 1e-6 && (w.mem_w - 40.0).abs() < 1e-6, "{w:?}");
        let neg: Vec<(Activity, f64)> =
            (0..10).map(|i| (act(i as f64 / 10.0, 0.5), 50.0 - 30.0 * i as f64 / 10.0)).collect();
        let w = ActivityPower::fit(&neg).unwrap();
        assert!(w.sm_w >= 0.0 && w.mem_w >= 0.0);
        assert!(ActivityPower::fit(&[]).is_none());
    }

    /// The fit as it was first written: projected coordinate descent on the window's residuals from
    /// `k = 1`, here run until a sweep moves no factor by more than `1e-13`. The reference for the
    /// incremental, warm-started fit.
    fn factors_from_scratch(
        window: &VecDeque<(f64, Vec<(u32, f64)>)>,
        prior_weight: f64,
    ) -> BTreeMap<u32, f64> {
        let mut index: BTreeMap<u32, usize> = BTreeMap::new();
        let mut cols: Vec<Vec<(usize, f64)>> = Vec::new();
        for (t, (_, ps)) in window.iter().enumerate() {
            for (pid, p) in ps {
                let j = *index.entry(*pid).or_insert_with(|| {
                    cols.push(Vec::new());
                    cols.len() - 1
                });
                cols[j].push((t, *p));
            }
        }
        let mut k = vec![1.0; cols.len()];
        let norm: Vec<f64> = cols.iter().map(|c| c.iter().map(|(_, p)| p * p).sum()).collect();
        let mut resid: Vec<f64> =
            window.iter().map(|(y, ps)| y - ps.iter().map(|(_, p)| p).sum::<f64>()).collect();
        let mut converged = false;
        for _ in 0..1_000_000 {
            let mut moved = 0.0f64;
            for (j, col) in cols.iter().enumerate() {
                let n = norm[j];
                if n <= 0.0 {
                    continue;
                }
                let g: f64 = col.iter().map(|(t, p)| p * resid[*t]).sum();
                let lam = prior_weight * n;
                let new = ((n * k[j] + g + lam) / (n + lam)).max(0.0);
                let delta = new - k[j];
                for (t, p) in col {
                    resid[*t] -= delta * p;
                }
                k[j] = new;
                moved = moved.max(delta.abs());
            }
            if moved < 1e-13 {
                converged = true;
                break;
            }
        }
        assert!(converged, "the reference fit did not converge");
        index.into_iter().map(|(pid, j)| (pid, k[j])).collect()
    }

    /// A small deterministic generator (xorshift64*), so the randomized sequences are the same every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn below(&mut self, n: usize) -> usize {
            ((self.next() * n as f64) as usize).min(n - 1)
        }
    }

    /// The normal equations kept up to date as ticks enter and leave the window, the descent warm-started
    /// from the last tick's factors and stopped on a tolerance, give the factors of a fit from scratch on
    /// the same window, tick after tick, while processes start, stop, exit (forget) and come back.
    #[test]
    fn incremental_warm_started_factors_match_a_fit_from_scratch() {
        for (seed, window) in [(1u64, 60usize), (2, 7), (3, 20), (4, 3)] {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
            let params = Params { window, ..Params::default() };
            let mut a = Attributor::new(params);
            let mut mirror: VecDeque<(f64, Vec<(u32, f64)>)> = VecDeque::new();
            // Each process's true power per unit of predicted power; pid 5 draws nothing (its factor is
            // pushed against the bound k ≥ 0).
            let truth: Vec<f64> =
                (0..12).map(|pid| if pid == 5 { 0.0 } else { 0.5 + 2.5 * rng.next() }).collect();
            let (mut checked, mut at_bound) = (0, 0);
            for t in 0..400 {
                if rng.next() < 0.05 {
                    let pid = rng.below(12) as u32;
                    a.forget(pid);
                    for (_, ps) in mirror.iter_mut() {
                        ps.retain(|(q, _)| *q != pid);
                    }
                }
                // One to five co-runners, drawn from twelve.
                let mut procs: Vec<(u32, Activity)> = Vec::new();
                for _ in 0..1 + rng.below(5) {
                    let pid = rng.below(12) as u32;
                    if procs.iter().all(|(q, _)| *q != pid) {
                        procs.push((pid, act(rng.next(), rng.next())));
                    }
                }
                let dt = if rng.next() < 0.05 { 0.0 } else { 0.5 + rng.next() };
                let predicted: Vec<(u32, f64)> =
                    procs.iter().map(|(pid, x)| (*pid, DEFAULT_ACTIVITY.predict(x))).collect();
                let power: f64 = predicted.iter().map(|(pid, p)| truth[*pid as usize] * p).sum::<f64>()
                    * (1.0 + 0.05 * (rng.next() - 0.5));
                let energy = power * dt;
                a.split(energy, dt, None, &procs);
                if dt > 0.0 {
                    mirror.push_back((energy / dt, predicted));
                    while mirror.len() > window {
                        mirror.pop_front();
                    }
                }
                // The exact solve settled (the descent, its fallback, was not needed).
                let mut f = a.fit.clone();
                let live: Vec<usize> = f.slots.values().copied().collect();
                assert!(f.active_set(&live, params.prior_weight), "window {window}, tick {t}");
                let want = factors_from_scratch(&mirror, params.prior_weight);
                let got = a.factors();
                at_bound += got.values().filter(|k| **k == 0.0).count();
                assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "tick {t}");
                for (pid, k) in &want {
                    let g = got[pid];
                    assert!(
                        (g - k).abs() <= 1e-6 * k.abs().max(1.0),
                        "window {window}, tick {t}, pid {pid}: {g} vs {k}"
                    );
                    checked += 1;
                }
            }
            assert!(checked > 400, "{checked}");
            assert!(at_bound > 0, "window {window}: no factor at the bound k = 0");
        }
    }

    #[test]
    fn a_process_listed_twice_in_a_tick_counts_once_with_both_parts() {
        let mut twice = Attributor::new(Params::default());
        let mut once = Attributor::new(Params::default());
        for t in 0..30 {
            let f = 0.2 + 0.6 * ((t * 7 % 11) as f64 / 10.0);
            let e = 50.0 + 200.0 * f;
            twice.split(
                e,
                1.0,
                Some(50.0),
                &[(1, act(f / 2.0, 0.1)), (2, act(1.0 - f, 0.3)), (1, act(f / 2.0, 0.1))],
            );
            once.split(e, 1.0, Some(50.0), &[(1, act(f, 0.2)), (2, act(1.0 - f, 0.3))]);
        }
        let (a, b) = (twice.factors(), once.factors());
        for pid in [1, 2] {
            assert!((a[&pid] - b[&pid]).abs() < 1e-9, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn bad_numbers_do_not_break_conservation() {
        let mut a = Attributor::new(Params::default());
        let s = a.split(f64::NAN, 1.0, Some(f64::INFINITY), &[(1, act(f64::NAN, 2.0))]);
        assert!(sums_to_energy(&s), "{s:?}");
        let s = a.split(-5.0, 0.0, Some(10.0), &[(1, act(1.5, 0.0)), (2, act(1.5, 0.0))]);
        assert!(sums_to_energy(&s), "{s:?}");
    }
}
