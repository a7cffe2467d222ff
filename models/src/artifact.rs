//! Model artifacts: a trained power model as a plain, versioned, human-readable JSON document, evaluated
//! here without burn, so that `predict` and `collect` never depend on the training stack.
//!
//! Both model families share one form: standardize the inputs, run a stack of dense layers, un-scale the
//! output. MLR / MLR+ are one linear layer; the BP-ANN is `inputs → 4 σ → 4 σ → 1` by default.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

mod inference;
mod physical;
mod subset;

pub use physical::{PhysicalTerms, VoltageLevel, physical_input_names, voltage_at};
pub use subset::{SubsetFit, SubsetFits};

/// Version of the artifact format this build reads and writes. Version 2 rejects fields it does not
/// know (a misspelt or foreign field is an error, not silently ignored); version 1 artifacts are not
/// read: re-run `gpumodel train` to make them again.
pub const FORMAT_VERSION: u32 = 2;

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
    /// Guerreiro et al.'s physical DVFS power model (TPDS'19 form, see [`PhysicalTerms`]).
    Physical,
    /// The physical DVFS model plus a BP-ANN fitted to its residual (`physical(x) + network(x)`).
    #[serde(rename = "physical+bpann")]
    PhysicalBpann,
}

impl ModelKind {
    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Bpann => "bpann",
            ModelKind::Mlr => "mlr",
            ModelKind::MlrPlus => "mlr+",
            ModelKind::Physical => "physical",
            ModelKind::PhysicalBpann => "physical+bpann",
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
#[serde(deny_unknown_fields)]
pub struct Dense {
    pub weights: Vec<Vec<f64>>,
    pub bias: Vec<f64>,
    pub activation: Activation,
}

/// `(x − mean) / std`, per input; the output is `y · std + mean`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scaling {
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
}

/// A trained model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The physical DVFS model: the whole model (`physical`) or the base the network's output is added
    /// to (`physical+bpann`, the network then models the residual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical: Option<PhysicalTerms>,
    /// The arithmetic the network's training gradient ran in (instructions and precision): fits from
    /// the same seed on CPUs with different paths can differ in the last bits, and L-BFGS turns that
    /// into a different network. Absent in artifacts written before it was recorded (they load as
    /// before) and in models without a network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arithmetic: Option<Arithmetic>,
    /// How a `physical+bpann` network's output combines with the physical model: `relative`, a
    /// correction `P·(1 + network)` (the network was fitted to `y/P − 1`). Required in a
    /// `physical+bpann` artifact, absent in every other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual: Option<Residual>,
    /// The training rows' least-squares statistics, from which `predict` fits a line on the inputs a
    /// kernel profile does give when it lacks some ([`SubsetFits`]). Written by `train` for models whose
    /// inputs are all power inputs ([`crate::power_inputs`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<SubsetFits>,
}

/// How a residual network's output combines with its physical model ([`ModelArtifact::residual`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Residual {
    /// `P·(1 + network)`.
    Relative,
}

impl Residual {
    /// The physical model's power `base` with the network's output `net` applied.
    pub fn apply(self, base: f64, net: f64) -> f64 {
        match self {
            Residual::Relative => base * (1.0 + net),
        }
    }
}

/// How a network's training arithmetic ran ([`ModelArtifact::arithmetic`]). Plain strings, so that an
/// artifact naming a path this version does not know still loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arithmetic {
    /// The instruction path of the training gradient: `avx2+fma`, `portable` (unfused multiply-adds),
    /// `portable+fma`, or the library that computed it (`burn …`).
    pub instructions: String,
    /// Its precision: `f32` (activations and products in f32, sums over rows in f64) or `f64`. The
    /// validation error that stops training and picks the restart is computed in f64 either way.
    pub precision: String,
}

