//! `gpumodel split` driven through the real binary on the shipped example files; every expected number
//! comes from the papers (the issue text and ../shared/papers/peach_table_vii.csv), never from a
//! previous run of this code.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn example(name: &str) -> PathBuf {
    root().join("datasets/examples/split").join(name)
}

/// The published test vectors live next to the datasets (../shared/papers).
fn papers_dir() -> PathBuf {
    let data = std::env::var_os("GPUMODEL_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/datasets"));
    let dir = data.join("../papers");
    assert!(
        dir.join("peach_table_vii.csv").is_file(),
        "the published test vectors are not at {} — set GPUMODEL_DATA_DIR (CI sets it to ../shared/datasets)",
        dir.display()
    );
    dir
}

fn gpumodel() -> Command {
    Command::cargo_bin("gpumodel").unwrap()
}

fn json(args: &[&str], file: &Path) -> serde_json::Value {
    let out = gpumodel().arg("split").arg(file).args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn best<'a>(report: &'a serde_json::Value, objective: &str) -> &'a serde_json::Value {
    let list = report["best"].as_array().unwrap();
    &list.iter().find(|b| b["objective"] == objective).unwrap()["point"]
}

/// Table VI states splits as whole-percent CPU:GPU ratios.
fn gpu_percent(point: &serde_json::Value) -> f64 {
    (f(&point["gpu_share"]) * 100.0).round()
}

#[test]
fn peach_system_i_reproduces_table_vi() {
    // Issue / PEACH Table V–VI: α_perf = 0.782, best-time split 22:78, best-energy split 0:100.
    let r = json(&[], &example("peach_system_i.toml"));
    assert_eq!(r["model"], "two-device");
    assert!((f(&r["balance_share"]) - 0.782).abs() < 5e-4, "{}", r["balance_share"]);
    assert_eq!(gpu_percent(best(&r, "time")), 78.0);
    assert_eq!(gpu_percent(best(&r, "energy")), 100.0);
    // Stafford's test agrees that the K20c alone is cheapest.
    assert_eq!(r["stafford"]["verdict"], "gpu-only");
}

#[test]
fn peach_system_ii_reproduces_table_vi() {
    // Table VI: 49:51 for both performance and energy on the C2075 system.
    let r = json(&[], &example("peach_system_ii.toml"));
    assert_eq!(gpu_percent(best(&r, "time")), 51.0);
    assert_eq!(gpu_percent(best(&r, "energy")), 51.0);
    assert_eq!(r["stafford"]["verdict"], "split");
}

#[derive(Debug)]
struct Published {
    cpu: f64,
    gpu: f64,
    objective: String,
    share_pct: f64,
    gflops: f64,
    gflops_per_watt: f64,
}

fn table_vii() -> Vec<Published> {
    let text = std::fs::read_to_string(papers_dir().join("peach_table_vii.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("cpu_ghz,gpu_mhz,objective,gpu_share_pct,gflops,gflops_per_watt"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            Published {
                cpu: c[0].parse().unwrap(),
                gpu: c[1].parse().unwrap(),
                objective: c[2].to_string(),
                share_pct: c[3].parse().unwrap(),
                gflops: c[4].parse().unwrap(),
                gflops_per_watt: c[5].parse().unwrap(),
            }
        })
        .collect()
}

#[test]
fn peach_table_vii_every_cell_matches_the_published_table() {
    let rows = table_vii();
    assert_eq!(rows.len(), 64, "8 CPU clocks × 4 GPU clocks × 2 objectives");
    let r = json(&[], &example("peach_table_vii.toml"));
    assert_eq!(r["model"], "dvfs");
    let objectives: Vec<&str> =
        r["objectives"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 32);
    let mut worst_perf: f64 = 0.0;
    let mut worst_eff: f64 = 0.0;
    for p in &rows {
        let cell = cells
            .iter()
            .find(|c| (f(&c["cpu_clock"]) - p.cpu).abs() < 1e-9 && (f(&c["gpu_clock"]) - p.gpu).abs() < 1e-9)
            .unwrap_or_else(|| panic!("no cell for {p:?}"));
        let k = objectives
            .iter()
            .position(|o| *o == if p.objective == "performance" { "time" } else { "energy" });
        let point = &cell["best"][k.unwrap()];
        // The GPU shares must match exactly (README: "The GPU shares match exactly").
        assert_eq!(gpu_percent(point), p.share_pct, "{p:?}: got {point}");
        let perf = (f(&point["performance"]) - p.gflops).abs() / p.gflops;
        let eff = (f(&point["efficiency"]) - p.gflops_per_watt).abs() / p.gflops_per_watt;
        worst_perf = worst_perf.max(perf);
        worst_eff = worst_eff.max(eff);
        // The table is rounded (GFLOPS to 1, GFLOPS/W to 0.01); README: within about 0.3% and 1%.
        assert!(perf < 0.005, "{p:?}: GFLOPS {} ({:.2}% off)", point["performance"], perf * 100.0);
        assert!(eff < 0.012, "{p:?}: GFLOPS/W {} ({:.2}% off)", point["efficiency"], eff * 100.0);
    }
    eprintln!(
        "Table VII: worst GFLOPS error {:.3}%, worst GFLOPS/W error {:.3}%",
        worst_perf * 100.0,
        worst_eff * 100.0
    );
}

