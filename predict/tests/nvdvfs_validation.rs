//! The timing model and the optima on the real NV-DVFS data (GPUMODEL_DATA_DIR, set by scripts/test and
//! .ci/run to ../shared/datasets). Thresholds are the figures this build reaches (BENCHMARKS.md); the
//! predictions are out-of-fold, so no kernel's own rows fit its numbers.

use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::import::{BadRows, Format, import_file};
use gpumodel_predict::baseline::Baseline;
use gpumodel_predict::validation::{Options, validate};
use std::path::PathBuf;

fn data_dir() -> PathBuf {
    // A relative GPUMODEL_DATA_DIR (`../shared/datasets`) is relative to the workspace root, while
    // this crate's tests run in predict/.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::var_os("GPUMODEL_DATA_DIR")
        .map(PathBuf::from)
        .map(|d| if d.is_relative() { root.join(d) } else { d })
        .unwrap_or_else(|| root.join("../shared/datasets"));
    assert!(
        dir.join("nvdvfs").is_dir(),
        "the public datasets are not at {}: set GPUMODEL_DATA_DIR",
        dir.display()
    );
    dir
}

/// Wang & Chu's 20 kernels (their published result files).
const WANG_CHU_20: [&str; 20] = [
    "BlackScholes",
    "SobolQRNG",
    "backpropForward",
    "conjugateGradient",
    "convolutionSeparable",
    "convolutionTexture",
    "fastWalshTransform",
    "histogram",
    "hotspot",
    "matrixMulGlobal",
    "matrixMulShared",
    "mergeSort",
    "nn",
    "quasirandomGenerator",
    "reduction",
    "scalarProd",
    "scanScanExclusiveShared",
    "sortingNetworks",
    "transpose",
    "vectorAdd",
];

/// Options for Wang & Chu's 20 kernels with their model as the baseline.
fn wang_chu_20(objectives: &[&str]) -> Options {
    Options {
        objectives: objectives.iter().map(|o| Objective::parse(o).unwrap()).collect(),
        kernels: Some(WANG_CHU_20.iter().map(|k| k.to_string()).collect()),
        baselines: vec![Baseline::WangChu2018],
        from: None,
    }
}

/// One NV-DVFS file of the public datasets, imported strictly.
fn nvdvfs(file: &str) -> gpumodel_models::Table {
    import_file(&data_dir().join("nvdvfs").join(file), Format::Nvdvfs, BadRows::Fail).unwrap().table
}

#[test]
fn gtx1080ti_time_and_optima() {
    let t = nvdvfs("gtx1080ti-dvfs-real-Performance-Power.csv");
    let arch = ArchProfile::builtin("gtx1080ti").unwrap();
    let r = validate(&t, &arch, &wang_chu_20(&["e", "ed", "ed2"])).unwrap();
    eprintln!(
        "model MAPE {:.2}%  calibrated {:.2}%  worst {} {:.1}%  power {:.2}%",
        r.model_mape_pct, r.mape_pct, r.worst_kernel, r.worst_kernel_mape_pct, r.power_mape_pct
    );
    for k in &r.per_kernel {
        eprintln!(
            "{:26} {:14} model {:6.1}% cal {:6.1}% P {:5.1}% {:?}",
            k.kernel,
            k.bottleneck,
            k.model_mape_pct,
            k.mape_pct,
            k.power_mape_pct,
            k.choices.iter().map(|c| format!("{:.2}", c.regret_pct)).collect::<Vec<_>>()
        );
    }
    for o in &r.objectives {
        eprintln!(
            "{} median {:.2}% mean {:.2}% hit {:.2}",
            o.objective, o.median_regret_pct, o.mean_regret_pct, o.hit_rate
        );
    }
    assert_eq!((r.rows, r.kernels), (400, 20));
    // Regression guards at the figures this build reaches on Wang & Chu's 20 kernels (development
    // figures: the model's structure was chosen on these rows): the model as is 12.51%, calibrated
    // out-of-fold 10.26% (every fold keeps the structural alternative: replays overlapping issue, the
    // fill at the default core clock) — below the peer's general form from the same rows (11.03%); the
    // published 8.6% is NOT reached (hotspot, 3.8% FP64, is 39% too fast). E·D^n median regrets 0.00% /
    // 0.00% / 0.37%, means 0.52% / 1.19% / 1.92% (a compute floor that ignored the memory side had an
    // ED² mean of 6.74%): the guards catch either coming back.
    assert!(r.model_mape_pct <= 12.6, "timing model MAPE {:.2}%", r.model_mape_pct);
    assert!(r.mape_pct <= 10.4, "calibrated time MAPE {:.2}%", r.mape_pct);
    assert!(r.mape_pct < r.baselines[0].mape_pct, "{:.2}% vs {:?}", r.mape_pct, r.baselines);
    assert_eq!(r.folds_replays_overlap, 20, "{} folds", r.folds_replays_overlap);
    assert_eq!(r.calibration_shared_overlap, gpumodel_models::timing::SharedOverlap::ReplaysOverlapIssue);
    // The baseline, computed from the same rows: 11.0% (timing_baselines.md).
    assert!((r.baselines[0].mape_pct - 11.03).abs() < 0.01, "{:?}", r.baselines);
    for (o, (median_max, mean_max)) in r.objectives.iter().zip([(1.0, 1.0), (1.0, 1.5), (1.0, 2.2)]) {
        assert!(
            o.median_regret_pct <= median_max,
            "{} median regret {:.2}%",
            o.objective,
            o.median_regret_pct
        );
        assert!(o.mean_regret_pct <= mean_max, "{} mean regret {:.2}%", o.objective, o.mean_regret_pct);
    }
}

