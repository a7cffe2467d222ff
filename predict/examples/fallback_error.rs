//! The roofline fallback's expected time error on the NV-DVFS kernels, beside the full pipeline model's
//! and Wang & Chu's general form on the same rows, with the counters a typical A100 ncu export lacks
//! withheld. Reads the datasets through `GPUMODEL_DATA_DIR` (or the cache).
//!
//! ```text
//! GPUMODEL_DATA_DIR=../shared/datasets cargo run --release -p gpumodel-predict --example fallback_error
//! ```

use gpumodel_models::arch::ArchProfile;
use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{Locator, open};
use gpumodel_predict::kernel::fallback::nvdvfs_error;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let loc = Locator::from_env();
    println!(
        "| dataset | kernels | rows | roofline, anchored (MAPE %) | roofline, no measured time | full pipeline model | Wang & Chu general form |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (dataset, arch) in
        [("nvdvfs-gtx980", "gtx980"), ("nvdvfs-gtx1080ti", "gtx1080ti"), ("nvdvfs-p100", "p100")]
    {
        let t = open(dataset, None, BadRows::Fail, &loc)?.imported.table;
        let e = nvdvfs_error(&t, &ArchProfile::builtin(arch)?)?;
        println!(
            "| {dataset} | {} | {} | {:.1} | {:.1} | {:.1} | {} |",
            e.kernels,
            e.rows,
            e.roofline_mape_pct,
            e.unanchored_mape_pct,
            e.full_model_mape_pct,
            e.wang_chu_mape_pct.map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    Ok(())
}
