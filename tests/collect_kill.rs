//! No data lost when the collector itself dies: SIGKILL (no handler can run) mid-run on the scripted
//! GPU (GPUMODEL_FAKE_GPU=1) leaves a trace whose rows read back up to the last flushed sample, and a
//! sidecar that is valid JSON saying the run never finished. (SIGINT, which the collector handles, is
//! tested in tests/collect.rs: `interrupt_keeps_what_was_measured`.)

use gpumodel_models::trace::{RunStatus, read_meta, read_rows};
use std::time::{Duration, Instant};

fn data_rows(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count().saturating_sub(1))
}

#[test]
fn sigkill_mid_run_leaves_a_trace_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let bin = assert_cmd::cargo::cargo_bin("gpumodel");
    // The program is a shell that records its own pid, so the orphan it leaves can be ended too.
    let pidfile = dir.path().join("program.pid");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let mut child = std::process::Command::new(bin)
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--idle-seconds", "0", "--rate", "100", "-o"])
        .arg(&out)
        .args(["/bin/sh", "-c", &script])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for some rows to be flushed (bounded: a stuck collector fails the test, not CI).
    let t0 = Instant::now();
    while data_rows(&out) < 20 {
        assert!(t0.elapsed() < Duration::from_secs(20), "no rows written");
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen_before_kill = data_rows(&out);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    if let Some(pid) = std::fs::read_to_string(&pidfile).ok().and_then(|s| s.trim().parse::<u32>().ok()) {
        let _ = std::process::Command::new("kill").arg(pid.to_string()).status();
    }

    let meta = read_meta(&out).expect("the sidecar is written atomically: never half a file");
    assert!(matches!(meta.status, RunStatus::Running), "{:?}", meta.status);
    let rows = read_rows(&out, &meta).unwrap();
    assert!(rows.len() >= seen_before_kill, "{} rows read back, {seen_before_kill} seen on disk", rows.len());
    assert!(rows.iter().all(|r| r.t_s.is_finite() && r.power_w.is_finite()));
    assert!(rows.windows(2).all(|w| w[1].t_s > w[0].t_s), "rows in time order");
    // The fake GPU's counters were sampled too: the rows carry them.
    assert!(rows.iter().any(|r| r.counters.iter().any(|c| c.is_finite())));
}

/// A trace cut in the middle of a line (a crash between write and flush of one row) reads back up to
/// the last complete row.
#[test]
fn a_trace_cut_mid_line_reads_back_its_complete_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .env("GPUMODEL_FAKE_GPU", "1")
        // A second at 100 Hz: enough complete rows to cut one even when the machine is busy.
        .args(["collect", "--idle-seconds", "0", "--rate", "100", "--min-seconds", "1", "-o"])
        .arg(&out)
        .args(["/bin/sleep", "0.1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let meta = read_meta(&out).unwrap();
    let full = read_rows(&out, &meta).unwrap();
    assert!(full.len() >= 3, "{} rows in a one-second trace at 100 Hz", full.len());
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Keep the header and all rows but the last, then half of the last row.
    let last = lines[lines.len() - 1];
    let cut = format!("{}\n{}", lines[..lines.len() - 1].join("\n"), &last[..last.len() / 2]);
    std::fs::write(&out, cut).unwrap();
    let rows = read_rows(&out, &meta).unwrap();
    assert_eq!(rows.len(), full.len() - 1);
    assert_eq!(rows.last().unwrap().t_s, full[full.len() - 2].t_s);
}
