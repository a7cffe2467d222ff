//! Guerreiro et al.'s physical DVFS power model (TPDS'19 form) as a built-in model, so that the peer's
//! model is a baseline inside `gpumodel train`:
//!
//! `P = β0·V_c + V_c²·f_c·(β_c + Σ_i β_i·U_i) + β1·V_m + V_m²·f_m·(β_m + Σ_j β_j·U_j)`
//!
//! `f` is each domain's clock relative to its reference (default) clock, `V` one relative voltage per
//! clock level (1 at the reference level), `U_i` the core-domain activities, `U_j` the memory-domain ones.
//!
//! Fitting alternates two convex-ish steps, each of which can only lower the training squared error:
//! 1. voltages fixed → every β by **non-negative** least squares (Lawson–Hanson): the model is linear in
//!    the βs, and a negative β (negative energy per event) is not physical;
//! 2. βs fixed → each level's voltage by bounded 1-D least squares, **bounded by its neighbours'
//!    voltages**, so voltage never falls as the clock rises (Gauss–Seidel over the levels).
//!
//! and stops when the error stops falling. The error of a level's voltage is a quartic polynomial in V,
//! so step 2 evaluates it from six sums and is O(1) per candidate voltage.

use crate::{Error, Result};
use gpumodel_models::Dataset;
use gpumodel_models::artifact::{
    FORMAT_VERSION, ModelArtifact, ModelKind, PhysicalTerms, Scaling, VoltageLevel,
};
use serde::Serialize;

/// Lowest and highest relative voltage a level may take (the outermost levels' free bounds).
const V_MIN: f64 = 0.2;
const V_MAX: f64 = 3.0;

/// Unfitted physical-model parameters: which inputs play which role.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhysicalParams {
    /// Core-domain activity inputs (Guerreiro: SP, INT, DP, SFU, CF, L2, Shared).
    pub core_inputs: Vec<String>,
    /// Memory-domain activity inputs (Guerreiro: DRAM).
    pub mem_inputs: Vec<String>,
    pub core_clock: String,
    pub mem_clock: String,
    /// Reference clocks (MHz), where V = 1; `None` takes the highest level of the training data.
    pub ref_core_mhz: Option<f64>,
    pub ref_mem_mhz: Option<f64>,
    /// Cap on alternations (each one lowers the training error; the fit stops earlier when it stalls).
    pub max_iterations: usize,
    /// Relative fall of the training squared error below which the alternation stops.
    pub tolerance: f64,
    pub feature_set: String,
}

impl Default for PhysicalParams {
    fn default() -> Self {
        PhysicalParams {
            core_inputs: Vec::new(),
            mem_inputs: Vec::new(),
            core_clock: "core_mhz".into(),
            mem_clock: "mem_mhz".into(),
            ref_core_mhz: None,
            ref_mem_mhz: None,
            max_iterations: 2000,
            tolerance: 1e-9,
            feature_set: "custom".into(),
        }
    }
}

/// A fitted physical model and how the fit went.
#[derive(Debug, Clone)]
pub struct PhysicalFit {
    pub artifact: ModelArtifact,
    pub iterations: usize,
    pub training_rmse_w: f64,
}

/// Whether an activity input belongs to the memory domain (DRAM traffic), by name.
pub fn is_memory_domain(input: &str) -> bool {
    let l = input.to_ascii_lowercase();
    l.starts_with("dram") || l.contains("*mem_mhz") || l == "mem"
}

impl PhysicalParams {
    /// The roles split from a list of activity inputs: DRAM-named inputs go to the memory domain.
    pub fn from_activities(activities: &[String], feature_set: &str) -> PhysicalParams {
        let (mem, core): (Vec<String>, Vec<String>) =
            activities.iter().cloned().partition(|a| is_memory_domain(a));
        PhysicalParams {
            core_inputs: core,
            mem_inputs: mem,
            feature_set: feature_set.into(),
            ..Default::default()
        }
    }

