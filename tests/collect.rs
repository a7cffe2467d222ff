//! `gpumodel collect ./program` through the real binary: the real no-driver path on our GPU-less
//! machines, and the whole run loop on the scripted GPU (GPUMODEL_FAKE_GPU=1): streaming, exit-status
//! forwarding, repetition, interruption, and `gpumodel merge` of per-host traces.

mod common;

use assert_cmd::Command;
use common::{Import, profiler_fixture as fixture};
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
    let rows = csv.lines().count() - 1;
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    // At 60 Hz: at most one row per 1/60 s the run lasted (a loaded host may drop rows, never adds any;
    // the run lasts at least the program's 0.2 s, longer on a busy host).
    let duration = meta["summary"]["duration_s"].as_f64().unwrap();
    assert!(duration >= 0.2, "{duration}");
    assert!(rows >= 1 && rows as f64 <= duration * 60.0 + 2.0, "{rows} rows in {duration} s");
    assert_eq!(meta["status"]["failed"], "the program exited with code 7");
    assert_eq!(meta["summary"]["samples"], rows as u64);
    assert_eq!(meta["summary"]["exit_code"], 7);
}

#[test]
fn short_programs_are_repeated_up_to_min_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let o = fake()
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "1", "-o"])
        .arg(&out)
        .args(["/bin/sh", "-c", "sleep 0.05"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    // However slow the host, one 0.05 s run never reaches 1 s: the program is repeated, and the
    // repetitions together cover at least --min-seconds.
    let reps = meta["summary"]["repetitions"].as_u64().unwrap();
    assert!(reps >= 2, "{reps}");
    assert!(meta["summary"]["duration_s"].as_f64().unwrap() >= 1.0);
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

/// A `--pm-passes all` trace of the scripted GPU running `/bin/sleep 0.3`, in `dir`: its path and the run
/// summary printed.
fn replay_trace(dir: &Path) -> (std::path::PathBuf, String) {
    let out = dir.join("app.csv");
    let o = fake()
        .args(["collect", "--pm-passes", "all", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
        .arg(&out)
        .args(["/bin/sleep", "0.3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    (out, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `--pm-passes all` on the scripted GPU: one run per PM-sampling group of the GA102 map, then two of DCGM
/// profiling fields, merged on time since the program started. The fake's extra groups read documented constants (counter j of pass
/// k: (k·10 + j)·1e6 events/s, in the group's alphabetical order), so every merged column is checked
/// against a value written here, not one taken from the collector.
#[test]
fn pm_passes_all_merges_every_group_into_one_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (out, summary) = replay_trace(dir.path());
    assert!(summary.contains("passes are separate runs: run time"), "{summary}");
    let t = gpumodel_models::Table::read_csv(&out, "kernel").unwrap();
    let want = [
        // models/counters/ga102.toml: pass 2 = global loads and stores, pass 3 = texture, pass 4 =
        // local, pass 5 = FP32, pass 6 = FP64, integer, special.
        ("global_store_transaction", 20e6),
        ("l1_global_load_hit", 21e6),
        ("l1_global_load_miss", 22e6),
        ("tex0_cache_sector_misses", 30e6),
        ("tex0_cache_sector_queries", 31e6),
        ("local_load", 40e6),
        ("local_store", 41e6),
        ("inst_fp_32", 50e6),
        ("inst_fp_64", 60e6),
        ("inst_integer", 61e6),
        ("inst_special", 62e6),
        // Model inputs derived across passes: T_hits = texture queries, L_store = local stores.
        ("T_hits", 31e6),
        ("L_store", 41e6),
        // Pass 1, as without replay: a constant DRAM read rate.
        ("dram_read_bytes", 5e8),
    ];
    for (name, v) in want {
        let col = t.column(name).unwrap_or_else(|| panic!("no column {name}"));
        let known: Vec<f64> = col.iter().copied().filter(|x| x.is_finite()).collect();
        // Rows past the end of a pass that ended sooner (on a loaded host, many) are unknown (NaN); how
        // many depends on the host, so only some must be known, each at the scripted rate.
        assert!(!known.is_empty(), "{name}: no row known");
        assert!(known.iter().all(|x| (x - v).abs() <= 1e-6 * v), "{name}: {known:?}");
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "complete");
    assert_eq!(meta["summary"]["samples"], t.n_rows() as u64);
    let passes = meta["replay"]["passes"].as_array().unwrap();
    assert_eq!(passes.len(), 8);
    for (k, p) in passes.iter().enumerate() {
        assert_eq!(p["pass"], k + 1);
        assert_eq!(p["status"], "complete");
        assert!(p["duration_s"].as_f64().unwrap() >= 0.3, "{p}");
        assert!(dir.path().join(format!("app.pass{}.csv", k + 1)).exists());
    }
    assert_eq!(
        passes[2]["counters"],
        serde_json::json!(["tex0_cache_sector_misses", "tex0_cache_sector_queries"])
    );
    assert_eq!(passes[6]["counters"], serde_json::json!(["GRACT", "SMACT", "SMOCC", "TENSO", "DRAMA"]));
    assert_eq!(passes[7]["counters"], serde_json::json!(["FP32A"]));
    assert!(meta["replay"]["duration_spread"]["range_pct"].as_f64().unwrap() >= 0.0);

    // `gpumodel merge` takes the merged trace like any other.
    let all = dir.path().join("all.csv");
    let o = gpumodel().arg("merge").arg(&out).arg("-o").arg(&all).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let m = gpumodel_models::Table::read_csv(&all, "kernel").unwrap();
    assert_eq!(m.n_rows(), t.n_rows());
    assert!((m.column("inst_fp_32").unwrap()[0] - 50e6).abs() <= 1e-6 * 50e6);
}

/// The DCGM fields of the scripted GPU: each field's counter is a fixed fraction of its peak over the
/// elapsed cycles (src/cli/gpu.rs), so each column must read that fraction: GA102 gives GRACT, SMACT,
/// SMOCC, TENSO and DRAMA in one run and FP32A in the next; FP64A (3 hardware passes) and FP16A (no
/// counter) are not sampled.
const FAKE_FIELDS: [(&str, f64); 6] =
    [("GRACT", 0.9), ("SMACT", 0.8), ("SMOCC", 0.4), ("TENSO", 0.1), ("DRAMA", 0.3), ("FP32A", 0.5)];

/// Through the binary: `collect --pm-passes all` writes the DCGM field columns (every row in [0, 1], at
/// the scripted fractions), and `import dcgm` reads the trace as one utilization profile of those values,
/// its clock, power and run time.
#[test]
fn pm_passes_all_writes_dcgm_fields_that_import_dcgm_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = replay_trace(dir.path());
    let t = gpumodel_models::Table::read_csv(&out, "kernel").unwrap();
    for (name, v) in FAKE_FIELDS {
        let col = t.column(name).unwrap_or_else(|| panic!("no column {name}"));
        let known: Vec<f64> = col.iter().copied().filter(|x| x.is_finite()).collect();
        // Each pass runs on the host's timer: on a loaded host a pass may end many rows sooner than the
        // merged trace (those rows are unknown), so only some must be known, each at the scripted value.
        assert!(!known.is_empty(), "{name}: no row known");
        assert!(known.iter().all(|x| (0.0..=1.0).contains(x) && (x - v).abs() < 1e-9), "{name}: {known:?}");
    }
    for absent in ["FP64A", "FP16A"] {
        assert!(t.column(absent).is_none(), "{absent}");
    }
    // The profile's power is the time-weighted mean over the rows where every field is known; its run
    // time is the whole trace's.
    let (dt, pw) = (t.column("dt_s").unwrap(), t.column("power_w").unwrap());
    let known = |i: usize| FAKE_FIELDS.iter().all(|(n, _)| t.column(n).unwrap()[i].is_finite());
    let (mut wsum, mut wp) = (0.0, 0.0);
    for i in (0..t.n_rows()).filter(|i| known(*i)) {
        wsum += dt[i];
        wp += dt[i] * pw[i];
    }
    let power = wp / wsum;
    let run_s: f64 = dt.iter().sum();

    let csv = dir.path().join("x.csv");
    let o = gpumodel().args(["import", "dcgm"]).arg(&out).arg("--out").arg(&csv).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut r = csv::Reader::from_path(&csv).unwrap();
    let head = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let get = |name: &str| -> String {
        let i = head.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name} in {head:?}"));
        rows[0][i].to_string()
    };
    let num = |name: &str| get(name).parse::<f64>().unwrap_or_else(|e| panic!("{name}: {e}"));
    for (name, v) in FAKE_FIELDS {
        assert!((num(name) - v).abs() < 1e-9, "{name}: {}", get(name));
    }
    assert_eq!(get("FP64A"), "");
    assert_eq!(get("source"), "collector");
    assert!((num("core_mhz") - 1410.0).abs() < 1e-6, "{}", get("core_mhz"));
    assert!((num("power_w") - power).abs() < 0.05, "{} vs {power}", num("power_w"));
    assert!((num("time_s") - run_s).abs() < 1e-3, "{} vs {run_s}", num("time_s"));

    // The table `import dcgm --out` wrote is itself a profile `predict --profile` reads.
    let o = gpumodel()
        .args(["predict", "--profile"])
        .arg(&csv)
        .args(["--core-clocks", "810,1410", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for (name, v) in FAKE_FIELDS {
        assert!((j["profile"]["fields"][name].as_f64().unwrap() - v).abs() < 1e-9, "{name}: {j}");
    }
    assert!((j["profile"]["time_s"].as_f64().unwrap() - num("time_s")).abs() < 1e-9, "{j}");
}

/// `predict --profile` on the same trace, for a GPU without a shipped clock model and its clocks given:
/// the profile it reads carries the fields, and the sweep answers at the measured clock with the
/// measured power.
#[test]
fn predict_reads_a_collected_dcgm_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = replay_trace(dir.path());
    let o = gpumodel()
        .args(["predict", "--profile"])
        .arg(&out)
        .args(["--gpu", "NVIDIA A100-SXM4-40GB", "--core-clocks", "810,1005,1200,1410", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let fields = &j["profile"]["fields"];
    for (name, v) in FAKE_FIELDS {
        assert!((fields[name].as_f64().unwrap() - v).abs() < 1e-9, "{name}: {fields}");
    }
    assert_eq!(j["profile"]["source"], "collector");
    let points = j["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    let at_max = &points[3];
    assert_eq!(at_max["core_mhz"], 1410.0);
    let (p, measured) = (at_max["power_w"].as_f64().unwrap(), j["profile"]["power_w"].as_f64().unwrap());
    assert!((p - measured).abs() < 1e-9 * measured, "{p} vs {measured}");
    // Slower clocks take longer.
    assert!(points.windows(2).all(|w| w[0]["time_s"].as_f64() > w[1]["time_s"].as_f64()), "{points:?}");
}

/// SIGINT while pass 2 runs: exit 130, pass 1's trace complete and untouched, the merged trace says
/// "interrupted" and holds pass 1's rows, and no later pass starts.
#[test]
fn interrupt_during_pass_2_keeps_pass_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("app.csv");
    let bin = assert_cmd::cargo::cargo_bin("gpumodel");
    let mut child = std::process::Command::new(bin)
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--pm-passes", "all", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
        .arg(&out)
        .args(["/bin/sleep", "1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pass2 = dir.path().join("app.pass2.csv");
    let t0 = std::time::Instant::now();
    while !pass2.exists() {
        assert!(t0.elapsed().as_secs() < 30, "pass 2 never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let ok = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let read = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    assert_eq!(read(&dir.path().join("app.pass1.json"))["status"], "complete");
    assert_eq!(read(&dir.path().join("app.pass2.json"))["status"], "interrupted");
    let meta = read(&out.with_extension("json"));
    assert_eq!(meta["status"], "interrupted");
    assert_eq!(meta["replay"]["passes"].as_array().unwrap().len(), 2);
    assert!(!dir.path().join("app.pass3.csv").exists());
    let rows = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count() - 1;
    assert_eq!(rows(&out), rows(&dir.path().join("app.pass1.csv")));
    // Pass 1's rows, however many a busy host kept of the 60 a second: at least one, at most one per
    // 1/60 s of its run.
    let d = read(&dir.path().join("app.pass1.json"))["summary"]["duration_s"].as_f64().unwrap();
    assert!(
        d >= 1.0 && rows(&out) >= 1 && rows(&out) as f64 <= d * 60.0 + 2.0,
        "{} rows in {d} s",
        rows(&out)
    );
}

/// A program that fails in pass 1 ends the replay there: its exit code is forwarded, the merged trace
/// says which pass failed, and no second pass runs.
#[test]
fn pm_passes_all_stops_at_a_failing_program() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("app.csv");
    let o = fake()
        .args(["collect", "--pm-passes", "all", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
        .arg(&out)
        .args(["/bin/sh", "-c", "sleep 0.1; exit 7"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    assert_eq!(meta["status"]["failed"], "pass 1: the program exited with code 7");
    assert_eq!(meta["replay"]["passes"].as_array().unwrap().len(), 1);
    assert!(!dir.path().join("app.pass2.csv").exists());
}

#[test]
fn pm_passes_all_without_counters_is_refused() {
    let o = fake().args(["collect", "--pm-passes", "all", "--no-counters", "/bin/true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("drop --no-counters or --pm-passes"), "{e}");
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
    // `cargo test --workspace` (the README's test command) builds the injection library into
    // target/<profile>/deps/ for its own test; without it this test has nothing to load.
    let lib = assert_cmd::cargo::cargo_bin("gpumodel").with_file_name("deps/libgpumodel_inject.so");
    assert!(lib.is_file(), "{} is missing: run `cargo test --workspace`", lib.display());
    let o = fake()
        .env("GPUMODEL_INJECT_LIB", &lib)
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "0", "--kernel-totals", "-o"])
        .arg(&out)
        .arg("/bin/true")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("k.kernels.csv was not written: the CUDA driver did not load"), "{e}");
    assert!(out.exists() && out.with_extension("json").exists());
}

// ---- `gpumodel import ncu|nvprof` on hand-written fixtures in the documented layouts ----
//
// The fixtures in collect/tests/fixtures are written by hand following NVIDIA's documented CSV layouts
// (they say so in their first lines); they are not real captures. Every expected value below is worked
// out by hand from the fixture's cells, not taken from the importer's output.

fn table(path: &Path) -> gpumodel_models::Table {
    gpumodel_models::Table::read_csv(path, gpumodel_models::table::GROUP_COLUMN).unwrap()
}

/// Column `name` as a vector; NaN stays NaN (compared with `same`).
fn col(t: &gpumodel_models::Table, name: &str) -> Vec<f64> {
    t.column(name).unwrap_or_else(|| panic!("no column {name}")).to_vec()
}

fn same(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-9 * w.abs().max(1.0);
        assert!(ok, "{got:?} vs {want:?}");
    }
}

/// ncu's default unit scaling (Mbyte, Kbyte, Ksector, Kbyte/block, usecond) is undone from the units row,
/// thousands separators and "n/a" are read, and the program's own output before the table is skipped.
#[test]
fn import_ncu_raw_fixture_undoes_unit_scaling() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ncu.csv");
    let profiles = dir.path().join("profiles");
    Import::new("ncu", fixture("ncu_raw_ga102.csv")).out(&out).profiles(&profiles).ok();
    let t = table(&out);
    let sgemm = "void sgemm_kernel<128, 8>(const float *, const float *, float *, int, int, int)";
    assert_eq!(t.groups, ["vecAdd(const float *, const float *, float *, int)", sgemm, sgemm]);
    same(&col(&t, "time_s"), &[4.29e-6, 1021.47e-6, 3998.21e-6]);
    // "0.40" Mbyte, "200.70" Kbyte, …
    same(&col(&t, "dram_read_bytes"), &[400_000.0, 1_570_000.0, 6_290_000.0]);
    same(&col(&t, "dram_write_bytes"), &[200_700.0, 262_140.0, 1_048_580.0]);
    // "12.50" Ksector = 12 500 sectors.
    same(&col(&t, "l1_global_load_miss"), &[12_500.0, 65_540.0, 262_140.0]);
    same(&col(&t, "global_store_transaction"), &[6_250.0, 8_192.0, 32_768.0]);
    // G_load = gld_request + L1 hits + L1 misses: 3136 + 0 + 12500, 131072 + 393216 + 65540, …
    same(&col(&t, "G_load"), &[15_636.0, 589_828.0, 2_359_292.0]);
    // S_access = shared loads + bank conflicts (ld + st): 0, 4194304 + 1536, 16777216 + 6144.
    same(&col(&t, "S_access"), &[0.0, 4_195_840.0, 16_783_360.0]);
    // "n/a" cells stay unknown.
    same(&col(&t, "T_hits"), &[f64::NAN, 0.0, 0.0]);
    same(&col(&t, "divergent_branch"), &[0.0, 128.0, f64::NAN]);
    same(
        &col(&t, "exec_inst_per_s"),
        &[87_808.0 / 4.29e-6, 52_428_800.0 / 1021.47e-6, 209_715_200.0 / 3998.21e-6],
    );

    let mut files: Vec<_> = std::fs::read_dir(&profiles).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert_eq!(files.len(), 3);
    // Profiles are named by the kernel's short name and the launch's place in the file.
    let second = profiles.join("sgemm_kernel-002.json");
    assert!(files.contains(&second), "{files:?}");
    let p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(p["name"], sgemm);
    assert_eq!(p["launch"]["grid"], serde_json::json!([8, 8, 1]));
    assert_eq!(p["launch"]["block"], serde_json::json!([16, 16, 1]));
    assert_eq!(p["launch"]["registers_per_thread"], 40);
    // 1,024 byte/block dynamic + 8.19 Kbyte/block static.
    assert_eq!(p["launch"]["shared_mem_per_block"], 9_214);
    assert_eq!(p["counters"]["inst_executed"], 52_428_800.0);
}

/// nvprof run with --events and --metrics prints two tables with different columns: the metric table's
/// Avg is one column further right (Metric Description). Before the header was re-read per table, the
/// metric rows were read at the event table's Avg index, i.e. their Max (4192 instead of 4096 here).
#[test]
fn import_nvprof_fixture_reads_both_tables() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nvprof.csv");
    let profiles = dir.path().join("profiles");
    let o = Import::new("nvprof", fixture("nvprof_events_metrics_gtx580.csv"))
        .out(&out)
        .profiles(&profiles)
        .arg("--grid=128,1,1")
        .arg("--block=256,1,1")
        .ok();
    let e = stderr(&o);
    // Three of the fixture's names carry nothing a model reads (warps_launched, gld_efficiency,
    // dram_read_throughput): counted on the summary line, listed only with --verbose.
    assert!(e.contains("imported 2 kernel(s)") && e.contains("dropped 3"), "{e}");
    assert!(!e.contains("gld_efficiency"), "{e}");
    let t = table(&out);
    assert_eq!(
        t.groups,
        [
            "bpnn_layerforward_CUDA(float*, float*, float*, float*, int, int)",
            "bpnn_adjust_weights_cuda(float*, int, float*, int, float*, float*)"
        ]
    );
    // gst_transactions (metric table, alias of global_store_transaction): the Avg column.
    same(&col(&t, "global_store_transaction"), &[4_096.0, 65_536.0]);
    // Event Avg values: 65536 + 12544 + 53504, 98304 + 0 + 196608.
    same(&col(&t, "G_load"), &[131_584.0, 294_912.0]);
    same(&col(&t, "S_access"), &[327_680.0 + 1_536.0, f64::NAN]);
    same(&col(&t, "exec_inst"), &[2_793_472.0, 1_916_928.0]);
    same(&col(&t, "time_s"), &[f64::NAN, f64::NAN]);
    let first = profiles.join("bpnn_layerforward_CUDA-001.json");
    let p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    assert_eq!(p["launch"]["grid"], serde_json::json!([128, 1, 1]));
    assert_eq!(p["counters"]["divergent_branch"], 8_192.0);
}

#[test]
fn import_nvprof_with_a_two_number_grid_says_how_to_write_it() {
    let o = Import::new("nvprof", fixture("nvprof_events_metrics_gtx580.csv"))
        .arg("--grid=128,1")
        .arg("--block=256,1,1")
        .run();
    assert!(!o.status.success());
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("--grid takes three sizes of at least 1, like --grid 128,1,1"), "{e}");
}

/// A missing trace: one line that names the file and says the cause once (the library's message already
/// carries its source; the binary does not repeat it), nothing written.
#[test]
fn merge_of_a_missing_trace_says_the_cause_once_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone.csv");
    let out = dir.path().join("all.csv");
    let o = gpumodel().arg("merge").arg(&missing).arg("-o").arg(&out).output().unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("gone"), "names the file: {err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "cause repeated: {err}");
    assert!(!out.exists());
}

/// `--kernel-totals` needs the injection library after the trace: when it cannot be found, collect says so
/// in one line before running anything, and writes nothing.
#[test]
fn kernel_totals_without_the_injection_library_fail_before_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.csv");
    let o = fake()
        .env("GPUMODEL_INJECT_LIB", dir.path().join("missing.so"))
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "0", "--kernel-totals", "-o"])
        .arg(&out)
        .arg("/bin/true")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("cannot load libgpumodel_inject.so") && e.contains("GPUMODEL_INJECT_LIB"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing is written");
}

/// The layout `bash scripts/install` makes (`cargo install` puts the executable in <root>/bin; the library
/// goes to <root>/lib/gpumodel/): the installed executable finds the injection library there, so
/// `--kernel-totals` gets past its library check to the hardware (here: no driver); without the library it
/// stops at the check and names `scripts/install`. Hard links, in the target folder, keep the copy cheap.
#[test]
fn an_installed_gpumodel_finds_the_injection_library_in_its_lib_folder() {
    if !no_driver_here() {
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("gpumodel");
    let lib = bin.with_file_name("deps/libgpumodel_inject.so");
    assert!(lib.is_file(), "{} is missing: run `cargo test --workspace`", lib.display());
    let root = tempfile::tempdir_in(bin.parent().unwrap()).unwrap();
    std::fs::create_dir_all(root.path().join("bin")).unwrap();
    std::fs::create_dir_all(root.path().join("lib/gpumodel")).unwrap();
    let exe = root.path().join("bin/gpumodel");
    let installed = root.path().join("lib/gpumodel/libgpumodel_inject.so");
    std::fs::hard_link(&bin, &exe).unwrap();
    std::fs::hard_link(&lib, &installed).unwrap();
    let collect = || {
        let work = tempfile::tempdir().unwrap();
        let o = std::process::Command::new(&exe)
            .current_dir(work.path())
            .env_remove("GPUMODEL_FAKE_GPU")
            .env_remove("GPUMODEL_INJECT_LIB")
            .args(["collect", "--kernel-totals", "-o", "k.csv", "/bin/true"])
            .output()
            .unwrap();
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "nothing may be written");
        (o.status.code(), stderr(&o))
    };
    let (code, e) = collect();
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("no NVIDIA driver") && !e.contains("cannot load"), "{e}");
    std::fs::remove_file(&installed).unwrap();
    let (code, e) = collect();
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("cannot load libgpumodel_inject.so") && e.contains("scripts/install"), "{e}");
}

/// `GPUMODEL_REPLAY=FILE`: `collect --no-counters` samples the recorded GPU of a trace of NVML answers (the
/// format `serve --replay` reads), with its quirks: a recorded failed read loses one sample and is said in
/// the trace's warnings, the run goes on; the energy comes from the recorded counter. Commands that run
/// kernels refuse a replayed GPU in one line.
#[test]
fn collect_replays_a_recorded_gpu_with_its_quirks() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![
        r#"{"format":"gpumodel-nvml-trace/1","gpus":[{"index":0,"uuid":"GPU-r","name":"NVIDIA H100 (recorded)"}]}"#
            .to_string(),
    ];
    let mut energy = 5000.0;
    let mut counters = vec![energy];
    for i in 0..=40 {
        let p = if i < 5 { 120.0 } else { 250.0 };
        if i > 0 {
            energy += p * 0.1;
            counters.push(energy);
        }
        lines.push(format!(
            r#"{{"gpu":0,"reading":{{"time_s":{},"energy_j":{energy},"power_w":{p},"sm_mhz":1980}}}}"#,
            100.0 + 0.1 * f64::from(i)
        ));
        if i == 3 {
            lines.push(r#"{"gpu":0,"error":{"call":"nvmlDeviceGetPowerUsage","code":"unknown"}}"#.into());
        }
    }
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("t.csv");
    let replay = || {
        let mut c = gpumodel();
        c.env("GPUMODEL_REPLAY", &trace).env_remove("GPUMODEL_FAKE_GPU");
        c
    };
    let o = replay()
        .args(["collect", "--no-counters", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
        .arg(&out)
        .args(["sleep", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let power = rows.headers().unwrap().iter().position(|h| h == "power_w").unwrap();
    let values: Vec<f64> = rows.records().map(|r| r.unwrap()[power].parse().unwrap()).collect();
    assert!(!values.is_empty() && values.iter().all(|w| *w == 120.0 || *w == 250.0), "{values:?}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "complete", "{meta:#}");
    let warnings = meta["warnings"].to_string();
    assert!(warnings.contains("power read(s) failed and were skipped"), "{warnings}");
    assert!(warnings.contains("nvmlDeviceGetPowerUsage answered `unknown`"), "{warnings}");
    assert!(meta.to_string().contains("NVIDIA H100 (recorded)"));
    let summary = &meta["summary"];
    assert_eq!(summary["energy_source"], "energy_counter");
    // A difference of two recorded counter values.
    let e = summary["energy_j"].as_f64().unwrap();
    assert!(
        counters.iter().any(|a| counters.iter().any(|b| (b - a - e).abs() < 1e-6)),
        "{e} J is no difference of the recorded counter"
    );
    // Counters, the suite and calibrate need a GPU that runs kernels.
    for (args, want) in [
        (vec!["collect", "-o", "u.csv", "/bin/true"], "--no-counters"),
        (vec!["collect", "--suite", "--out", "s.csv"], "unset GPUMODEL_REPLAY"),
        (vec!["calibrate", "--out", "c.toml"], "unset GPUMODEL_REPLAY"),
    ] {
        let o = replay().current_dir(dir.path()).args(&args).output().unwrap();
        let e = stderr(&o);
        assert!(!o.status.success() && e.contains(want) && e.trim().lines().count() == 1, "{args:?}: {e}");
    }
    // doctor checks this machine and says so first.
    let o = replay().current_dir(dir.path()).args(["doctor", "--format", "json"]).output().unwrap();
    assert!(stderr(&o).starts_with("gpumodel doctor: GPUMODEL_REPLAY is set: these rows are this machine's"));
    assert!(serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok(), "{}", stderr(&o));
}
