//! The plain-Rust forward pass of an artifact: the network, the physical terms and the residual
//! gate combined, row by row or in chunks of rows.

use super::{Activation, ModelArtifact, ResidualGate, TargetTransform};
use crate::error::{Error, Result};
use ndarray::{Array1, ArrayView2};

impl ModelArtifact {
    /// Positions of a gate's inputs among the artifact's inputs.
    pub(super) fn gate_indices(&self, g: &ResidualGate) -> Result<Vec<usize>> {
        g.inputs
            .iter()
            .map(|n| {
                self.inputs.iter().position(|i| i == n).ok_or_else(|| {
                    Error::Mismatch(format!("residual gate: input '{n}' is not among the artifact's inputs"))
                })
            })
            .collect()
    }

    /// The residual gate's weight of every row of `records` (columns in the order of `inputs`), or
    /// `None` when the model has no gate. `check` proved the gate's inputs are among `inputs`; a
    /// caller passing too few columns gets NaN weights rather than a panic.
    pub fn gate_weights(&self, records: ArrayView2<'_, f64>) -> Option<Array1<f64>> {
        let g = self.physical.as_ref()?.residual_gate.as_ref()?;
        let idx = self.gate_indices(g).ok().filter(|i| i.iter().all(|&j| j < records.ncols()));
        let mut u = vec![0.0; g.inputs.len()];
        Some(
            records
                .rows()
                .into_iter()
                .map(|r| match &idx {
                    Some(idx) => {
                        for (v, &j) in u.iter_mut().zip(idx) {
                            *v = r[j];
                        }
                        g.weight(&u)
                    }
                    None => f64::NAN,
                })
                .collect(),
        )
    }

    /// Predicts one row; `x` is in the order of `inputs`.
    pub fn predict_one(&self, x: &[f64]) -> f64 {
        match &self.physical {
            None => self.network_one(x),
            Some(p) => {
                let row = ndarray::ArrayView2::from_shape((1, x.len()), x);
                let base = row
                    .as_ref()
                    .map_or(f64::NAN, |r| p.predict(&self.inputs, r.view()).map_or(f64::NAN, |v| v[0]));
                if self.layers.is_empty() {
                    return base;
                }
                let gate = match row.map(|r| self.gate_weights(r)) {
                    Ok(Some(g)) => g[0],
                    Ok(None) => 1.0,
                    Err(_) => f64::NAN,
                };
                self.residual.apply(base, gate * self.network_one(x))
            }
        }
    }

    fn network_one(&self, x: &[f64]) -> f64 {
        let mut buf_a = [0.0f64; MAX_WIDTH];
        let mut buf_b = [0.0f64; MAX_WIDTH];
        let n = x.len();
        if n > MAX_WIDTH || self.layers.iter().any(|l| l.bias.len() > MAX_WIDTH) {
            return self.predict_one_alloc(x);
        }
        for i in 0..n {
            buf_a[i] = (x[i] - self.input_scaling.mean[i]) / self.input_scaling.std[i];
        }
        // Ping-pong between two stack buffers by reference: swapping the arrays themselves would copy
        // 1 KiB per layer per row, which dominated the forward pass.
        let (mut cur, mut next) = (&mut buf_a, &mut buf_b);
        let mut width = n;
        for layer in &self.layers {
            for (o, (w, b)) in layer.weights.iter().zip(&layer.bias).enumerate() {
                let s = b + w[..width].iter().zip(&cur[..width]).map(|(a, c)| a * c).sum::<f64>();
                next[o] = activate(layer.activation, s);
            }
            width = layer.bias.len();
            std::mem::swap(&mut cur, &mut next);
        }
        self.target_transform.invert(cur[0] * self.target_scaling.std[0] + self.target_scaling.mean[0])
    }