    /// Every input the model reads: activities, then the two clocks.
    pub fn inputs(&self) -> Vec<String> {
        gpumodel_models::artifact::physical_input_names(
            &self.core_inputs,
            &self.mem_inputs,
            &self.core_clock,
            &self.mem_clock,
        )
    }

    /// Validates the parameters.
    pub fn check(self) -> Result<PhysicalParams> {
        if self.max_iterations == 0 {
            return Err(Error::Params("the physical model needs at least one iteration".into()));
        }
        let all = self.inputs();
        for (i, a) in all.iter().enumerate() {
            if all[..i].contains(a) {
                return Err(Error::Params(format!("physical model: input '{a}' is named twice")));
            }
        }
        for r in [self.ref_core_mhz, self.ref_mem_mhz].into_iter().flatten() {
            if !(r.is_finite() && r > 0.0) {
                return Err(Error::Params(format!(
                    "physical model: reference clock {r} MHz must be positive"
                )));
            }
        }
        Ok(self)
    }

    /// Fits the model on `ds` (which must hold [`PhysicalParams::inputs`]).
    pub fn fit(&self, ds: &Dataset) -> Result<ModelArtifact> {
        Ok(self.fit_report(ds)?.artifact)
    }

    /// Fits the model and reports the iterations and the training RMSE.
    pub fn fit_report(&self, ds: &Dataset) -> Result<PhysicalFit> {
        let names = self.inputs();
        let sub = ds.select_features(&names)?;
        sub.check_finite("training data")?;
        let kc = self.core_inputs.len();
        let km = self.mem_inputs.len();
        let n = sub.n_rows();
        let col = |j: usize| sub.records.column(j);
        let core_mhz: Vec<f64> = col(kc + km).to_vec();
        let mem_mhz: Vec<f64> = col(kc + km + 1).to_vec();
        if let Some(bad) = core_mhz.iter().chain(&mem_mhz).find(|f| **f <= 0.0) {
            return Err(Error::Invalid(format!(
                "the physical model needs positive clocks; the data has a clock of {bad} MHz: repair the clock columns"
            )));
        }
        let (core_levels, core_of) = levels(&core_mhz);
        let (mem_levels, mem_of) = levels(&mem_mhz);
        if core_levels.len() < 2 {
            return Err(Error::Invalid(format!(
                "the physical DVFS model needs at least two core clock levels; the data has only {} MHz: \
                 train on data measured at several clocks, or leave `physical` out of --models",
                core_levels[0]
            )));
        }
        if n < kc + km + 4 {
            return Err(Error::Invalid(format!(
                "the physical model has {} coefficients but the data has only {n} rows",
                kc + km + 4
            )));
        }
        let ref_core = self.ref_core_mhz.unwrap_or(core_levels[core_levels.len() - 1]);
        let ref_mem = self.ref_mem_mhz.unwrap_or(mem_levels[mem_levels.len() - 1]);
        let nearest = |ls: &[f64], r: f64| {
            (0..ls.len()).min_by(|&a, &b| (ls[a] - r).abs().total_cmp(&(ls[b] - r).abs())).unwrap_or(0)
        };
        let (ref_c, ref_m) = (nearest(&core_levels, ref_core), nearest(&mem_levels, ref_mem));
        let fc: Vec<f64> = core_mhz.iter().map(|f| f / ref_core).collect();
        let fm: Vec<f64> = mem_mhz.iter().map(|f| f / ref_mem).collect();
        let uc: Vec<Vec<f64>> = (0..kc).map(|j| col(j).to_vec()).collect();
        let um: Vec<Vec<f64>> = (kc..kc + km).map(|j| col(j).to_vec()).collect();
        let y: Vec<f64> = sub.targets.to_vec();
        let data = Data { y: &y, fc: &fc, fm: &fm, uc: &uc, um: &um, core_of: &core_of, mem_of: &mem_of };

        // Two starting voltage curves (V rising with f at half and at full slope); the one with the lower
        // training error is kept. A flat start (every V = 1) would pin every level between neighbours at 1.
        let start = |ls: &[f64], r: f64, slope: f64, fixed: usize| -> Vec<f64> {
            ls.iter()
                .enumerate()
                .map(
                    |(i, f)| if i == fixed { 1.0 } else { (1.0 + slope * (f / r - 1.0)).clamp(V_MIN, V_MAX) },
                )
                .collect()
        };
        // (squared error, βs, core voltages, memory voltages, alternations)
        type Fitted = (f64, Vec<f64>, Vec<f64>, Vec<f64>, usize);
        let mut best: Option<Fitted> = None;
        for slope in [0.5, 1.0] {
            let mut vc = start(&core_levels, core_levels[ref_c], slope, ref_c);
            let mut vm = start(&mem_levels, mem_levels[ref_m], slope, ref_m);
            let (sse, beta, it) = alternate(&data, &mut vc, &mut vm, ref_c, ref_m, self)?;
            if best.as_ref().is_none_or(|b| sse < b.0) {
                best = Some((sse, beta, vc, vm, it));
            }
        }
        let (_, beta, vc, vm, iterations) = best.ok_or_else(|| Error::Invalid("no fit".into()))?;
        let sse = data.sse(&beta, &vc, &vm);
        let terms = PhysicalTerms {
            core_clock: self.core_clock.clone(),
            mem_clock: self.mem_clock.clone(),
            ref_core_mhz: ref_core,
            ref_mem_mhz: ref_mem,
            core_inputs: self.core_inputs.clone(),
            core_betas: beta[2..2 + kc].to_vec(),
            mem_inputs: self.mem_inputs.clone(),
            mem_betas: beta[4 + kc..].to_vec(),
            beta0_w: beta[0],
            beta_core_w: beta[1],
            beta1_w: beta[2 + kc],
            beta_mem_w: beta[3 + kc],
            core_levels: core_levels
                .iter()
                .zip(&vc)
                .map(|(&mhz, &v)| VoltageLevel { mhz, relative_v: v })
                .collect(),
            mem_levels: mem_levels
                .iter()
                .zip(&vm)
                .map(|(&mhz, &v)| VoltageLevel { mhz, relative_v: v })
                .collect(),
        };
        let k = names.len();
        let artifact = ModelArtifact {
            format_version: FORMAT_VERSION,
            kind: ModelKind::Physical,
            inputs: names.clone(),
            target: ds.target_name.clone(),
            feature_set: self.feature_set.clone(),
            input_scaling: Scaling { mean: vec![0.0; k], std: vec![1.0; k] },
            target_scaling: Scaling { mean: vec![0.0], std: vec![1.0] },
            layers: Vec::new(),
            base_columns: gpumodel_models::features::base_columns(&names)?,
            training: serde_json::Value::Null,
            physical: Some(terms),
            arithmetic: None,
            residual: None,
            subset: None,
        };
        artifact.check()?;
        Ok(PhysicalFit { artifact, iterations, training_rmse_w: (sse / n as f64).sqrt() })
    }
}

