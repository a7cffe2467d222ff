//! Every shipped artifact in `models/trained/` reproduces the held-out figures it records: reloaded from
//! its JSON, fed the recorded test dataset (found by registry name; its sha256 must match the one
//! recorded), scored here with MAPE and RMSE computed by hand — not by the training code's metrics.
//! This guards the artifacts themselves (a stale or hand-edited file fails), where the CI regression
//! guard in tests/train.rs retrains a cut-down model.

use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::features::input_vector;
use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{Locator, open, sha256_hex};
use std::path::PathBuf;

fn locator() -> Locator {
    let mut loc = Locator::from_env();
    if loc.data_dir.is_none() {
        loc.data_dir = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets"));
    }
    loc
}

#[test]
fn every_shipped_artifact_reproduces_its_recorded_held_out_error() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/trained");
    let mut checked = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        // A JSON string that starts with '/' is an absolute path of the machine that trained it.
        assert!(!text.contains("\"/"), "{name} carries an absolute path");
        let model = ModelArtifact::from_json_file(&path).unwrap();
        let held = &model.training["metrics"]["held-out"];
        let test = &model.training["test_dataset"];
        if held.is_null() || test.is_null() {
            continue; // e.g. NV-DVFS: no held-out file, grouped CV is the headline.
        }
        let opened = open(test["name"].as_str().unwrap(), None, BadRows::Fail, &locator())
            .unwrap_or_else(|e| panic!("{e} (CI sets GPUMODEL_DATA_DIR to ../shared/datasets)"));
        let bytes = std::fs::read(&opened.path).unwrap();
        assert_eq!(sha256_hex(&bytes), test["sha256"].as_str().unwrap(), "{name}: test data changed");
        let table = opened.imported.table;
        let target = table.column(&model.target).unwrap();
        let (mut ape, mut se) = (0.0, 0.0);
        for r in 0..table.n_rows() {
            let x = input_vector(&model, |c| table.column_index(c).map(|j| table.data[[r, j]])).unwrap();
            let p = model.predict_one(&x);
            ape += ((p - target[r]) / target[r]).abs();
            se += (p - target[r]).powi(2);
        }
        let n = table.n_rows() as f64;
        let (mape, rmse) = (100.0 * ape / n, (se / n).sqrt());
        let (want_mape, want_rmse) = (held["mape_pct"].as_f64().unwrap(), held["rmse_w"].as_f64().unwrap());
        assert!((mape - want_mape).abs() < 1e-6, "{name}: MAPE {mape} vs recorded {want_mape}");
        assert!((rmse - want_rmse).abs() < 1e-6, "{name}: RMSE {rmse} vs recorded {want_rmse}");
        // Every artifact with a held-out set records the interval of the figure it reports: the median
        // over seeds for a network (its held-out-median), else this artifact's own MAPE, computed here.
        let interval = &model.training["held_out_interval"];
        assert!(
            !interval.is_null(),
            "{name}: no held_out_interval (regenerate with gpumodel train --bootstrap)"
        );
        let median = &model.training["metrics"]["held-out-median"]["mape_pct"];
        let point = median.as_f64().unwrap_or(mape);
        let got = interval["mape_pct"].as_f64().unwrap();
        assert!((got - point).abs() < 1e-6, "{name}: interval around {got}, reported {point}");
        let (lo, hi) =
            (interval["ci95_pct"]["lo"].as_f64().unwrap(), interval["ci95_pct"]["hi"].as_f64().unwrap());
        assert!(lo <= point && point <= hi, "{name}: {point} outside {lo}–{hi}");
        checked += 1;
    }
    // Both shipped artifacts (the default and the paper's network) have held-out figures.
    assert!(checked >= 2, "only {checked} artifacts had held-out figures");
}
