//! `gpumodel import ncu|nvprof --profiles` on the file layouts real exports come in, each mimicked by a
//! HAND-WRITTEN fixture in collect/tests/fixtures (they say so in their first lines; not real captures):
//! older ncu long-layout exports without Block Size / Grid Size columns, nvprof metric tables with their
//! `--print-gpu-trace` companion, and a gpu trace alone. Expected values are worked out by hand from the
//! fixtures' cells.

mod common;

use common::{Import, profiler_fixture as fixture};
use std::path::Path;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn profiles(dir: &Path) -> Vec<serde_json::Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.iter().map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()).collect()
}

#[test]
fn old_ncu_long_layout_yields_a_profile_per_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("p");
    Import::new("ncu", fixture("ncu_long_no_launch_columns.csv"))
        .out(&dir.path().join("t.csv"))
        .profiles(&pdir)
        .ok();
    let p = profiles(&pdir);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0]["name"], "saxpy(int, float, float*, float*)");
    assert_eq!(p[0]["launch"]["grid"], serde_json::json!([4096, 1, 1]));
    assert_eq!(p[0]["launch"]["block"], serde_json::json!([256, 1, 1]));
    assert_eq!(p[0]["launch"]["registers_per_thread"], 16);
    // 1.31 Minst, 65.54 Kinst: ncu's scaling undone.
    assert_eq!(p[0]["counters"]["inst_executed"], 1_310_000.0);
    assert_eq!(p[0]["counters"]["gld_request"], 65_540.0);
    assert_eq!(p[1]["launch"]["grid"], serde_json::json!([80, 1, 1]));
    assert_eq!(p[1]["launch"]["shared_mem_per_block"], 2050);
    let t = p[1]["measured"]["time_s"].as_f64().unwrap();
    assert!((t - 3.2e-6).abs() < 1e-15, "{t}");
}

#[test]
fn nvprof_metrics_with_a_gpu_trace_companion_get_each_kernels_shape() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("p");
    Import::new("nvprof", fixture("nvprof_events_metrics_gtx580.csv"))
        .arg("--gpu-trace")
        .arg(fixture("nvprof_gpu_trace_gtx580.csv"))
        .out(&dir.path().join("t.csv"))
        .profiles(&pdir)
        .ok();
    let p = profiles(&pdir);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0]["launch"]["grid"], serde_json::json!([1, 4096, 1]));
    assert_eq!(p[0]["launch"]["block"], serde_json::json!([16, 16, 1]));
    assert_eq!(p[0]["launch"]["registers_per_thread"], 21);
    // 1.0625 KB of static shared memory = 1088 bytes.
    assert_eq!(p[0]["launch"]["shared_mem_per_block"], 1088);
    // Mean of 250 us and 254 us.
    assert!((p[0]["measured"]["time_s"].as_f64().unwrap() - 252e-6).abs() < 1e-12);
    assert_eq!(p[1]["launch"]["registers_per_thread"], 12);
    assert_eq!(p[0]["counters"]["divergent_branch"], 8_192.0);
}

#[test]
fn a_gpu_trace_alone_gives_per_kernel_times() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let o = Import::new("nvprof", fixture("nvprof_gpu_trace_gtx580.csv")).out(&out).ok();
    assert!(stderr(&o).contains("gpu trace"), "{}", stderr(&o));
    let t = gpumodel_models::Table::read_csv(&out, "kernel").unwrap();
    assert_eq!(t.n_rows(), 2);
    let times = t.column("time_s").unwrap().to_vec();
    assert!((times[0] - 252e-6).abs() < 1e-12 && (times[1] - 180e-6).abs() < 1e-12, "{times:?}");
}

/// Without the companion, the error for nvprof names it (and --grid/--block), in one line, and no
/// profile is written.
#[test]
fn nvprof_without_shapes_names_the_gpu_trace_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("p");
    let out = dir.path().join("t.csv");
    let o =
        Import::new("nvprof", fixture("nvprof_events_metrics_gtx580.csv")).out(&out).profiles(&pdir).run();
    assert!(!o.status.success());
    let e = stderr(&o);
    // The note about ignored metrics, then the error in one line.
    let errors: Vec<&str> = e.lines().filter(|l| !l.contains("ignored nvprof metrics")).collect();
    assert_eq!(errors.len(), 1, "{e}");
    assert!(errors[0].contains("--gpu-trace") && errors[0].contains("--print-gpu-trace"), "{e}");
    assert!(!pdir.exists() && !out.exists(), "nothing written on error");
}

#[test]
fn gpu_trace_with_ncu_is_refused() {
    let o = Import::new("ncu", fixture("ncu_long_no_launch_columns.csv"))
        .arg("--gpu-trace")
        .arg(fixture("nvprof_gpu_trace_gtx580.csv"))
        .run();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--gpu-trace is nvprof's companion"), "{}", stderr(&o));
}
