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