/// Distinct values ascending, and each row's level index.
fn levels(x: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut ls: Vec<f64> = x.to_vec();
    ls.sort_by(f64::total_cmp);
    ls.dedup();
    let of = x.iter().map(|v| ls.partition_point(|l| l < v)).collect();
    (ls, of)
}

struct Data<'a> {
    y: &'a [f64],
    fc: &'a [f64],
    fm: &'a [f64],
    uc: &'a [Vec<f64>],
    um: &'a [Vec<f64>],
    core_of: &'a [usize],
    mem_of: &'a [usize],
}

impl Data<'_> {
    fn n(&self) -> usize {
        self.y.len()
    }

    /// Design row r for fixed voltages: [Vc, Vc²fc, Vc²fc·U…, Vm, Vm²fm, Vm²fm·D…].
    fn design(&self, vc: &[f64], vm: &[f64]) -> Vec<Vec<f64>> {
        let (kc, km) = (self.uc.len(), self.um.len());
        let mut cols = vec![vec![0.0; self.n()]; 4 + kc + km];
        for r in 0..self.n() {
            let v = vc[self.core_of[r]];
            let dyn_c = v * v * self.fc[r];
            let w = vm[self.mem_of[r]];
            let dyn_m = w * w * self.fm[r];
            cols[0][r] = v;
            cols[1][r] = dyn_c;
            for j in 0..kc {
                cols[2 + j][r] = dyn_c * self.uc[j][r];
            }
            cols[2 + kc][r] = w;
            cols[3 + kc][r] = dyn_m;
            for j in 0..km {
                cols[4 + kc + j][r] = dyn_m * self.um[j][r];
            }
        }
        cols
    }

    /// Core-domain dynamic factor without voltage, `fc·(βc + Σβi·Ui)`, and the memory-domain power.
    fn core_dyn(&self, beta: &[f64], r: usize) -> f64 {
        let kc = self.uc.len();
        self.fc[r] * (beta[1] + (0..kc).map(|j| beta[2 + j] * self.uc[j][r]).sum::<f64>())
    }

    fn mem_dyn(&self, beta: &[f64], r: usize) -> f64 {
        let kc = self.uc.len();
        let km = self.um.len();
        self.fm[r] * (beta[3 + kc] + (0..km).map(|j| beta[4 + kc + j] * self.um[j][r]).sum::<f64>())
    }

    fn sse(&self, beta: &[f64], vc: &[f64], vm: &[f64]) -> f64 {
        let kc = self.uc.len();
        (0..self.n())
            .map(|r| {
                let v = vc[self.core_of[r]];
                let w = vm[self.mem_of[r]];
                let p = beta[0] * v
                    + v * v * self.core_dyn(beta, r)
                    + beta[2 + kc] * w
                    + w * w * self.mem_dyn(beta, r);
                (self.y[r] - p).powi(2)
            })
            .sum()
    }
}