#[test]
fn peach_table_vii_global_optimum_and_both_savings_figures() {
    let r = json(&[], &example("peach_table_vii.toml"));
    // Best efficiency: (1.2 GHz, 705 MHz, 90% GPU) at 3.42 GFLOPS/W; best performance (2.6, 705, 78%) 1336.
    let global = r["global"].as_array().unwrap();
    let energy = global.iter().find(|g| g["objective"] == "energy").unwrap();
    assert_eq!((f(&energy["cpu_clock"]), f(&energy["gpu_clock"])), (1.2, 705.0));
    assert_eq!(gpu_percent(&energy["point"]), 90.0);
    assert!((f(&energy["point"]["efficiency"]) - 3.42).abs() / 3.42 < 0.01);
    let time = global.iter().find(|g| g["objective"] == "time").unwrap();
    assert_eq!((f(&time["cpu_clock"]), f(&time["gpu_clock"])), (2.6, 705.0));
    assert_eq!(gpu_percent(&time["point"]), 78.0);
    assert!((f(&time["point"]["performance"]) - 1336.0).abs() / 1336.0 < 0.005);
    // "saves 32.6% energy" is η_new/η_old − 1 (3.42/2.58 − 1); the energy per unit of work falls by
    // 1 − 2.58/3.42 = 24.6%. The paper's figures come from rounded η; allow half a percentage point.
    let s = &r["savings"];
    assert!((f(&s["efficiency_gain"]) - (3.42 / 2.58 - 1.0)).abs() < 0.005, "{s}");
    assert!((f(&s["energy_saved"]) - (1.0 - 2.58 / 3.42)).abs() < 0.005, "{s}");
    // The table output prints both and says which is which.
    let out = gpumodel().arg("split").arg(example("peach_table_vii.toml")).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("η_new/η_old − 1") && text.contains("energy actually saved"), "{text}");
    assert!(text.contains("best for time") && text.contains("best for energy"), "{text}");
}

