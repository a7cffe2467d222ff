//! Every command on the one output layer × every `--format` (table, csv, json, markdown), through the real
//! binary: each output parses as what it claims to be, JSON names its command, CSV has a header and rows,
//! and the table and JSON of the shipped defaults are pinned with `insta` (reviewed by hand when they
//! change: `INSTA_UPDATE=always cargo test --test formats`, then read the diff).

mod common;

use common::{Import, data_dir, gpumodel, profiler_fixture};
use std::path::{Path, PathBuf};

const FORMATS: [&str; 4] = ["table", "csv", "json", "markdown"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Vec<u8> {
    let o = gpumodel().args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// The checks every format gets: JSON is an object tagged with `command`; CSV reads back with a header
/// and at least one row of the header's width; table and Markdown are non-empty text.
fn check_formats(args: &[&str], command: &str) {
    for f in FORMATS {
        let mut a = args.to_vec();
        a.extend(["--format", f]);
        let out = run(&a);
        match f {
            "json" => {
                let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
                assert_eq!(v["command"], command, "{a:?}");
                assert_eq!(v["format_version"], 1, "{a:?}");
            }
            "csv" => {
                let mut r = csv::Reader::from_reader(out.as_slice());
                let width = r.headers().unwrap().len();
                let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
                assert!(!rows.is_empty(), "{a:?}: no CSV rows");
                assert!(rows.iter().all(|r| r.len() == width), "{a:?}");
            }
            "markdown" => {
                let s = String::from_utf8(out).unwrap();
                assert!(!s.trim().is_empty() && !s.contains("\n\n\n"), "{a:?}: {s}");
            }
            _ => assert!(!out.is_empty(), "{a:?}"),
        }
    }
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    serde_json::from_slice(&run(&a)).unwrap()
}

fn text(args: &[&str]) -> String {
    String::from_utf8(run(args)).unwrap()
}

/// Every float rounded to 6 significant digits: a snapshot pins what the numbers are, not the last bits a
/// platform's libm or the order of a sum leaves in them.
fn six_digits(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            format!("{x:.5e}")
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::Null, Value::Number)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(six_digits).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, x)| (k, six_digits(x))).collect()),
        other => other,
    }
}

/// The machine's dataset folder replaced by a placeholder, so snapshots hold no absolute path.
fn redact(s: &str) -> String {
    s.replace(&data_dir().display().to_string(), "$GPUMODEL_DATA_DIR")
}

#[test]
fn predict_every_format_and_snapshots() {
    check_formats(&["predict", "--warps", "32"], "predict");
    insta::assert_snapshot!("predict_table", text(&["predict", "--warps", "32"]));
    insta::assert_json_snapshot!("predict_json", six_digits(json(&["predict", "--warps", "32"])));
}

#[test]
fn predict_sweep_every_format_and_snapshots() {
    check_formats(&["predict", "--sweep", "warps"], "predict");
    insta::assert_snapshot!("predict_sweep_table", text(&["predict", "--sweep", "warps"]));
    insta::assert_json_snapshot!("predict_sweep_json", six_digits(json(&["predict", "--sweep", "warps"])));
}

/// The sweep's CSV carries seconds with every digit, the same numbers as the JSON.
#[test]
fn predict_sweep_csv_matches_json() {
    let csv_out = run(&["predict", "--sweep", "core-clock", "--format", "csv"]);
    let v = json(&["predict", "--sweep", "core-clock"]);
    let mut r = csv::Reader::from_reader(csv_out.as_slice());
    assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>()[..2], ["core_mhz", "time_s"]);
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let points = v["sweep"]["points"].as_array().unwrap();
    assert_eq!(rows.len(), points.len());
    // serde_json's default float parser may land one ulp off the printed digits (it is not the
    // round-trip parser); the CSV's digits are the value itself.
    let same = |a: f64, b: f64| (a - b).abs() <= 2.0 * f64::EPSILON * a.abs().max(b.abs());
    for (row, p) in rows.iter().zip(points) {
        assert!(same(row[1].parse().unwrap(), p["time_s"].as_f64().unwrap()), "{row:?} {p}");
        assert!(same(row[3].parse().unwrap(), p["energy_j"].as_f64().unwrap()), "{row:?} {p}");
    }
}

fn split_example(name: &str) -> String {
    root().join("datasets/examples/split").join(name).display().to_string()
}

