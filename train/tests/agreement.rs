//! The shipped models, evaluated two ways on the whole held-out test set: burn's forward pass (the
//! training stack) and `ModelArtifact::predict` (what `predict` uses, without burn). They must agree to
//! 1e-4 W on every row, or `predict` would not be using the model that was trained and scored. Built with
//! `--features burn` (`cargo test -p gpumodel-train --features burn`).

use gpumodel_models::artifact::ModelArtifact;
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
    let burn = burn_forward(model, &x);
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
