//! burn's side of the BP-ANN: the network as a burn module, Adam through burn's autodiff
//! (`Backend::Burn`, the general path), and burn's forward pass of an artifact for checking ours.

use super::native::EarlyStop;
use super::{BpannParams, EVAL_EVERY, Outcome};
use crate::mlr::standardize;
use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{DType, Device, Tensor, TensorData, activation::sigmoid};
use gpumodel_models::artifact::{Activation, Dense, ModelArtifact};
use ndarray::Array2;

#[derive(Module, Debug)]
pub(super) struct Net {
    layers: Vec<Linear>,
}

impl Net {
    pub(super) fn forward(&self, x: Tensor<2>) -> Tensor<2> {
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
    pub(super) fn from_layers(layers: &[Dense], device: &Device) -> Net {
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

    pub(super) fn to_layers(&self) -> Vec<Dense> {
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

fn tensor2(a: &Array2<f64>, device: &Device) -> Tensor<2> {
    let data = TensorData::new(a.iter().copied().collect::<Vec<f64>>(), [a.nrows(), a.ncols()]);
    Tensor::<2>::from_data(data, (device, DType::F64))
}

impl BpannParams {
    /// One restart of full-batch Adam from `init` with burn's autodiff on the standardized rows `zt`,
    /// `yt` (the general path, kept for reference and for networks the native path does not cover).
    pub(super) fn adam_burn(
        &self,
        device: &Device,
        (zt, yt): (&Array2<f64>, &[f64]),
        init: Vec<Dense>,
        val_mse: &dyn Fn(&[Dense]) -> f64,
        progress: &mut dyn FnMut(u64),
    ) -> Outcome {
        let n = zt.nrows();
        let x = tensor2(zt, device);
        let y = Tensor::<2>::from_data(TensorData::new(yt.to_vec(), [n, 1]), (device, DType::F64));
        let mut net = Net::from_layers(&init, device);
        let mut opt = AdamConfig::new().with_epsilon(self.epsilon as f32).init();
        let mut stop = EarlyStop::new(val_mse(&init), init, self.patience);
        let mut epochs_run = 0;
        for epoch in 1..=self.max_epochs {
            let pred = net.forward(x.clone());
            let diff = pred - y.clone();
            let loss = (diff.clone() * diff).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            net = opt.step(self.learning_rate, net, grads);
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
}

/// Evaluates an artifact's network with burn (Flex backend, f64), for checking that burn's forward pass
/// and `ModelArtifact::predict` agree. `records` are raw inputs in the artifact's input order.
pub fn burn_forward(artifact: &ModelArtifact, records: &Array2<f64>) -> Vec<f64> {
    let device = Device::flex();
    let net = Net::from_layers(&artifact.layers, &device);
    let z = standardize(records, &artifact.input_scaling);
    let out = net.forward(tensor2(&z, &device));
    let v: Vec<f64> = out.into_data().convert::<f64>().try_to_vec::<f64>().unwrap_or_default();
    let (m, s) = (artifact.target_scaling.mean[0], artifact.target_scaling.std[0]);
    // A physical+bpann network models the residual of the physical terms, relative to them.
    // The combination is written out here rather than taken from `Residual::apply`, so that this pass
    // stays independent of the one it is compared with.
    let base = artifact.physical.as_ref().and_then(|p| p.predict(&artifact.inputs, records.view()).ok());
    v.into_iter()
        .enumerate()
        .map(|(i, y)| {
            let net = y * s + m;
            match &base {
                None => net,
                Some(b) => b[i] * (1.0 + net),
            }
        })
        .collect()
}

/// Mean squared error of `layers` on standardized rows `z` and targets `y` (standardized units), by the
/// artifact's forward pass (the validation error of burn's fits).
pub(super) fn std_mse(layers: &[Dense], z: &Array2<f64>, y: &[f64]) -> f64 {
    let p = super::forward_std(layers, z);
    p.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / y.len().max(1) as f64
}