#[test]
fn split_every_example_every_format() {
    let dir = root().join("datasets/examples/split");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            check_formats(&["split", p.to_str().unwrap()], "split");
            n += 1;
        }
    }
    assert!(n >= 5, "{n} examples");
}

#[test]
fn split_snapshots() {
    for (name, file) in [
        ("split_two_device", "peach_system_i.toml"),
        ("split_dvfs", "peach_table_vii.toml"),
        ("split_pareto", "hepopta_small.toml"),
        ("split_cg", "lang_runger_cg.toml"),
    ] {
        let f = split_example(file);
        insta::assert_snapshot!(format!("{name}_table"), text(&["split", &f]));
        insta::assert_snapshot!(
            format!("{name}_csv"),
            String::from_utf8(run(&["split", &f, "--format", "csv"])).unwrap()
        );
    }
    insta::assert_json_snapshot!(
        "split_two_device_json",
        six_digits(json(&["split", &split_example("peach_system_i.toml")]))
    );
}

/// An objective `a,b` is a label with a comma: CSV must quote it, not shift the row.
#[test]
fn split_csv_quotes_an_objective_with_a_comma() {
    let f = split_example("peach_system_i.toml");
    let out = run(&["split", &f, "--objective", "1,2", "--format", "csv"]);
    let mut r = csv::Reader::from_reader(out.as_slice());
    let width = r.headers().unwrap().len();
    for rec in r.records() {
        assert_eq!(rec.unwrap().len(), width);
    }
}

#[test]
fn split_fit_every_format() {
    let f = split_example("peach_table_vii_gpu_fit.toml");
    check_formats(&["split", "fit", &f], "split-fit");
    insta::assert_snapshot!("split_fit_table", text(&["split", "fit", &f]));
}

#[test]
fn dataset_list_and_show_every_format() {
    check_formats(&["dataset", "list"], "dataset-list");
    check_formats(&["dataset", "show", "nvdvfs-gtx980"], "dataset-show");
    insta::assert_snapshot!("dataset_show_table", redact(&text(&["dataset", "show", "nvdvfs-gtx980"])));
    let v = json(&["dataset", "show", "nvdvfs-gtx980"]);
    insta::assert_json_snapshot!(
        "dataset_show_json",
        serde_json::from_str::<serde_json::Value>(&redact(&v.to_string())).unwrap()
    );
}

#[test]
fn counters_every_format() {
    check_formats(&["counters", "--chip", "GA102"], "counters");
}

#[test]
fn import_summary_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for f in FORMATS {
        let out = dir.path().join(format!("t-{f}.csv"));
        let o =
            Import::new("ncu", profiler_fixture("ncu_raw_ga102.csv")).out(&out).arg("--format").arg(f).ok();
        assert!(out.is_file());
        if f == "json" {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!((v["command"].as_str(), v["kernels"].as_u64()), (Some("import"), Some(2)));
        }
        if f == "csv" {
            let mut r = csv::Reader::from_reader(o.stdout.as_slice());
            let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
            assert_eq!(rows.len(), 1);
        }
    }
}

fn write_trace(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(format!("{name}.csv"));
    let o = gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "0", "-o"])
        .arg(&out)
        .args(["/bin/sh", "-c", "sleep 0.1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn merge_summary_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let traces = [write_trace(dir.path(), "a"), write_trace(dir.path(), "b")];
    for f in FORMATS {
        let merged = dir.path().join(format!("all-{f}.csv"));
        let o = gpumodel()
            .arg("merge")
            .args(&traces)
            .arg("-o")
            .arg(&merged)
            .args(["--format", f])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        if f == "json" {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!((v["command"].as_str(), v["inputs"].as_u64()), (Some("merge"), Some(2)));
        }
    }
}

#[test]
fn suite_kernel_list_every_format() {
    check_formats(&["collect", "--suite", "--list-kernels"], "collect-suite-kernels");
}

/// Every number replaced by `N`, runs of spaces by one and the header's rules by `--`: what a timed run
/// measured (samples, seconds, watts) differs from run to run, so a snapshot of it pins the labels, units
/// and order only.
fn numbers_masked(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(|d| d.is_ascii_digit() || *d == '.') {
                chars.next();
            }
            out.push('N');
        } else if c == ' ' || c == '-' && chars.peek() == Some(&'-') {
            // Column widths follow the numbers: runs of spaces, and the rule under the header, shrink.
            while chars.peek() == Some(&c) {
                chars.next();
            }
            out.push_str(if c == ' ' { " " } else { "--" });
        } else {
            out.push(c);
        }
    }
    out
}

