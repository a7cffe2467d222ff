//! Model artifacts: a trained power model as a plain, versioned, human-readable JSON document, evaluated
//! here without burn, so that `predict` and `collect` never depend on the training stack.
//!
//! Both model families share one form: standardize the inputs, run a stack of dense layers, un-scale the
//! output. MLR / MLR+ are one linear layer; the BP-ANN is `inputs → 4 σ → 4 σ → 1` by default.

use crate::error::{Error, Result};
use ndarray::{Array1, ArrayView2};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of the artifact format this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Which model family an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Back-propagation neural network (paper §5.4).
    Bpann,
    /// Multiple linear regression on the base inputs (Nagasaka et al. 2010).
    Mlr,
    /// Multiple linear regression on all inputs.
    #[serde(rename = "mlr+")]
    MlrPlus,
}

impl ModelKind {
    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Bpann => "bpann",
            ModelKind::Mlr => "mlr",
            ModelKind::MlrPlus => "mlr+",
        }
    }
}

/// Activation of a dense layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    Identity,
    Sigmoid,
}

/// `y = act(W x + b)`, with `weights[out][in]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dense {
    pub weights: Vec<Vec<f64>>,
    pub bias: Vec<f64>,
    pub activation: Activation,
}

/// `(x − mean) / std`, per input; the output is `y · std + mean`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
}

/// A trained model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelArtifact {
    pub format_version: u32,
    pub kind: ModelKind,
    /// Input column names, in order.
    pub inputs: Vec<String>,
    /// Target column name (`power_w`).
    pub target: String,
    /// Name of the feature set the model was trained with.
    pub feature_set: String,
    pub input_scaling: Scaling,
    /// Output scaling: one mean and one std.
    pub target_scaling: Scaling,
    pub layers: Vec<Dense>,
    /// Base columns the inputs are computed from (see [`crate::features`]): what a kernel must provide.
    /// Empty in artifacts written before derived inputs existed; then the inputs are the base columns.
    #[serde(default)]
    pub base_columns: Vec<String>,
    /// How the model was made: dataset name and sha256, seed, epochs, metrics… (free-form JSON).
    #[serde(default)]
    pub training: serde_json::Value,
}

impl ModelArtifact {
    /// Reads an artifact and checks its shapes.
    pub fn from_json_file(path: &Path) -> Result<ModelArtifact> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        ModelArtifact::from_json_str(&text, &path.display().to_string())
    }

    /// Parses an artifact; `source` names it in errors.
    pub fn from_json_str(text: &str, source: &str) -> Result<ModelArtifact> {
        let a: ModelArtifact = serde_json::from_str(text).map_err(|e| Error::Document {
            file: source.to_string(),
            message: format!("not a gpumodel model artifact: {e}"),
        })?;
        a.check().map_err(|e| Error::Document { file: source.to_string(), message: e.to_string() })?;
        Ok(a)
    }

    /// Writes the artifact as pretty JSON.
    pub fn write_json_file(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Invalid(e.to_string()))?;
        std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
    }

    /// Checks the version and that every layer's shape chains from the inputs to one output.
    pub fn check(&self) -> Result<()> {
        if self.format_version != FORMAT_VERSION {
            return Err(Error::Mismatch(format!(
                "artifact format version {} is not {FORMAT_VERSION}: retrain it with this gpumodel",
                self.format_version
            )));
        }
        let n = self.inputs.len();
        if self.input_scaling.mean.len() != n || self.input_scaling.std.len() != n {
            return Err(Error::Mismatch("input scaling does not match the number of inputs".into()));
        }
        if self.target_scaling.mean.len() != 1 || self.target_scaling.std.len() != 1 {
            return Err(Error::Mismatch("target scaling must have one mean and one std".into()));
        }
        let mut width = n;
        for (k, l) in self.layers.iter().enumerate() {
            if l.weights.len() != l.bias.len() || l.weights.iter().any(|r| r.len() != width) {
                return Err(Error::Mismatch(format!("layer {k} does not take {width} inputs")));
            }
            width = l.bias.len();
        }
        if width != 1 || self.layers.is_empty() {
            return Err(Error::Mismatch("the last layer must have exactly one output".into()));
        }
        Ok(())
    }

    /// Checks that `available` columns provide every input, naming the missing ones.
    pub fn check_inputs(&self, available: &[String]) -> Result<Vec<usize>> {
        let mut idx = Vec::with_capacity(self.inputs.len());
        let mut missing = Vec::new();
        for name in &self.inputs {
            match available.iter().position(|a| a == name) {
                Some(i) => idx.push(i),
                None => missing.push(name.as_str()),
            }
        }
        if missing.is_empty() {
            Ok(idx)
        } else {
            Err(Error::Mismatch(format!(
                "the {} model (feature set '{}') needs input(s) {} that the data does not provide",
                self.kind.name(),
                self.feature_set,
                missing.join(", ")
            )))
        }
    }

    /// Predicts one row; `x` is in the order of `inputs`.
    pub fn predict_one(&self, x: &[f64]) -> f64 {
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
    /// instead of one row's dependent chain of layers at a time.
    // The loops index several buffers by the same row or unit, which iterators would only obscure.
    #[allow(clippy::needless_range_loop)]
    pub fn predict(&self, records: ArrayView2<'_, f64>) -> Array1<f64> {
        let n = records.nrows();
        let width_in = records.ncols();
        let mut out = Array1::zeros(n);
        if width_in > MAX_WIDTH || self.layers.iter().any(|l| l.bias.len() > MAX_WIDTH) {
            for (i, r) in records.rows().into_iter().enumerate() {
                out[i] = self.predict_one(&r.to_vec());
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
    use super::*;

    fn tiny() -> ModelArtifact {
        ModelArtifact {
            format_version: FORMAT_VERSION,
            kind: ModelKind::Bpann,
            inputs: vec!["a".into(), "b".into()],
            target: "power_w".into(),
            feature_set: "t".into(),
            input_scaling: Scaling { mean: vec![1.0, 0.0], std: vec![2.0, 1.0] },
            target_scaling: Scaling { mean: vec![100.0], std: vec![10.0] },
            layers: vec![
                Dense { weights: vec![vec![1.0, -1.0]], bias: vec![0.0], activation: Activation::Sigmoid },
                Dense { weights: vec![vec![2.0]], bias: vec![-1.0], activation: Activation::Identity },
            ],
            base_columns: vec!["a".into(), "b".into()],
            training: serde_json::Value::Null,
        }
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
    fn json_round_trip_and_shape_check() {
        let a = tiny();
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), a);
        let mut bad = a.clone();
        bad.layers[1].weights[0].push(1.0);
        let text = serde_json::to_string(&bad).unwrap();
        assert!(ModelArtifact::from_json_str(&text, "m.json").unwrap_err().to_string().contains("layer 1"));
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

    #[test]
    fn missing_inputs_are_named() {
        let msg = tiny().check_inputs(&["a".into()]).unwrap_err().to_string();
        assert!(msg.contains("input(s) b"), "{msg}");
    }
}
