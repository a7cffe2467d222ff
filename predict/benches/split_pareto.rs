//! Running time of the exact (time, energy) Pareto front as the instance grows, against brute force.
//!
//! `cargo bench -p gpumodel-predict --bench split_pareto`
//!
//! Instances are `random_problem(p, n, 1, n, 42)`: p devices profiled at sizes 1..=n units, n units to
//! place (the finest grid). Group `exact_front` grows p and n; group `exact_vs_brute_force` times both
//! solvers on the instances small enough to enumerate. Each benchmark's id is `p{p}_n{n}`; the number of
//! front points is printed once per instance so the table in BENCHMARKS.md can show it.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpumodel_predict::split::pareto::{Problem, brute_force, random_problem};
use std::hint::black_box;
use std::time::Duration;

fn front_len(pr: &Problem) -> usize {
    pr.front_dynamic().map(|f| f.len()).unwrap_or(0)
}

fn id(pr: &Problem) -> String {
    let id = format!("p{}_n{}", pr.devices.len(), pr.units);
    println!("{id}: {} front points", front_len(pr));
    id
}

fn exact_front(c: &mut Criterion) {
    let mut g = c.benchmark_group("exact_front");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for p in [2usize, 4, 8] {
        for n in [16u64, 64, 256] {
            let pr = random_problem(p, n, 1, n, 42);
            g.bench_with_input(BenchmarkId::from_parameter(id(&pr)), &pr, |b, pr| {
                b.iter(|| front_len(black_box(pr)))
            });
        }
    }
    g.finish();
}

fn exact_vs_brute_force(c: &mut Criterion) {
    let mut g = c.benchmark_group("exact_vs_brute_force");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for (p, n) in [(2usize, 16u64), (4, 16), (6, 16), (3, 64), (4, 64)] {
        let pr = random_problem(p, n, 1, n, 42);
        let name = id(&pr);
        g.bench_with_input(BenchmarkId::new("exact", &name), &pr, |b, pr| {
            b.iter(|| front_len(black_box(pr)))
        });
        g.bench_with_input(BenchmarkId::new("brute_force", &name), &pr, |b, pr| {
            b.iter(|| brute_force(black_box(pr), false).map(|f| f.len()).unwrap_or(0))
        });
    }
    g.finish();
}

criterion_group!(benches, exact_front, exact_vs_brute_force);
criterion_main!(benches);
