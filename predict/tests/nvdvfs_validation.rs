//! The timing model and the optima on the real NV-DVFS data (GPUMODEL_DATA_DIR, set by scripts/test and
//! .ci/run to ../shared/datasets). Thresholds are the targets with the figures this build reaches
//! written in BENCHMARKS.md; the predictions are out-of-fold, so no kernel's own rows fit its numbers.

use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::import::{BadRows, Format, import_file};
use gpumodel_predict::validation::validate;
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

/// One NV-DVFS file of the public datasets, imported strictly.
fn nvdvfs(file: &str) -> gpumodel_models::Table {
    import_file(&data_dir().join("nvdvfs").join(file), Format::Nvdvfs, BadRows::Fail).unwrap().table
}

#[test]
fn gtx1080ti_time_and_optima() {
    let t = nvdvfs("gtx1080ti-dvfs-real-Performance-Power.csv");
    let arch = ArchProfile::builtin("gtx1080ti").unwrap();
    let objs: Vec<Objective> = ["e", "ed", "ed2"].iter().map(|o| Objective::parse(o).unwrap()).collect();
    let r = validate(&t, &arch, &objs).unwrap();
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
    assert_eq!((r.rows, r.kernels), (600, 30));
    // Reached by this build: 27.0% uncalibrated, 15.5% calibrated out-of-fold with the exponent chosen
    // inside each fold (the first target, 15%, is not reached yet); median regret ≤ 2% for ED and
    // ED² (the target).
    assert!(r.mape_pct <= 16.0, "calibrated time MAPE {:.2}%", r.mape_pct);
    // Choosing p on the reported figure can only look better than choosing it inside each fold.
    assert!(r.selected_on_reported_mape_pct <= r.mape_pct + 1e-9, "{r:?}");
    assert!(r.model_mape_pct <= 30.0, "timing model MAPE {:.2}%", r.model_mape_pct);
    for o in &r.objectives[1..] {
        assert!(o.median_regret_pct <= 2.0, "{} median regret {:.2}%", o.objective, o.median_regret_pct);
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
    let r = validate(&t, &arch, &[Objective::parse("ed").unwrap()]).unwrap();
    eprintln!(
        "gtx980: model MAPE {:.2}% calibrated {:.2}% ED median regret {:.2}%",
        r.model_mape_pct, r.mape_pct, r.objectives[0].median_regret_pct
    );
    assert_eq!((r.rows, r.kernels), (750, 30));
    // Reached by this build (BENCHMARKS.md, issue 3 section): 16.2% time MAPE (15.4% before the L2 term:
    // the nested choice of p got noisier, see there); ED median regret 0.58% and mean 2.90% — the mean was
    // 13.0% before the L2 term let memory-bound kernels slow down at low core clocks, and 14.0% median with
    // clock polynomials only as power inputs.
    assert!(r.mape_pct <= 16.5, "calibrated time MAPE {:.2}%", r.mape_pct);
    assert!(
        r.objectives[0].median_regret_pct <= 2.0,
        "ED median regret {:.2}%",
        r.objectives[0].median_regret_pct
    );
    assert!(r.objectives[0].mean_regret_pct <= 5.0, "ED mean regret {:.2}%", r.objectives[0].mean_regret_pct);
}

/// The guard of the nested procedure, end to end on real data: a kernel's predicted time and power are
/// bit-identical whatever its own measured times and powers are, because neither the calibration's
/// factors, nor its exponent, nor the power model's inputs and weights of its fold ever see them.
#[test]
fn a_kernel_s_predictions_never_see_its_own_measurements() {
    let t = nvdvfs("gtx1080ti-dvfs-real-Performance-Power.csv");
    let arch = ArchProfile::builtin("gtx1080ti").unwrap();
    let objs = [Objective::parse("ed").unwrap()];
    let before = validate(&t, &arch, &objs).unwrap();
    let (name, rows) = gpumodel_predict::nvdvfs::kernels(&t).into_iter().nth(3).unwrap();
    let mut perturbed = t.clone();
    let (tc, pc) = (t.column_index("time_s").unwrap(), t.column_index("power_w").unwrap());
    for (i, &r) in rows.iter().enumerate() {
        perturbed.data[[r, tc]] *= if i % 2 == 0 { 2.5 } else { 0.4 };
        perturbed.data[[r, pc]] *= 1.3;
    }
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
