//! The plain-Rust forward pass of an artifact: the network and the physical terms combined, row by
//! row or in chunks of rows.

use super::{Activation, ModelArtifact, Residual};
use ndarray::{Array1, ArrayView2};

impl ModelArtifact {
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
                self.residual_form().apply(base, self.network_one(x))
            }
        }
    }

    /// How the network's output combines with the physical model (`check` proved a `physical+bpann`
    /// artifact names it).
    fn residual_form(&self) -> Residual {
        self.residual.unwrap_or(Residual::Relative)
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
        cur[0] * self.target_scaling.std[0] + self.target_scaling.mean[0]
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
        h[0] * self.target_scaling.std[0] + self.target_scaling.mean[0]
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
                    let residual = self.residual_form();
                    out.zip_mut_with(&base, |n, b| *n = residual.apply(*b, *n));
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
            for r in 0..m {
                out[start + r] = cur[0][r] * t_std + t_mean;
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
    use super::super::tests::{physical, physical_with_linear_net, tiny};
    use super::super::*;

    #[test]
    fn a_relative_residual_multiplies_and_is_required_only_with_a_network() {
        let rel = physical_with_linear_net();
        let x = [0.5, 0.25, 1000.0, 3000.0];
        // Physical 79 W (physical_model_by_hand), network 0.005.
        assert!((rel.predict_one(&x) - 79.0 * 1.005).abs() < 1e-9);
        let batch = rel.predict(ndarray::array![[0.5, 0.25, 1000.0, 3000.0]].view());
        assert!((batch[0] - 79.0 * 1.005).abs() < 1e-9);
        let text = serde_json::to_string(&rel).unwrap();
        assert!(text.contains(r#""residual":"relative""#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), rel);
        // A physical-bpann artifact without it, or with another form, is refused.
        let none = ModelArtifact { residual: None, ..rel.clone() };
        assert!(none.check().unwrap_err().to_string().contains("needs `\"residual\": \"relative\"`"));
        let other = text.replace(r#""residual":"relative""#, r#""residual":"absolute""#);
        assert!(ModelArtifact::from_json_str(&other, "m.json").is_err());
        // A model without a residual network cannot carry one.
        let bad = ModelArtifact { residual: Some(Residual::Relative), ..physical() };
        assert!(bad.check().unwrap_err().to_string().contains("no residual network"));
        let text = serde_json::to_string(&physical()).unwrap();
        assert!(!text.contains("residual"), "{text}");
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
