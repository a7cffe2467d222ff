//! The shipped models, evaluated two ways on the whole held-out test set: burn's forward pass (the
//! training stack) and `ModelArtifact::predict` (what `predict` uses, without burn). They must agree to
//! 1e-4 W on every row, or `predict` would not be using the model that was trained and scored. Built with
//! `--features burn` (`cargo test -p gpumodel-train --features burn`).

use gpumodel_models::artifact::{ModelArtifact, ModelKind, Residual};
use gpumodel_models::features::input_vector;
use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{Locator, open};
use gpumodel_train::burn_forward;
use ndarray::Array2;
use std::path::PathBuf;

fn locator() -> Locator {
    let mut loc = Locator::from_env();
    if loc.data_dir.is_none() {
        loc.data_dir = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets"));
    }
    loc
}

/// burn's pass of an artifact. `burn_forward` knows no residual gate: for a gated `physical+bpann`
/// artifact it evaluates the network alone, and the gate's weights and the physical terms are combined
/// with it here (the gate itself is checked by its unit tests in `gpumodel_models::artifact`).
fn burn_pass(model: &ModelArtifact, x: &Array2<f64>) -> Vec<f64> {
    let Some(gate) = model.gate_weights(x.view()) else {
        return burn_forward(model, x);
    };
    let net_only = ModelArtifact {
        kind: ModelKind::Bpann,
        physical: None,
        residual: Residual::Absolute,
        ..model.clone()
    };
    let net = burn_forward(&net_only, x);
    let base = model.physical.as_ref().unwrap().predict(&model.inputs, x.view()).unwrap();
    net.iter()
        .zip(gate.iter().zip(base.iter()))
        .map(|(n, (g, b))| match model.residual {
            Residual::Absolute => b + g * n,
            Residual::Relative => b * (1.0 + g * n),
        })
        .collect()
}

fn table(dataset: &str) -> gpumodel_models::Table {
    open(dataset, None, BadRows::Fail, &locator())
        .unwrap_or_else(|e| panic!("{e} (CI sets GPUMODEL_DATA_DIR to ../shared/datasets)"))
        .imported
        .table
}

fn shipped(artifact_file: &str) -> ModelArtifact {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/trained").join(artifact_file);
    ModelArtifact::from_json_file(&path).unwrap()
}

fn check(artifact_file: &str, dataset: &str) {
    check_model(&shipped(artifact_file), artifact_file, dataset);
}

fn check_model(model: &ModelArtifact, artifact_file: &str, dataset: &str) {
    let table = table(dataset);
    // Inputs rebuilt from base values through the same function `predict` uses.
    let rows: Vec<Vec<f64>> = (0..table.n_rows())
        .map(|r| input_vector(model, |c| table.column_index(c).map(|j| table.data[[r, j]])).unwrap())
        .collect();
    let x = Array2::from_shape_fn((rows.len(), model.inputs.len()), |(i, j)| rows[i][j]);
    let ours = model.predict(x.view());
    let burn = burn_pass(model, &x);
    assert_eq!(burn.len(), ours.len());
    let worst = burn.iter().zip(ours.iter()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-4, "{artifact_file}: burn and models differ by up to {worst} W");
    assert!(ours.iter().all(|p| p.is_finite() && *p > 0.0));
}

#[test]
fn titanx_bpann_burn_and_models_agree_on_the_whole_test_set() {
    check("titanx-bpann.json", "guerreiro-titanx-real");
}

#[test]
fn the_default_residual_network_on_the_physical_model_agrees_too() {
    // burn's pass of the residual network (the mean of five) plus the physical terms, against
    // ModelArtifact::predict.
    check("titanx-default.json", "guerreiro-titanx-real");
}

/// The same with a residual gate (`--gate nearest`) built from the training microbenchmarks on the
/// shipped Titan X residual network, so the gated path is checked whether or not the shipped default
/// carries a gate: the test applications lie at various distances from them.
#[test]
fn a_gated_residual_network_agrees_too() {
    let mut model = shipped("titanx-default.json");
    let micro = table("guerreiro-titanx-micro");
    let p = model.physical.as_ref().unwrap();
    let activities: Vec<String> = p.core_inputs.iter().chain(&p.mem_inputs).cloned().collect();
    let cols: Vec<usize> = activities.iter().map(|a| micro.column_index(a).unwrap()).collect();
    let ds = gpumodel_models::Dataset {
        records: micro.data.select(ndarray::Axis(1), &cols),
        targets: ndarray::Array1::zeros(micro.n_rows()),
        feature_names: activities.clone(),
        target_name: "power_w".into(),
        groups: micro.groups.clone(),
    };
    let gate = gpumodel_models::artifact::ResidualGate::from_training(&ds, &activities).unwrap().unwrap();
    // Some application rows must fall outside the trusted region, or the gate would not be exercised.
    let real = table("guerreiro-titanx-real");
    let cols: Vec<usize> = activities.iter().map(|a| real.column_index(a).unwrap()).collect();
    let weights: Vec<f64> = real
        .data
        .select(ndarray::Axis(1), &cols)
        .rows()
        .into_iter()
        .map(|r| gate.weight(&r.to_vec()))
        .collect();
    assert!(weights.iter().any(|&g| g < 0.9), "every application row is fully trusted");
    model.physical.as_mut().unwrap().residual_gate = Some(gate);
    model.check().unwrap();
    check_model(&model, "titanx-default.json (gated)", "guerreiro-titanx-real");
}