/// Alternates NNLS for the βs and bounded per-level voltage updates until the error stops falling.
/// Returns the final squared error, the βs and the number of alternations.
fn alternate(
    d: &Data<'_>,
    vc: &mut [f64],
    vm: &mut [f64],
    ref_c: usize,
    ref_m: usize,
    p: &PhysicalParams,
) -> Result<(f64, Vec<f64>, usize)> {
    let kc = d.uc.len();
    let mut prev = f64::INFINITY;
    let mut it = 0;
    while it < p.max_iterations {
        it += 1;
        let beta = nnls_columns(&d.design(vc, vm), d.y)?;
        // Core levels: P = a·V + b_r·V² + c_r on the level's rows.
        let a = beta[0];
        let core_b: Vec<f64> = (0..d.n()).map(|r| d.core_dyn(&beta, r)).collect();
        let core_rest: Vec<f64> = (0..d.n())
            .map(|r| {
                let w = vm[d.mem_of[r]];
                beta[2 + kc] * w + w * w * d.mem_dyn(&beta, r)
            })
            .collect();
        update_levels(vc, ref_c, a, &core_b, &core_rest, d.y, d.core_of);
        let a = beta[2 + kc];
        let mem_b: Vec<f64> = (0..d.n()).map(|r| d.mem_dyn(&beta, r)).collect();
        let mem_rest: Vec<f64> = (0..d.n())
            .map(|r| {
                let v = vc[d.core_of[r]];
                beta[0] * v + v * v * core_b[r]
            })
            .collect();
        update_levels(vm, ref_m, a, &mem_b, &mem_rest, d.y, d.mem_of);
        let sse = d.sse(&beta, vc, vm);
        if !sse.is_finite() {
            return Err(Error::Invalid("the physical model's fit diverged (non-finite error)".into()));
        }
        let stalled = prev.is_finite() && prev - sse <= p.tolerance * prev;
        prev = sse;
        if stalled {
            break;
        }
    }
    // The βs for the final voltages (one more NNLS can only lower the error).
    let beta = nnls_columns(&d.design(vc, vm), d.y)?;
    Ok((d.sse(&beta, vc, vm), beta, it))
}

