//! Running time of the exact (time, energy) Pareto front as the instance grows, against brute force.
//!
//! `cargo bench -p gpumodel-predict --bench split_pareto`
//!
//! A plain timing harness (criterion is not a dev-dependency of this crate): for each instance, one
//! warm-up run, then repeated runs until 0.5 s or 200 runs have passed; prints the median and the
//! min–max range of the per-run wall time. Instances are `random_problem(p, g, 1, n, seed)`: p devices
//! profiled at sizes 1..=g units, n units to place (here g = n, the finest grid).

use gpumodel_predict::split::pareto::{Problem, brute_force, random_problem};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn time_it(mut f: impl FnMut() -> usize) -> (Duration, Duration, Duration, usize, usize) {
    let points = f();
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 5 || (start.elapsed() < Duration::from_millis(500) && samples.len() < 200) {
        let t = Instant::now();
        black_box(f());
        samples.push(t.elapsed());
    }
    samples.sort();
    (samples[samples.len() / 2], samples[0], samples[samples.len() - 1], samples.len(), points)
}

fn row(label: &str, pr: &Problem, f: impl FnMut() -> usize) {
    let (med, min, max, runs, points) = time_it(f);
    println!(
        "{label:<12} p={:<2} n={:<4} front={points:<4} median {:>12.3?}  (min {:.3?}, max {:.3?}, {runs} runs)",
        pr.devices.len(),
        pr.units,
        med,
        min,
        max
    );
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    println!("exact front (dynamic programme over devices), dynamic energy:");
    for p in [2usize, 4, 8] {
        for n in [16u64, 64, 256] {
            let pr = random_problem(p, n, 1, n, 42);
            row("exact", &pr, || pr.front_dynamic().map(|f| f.len()).unwrap_or(0));
        }
    }
    println!("brute force over every distribution, for comparison:");
    for (p, n) in [(2usize, 16u64), (4, 16), (6, 16), (3, 64), (4, 64)] {
        let pr = random_problem(p, n, 1, n, 42);
        row("brute force", &pr, || brute_force(&pr, false).map(|f| f.len()).unwrap_or(0));
        row("exact", &pr, || pr.front_dynamic().map(|f| f.len()).unwrap_or(0));
    }
}