#[test]
fn fit_recovers_peach_gpu_laws_from_table_vii() {
    let out = gpumodel()
        .args(["split", "fit"])
        .arg(example("peach_table_vii_gpu_fit.toml"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["command"], "split-fit");
    let rows = &report["rows"];
    let row = |q: &str| {
        rows.as_array().unwrap().iter().find(|r| r["device"] == "gpu" && r["quantity"] == q).unwrap()["fit"]
            .clone()
    };
    // PEACH §VII-A: R_G = 1.495·f_G − 1.78. The table's GFLOPS are rounded to 1, so within 0.5%.
    let rate = row("rate");
    assert!((f(&rate["slope"]) - 1.495).abs() / 1.495 < 0.005, "{rate}");
    assert!(f(&rate["r2"]) > 0.999);
    // Pd_G = 0.337·f_G − 109; derived from η rounded to 0.01 GFLOPS/W (±0.5 W per point over a 91 MHz
    // span), so the slope is only good to a few percent.
    let power = row("dynamic_power_w");
    assert!((f(&power["slope"]) - 0.337).abs() / 0.337 < 0.03, "{power}");
    assert!(f(&power["r2"]) > 0.99);
}

#[test]
fn pareto_example_front_matches_hand_enumeration() {
    // Hand-checked on the example's tables: the fastest way to place 8 units is cpu 1, gpu0 4, gpu1 3
    // (T = max(0.9, 1.2, 1.3) = 1.3 s, E = 60 + 150 + 90 = 300 J; no distribution finishes sooner because
    // cpu ≤ 1, gpu0 ≤ 4, gpu1 ≤ 2 units fit under 1.3 s, 7 in all); least dynamic energy is gpu1 alone
    // (2.9 s, 195 J).
    let r = json(&["--objective", "ed"], &example("hepopta_small.toml"));
    let pts = r["dynamic"]["points"].as_array().unwrap();
    let first = &pts[0];
    assert_eq!(first["distribution"], serde_json::json!([1, 4, 3]));
    assert_eq!((f(&first["time_s"]), f(&first["energy_j"])), (1.3, 300.0));
    let last = pts.last().unwrap();
    assert_eq!(last["distribution"], serde_json::json!([0, 0, 8]));
    assert_eq!((f(&last["time_s"]), f(&last["energy_j"])), (2.9, 195.0));
    // Total energy adds 90 W × T: (1.3, 417) and (0, 4, 4) at (1.5, 255 + 135 = 390); gpu1 alone costs
    // 195 + 261 = 456 J at 2.9 s and drops off the front.
    let tot = r["total"]["points"].as_array().unwrap();
    assert!(tot.iter().all(|p| p["distribution"] != serde_json::json!([0, 0, 8])));
    assert!(
        tot.iter().any(|p| p["distribution"] == serde_json::json!([0, 4, 4]) && f(&p["energy_j"]) == 390.0)
    );
}

/// Writes `text` to a temporary case file and runs `gpumodel split` on it; returns (exit ok, stderr).
fn run_bad(text: &str, extra: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.toml");
    std::fs::write(&path, text).unwrap();
    let out = gpumodel().arg("split").arg(&path).args(extra).output().unwrap();
    (out.status.success(), String::from_utf8(out.stderr).unwrap())
}

fn assert_one_line_error(text: &str, extra: &[&str], needle: &str) {
    let (ok, err) = run_bad(text, extra);
    assert!(!ok, "should fail: {text}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line, got: {err}");
    assert!(err.starts_with("gpumodel: error:") && err.contains(needle), "want `{needle}` in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

const TWO: &str = "static_power_w = 100\n[cpu]\nrate = 300\ndynamic_power_w = 200\n[gpu]\nrate = 1000\ndynamic_power_w = 120\n";

#[test]
fn bad_input_gets_a_clear_one_line_error() {
    assert_one_line_error(
        &TWO.replace("rate = 300", "rate = -300"),
        &[],
        "cpu rate must be a finite number > 0",
    );
    assert_one_line_error(TWO, &["--gpu-share", "1.5"], "outside [0, 1]");
    assert_one_line_error(TWO, &["--gpu-share", "-0.2"], "outside [0, 1]");
    assert_one_line_error(TWO, &["--objective", "fastest"], "objective 'fastest' is not one of");
    assert_one_line_error(&format!("{TWO}[workload]\nshare_step = 0.3\n"), &[], "share step");
    assert_one_line_error("[cpu]\nrate = 1\n", &[], "[gpu]");
    assert_one_line_error("[cpu]\nrtae = 1\n", &[], "not a valid split case");
    // Empty tables.
    let pareto = "[workload]\nunits = 2\n[[device]]\nname = \"a\"\nsizes = [1, 2]\ntime_s = [1.0, 2.0]\ndynamic_energy_j = [1.0, 2.0]\n";
    assert_one_line_error(
        "[workload]\nunits = 2\n[[device]]\nname = \"a\"\nsizes = []\ntime_s = []\ndynamic_energy_j = []\n",
        &[],
        "empty",
    );
    // Devices with mismatched size grids.
    let second =
        "[[device]]\nname = \"b\"\nsizes = [1, 3]\ntime_s = [1.0, 2.0]\ndynamic_energy_j = [1.0, 2.0]\n";
    assert_one_line_error(&format!("{pareto}{second}"), &[], "size grids differ");
    // A clock table with the wrong length.
    let dvfs = "static_power_w = 100\n[cpu.dvfs]\nclocks = [1.0, 2.0]\nrate = [100.0]\ndynamic_power_w = { slope = 10.0, intercept = 0.0 }\n[gpu.dvfs]\nclocks = [500.0]\nrate = [900.0]\ndynamic_power_w = [100.0]\n";
    assert_one_line_error(dvfs, &[], "1 values for 2 clocks");
    // A missing file.
    let out = gpumodel().args(["split", "/nonexistent/case.toml"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("cannot read /nonexistent/case.toml") && err.contains("check the path"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "cause repeated: {err}");
}

#[test]
fn a_given_share_is_evaluated_with_the_peach_formulas() {
    // α = 0.5 on the small two-device case: T_C = 0.5/300, T_G = 0.5/1000 < T_C, so T = T_C and
    // E = T·100 + T_C·200 + T_G·120 (no hosting power here).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.toml");
    std::fs::write(&path, TWO).unwrap();
    let r = json(&["--gpu-share", "0.5"], &path);
    let at = &r["at"];
    let (tc, tg) = (0.5 / 300.0, 0.5 / 1000.0);
    assert!((f(&at["time_s"]) - tc).abs() < 1e-15);
    assert!((f(&at["energy_j"]) - (tc * 100.0 + tc * 200.0 + tg * 120.0)).abs() < 1e-12);
}

#[test]
fn every_example_runs_in_every_format() {
    let dir = root().join("datasets/examples/split");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            for fmt in ["table", "json", "csv"] {
                gpumodel().arg("split").arg(&p).args(["--format", fmt]).assert().success();
            }
            n += 1;
        }
    }
    assert!(n >= 5, "{n} examples");
}

#[test]
fn gpu_profile_from_counters_feeds_the_split() {
    // Item 7: the GPU's rate and dynamic power come from the timing and power models run on a kernel
    // profile. R_G must be work per launch over the predicted time, Pd_G the predicted power minus the
    // idle power in the file, and the best-time split PEACH's closed form R_G / (R_C + R_G).
    let r = json(&["--objective", "time"], &example("model_gpu_matrixmul.toml"));
    let d = &r["gpu_from_model"];
    assert_eq!(d["kernel"], "matrixMulShared");
    let (t, p) = (f(&d["time_s"]), f(&d["power_w"]));
    assert!(t > 0.0 && p > 15.0, "{d}");
    assert!((f(&d["rate"]) - 0.268435456 / t).abs() < 1e-9 * f(&d["rate"]));
    assert!((f(&d["dynamic_power_w"]) - (p - 15.0)).abs() < 1e-9);
    let rg = f(&d["rate"]);
    assert!((f(&r["system"]["gpu_rate"]) - rg).abs() < 1e-9 * rg);
    assert!((f(&best(&r, "time")["gpu_share"]) - rg / (293.0 + rg)).abs() < 1e-12);
    // A profile path that does not exist is a one-line error.
    let text = std::fs::read_to_string(example("model_gpu_matrixmul.toml")).unwrap();
    let text = text.replace("../kernels/matrixmul.toml", "/nonexistent/kernel.toml");
    assert_one_line_error(&text, &[], "gpu.from_model");
}

#[test]
fn gpu_clock_table_from_counters_feeds_the_dvfs_search() {
    // Item 7 with DVFS: one prediction per core clock becomes the GPU's clock table.
    let r = json(&[], &example("model_gpu_matrixmul_dvfs.toml"));
    assert_eq!(r["model"], "dvfs");
    let rows = r["gpu_from_model"].as_array().unwrap();
    let clocks: Vec<f64> = rows.iter().map(|d| f(&d["core_mhz"])).collect();
    assert_eq!(clocks, vec![1100.0, 1000.0, 900.0, 800.0, 700.0]);
    for d in rows {
        assert!((f(&d["rate"]) - 0.268435456 / f(&d["time_s"])).abs() < 1e-9 * f(&d["rate"]));
        assert!((f(&d["dynamic_power_w"]) - (f(&d["power_w"]) - 15.0)).abs() < 1e-9);
    }
    assert_eq!(r["cells"].as_array().unwrap().len(), 5 * 5);
    // The 1100 MHz row is the same prediction as the fixed-clock example's.
    let fixed = json(&[], &example("model_gpu_matrixmul.toml"));
    assert!((f(&rows[0]["rate"]) - f(&fixed["gpu_from_model"]["rate"])).abs() < 1e-9);
    // A sweep without a CPU clock table is refused with a one-line reason.
    let text = std::fs::read_to_string(example("model_gpu_matrixmul_dvfs.toml")).unwrap();
    let cpu_fixed = text.replace(
        "[cpu.dvfs]\nclocks = [2.6, 2.2, 1.8, 1.4, 1.2]\nrate = { slope = 111.0, intercept = 6.1 }\ndynamic_power_w = { slope = 124.0, intercept = -100.23 }",
        "[cpu]\nrate = 293.0\ndynamic_power_w = 239.4",
    );
    assert_ne!(cpu_fixed, text);
    // Absolute kernel and model paths, so the file can live in a temporary folder.
    let ex = root().join("datasets/examples");
    let cpu_fixed = cpu_fixed
        .replace("../kernels/matrixmul.toml", &ex.join("kernels/matrixmul.toml").display().to_string())
        .replace(
            "../../../models/trained/titanx-bpann.json",
            &root().join("models/trained/titanx-bpann.json").display().to_string(),
        );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sweep_cpu_fixed.toml");
    std::fs::write(&path, &cpu_fixed).unwrap();
    let out = gpumodel().arg("split").arg(&path).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("for both devices or for neither"), "{err}");
}
