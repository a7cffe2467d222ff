//! `gpumodel collect ./program` through the real binary: the real no-driver path on our GPU-less
//! machines, and the whole run loop on the scripted GPU (GPUMODEL_FAKE_GPU=1): streaming, exit-status
//! forwarding, repetition, interruption, and `gpumodel merge` of per-host traces.

use assert_cmd::Command;
use std::path::Path;

fn gpumodel() -> Command {
    let mut c = Command::cargo_bin("gpumodel").unwrap();
    c.env_remove("GPUMODEL_FAKE_GPU");
    c
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn no_driver_here() -> bool {
    !Path::new("/proc/driver/nvidia").exists()
}

/// Our machines have no libnvidia-ml.so: a real program must get one clear line and a non-zero exit,
/// with nothing written. (Real NVML loading, no fake.)
#[test]
fn collect_without_a_driver_says_so_in_one_line() {
    if !no_driver_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = gpumodel().current_dir(dir.path()).args(["collect", "/bin/true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("gpumodel: error: no NVIDIA driver"), "{e}");
    assert!(e.contains("run on a machine with an NVIDIA GPU and its driver installed"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing may be written");
}

#[test]
fn a_program_that_does_not_exist_is_named() {
    let o = gpumodel().args(["collect", "./no-such-kernel"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("cannot run './no-such-kernel': no such file"), "{e}");
}

#[test]
fn no_program_is_a_usage_error() {
    let o = gpumodel().args(["collect"]).output().unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("give the program to run"), "{}", stderr(&o));
}

fn fake() -> Command {
    let mut c = gpumodel();
    c.env("GPUMODEL_FAKE_GPU", "1");
    c
}

#[test]
fn fake_run_writes_a_trace_and_forwards_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let o = fake()
        .args(["collect", "--idle-seconds", "0.1", "--min-seconds", "0", "-o"])
        .arg(&out)
        .args(["/bin/sh", "-c", "sleep 0.2; exit 7"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert!(stderr(&o).contains("the program exited with code 7"), "{}", stderr(&o));
    let csv = std::fs::read_to_string(&out).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("t_s,dt_s,power_w,core_mhz,mem_mhz,inst_executed,"), "{header}");
    // ~0.2 s at 60 Hz: about 12 rows; a loaded CI box may drop some, never adds any.
    let rows = csv.lines().count() - 1;
    assert!((3..=16).contains(&rows), "{rows}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    assert_eq!(meta["status"]["failed"], "the program exited with code 7");
    assert_eq!(meta["summary"]["samples"], rows as u64);
    assert_eq!(meta["summary"]["exit_code"], 7);
}

#[test]
fn short_programs_are_repeated_up_to_min_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let o = fake()
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "0.3", "-o"])
        .arg(&out)
        .args(["/bin/sh", "-c", "sleep 0.05"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    let reps = meta["summary"]["repetitions"].as_u64().unwrap();
    assert!(reps >= 3, "{reps}");
    assert!(meta["summary"]["duration_s"].as_f64().unwrap() >= 0.3);
    assert_eq!(meta["status"], "complete");
}

#[test]
fn an_existing_trace_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    std::fs::write(&out, "precious\n").unwrap();
    let o =
        fake().args(["collect", "--idle-seconds", "0", "-o"]).arg(&out).arg("/bin/true").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");
}

/// SIGINT to gpumodel (as Ctrl-C or srun's cancel would send) ends the run cleanly: exit 130, the
/// sidecar says "interrupted", and the rows measured so far are in the file.
#[test]
fn interrupt_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let bin = assert_cmd::cargo::cargo_bin("gpumodel");
    let mut child = std::process::Command::new(bin)
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--idle-seconds", "0", "-o"])
        .arg(&out)
        .args(["/bin/sleep", "30"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    // SIGINT to gpumodel alone (not its process group): it must stop the program itself.
    let ok = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "interrupted");
    let rows = std::fs::read_to_string(&out).unwrap().lines().count() - 1;
    assert!(rows >= 5, "{rows}");
    assert_eq!(meta["summary"]["samples"], rows as u64);
}

#[test]
fn merge_joins_per_host_traces() {
    let dir = tempfile::tempdir().unwrap();
    let mut outs = vec![];
    for host in ["a", "b"] {
        let out = dir.path().join(format!("{host}.csv"));
        let o = fake()
            .args(["collect", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
            .arg(&out)
            .args(["/bin/sh", "-c", "sleep 0.1"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        outs.push(out);
    }
    let merged = dir.path().join("all.csv");
    let o = gpumodel().arg("merge").args(&outs).arg("-o").arg(&merged).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&merged).unwrap();
    assert!(text.starts_with("host,device,t_s,dt_s,power_w"), "{text}");
    let rows_in: usize = outs.iter().map(|p| std::fs::read_to_string(p).unwrap().lines().count() - 1).sum();
    assert_eq!(text.lines().count() - 1, rows_in);
}

/// Without a driver the injection library is never loaded: `--kernel-totals` must say so in one line,
/// after the trace is complete (which stays on disk).
#[test]
fn kernel_totals_without_a_driver_say_why_and_keep_the_trace() {
    if !no_driver_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.csv");
    let o = fake()
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "0", "--kernel-totals", "-o"])
        .arg(&out)
        .arg("/bin/true")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    // Built by `cargo test --workspace` next to the binary; a narrower build may lack it: also one line.
    assert!(
        e.contains("k.kernels.csv was not written: the CUDA driver did not load")
            || e.contains("cannot load libgpumodel_inject.so"),
        "{e}"
    );
    assert!(out.exists() && out.with_extension("json").exists());
}