/// Gauss–Seidel over the levels of one domain: each level (but the reference) takes the voltage in
/// [lower neighbour's V, upper neighbour's V] that minimizes Σ (y − c − a·V − b·V²)² over its rows.
fn update_levels(v: &mut [f64], fixed: usize, a: f64, b: &[f64], c: &[f64], y: &[f64], of: &[usize]) {
    let nl = v.len();
    // Six sums per level make the level's error a quartic in V.
    let mut s = vec![[0.0f64; 6]; nl];
    for r in 0..y.len() {
        let e = y[r] - c[r];
        let l = &mut s[of[r]];
        l[0] += 1.0;
        l[1] += e;
        l[2] += e * e;
        l[3] += b[r];
        l[4] += e * b[r];
        l[5] += b[r] * b[r];
    }
    for l in 0..nl {
        if l == fixed || s[l][0] == 0.0 {
            continue;
        }
        let lo = if l == 0 { V_MIN } else { v[l - 1] };
        let hi = if l + 1 == nl { V_MAX } else { v[l + 1] };
        let [n, se, see, sb, seb, sbb] = s[l];
        let loss = |x: f64| {
            see - 2.0 * a * se * x
                + (a * a * n - 2.0 * seb) * x * x
                + 2.0 * a * sb * x.powi(3)
                + sbb * x.powi(4)
        };
        v[l] = minimize_1d(loss, lo, hi, v[l]);
    }
}

/// Minimum of `f` on [lo, hi]: a grid, then golden-section search around the best grid point; never
/// worse than `current` (so an update cannot raise the error).
fn minimize_1d(f: impl Fn(f64) -> f64, lo: f64, hi: f64, current: f64) -> f64 {
    if hi <= lo {
        return lo;
    }
    const GRID: usize = 32;
    let step = (hi - lo) / GRID as f64;
    let best_k =
        (0..=GRID).min_by(|&a, &b| f(lo + a as f64 * step).total_cmp(&f(lo + b as f64 * step))).unwrap_or(0);
    let (mut a, mut b) =
        ((lo + (best_k as f64 - 1.0) * step).max(lo), (lo + (best_k as f64 + 1.0) * step).min(hi));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let (x1, x2) = (b - g * (b - a), a + g * (b - a));
        if f(x1) <= f(x2) {
            b = x2;
        } else {
            a = x1;
        }
    }
    let x = 0.5 * (a + b);
    let cur = current.clamp(lo, hi);
    if f(x) <= f(cur) { x } else { cur }
}

/// Non-negative least squares (Lawson & Hanson 1974) of `y` on the columns `cols`, through the Gram
/// matrix of the columns scaled to unit norm (the problem here has ≤ ~20 columns and thousands of rows).
pub fn nnls_columns(cols: &[Vec<f64>], y: &[f64]) -> Result<Vec<f64>> {
    let p = cols.len();
    let norm: Vec<f64> = cols.iter().map(|c| c.iter().map(|x| x * x).sum::<f64>().sqrt()).collect();
    let scale: Vec<f64> = norm.iter().map(|&s| if s > 0.0 { 1.0 / s } else { 0.0 }).collect();
    let mut g = vec![vec![0.0; p]; p];
    let mut h = vec![0.0; p];
    for i in 0..p {
        for j in i..p {
            let v = cols[i].iter().zip(&cols[j]).map(|(a, b)| a * b).sum::<f64>() * scale[i] * scale[j];
            g[i][j] = v;
            g[j][i] = v;
        }
        h[i] = cols[i].iter().zip(y).map(|(a, b)| a * b).sum::<f64>() * scale[i];
    }
    let z = nnls_gram(&g, &h)?;
    Ok(z.iter().zip(&scale).map(|(a, s)| a * s).collect())
}