/// `collect ./program` on the scripted GPU, its run summary in `format`: (stdout, stderr, the trace).
fn collect_run(dir: &Path, format: &str) -> (String, String, PathBuf) {
    let out = dir.join(format!("run-{format}.csv"));
    let o = gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--idle-seconds", "0.05", "--min-seconds", "0", "--format", format, "-o"])
        .arg(&out)
        .args(["/bin/sh", "-c", "echo hello-from-the-program; sleep 0.1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.is_file() && out.with_extension("json").is_file(), "the trace goes to its file");
    (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap(), out)
}

/// collect's run summary is a result like any other: every format on stdout, the trace in its file, and
/// with a machine format the program's own stdout moved to stderr so that stdout parses.
#[test]
fn collect_run_summary_every_format_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().display().to_string();
    let (json_out, json_err, trace) = collect_run(dir.path(), "json");
    let mut v: serde_json::Value = serde_json::from_str(&json_out).unwrap();
    assert!(json_err.contains("hello-from-the-program"), "{json_err}");
    assert_eq!((v["command"].as_str(), v["format_version"].as_u64()), (Some("collect"), Some(1)));
    assert_eq!(v["trace"], trace.display().to_string());
    assert_eq!(v["status"], "complete");
    let sidecar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trace.with_extension("json")).unwrap()).unwrap();
    assert_eq!(v["summary"], sidecar["summary"], "the summary printed is the one in the sidecar");
    let host = v["host"].as_str().unwrap().to_string();
    // What the run measured differs between runs: numbers of the summary become "N" (types are kept).
    for (k, x) in v["summary"].as_object_mut().unwrap() {
        if x.is_number() && !["repetitions", "exit_code"].contains(&k.as_str()) {
            *x = "N".into();
        }
    }
    v["host"] = "$HOST".into();
    let v: serde_json::Value = serde_json::from_str(&v.to_string().replace(&tmp, "$TMP")).unwrap();
    insta::assert_json_snapshot!("collect_run_json", v);

    let (table, table_err, _) = collect_run(dir.path(), "table");
    assert!(table.starts_with("hello-from-the-program\n"), "table: the program writes where it always does");
    assert!(!table_err.contains("hello"), "{table_err}");
    let table = table.replace(&tmp, "$TMP").replace(&format!("of {host})"), "of $HOST)");
    insta::assert_snapshot!("collect_run_table", numbers_masked(&table));

    let (csv_out, csv_err, _) = collect_run(dir.path(), "csv");
    assert!(csv_err.contains("hello-from-the-program"), "{csv_err}");
    let mut r = csv::Reader::from_reader(csv_out.as_bytes());
    let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1, "{csv_out}");
    assert_eq!(rows[0].len(), head.len());
    assert_eq!(&rows[0][head.iter().position(|h| h == "status").unwrap()], "complete");
    assert!(rows[0][head.iter().position(|h| h == "mean_power_w").unwrap()].parse::<f64>().is_ok());

    let (md, md_err, _) = collect_run(dir.path(), "markdown");
    assert!(md_err.contains("hello-from-the-program"), "{md_err}");
    assert!(md.contains("| figure | value | unit |") && !md.contains("\n\n\n"), "{md}");
}

/// `collect --suite` on the scripted GPU: the suite's summary in every format.
#[test]
fn collect_suite_summary_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for f in FORMATS {
        let out = dir.path().join(format!("suite-{f}.csv"));
        let o = gpumodel()
            .env("GPUMODEL_FAKE_GPU", "1")
            .args(["collect", "--suite", "--kernels", "idle", "--min-seconds", "0.05", "--format", f, "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        match f {
            "json" => {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(
                    (v["command"].as_str(), v["rows_written"].as_u64()),
                    (Some("collect-suite"), Some(1))
                );
            }
            "csv" => {
                let mut r = csv::Reader::from_reader(text.as_bytes());
                let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
                assert_eq!((rows.len(), &rows[0][0]), (1, out.display().to_string().as_str()));
            }
            _ => assert!(text.contains("gpumodel train --data"), "{text}"),
        }
    }
}
