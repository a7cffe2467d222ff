//! `gpumodel cluster` (paper eq. 5.15/5.16) through the real binary.

use assert_cmd::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("gpumodel").unwrap().args(args).output().unwrap()
}

/// Hand-solved: T(n) = 10 + 80/n, GPU busy 80/n at 200 W, idle 100 W per node.
/// E(n) = n·(200·80/n + 100·(10 + 80/n)) = 16000 + 1000 n + 8000 = 24000 + 1000 n → minimal at n = 1;
/// ED(n) = (24000 + 1000n)(10 + 80/n) = 240000 + 1920000/n + 10000n + 80000 → minimal near n = √192 ≈ 13.9:
/// ED(13) = 627692.3, ED(14) = 627142.9, ED(15) = 628000 → 14.
#[test]
fn optima_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.csv");
    std::fs::write(&p, "# measured\nnodes,time_s,gpu_time_s,gpu_power_w,idle_power_w\n1,90,80,200,100\n2,50,40,200,100\n4,30,20,200,100\n").unwrap();
    let out = run(&[
        "cluster",
        "--input",
        p.to_str().unwrap(),
        "--max-nodes",
        "32",
        "--objective",
        "e",
        "--objective",
        "ed",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let opt = v["optima"].as_array().unwrap();
    assert_eq!((opt[0]["nodes"].as_f64(), opt[1]["nodes"].as_f64()), (Some(1.0), Some(14.0)));
    let e1 = v["points"][0]["energy_j"].as_f64().unwrap();
    assert!((e1 - 25_000.0).abs() < 1e-6, "{e1}");
}

#[test]
fn default_example_runs() {
    let out = run(&["cluster"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("optimum"));
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.csv");
    std::fs::write(&p, "nodes,time_s,gpu_power_w,idle_power_w\n1,90,200,100\n").unwrap();
    let err = String::from_utf8_lossy(&run(&["cluster", "--input", p.to_str().unwrap()]).stderr).to_string();
    assert!(err.contains("two or more node counts"), "{err}");
    std::fs::write(&p, "nodes,time_s,gpu_power_w\n1,90,200\n").unwrap();
    let err = String::from_utf8_lossy(&run(&["cluster", "--input", p.to_str().unwrap()]).stderr).to_string();
    assert!(err.contains("lacks column(s) idle_power_w"), "{err}");
    std::fs::write(&p, "nodes,time_s,gpu_power_w,idle_power_w\n1,abc,200,100\n2,50,200,100\n").unwrap();
    let err = String::from_utf8_lossy(&run(&["cluster", "--input", p.to_str().unwrap()]).stderr).to_string();
    assert!(err.contains("'abc' is not a finite number"), "{err}");
}

/// What users see on the shipped example, pinned (reviewed by hand when it changes: `INSTA_UPDATE=always`).
#[test]
fn default_example_snapshots() {
    for (format, name) in
        [("table", "cluster_table"), ("csv", "cluster_csv"), ("markdown", "cluster_markdown")]
    {
        let out = run(&["cluster", "--max-nodes", "8", "--format", format]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        insta::assert_snapshot!(name, String::from_utf8_lossy(&out.stdout));
    }
    let out = run(&["cluster", "--max-nodes", "8", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["command"].as_str(), v["format_version"].as_u64()), (Some("cluster"), Some(1)));
    insta::assert_json_snapshot!("cluster_json", v);
}

/// CSV and JSON agree: every CSV row is the JSON point of the same node count, to the last digit.
#[test]
fn csv_and_json_carry_the_same_numbers() {
    let csv = run(&["cluster", "--max-nodes", "16", "--format", "csv"]).stdout;
    let json: serde_json::Value =
        serde_json::from_slice(&run(&["cluster", "--max-nodes", "16", "--format", "json"]).stdout).unwrap();
    let mut r = csv::Reader::from_reader(csv.as_slice());
    let header = r.headers().unwrap().clone();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 16);
    for (row, p) in rows.iter().zip(json["points"].as_array().unwrap()) {
        for key in ["nodes", "time_s", "energy_j"] {
            assert_eq!(row[col(key)].parse::<f64>().unwrap(), p[key].as_f64().unwrap(), "{key}");
        }
    }
}

/// `gpumodel cluster | head -1`: the reader going away is not an error (no panic, no message, exit 0).
#[test]
fn closed_pipe_is_not_an_error() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumodel"))
        .args(["cluster", "--max-nodes", "200000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // Dropping our end closes the pipe while the command is still writing.
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}