/// Lawson–Hanson active-set NNLS on normal equations `G x = h`, x ≥ 0.
fn nnls_gram(g: &[Vec<f64>], h: &[f64]) -> Result<Vec<f64>> {
    let p = h.len();
    let mut x = vec![0.0; p];
    let mut passive = vec![false; p];
    let tol = 1e-12 * h.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    let grad = |x: &[f64]| -> Vec<f64> {
        (0..p).map(|i| h[i] - (0..p).map(|j| g[i][j] * x[j]).sum::<f64>()).collect()
    };
    for _outer in 0..3 * p + 10 {
        let w = grad(&x);
        let Some(j) = (0..p).filter(|&j| !passive[j] && w[j] > tol).max_by(|&a, &b| w[a].total_cmp(&w[b]))
        else {
            break;
        };
        passive[j] = true;
        for _inner in 0..3 * p + 10 {
            let idx: Vec<usize> = (0..p).filter(|&i| passive[i]).collect();
            let s_p = solve_spd(g, h, &idx)?;
            let mut s = vec![0.0; p];
            for (&i, v) in idx.iter().zip(&s_p) {
                s[i] = *v;
            }
            if idx.iter().all(|&i| s[i] > 0.0) {
                x = s;
                break;
            }
            let alpha = idx
                .iter()
                .filter(|&&i| s[i] <= 0.0)
                .map(|&i| x[i] / (x[i] - s[i]))
                .fold(f64::INFINITY, f64::min)
                .clamp(0.0, 1.0);
            for i in 0..p {
                x[i] += alpha * (s[i] - x[i]);
                if passive[i] && x[i] <= 1e-15 {
                    passive[i] = false;
                    x[i] = 0.0;
                }
            }
        }
    }
    Ok(x)
}