    fn predict_one_alloc(&self, x: &[f64]) -> f64 {
        let mut h: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| (v - self.input_scaling.mean[i]) / self.input_scaling.std[i])
            .collect();
        for layer in &self.layers {
            h = layer
                .weights
                .iter()
                .zip(&layer.bias)
                .map(|(w, b)| {
                    activate(layer.activation, b + w.iter().zip(&h).map(|(a, c)| a * c).sum::<f64>())
                })
                .collect();
        }
        self.target_transform.invert(h[0] * self.target_scaling.std[0] + self.target_scaling.mean[0])
    }

    /// Predicts every row of `records` (columns in the order of `inputs`).
    ///
    /// Rows go through the network in chunks of `CHUNK` (8) rows, unit-major: the inner loops run over the rows of
    /// a chunk, so the multiply-adds vectorize and the chunk's `exp` calls are independent and pipeline,
    /// instead of one row's dependent chain of layers at a time. A physical model's terms are added.
    pub fn predict(&self, records: ArrayView2<'_, f64>) -> Array1<f64> {
        match &self.physical {
            None => self.network(records),
            Some(p) => {
                // `check` proved that the terms' inputs are among `inputs`; a caller passing the wrong
                // number of columns gets NaN rather than a panic.
                let base = p
                    .predict(&self.inputs, records)
                    .unwrap_or_else(|_| Array1::from_elem(records.nrows(), f64::NAN));
                if self.layers.is_empty() {
                    base
                } else {
                    let mut out = self.network(records);
                    if let Some(g) = self.gate_weights(records) {
                        out *= &g;
                    }
                    out.zip_mut_with(&base, |n, b| *n = self.residual.apply(*b, *n));
                    out
                }
            }
        }
    }

    // The loops index several buffers by the same row or unit, which iterators would only obscure.
    #[allow(clippy::needless_range_loop)]
    fn network(&self, records: ArrayView2<'_, f64>) -> Array1<f64> {
        let n = records.nrows();
        let width_in = records.ncols();
        let mut out = Array1::zeros(n);
        if width_in > MAX_WIDTH || self.layers.iter().any(|l| l.bias.len() > MAX_WIDTH) {
            for (i, r) in records.rows().into_iter().enumerate() {
                out[i] = self.network_one(&r.to_vec());
            }
            return out;
        }
        let mut buf_a = [[0.0f64; CHUNK]; MAX_WIDTH];
        let mut buf_b = [[0.0f64; CHUNK]; MAX_WIDTH];
        let mean = &self.input_scaling.mean;
        // One division per input, not per input and row: standardizing by multiplication.
        let inv_std: Vec<f64> = self.input_scaling.std.iter().map(|s| 1.0 / s).collect();
        // Row-major contiguous input (the usual case) is read as one slice, without per-row views.
        let contiguous = records.as_slice();
        let (t_mean, t_std) = (self.target_scaling.mean[0], self.target_scaling.std[0]);
        let mut start = 0;
        while start < n {
            let m = CHUNK.min(n - start);
            let (mut cur, mut next) = (&mut buf_a, &mut buf_b);
            match contiguous {
                Some(all) => {
                    let rows = &all[start * width_in..(start + m) * width_in];
                    for (r, row) in rows.chunks_exact(width_in.max(1)).enumerate() {
                        for i in 0..width_in {
                            cur[i][r] = (row[i] - mean[i]) * inv_std[i];
                        }
                    }
                }
                None => {
                    for r in 0..m {
                        let row = records.row(start + r);
                        for i in 0..width_in {
                            cur[i][r] = (row[i] - mean[i]) * inv_std[i];
                        }
                    }
                }
            }
            let mut width = width_in;
            for layer in &self.layers {
                for (o, (w, b)) in layer.weights.iter().zip(&layer.bias).enumerate() {
                    let mut acc = [*b; CHUNK];
                    for (wi, xi) in w[..width].iter().zip(cur[..width].iter()) {
                        for r in 0..CHUNK {
                            acc[r] += wi * xi[r];
                        }
                    }
                    // The activation is chosen once per unit, so the row loop has no branch in it.
                    match layer.activation {
                        Activation::Identity => next[o] = acc,
                        Activation::Sigmoid => {
                            for r in 0..CHUNK {
                                next[o][r] = sigmoid(acc[r]);
                            }
                        }
                    }
                }
                width = layer.bias.len();
                std::mem::swap(&mut cur, &mut next);
            }
            match self.target_transform {
                TargetTransform::Identity => {
                    for r in 0..m {
                        out[start + r] = cur[0][r] * t_std + t_mean;
                    }
                }
                TargetTransform::Log => {
                    for r in 0..m {
                        out[start + r] = (cur[0][r] * t_std + t_mean).exp();
                    }
                }
            }
            start += m;
        }
        out
    }
}

/// Rows per chunk of the batched forward pass.
const CHUNK: usize = 8;
/// Widest layer the stack-buffer forward passes take (wider networks use the allocating path).
const MAX_WIDTH: usize = 64;