impl ModelArtifact {
    /// Reads an artifact and checks its shapes.
    pub fn from_json_file(path: &Path) -> Result<ModelArtifact> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        ModelArtifact::from_json_str(&text, &path.display().to_string())
    }

    /// Parses an artifact; `source` names it in errors.
    pub fn from_json_str(text: &str, source: &str) -> Result<ModelArtifact> {
        let doc = |message: String| Error::Document { file: source.to_string(), message };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| doc(format!("not a gpumodel model artifact: {e}")))?;
        // The version first, so that an artifact of another version gets one line saying what to do
        // rather than the first field this version does not know.
        match value.get("format_version").map(|v| v.as_u64()) {
            Some(Some(v)) if v == u64::from(FORMAT_VERSION) => {}
            Some(Some(v)) => {
                return Err(doc(format!(
                    "artifact format version {v}, this gpumodel reads version {FORMAT_VERSION}: re-run \
                     `gpumodel train` to make it again (models/trained/README.md shows how)"
                )));
            }
            _ => return Err(doc("not a gpumodel model artifact: no format_version".into())),
        }
        let a: ModelArtifact =
            serde_json::from_value(value).map_err(|e| doc(format!("not a gpumodel model artifact: {e}")))?;
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
        match (self.kind, &self.physical) {
            (ModelKind::Physical | ModelKind::PhysicalBpann, None) => {
                return Err(Error::Mismatch(format!(
                    "a {} artifact needs its `physical` terms",
                    self.kind.name()
                )));
            }
            (ModelKind::Physical | ModelKind::PhysicalBpann, Some(p)) => {
                p.check()?;
                p.indices(&self.inputs)?;
            }
            (_, Some(_)) => {
                return Err(Error::Mismatch(format!(
                    "a {} artifact has no `physical` terms",
                    self.kind.name()
                )));
            }
            _ => {}
        }
        match (self.kind, self.residual) {
            (ModelKind::PhysicalBpann, None) => {
                return Err(Error::Mismatch(
                    "a physical+bpann artifact needs `\"residual\": \"relative\"`: re-run `gpumodel train` to make it again"
                        .into(),
                ));
            }
            (ModelKind::PhysicalBpann, Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                return Err(Error::Mismatch(format!(
                    "a {} artifact has no residual network to apply relatively",
                    self.kind.name()
                )));
            }
        }
        if let Some(s) = &self.subset
            && !(s.is_valid() && s.inputs == self.inputs)
        {
            return Err(Error::Mismatch(
                "the artifact's `subset` statistics do not match its inputs: re-run `gpumodel train`".into(),
            ));
        }
        if self.kind == ModelKind::Physical {
            if !self.layers.is_empty() {
                return Err(Error::Mismatch("a physical artifact has no network layers".into()));
            }
            return Ok(());
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
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn physical() -> ModelArtifact {
        let lv = |mhz: f64, v: f64| VoltageLevel { mhz, relative_v: v };
        ModelArtifact {
            format_version: FORMAT_VERSION,
            kind: ModelKind::Physical,
            inputs: vec!["U".into(), "D".into(), "core_mhz".into(), "mem_mhz".into()],
            target: "power_w".into(),
            feature_set: "t".into(),
            input_scaling: Scaling { mean: vec![0.0; 4], std: vec![1.0; 4] },
            target_scaling: Scaling { mean: vec![0.0], std: vec![1.0] },
            layers: Vec::new(),
            base_columns: Vec::new(),
            training: serde_json::Value::Null,
            arithmetic: None,
            residual: None,
            subset: None,
            physical: Some(PhysicalTerms {
                core_clock: "core_mhz".into(),
                mem_clock: "mem_mhz".into(),
                ref_core_mhz: 1000.0,
                ref_mem_mhz: 3000.0,
                core_inputs: vec!["U".into()],
                core_betas: vec![50.0],
                mem_inputs: vec!["D".into()],
                mem_betas: vec![20.0],
                beta0_w: 30.0,
                beta_core_w: 10.0,
                beta1_w: 5.0,
                beta_mem_w: 4.0,
                core_levels: vec![lv(500.0, 0.8), lv(1000.0, 1.0), lv(1500.0, 1.2)],
                mem_levels: vec![lv(3000.0, 1.0)],
            }),
        }
    }

    /// The physical terms above plus a linear "network" 0.01·U (identity layer, unit scalings), applied
    /// as a relative residual.
    pub(super) fn physical_with_linear_net() -> ModelArtifact {
        ModelArtifact {
            kind: ModelKind::PhysicalBpann,
            residual: Some(Residual::Relative),
            subset: None,
            layers: vec![Dense {
                weights: vec![vec![0.01, 0.0, 0.0, 0.0]],
                bias: vec![0.0],
                activation: Activation::Identity,
            }],
            ..physical()
        }
    }

    pub(super) fn tiny() -> ModelArtifact {
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
            arithmetic: None,
            residual: None,
            subset: None,
            physical: None,
        }
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

    /// An artifact of another format version is refused with one line that names both versions and the
    /// command that makes it again, before any field of that version is looked at (a version 1 file
    /// carries fields version 2 does not know, which would otherwise be the message).
    #[test]
    fn another_format_version_is_refused_with_what_to_do() {
        let mut v: serde_json::Value = serde_json::to_value(tiny()).unwrap();
        v["format_version"] = 1.into();
        v["a_field_of_version_1"] = true.into();
        let e = ModelArtifact::from_json_str(&v.to_string(), "old.json").unwrap_err().to_string();
        assert!(e.contains("old.json") && e.contains("version 1") && e.contains("version 2"), "{e}");
        assert!(
            e.contains("gpumodel train") && !e.contains("a_field_of_version_1") && !e.contains('\n'),
            "{e}"
        );
        v.as_object_mut().unwrap().remove("format_version");
        let e = ModelArtifact::from_json_str(&v.to_string(), "x.json").unwrap_err().to_string();
        assert!(e.contains("no format_version"), "{e}");
    }

    /// Version 2 rejects a field it does not know, at the top and inside nested records, naming it:
    /// a misspelt field is an error instead of a silently different model.
    #[test]
    fn unknown_fields_are_rejected_by_name() {
        let base: serde_json::Value = serde_json::to_value(physical_with_linear_net()).unwrap();
        assert!(ModelArtifact::from_json_str(&base.to_string(), "ok.json").is_ok());
        for (path, field) in [
            ("", "residuals"),
            ("/physical", "beta_0_w"),
            ("/layers/0", "activations"),
            ("/input_scaling", "scale"),
            ("/physical/core_levels/0", "volts"),
        ] {
            let mut v = base.clone();
            v.pointer_mut(path).unwrap().as_object_mut().unwrap().insert(field.into(), 1.into());
            let e = ModelArtifact::from_json_str(&v.to_string(), "m.json").unwrap_err().to_string();
            assert!(e.contains(&format!("unknown field `{field}`")), "{path}: {e}");
        }
    }

    /// The arithmetic record is optional both ways: an artifact written before it existed (no such key)
    /// loads with none, one without it is written without the key (files of models without a network
    /// are unchanged), and one with it round-trips.
    #[test]
    fn the_arithmetic_record_is_optional_and_round_trips() {
        let a = tiny();
        let text = serde_json::to_string(&a).unwrap();
        assert!(!text.contains("arithmetic"), "{text}");
        let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
        old.as_object_mut().unwrap().remove("arithmetic");
        assert_eq!(ModelArtifact::from_json_str(&old.to_string(), "old.json").unwrap().arithmetic, None);
        let b = ModelArtifact {
            arithmetic: Some(Arithmetic { instructions: "avx2+fma".into(), precision: "f32".into() }),
            ..a
        };
        let text = serde_json::to_string(&b).unwrap();
        assert!(text.contains(r#""arithmetic":{"instructions":"avx2+fma","precision":"f32"}"#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), b);
    }

    #[test]
    fn missing_inputs_are_named() {
        let msg = tiny().check_inputs(&["a".into()]).unwrap_err().to_string();
        assert!(msg.contains("input(s) b"), "{msg}");
    }
}