/// Solves `G[idx,idx] s = h[idx]` by Cholesky, with a tiny ridge so that collinear columns (e.g. one
/// memory clock level: β1·V_m and β_m·V_m²·f_m are then the same column) stay solvable.
fn solve_spd(g: &[Vec<f64>], h: &[f64], idx: &[usize]) -> Result<Vec<f64>> {
    let k = idx.len();
    let mut a = vec![vec![0.0; k]; k];
    for (r, &i) in idx.iter().enumerate() {
        for (c, &j) in idx.iter().enumerate() {
            a[r][c] = g[i][j];
        }
        a[r][r] += 1e-10;
    }
    let mut l = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in 0..=i {
            let s = a[i][j] - (0..j).map(|m| l[i][m] * l[j][m]).sum::<f64>();
            if i == j {
                if s <= 0.0 {
                    return Err(Error::Linear("the physical model's normal equations are singular".into()));
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    let mut z = vec![0.0; k];
    for i in 0..k {
        z[i] = (h[idx[i]] - (0..i).map(|m| l[i][m] * z[m]).sum::<f64>()) / l[i][i];
    }
    let mut s = vec![0.0; k];
    for i in (0..k).rev() {
        s[i] = (z[i] - (i + 1..k).map(|m| l[m][i] * s[m]).sum::<f64>()) / l[i][i];
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2};

    #[test]
    fn nnls_matches_a_hand_solved_case() {
        // y = 2·a + 0·b exactly, but least squares without the sign constraint would use b < 0 on noise:
        // columns a = (1,0,1), b = (0,1,1), y = (2, -1, 1): unconstrained x = (2, -1); NNLS: b = 0 and
        // a = (a·y)/(a·a) = 3/2.
        let x = nnls_columns(&[vec![1.0, 0.0, 1.0], vec![0.0, 1.0, 1.0]], &[2.0, -1.0, 1.0]).unwrap();
        assert!((x[0] - 1.5).abs() < 1e-9 && x[1] == 0.0, "{x:?}");
        // A positive exact solution is recovered exactly.
        let x = nnls_columns(&[vec![1.0, 0.0, 1.0], vec![0.0, 1.0, 1.0]], &[2.0, 3.0, 5.0]).unwrap();
        assert!((x[0] - 2.0).abs() < 1e-7 && (x[1] - 3.0).abs() < 1e-7, "{x:?}");
    }

    /// Data generated by the model itself with known βs and voltages.
    fn synthetic() -> (Dataset, Vec<f64>, Vec<f64>) {
        let core = [500.0, 700.0, 900.0, 1000.0, 1100.0];
        let v_core = [0.80, 0.86, 0.95, 1.0, 1.08];
        let mem = [2000.0, 3000.0];
        let v_mem = [0.9, 1.0];
        let mut rows = Vec::new();
        let mut y = Vec::new();
        let mut groups = Vec::new();
        for k in 0..12 {
            let u1 = (k % 4) as f64 / 3.0;
            let u2 = ((k * 7) % 5) as f64 / 4.0;
            let d = ((k * 3) % 6) as f64 / 5.0;
            for (ci, &c) in core.iter().enumerate() {
                for (mi, &m) in mem.iter().enumerate() {
                    let (vc, vm) = (v_core[ci], v_mem[mi]);
                    let (fc, fm) = (c / 1000.0, m / 3000.0);
                    let p = 30.0 * vc
                        + vc * vc * fc * (20.0 + 60.0 * u1 + 25.0 * u2)
                        + 8.0 * vm
                        + vm * vm * fm * (5.0 + 30.0 * d);
                    rows.extend([u1, u2, d, c, m]);
                    y.push(p);
                    groups.push(format!("k{k}"));
                }
            }
        }
        let n = y.len();
        let ds = Dataset {
            records: Array2::from_shape_vec((n, 5), rows).unwrap(),
            targets: Array1::from(y),
            feature_names: ["U1", "U2", "DRAM", "core_mhz", "mem_mhz"].map(String::from).to_vec(),
            target_name: "power_w".into(),
            groups,
        };
        (ds, v_core.to_vec(), v_mem.to_vec())
    }

    fn params() -> PhysicalParams {
        PhysicalParams {
            ref_core_mhz: Some(1000.0),
            ref_mem_mhz: Some(3000.0),
            ..PhysicalParams::from_activities(&["U1".into(), "U2".into(), "DRAM".into()], "t")
        }
        .check()
        .unwrap()
    }

    #[test]
    fn recovers_known_betas_and_voltages() {
        let (ds, v_core, v_mem) = synthetic();
        let p = params();
        assert_eq!(p.mem_inputs, vec!["DRAM".to_string()]);
        let fit = p.fit_report(&ds).unwrap();
        assert!(
            fit.training_rmse_w < 0.05,
            "rmse {} after {} iterations: {:?}",
            fit.training_rmse_w,
            fit.iterations,
            fit.artifact.physical
        );
        let t = fit.artifact.physical.as_ref().unwrap();
        for (l, v) in t.core_levels.iter().zip(&v_core) {
            assert!((l.relative_v - v).abs() < 0.01, "core {} MHz: {} vs {v}", l.mhz, l.relative_v);
        }
        for (l, v) in t.mem_levels.iter().zip(&v_mem) {
            assert!((l.relative_v - v).abs() < 0.01, "mem {} MHz: {} vs {v}", l.mhz, l.relative_v);
        }
        let close = |a: f64, b: f64| (a - b).abs() < 0.02 * b.max(1.0);
        assert!(close(t.beta0_w, 30.0) && close(t.beta_core_w, 20.0), "{t:?}");
        assert!(close(t.core_betas[0], 60.0) && close(t.core_betas[1], 25.0), "{t:?}");
        assert!(close(t.beta1_w, 8.0) && close(t.beta_mem_w, 5.0) && close(t.mem_betas[0], 30.0), "{t:?}");
        // Voltage never falls as the clock rises.
        assert!(t.core_levels.windows(2).all(|w| w[0].relative_v <= w[1].relative_v));
        // The artifact predicts what the fit saw.
        let pred = fit.artifact.predict(ds.records.view());
        let rmse = crate::metrics::rmse(pred.as_slice().unwrap(), ds.targets.as_slice().unwrap()).unwrap();
        assert!((rmse - fit.training_rmse_w).abs() < 1e-9);
    }

    #[test]
    fn one_core_clock_level_is_a_clear_error() {
        let (ds, _, _) = synthetic();
        let rows: Vec<usize> = (0..ds.n_rows()).filter(|&r| ds.records[[r, 3]] == 900.0).collect();
        let one = ds.select_rows(&rows);
        let p = PhysicalParams::from_activities(&["U1".into(), "U2".into(), "DRAM".into()], "t");
        let msg = p.fit(&one).unwrap_err().to_string();
        assert!(msg.contains("at least two core clock levels") && msg.contains("900"), "{msg}");
    }
}