fn activate(a: Activation, x: f64) -> f64 {
    match a {
        Activation::Identity => x,
        Activation::Sigmoid => sigmoid(x),
    }
}

#[inline(always)]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{physical, physical_with_linear_net, three_kernels, tiny, ud};
    use super::super::*;

    #[test]
    fn a_relative_residual_multiplies_and_an_absolute_one_adds() {
        let abs = physical_with_linear_net();
        let rel = ModelArtifact { residual: Residual::Relative, ..abs.clone() };
        let x = [0.5, 0.25, 1000.0, 3000.0];
        // Physical 79 W (physical_model_by_hand), network 0.005.
        assert!((abs.predict_one(&x) - 79.005).abs() < 1e-9);
        assert!((rel.predict_one(&x) - 79.0 * 1.005).abs() < 1e-9);
        let batch = rel.predict(ndarray::array![[0.5, 0.25, 1000.0, 3000.0]].view());
        assert!((batch[0] - 79.0 * 1.005).abs() < 1e-9);
        // Written only when relative; an artifact without the key (every older one) is absolute.
        let text = serde_json::to_string(&abs).unwrap();
        assert!(!text.contains("residual"), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "old.json").unwrap().residual, Residual::Absolute);
        let text = serde_json::to_string(&rel).unwrap();
        assert!(text.contains(r#""residual":"relative""#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), rel);
        // A model without a residual network cannot carry one.
        let bad = ModelArtifact { residual: Residual::Relative, ..physical() };
        assert!(bad.check().unwrap_err().to_string().contains("no residual network"));
    }

    #[test]
    fn a_gated_residual_is_applied_by_predict_and_predict_one_and_old_artifacts_predict_as_before() {
        let plain = ModelArtifact { residual: Residual::Relative, ..physical_with_linear_net() };
        let gate = ResidualGate::from_training(&three_kernels(), &ud()).unwrap().unwrap();
        let mut gated = plain.clone();
        gated.physical.as_mut().unwrap().residual_gate = Some(gate.clone());
        gated.check().unwrap();
        // On a training kernel (k2: U = 1, D = 0) g = 1: the gated model is the plain one.
        let near = [1.0, 0.0, 1000.0, 3000.0];
        assert_eq!(gated.predict_one(&near), plain.predict_one(&near));
        // Far along U: g = ¼; physical 30 + (10 + 50·U) + 5 + 4, network 0.01·U.
        let u = 1.0 + 2.0 * gate.tau * std::f64::consts::SQRT_2 / 3.0;
        let far = [u, 0.0, 1000.0, 3000.0];
        let p = 49.0 + 50.0 * u;
        assert!((gated.predict_one(&far) - p * (1.0 + 0.25 * 0.01 * u)).abs() < 1e-9);
        assert!((plain.predict_one(&far) - p * (1.0 + 0.01 * u)).abs() < 1e-9);
        let x = ndarray::array![[1.0, 0.0, 1000.0, 3000.0], [u, 0.0, 1000.0, 3000.0]];
        let batch = gated.predict(x.view());
        assert_eq!(gated.gate_weights(x.view()).unwrap().to_vec(), vec![1.0, gate.weight(&[u, 0.0])]);
        assert!((batch[0] - gated.predict_one(&near)).abs() < 1e-12);
        assert!((batch[1] - gated.predict_one(&far)).abs() < 1e-12);
        // The absolute residual is gated the same way: P + g·network.
        let abs = ModelArtifact { residual: Residual::Absolute, ..gated.clone() };
        assert!((abs.predict_one(&far) - (p + 0.25 * 0.01 * u)).abs() < 1e-9);
        // Round trip; an artifact written before the gate existed has no such key and predicts ungated.
        let text = serde_json::to_string(&gated).unwrap();
        assert!(text.contains(r#""residual_gate":{"inputs":["U","D"]"#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), gated);
        let old = serde_json::to_string(&plain).unwrap();
        assert!(!old.contains("residual_gate"), "{old}");
        let old = ModelArtifact::from_json_str(&old, "old.json").unwrap();
        assert!(old.gate_weights(x.view()).is_none());
        assert_eq!(old.predict(x.view()), plain.predict(x.view()));
        assert_eq!(old.predict_one(&far), plain.predict_one(&far));
        // Refused: a gate on a model without a network, on an input the model lacks, or with a bad τ.
        let mut phys = physical();
        phys.physical.as_mut().unwrap().residual_gate = Some(gate.clone());
        assert!(phys.check().unwrap_err().to_string().contains("no residual network to gate"));
        let bad = text.replace(r#""inputs":["U","D"]"#, r#""inputs":["U","X"]"#);
        let msg = ModelArtifact::from_json_str(&bad, "bad.json").unwrap_err().to_string();
        assert!(msg.contains("input 'X'"), "{msg}");
        let mut neg = gated.clone();
        neg.physical.as_mut().unwrap().residual_gate.as_mut().unwrap().tau = -1.0;
        assert!(neg.check().unwrap_err().to_string().contains("residual gate"));
    }

    /// A log-target network predicts exp of its un-standardized output, on every path; the field is
    /// written only when `log`, an artifact without it (every older one) is the identity, and only a
    /// standalone network may carry it.
    #[test]
    fn a_log_target_predicts_exp_of_the_network_and_is_optional() {
        let watts = tiny();
        let log = ModelArtifact {
            target_scaling: Scaling { mean: vec![4.5], std: vec![0.3] },
            target_transform: TargetTransform::Log,
            ..watts.clone()
        };
        let x = ndarray::Array2::from_shape_fn((19, 2), |(i, j)| {
            (i as f64 * 0.41 - 4.0) * (1.0 - 1.7 * j as f64)
        });
        let batch = log.predict(x.view());
        for (r, row) in x.rows().into_iter().enumerate() {
            // By hand: z = ((a − 1)/2, b), h = σ(z0 − z1), output 2h − 1, then 4.5 + 0.3·output.
            let (z0, z1) = ((row[0] - 1.0) / 2.0, row[1]);
            let h = 1.0 / (1.0 + (-(z0 - z1)).exp());
            let want = (4.5 + 0.3 * (2.0 * h - 1.0)).exp();
            for got in [batch[r], log.predict_one(&row.to_vec()), log.predict_one_alloc(&row.to_vec())] {
                assert!((got - want).abs() < 1e-9 * want, "row {r}: {got} vs {want}");
            }
        }
        let text = serde_json::to_string(&watts).unwrap();
        assert!(!text.contains("target_transform"), "{text}");
        assert_eq!(
            ModelArtifact::from_json_str(&text, "old.json").unwrap().target_transform,
            TargetTransform::Identity
        );
        let text = serde_json::to_string(&log).unwrap();
        assert!(text.contains(r#""target_transform":"log""#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), log);
        let bad = ModelArtifact { target_transform: TargetTransform::Log, ..physical_with_linear_net() };
        let e = bad.check().unwrap_err().to_string();
        assert!(e.contains("cannot have a log target"), "{e}");
    }

    #[test]
    fn forward_pass_by_hand() {
        // x = (3, 1) → z = (1, 1) → σ(1 − 1) = 0.5 → 2·0.5 − 1 = 0 → 0·10 + 100 = 100.
        assert!((tiny().predict_one(&[3.0, 1.0]) - 100.0).abs() < 1e-12);
        // x = (1, 0) → z = (0, 0) → σ(0) = 0.5 → same 100; x = (1, -2) → σ(2) = 0.8808 → 2σ−1 = 0.7616.
        let y = tiny().predict_one(&[1.0, -2.0]);
        let s = 1.0 / (1.0 + (-2.0f64).exp());
        assert!((y - (100.0 + 10.0 * (2.0 * s - 1.0))).abs() < 1e-12);
    }

    #[test]
    fn batched_predict_matches_row_by_row() {
        let a = tiny();
        // 19 rows: two full chunks of 8 and a partial one, so every path of the chunked loop runs.
        let x = ndarray::Array2::from_shape_fn((19, 2), |(i, j)| {
            (i as f64 * 0.37 - 3.0) * if j == 0 { 1.0 } else { -0.6 }
        });
        let batch = a.predict(x.view());
        // The same rows in column-major order take the strided (non-slice) input path.
        let mut fortran = ndarray::Array2::zeros(ndarray::ShapeBuilder::f((19, 2)));
        fortran.assign(&x);
        assert!(fortran.as_slice().is_none());
        let strided = a.predict(fortran.view());
        for (i, r) in x.rows().into_iter().enumerate() {
            let one = a.predict_one(&r.to_vec());
            assert!((batch[i] - one).abs() < 1e-12 && (strided[i] - one).abs() < 1e-12);
        }
    }
}
