//! Per-job attribution error on time-sliced co-runs with an exact truth (`gpumodel_serve::synthetic`),
//! built from the real V100 measurements of `nvdvfs-dcgm-v100-micro` and `nvdvfs-dcgm-v100-real`, and per
//! instance on MIG co-runs built from the same jobs (`gpumodel_serve::synthetic_mig`).
//!
//! The split's settings (the activity model's weights, the correction's prior weight) are chosen on
//! co-runs of the microbenchmarks only; the real applications are then reported with that choice, beside
//! the SM%-ratio baseline. Every figure is the median over seeds of the median over pairs.
//!
//! `GPUMODEL_DATA_DIR=../shared/datasets cargo bench -p gpumodel-serve --bench corun`

use gpumodel_serve::attribution::{Activity, ActivityPower, Params};

/// The activity model's other candidate: memory utilization weighs what SM utilization does.
const DEFAULT_ACTIVITY_EQUAL: ActivityPower = ActivityPower { sm_w: 100.0, mem_w: 100.0 };
use gpumodel_serve::synthetic::{CoRun, Job, Summary, evaluate, median, registered_jobs, take_idle};
use gpumodel_serve::synthetic_mig::evaluate_mig;

const CLOCK_MHZ: f64 = 1380.0;
const SEEDS: u64 = 5;

fn jobs(name: &str) -> Vec<Job> {
    registered_jobs(name, CLOCK_MHZ).unwrap_or_else(|e| panic!("{e}"))
}

fn over_seeds(jobs: &[Job], spec: &CoRun, params: Params) -> Summary {
    let runs: Vec<Summary> =
        (0..SEEDS).map(|s| evaluate(jobs, &CoRun { seed: s + 1, ..*spec }, params)).collect();
    let med = |f: &dyn Fn(&Summary) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
    Summary {
        pairs: runs[0].pairs,
        model_median: med(&|s| s.model_median),
        ratio_median: med(&|s| s.ratio_median),
        mixed_pairs: runs[0].mixed_pairs,
        mixed_model_median: med(&|s| s.mixed_model_median),
        mixed_ratio_median: med(&|s| s.mixed_ratio_median),
    }
}

fn main() {
    let mut real = jobs("nvdvfs-dcgm-v100-real");
    let micro = jobs("nvdvfs-dcgm-v100-micro");
    // The board's idle power at this clock: the job with the least SM activity (eigenvalues, SMACT ≈ 0.01),
    // which is then not a co-run job.
    let Some(idle) = take_idle(&mut real) else { return };
    let idle_w = idle.power_w;
    let spec = CoRun { ticks: 120, dt_s: 1.0, idle_w, noise_cv: 0.03, gap: 0.1, seed: 1 };
    println!(
        "V100 at {CLOCK_MHZ} MHz: idle {idle_w:.1} W (from {}), {} microbenchmark and {} application jobs",
        idle.name,
        micro.len(),
        real.len()
    );

    // Choices, on the microbenchmarks' co-runs only.
    let rows: Vec<(Activity, f64)> = micro.iter().map(|j| (j.activity, j.power_w - idle_w)).collect();
    let fitted = ActivityPower::fit(&rows).unwrap_or(DEFAULT_ACTIVITY_EQUAL);
    println!(
        "activity model fitted on the microbenchmarks: {:.1} W per SM, {:.1} W per memory",
        fitted.sm_w, fitted.mem_w
    );
    let mut tried: Vec<(f64, Params)> = Vec::new();
    println!("\nchoice on microbenchmark co-runs (median per-job error, model split):");
    for (label, activity) in [("equal weights", DEFAULT_ACTIVITY_EQUAL), ("fitted weights", fitted)] {
        for prior in [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, f64::INFINITY] {
            let params = Params { activity, prior_weight: prior, ..Params::default() };
            let s = over_seeds(&micro, &spec, params);
            println!(
                "  {label:15} prior {prior:>5}: {:6.2} %  (ratio {:6.2} %)",
                100.0 * s.model_median,
                100.0 * s.ratio_median
            );
            tried.push((s.model_median, params));
        }
    }
    // The most regularized setting within 0.1 point of the best (a smaller prior weight trusts fewer ticks).
    let best = tried.iter().map(|t| t.0).fold(f64::INFINITY, f64::min);
    let Some(&(_, chosen)) = tried
        .iter()
        .filter(|t| t.0 <= best + 0.001)
        .max_by(|a, b| a.1.prior_weight.total_cmp(&b.1.prior_weight).then(b.0.total_cmp(&a.0)))
    else {
        return;
    };
    println!(
        "chosen: {:.1}/{:.1} W, prior {}",
        chosen.activity.sm_w, chosen.activity.mem_w, chosen.prior_weight
    );

    println!("\napplications (held out from every choice):");
    for (label, params) in [("chosen", chosen), ("default", Params::default())] {
        let s = over_seeds(&real, &spec, params);
        println!(
            "  {label:8} all {} pairs: model {:.2} %, ratio {:.2} %; mixed {} pairs: model {:.2} %, ratio {:.2} %",
            s.pairs,
            100.0 * s.model_median,
            100.0 * s.ratio_median,
            s.mixed_pairs,
            100.0 * s.mixed_model_median,
            100.0 * s.mixed_ratio_median
        );
    }

    println!("\nMIG co-runs, a 3g and a 4g instance (applications; the default split):");
    let runs: Vec<_> = (0..SEEDS)
        .map(|seed| evaluate_mig(&real, &CoRun { seed: seed + 1, ..spec }, Params::default()))
        .collect();
    let med = |f: &dyn Fn(&gpumodel_serve::synthetic_mig::MigSummary) -> f64| {
        median(&mut runs.iter().map(f).collect::<Vec<_>>())
    };
    println!(
        "  {} ordered pairs: model {:.2} %, SM ratio {:.2} %, size {:.2} %",
        runs[0].pairs,
        100.0 * med(&|s| s.model_median),
        100.0 * med(&|s| s.ratio_median),
        100.0 * med(&|s| s.size_median)
    );
}
