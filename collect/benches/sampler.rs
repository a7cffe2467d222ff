//! Sampler benchmark: does the power sampler hold its rate with the fake sources?
//! Reports achieved rate, jitter (p50 / p99 of |interval − period|, and of lateness against the absolute
//! deadline) and the sampler thread's CPU time per sample. Run: `cargo bench -p gpumodel-collect --bench
//! sampler` (GPUMODEL_BENCH_SECONDS, default 10; GPUMODEL_BENCH_RATE, default 60).

use gpumodel_collect::fake::FakePower;
use gpumodel_collect::sampler::{Clock, Event, spawn_power};
use std::time::Duration;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i]
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this too: keep that short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let env = |k: &str, d: f64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let secs = if quick { 0.2 } else { env("GPUMODEL_BENCH_SECONDS", 10.0) };
    let rate = env("GPUMODEL_BENCH_RATE", 60.0);
    let clock = Clock::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let r = spawn_power(FakePower::constant(clock, 100.0), rate, clock, tx).expect("sampler");
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (_, stats) = r.stop().expect("stop");
    let times: Vec<f64> = rx
        .try_iter()
        .filter_map(|e| match e {
            Event::Power(p) => Some(p.t_s),
            _ => None,
        })
        .collect();
    let period = 1.0 / rate;
    let mut err: Vec<f64> = times.windows(2).map(|w| ((w[1] - w[0]) - period).abs()).collect();
    let mut late = stats.late_s.clone();
    let span = times.last().unwrap_or(&0.0) - times.first().unwrap_or(&0.0);
    let achieved = if span > 0.0 { (times.len() - 1) as f64 / span } else { 0.0 };
    println!("sampler @ {rate} Hz for {secs} s: {} samples, achieved {achieved:.3} Hz", times.len());
    if err.len() > 1 {
        println!(
            "interval error |dt - period|: p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            pct(&mut err, 0.5) * 1e6,
            pct(&mut err, 0.99) * 1e6,
            pct(&mut err, 1.0) * 1e6
        );
        println!(
            "lateness vs absolute deadline: p50 {:.1} us, p99 {:.1} us",
            pct(&mut late, 0.5) * 1e6,
            pct(&mut late, 0.99) * 1e6
        );
    }
    match stats.cpu_per_sample_s() {
        Some(c) => println!(
            "sampler thread CPU: {:.1} us per sample ({:.4} s total)",
            c * 1e6,
            stats.cpu_s.unwrap_or(0.0)
        ),
        None => println!("sampler thread CPU: unknown (no /proc/thread-self/schedstat)"),
    }
}
