//! Where the BP-ANN's fits spend their iterations: for each seed, one default fit (3 restarts) with
//! L-BFGS and with native Adam on a dataset's training rows, and per restart the iterations run, the
//! iteration of the kept (lowest-validation) weights and why the restart ended (`cap`: the epoch
//! budget; `patience`: no new lowest validation error for `patience` iterations; `stalled`: L-BFGS found
//! no step that lowers the loss by more than its tolerance). A diagnostic, not a benchmark of record.
//!
//! Run: `GPUMODEL_DATA_DIR=../shared/datasets cargo run --example fit_profile -p gpumodel-train --
//! [dataset] [first-seed] [seeds] [solvers]`, e.g. `guerreiro-titanx-micro 101 10 lbfgs,adam`.

use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{Locator, open};
use gpumodel_models::{Dataset, features};
use gpumodel_train::{BpannParams, Solver};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("guerreiro-titanx-micro", String::as_str);
    let first: u64 = args.get(1).map_or(Ok(101), |s| s.parse())?;
    let seeds: u64 = args.get(2).map_or(Ok(10), |s| s.parse())?;
    let solvers = args.get(3).map_or("lbfgs,adam", String::as_str);
    let mut loc = Locator::from_env();
    if loc.data_dir.is_none() {
        loc.data_dir = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets"));
    }
    let table = open(name, None, BadRows::Fail, &loc)?.imported.table;
    let fs = if name.starts_with("nvdvfs") {
        features::builtin("nvdvfs-rates")?
    } else {
        features::guerreiro_default(&table)?
    };
    let ds = Dataset::from_table(&table, &fs)?;
    println!("{name}: {} rows, {} inputs", ds.n_rows(), ds.n_features());
    for solver in solvers.split(',') {
        let solver = Solver::parse(solver)?;
        let mut total = 0.0;
        let (mut iters, mut wasted, mut ends) = (0, 0, [0; 3]);
        for seed in first..first + seeds {
            let p = BpannParams { solver, seed, ..Default::default() }.check()?;
            let t0 = std::time::Instant::now();
            let fit = p.fit_report(&ds, &mut |_| {})?;
            let dt = t0.elapsed().as_secs_f64();
            total += dt;
            let mut line = format!("{} seed {seed}: {dt:.3} s;", solver.name());
            for (i, r) in fit.restarts.iter().enumerate() {
                let end = if r.epochs_run >= p.max_epochs {
                    0
                } else if r.epochs_run - r.best_epoch >= p.patience {
                    1
                } else {
                    2
                };
                ends[end] += 1;
                iters += r.epochs_run;
                wasted += r.epochs_run - r.best_epoch;
                let mark = if i == fit.chosen { "*" } else { "" };
                line += &format!(
                    " {}/{} {} {:.3}W{mark}",
                    r.best_epoch,
                    r.epochs_run,
                    ["cap", "patience", "stalled"][end],
                    r.validation_rmse_w
                );
            }
            println!("{line}");
        }
        println!(
            "{}: {total:.2} s for {seeds} fits; {iters} iterations, {wasted} after the kept weights; ends: {} cap, {} patience, {} stalled",
            solver.name(),
            ends[0],
            ends[1],
            ends[2]
        );
    }
    Ok(())
}