/// The shipped example kernels were written from the GTX 980 NV-DVFS rows their comments name: they must
/// equal this crate's mapping of those rows, so the examples and the validation read the data alike.
#[test]
fn example_kernels_match_their_dataset_rows() {
    use gpumodel_predict::nvdvfs::profile_from_row;
    let t = nvdvfs("gtx980-high-dvfs-real-small-workload-Performance-Power.csv");
    for (name, _) in gpumodel_predict::examples::ALL {
        let example = gpumodel_predict::examples::kernel(name).unwrap().unwrap();
        let line: usize =
            example.source.split(" line ").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
        let from_data = profile_from_row(&t, line - 2).unwrap();
        assert_eq!(from_data.name, example.name);
        assert_eq!(from_data.launch, example.launch, "{name}");
        for (k, v) in &example.counters {
            let d = from_data.counters[k];
            assert!((d - v).abs() <= 1e-9 * v.abs().max(1.0), "{name}.{k}: example {v}, data {d}");
        }
        assert_eq!(
            from_data.counters.len(),
            example.counters.len()
                + usize::from(from_data.counters.contains_key("gld_request"))
                + usize::from(from_data.counters.contains_key("tex0_cache_sector_queries")) * 2,
            "{name}: {:?}",
            from_data.counters.keys().collect::<Vec<_>>()
        );
        assert_eq!(from_data.measured, example.measured, "{name}");
    }
}

#[test]
fn gtx980_validates_too() {
    let t = nvdvfs("gtx980-high-dvfs-real-small-workload-Performance-Power.csv");
    let arch = ArchProfile::builtin("gtx980").unwrap();
    let r = validate(&t, &arch, &wang_chu_20(&["ed"])).unwrap();
    eprintln!(
        "gtx980: model MAPE {:.2}% calibrated {:.2}% ED median regret {:.2}%",
        r.model_mape_pct, r.mape_pct, r.objectives[0].median_regret_pct
    );
    assert_eq!((r.rows, r.kernels), (500, 20));
    // Reached by this build on Wang & Chu's 20 kernels: the model as
    // is 12.89%, calibrated out-of-fold 9.13% (below the peer's general form computed from the same rows,
    // 13.5%, and its published 10.8%); ED median regret 0.00%, mean 0.68%. The replay-overlap structure is
    // a candidate in every fold (the default) and no fold chooses it: the GTX 980's shared-heavy kernels
    // do not follow it.
    assert!(r.model_mape_pct <= 13.0, "timing model MAPE {:.2}%", r.model_mape_pct);
    assert!(r.mape_pct <= 9.2, "calibrated time MAPE {:.2}%", r.mape_pct);
    assert_eq!(r.folds_replays_overlap, 0);
    assert_eq!(r.calibration_shared_overlap, gpumodel_models::timing::SharedOverlap::Additive);
    assert!(r.mape_pct < r.baselines[0].mape_pct, "{:.2}% vs {:?}", r.mape_pct, r.baselines);
    assert!(
        r.objectives[0].median_regret_pct <= 2.0,
        "ED median regret {:.2}%",
        r.objectives[0].median_regret_pct
    );
    assert!(r.objectives[0].mean_regret_pct <= 1.0, "ED mean regret {:.2}%", r.objectives[0].mean_regret_pct);
}

/// `t` with `kernel`'s measured times scaled by 2.5 and 0.4 alternately and its powers by 1.3: the
/// kernel's name, its rows and the perturbed table.
fn perturbed(t: &gpumodel_models::Table, kernel: &str) -> (String, Vec<usize>, gpumodel_models::Table) {
    let (name, rows) = gpumodel_predict::nvdvfs::kernels(t).into_iter().find(|(n, _)| n == kernel).unwrap();
    let mut perturbed = t.clone();
    let (tc, pc) = (t.column_index("time_s").unwrap(), t.column_index("power_w").unwrap());
    for (i, &r) in rows.iter().enumerate() {
        perturbed.data[[r, tc]] *= if i % 2 == 0 { 2.5 } else { 0.4 };
        perturbed.data[[r, pc]] *= 1.3;
    }
    (name, rows, perturbed)
}

/// The guard of the nested procedure, end to end on real data: a kernel's predicted time and power are
/// bit-identical whatever its own measured times and powers are, because neither the calibration's
/// factors, nor its exponent, nor the power model's inputs and weights of its fold ever see them.
#[test]
fn a_kernel_s_predictions_never_see_its_own_measurements() {
    let t = nvdvfs("gtx1080ti-dvfs-real-Performance-Power.csv");
    let arch = ArchProfile::builtin("gtx1080ti").unwrap();
    // Six kernels keep it cheap; the fourth is perturbed.
    let set = ["BlackScholes", "SobolQRNG", "histogram", "nn", "transpose", "vectorAdd"];
    let objs = Options {
        kernels: Some(set.iter().map(|k| k.to_string()).collect()),
        ..Options::new(&[Objective::parse("ed").unwrap()])
    };
    let before = validate(&t, &arch, &objs).unwrap();
    let (name, rows, perturbed) = perturbed(&t, set[3]);
    let after = validate(&perturbed, &arch, &objs).unwrap();
    let mine = |rep: &gpumodel_predict::validation::Report| -> Vec<(f64, f64)> {
        rep.per_row
            .iter()
            .filter(|r| r.kernel == name)
            .map(|r| (r.predicted_time_s, r.predicted_power_w))
            .collect()
    };
    assert_eq!(mine(&after), mine(&before), "{name}");
    assert_eq!(mine(&before).len(), rows.len());
    // The perturbation is seen where it should be: by the folds that train on it.
    assert_ne!(after.per_row, before.per_row);
}
