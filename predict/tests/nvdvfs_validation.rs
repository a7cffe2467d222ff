//! The timing model and the optima on the real NV-DVFS data (GPUMODEL_DATA_DIR, set by scripts/test and
//! .ci/run to ../shared/datasets). Thresholds are the targets with the figures this build reaches
//! written in BENCHMARKS.md; the predictions are out-of-fold, so no kernel's own rows fit its numbers.

use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::import::{BadRows, Format, import_file};
use gpumodel_predict::validation::validate;
use std::path::PathBuf;

fn data_dir() -> PathBuf {
    let dir = std::env::var_os("GPUMODEL_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets"));
    assert!(dir.join("nvdvfs").is_dir(), "the public datasets are not at {}: set GPUMODEL_DATA_DIR", dir.display());
    dir
}

#[test]
fn gtx1080ti_time_and_optima() {
    let t = import_file(&data_dir().join("nvdvfs/gtx1080ti-dvfs-real-Performance-Power.csv"), Format::Nvdvfs, BadRows::Fail)
        .unwrap()
        .table;
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
        eprintln!("{} median {:.2}% mean {:.2}% hit {:.2}", o.objective, o.median_regret_pct, o.mean_regret_pct, o.hit_rate);
    }
    assert_eq!((r.rows, r.kernels), (600, 30));
    assert!(r.mape_pct <= 15.0, "calibrated time MAPE {:.2}%", r.mape_pct);
}
