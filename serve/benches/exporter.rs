//! The exporter's cost on a busy node: one tick (reading 8 GPUs × 100 processes on the scripted node,
//! splitting, accumulating) and one rendering of every series, with per-process series on. At a 1 s tick
//! the CPU share is (tick + render) / 1 s; a scrape copies the last rendering. The resident set after a
//! minute of ticks is printed first.
//!
//! `cargo bench -p gpumodel-serve --bench exporter`

use criterion::{Criterion, criterion_group, criterion_main};
use gpumodel_serve::attribution::Method;
use gpumodel_serve::metrics::{Render, render};
use gpumodel_serve::state::{Exporter, Options, ProcessInfo};
use gpumodel_serve::telemetry::Telemetry;
use gpumodel_serve::telemetry::scripted::FakeNode;
use std::hint::black_box;

const GPUS: usize = 8;
const PROCESSES: usize = 100;

struct Named;
impl ProcessInfo for Named {
    fn comm(&self, pid: u32) -> Option<String> {
        Some(format!("worker-{pid}"))
    }
    fn container(&self, pid: u32) -> Option<gpumodel_serve::cgroup::Container> {
        Some(gpumodel_serve::cgroup::Container {
            id: format!("{:064x}", pid / 4),
            pod: Some(format!("pod-{}", pid / 8)),
        })
    }
}

fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn busy_exporter(ticks: usize) -> (FakeNode, Exporter) {
    let mut node = FakeNode::new(GPUS, PROCESSES);
    let mut x = Exporter::new(node.gpus(), Options::default(), Box::new(Named));
    for _ in 0..ticks {
        x.tick(&mut node);
    }
    (node, x)
}

fn bench(c: &mut Criterion) {
    let how = Render { per_pid: true, method: Method::Model };
    let before = rss_kib();
    let (mut node, mut x) = busy_exporter(60);
    let text = render(&x, how);
    println!(
        "footprint: {GPUS} GPUs x {PROCESSES} processes, 60 ticks: resident {} KiB (process before the exporter: {} KiB), \
         exposition {} bytes, {} lines",
        rss_kib().unwrap_or(0),
        before.unwrap_or(0),
        text.len(),
        text.lines().count()
    );
    c.bench_function("tick, 8 GPUs x 100 processes", |b| b.iter(|| x.tick(black_box(&mut node))));
    c.bench_function("render, 8 GPUs x 100 processes, per-PID series", |b| {
        b.iter(|| black_box(render(&x, how)))
    });
    c.bench_function("scrape copy of the rendering", |b| b.iter(|| black_box(text.clone())));
}

criterion_group!(benches, bench);
criterion_main!(benches);
