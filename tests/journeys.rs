//! Whole journeys through the real binary on the scripted GPU (`GPUMODEL_FAKE_GPU=1`), checked against the
//! scripted GPU's own law ([`FakeSuiteDevice::true_power`]), never against the tool's earlier output:
//! a suite measured on this GPU, a model trained from it, and a kernel that is not in the suite predicted
//! from each source a user has (a kernel profile written by hand, an Nsight Compute export of it).
//! The README's "Build a model for your GPU" runs these same commands.

use assert_cmd::Command;
use gpumodel_collect::suite::{ClockPair, FakeSuiteDevice};
use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::gpumodel;

fn fake() -> Command {
    let mut c = gpumodel();
    c.env("GPUMODEL_FAKE_GPU", "1");
    c
}

fn run(mut c: Command, dir: &Path) -> String {
    let o = c.current_dir(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A kernel that no suite kernel is: it drives FP32, integer, global loads and stores, shared memory and
/// DRAM at once, at rates inside the suite's. Totals of one launch of 1 ms at the scripted GPU's default
/// clocks (1410 / 1215 MHz).
const TIME_S: f64 = 1e-3;
const COUNTERS: &[(&str, f64)] = &[
    ("inst_executed", 2.2e6),
    ("inst_fp_32", 0.9e6),
    ("inst_integer", 0.6e6),
    ("branch", 0.15e6),
    ("l1_global_load_hit", 0.4e6),
    ("l1_global_load_miss", 0.5e6),
    ("global_store_transaction", 0.7e6),
    ("shared_load", 0.6e6),
    ("shared_store", 0.2e6),
    ("l1_shared_bank_conflict", 0.1e6),
    ("dram_read_bytes", 0.8e6),
    ("dram_write_bytes", 0.5e6),
    ("inst_fp_64", 0.0),
    ("inst_special", 0.1e6),
];

/// The scripted GPU's true power for [`COUNTERS`] at its default clocks.
fn true_power() -> f64 {
    let rates: BTreeMap<&str, f64> = COUNTERS.iter().map(|(c, v)| (*c, v / TIME_S)).collect();
    let dev = FakeSuiteDevice::new();
    dev.true_power(|c| rates.get(c).copied(), ClockPair { core_mhz: 1410.0, mem_mhz: 1215.0 })
}

fn kernel_toml() -> String {
    let mut s = String::from(
        "name = \"stencil_mix\"\nsource = \"written for this test\"\narch = \"a100\"\n[launch]\n\
         grid = [864, 1, 1]\nblock = [256, 1, 1]\nregisters_per_thread = 32\n[counters]\n",
    );
    for (c, v) in COUNTERS {
        s.push_str(&format!("{c} = {v:?}\n"));
    }
    s.push_str(&format!("[measured]\ntime_s = {TIME_S:?}\ncore_mhz = 1410.0\nmem_mhz = 1215.0\n"));
    s
}

/// The suite on the scripted GPU and the power model trained from it: `models/mygpu-default.json` in `d`.
fn suite_and_model(d: &Path) {
    let mut c = fake();
    c.args(["collect", "--suite", "--out", "mygpu.csv"]);
    run(c, d);
    let mut c = gpumodel();
    c.args(["train", "--data", "mygpu.csv", "--import", "table", "--features", "mygpu.csv.features.toml"]);
    c.args(["--out-dir", "models", "-q"]);
    let trained = run(c, d);
    assert!(d.join("models/mygpu-default.json").is_file(), "{trained}");
}

fn predicted_power(json: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["prediction"]["power_w"].as_f64().unwrap_or_else(|| panic!("no prediction.power_w in {json}"))
}

/// doctor → collect --suite → train → predict a kernel that is not in the suite: the power within 10 % of
/// the scripted GPU's law, from the suite-trained default model, with no note that the model is of
/// another GPU (suite, model and kernel are of the same GPU).
#[test]
fn suite_then_train_then_predict_a_kernel_outside_the_suite_within_ten_percent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    suite_and_model(d);
    std::fs::write(d.join("k.toml"), kernel_toml()).unwrap();

    let mut c = gpumodel();
    c.args(["predict", "--kernel", "k.toml", "--arch", "a100", "--model", "models/mygpu-default.json"]);
    let table = run(c, d);
    assert!(!table.contains("describe that GPU"), "suite, model and kernel are of one GPU:\n{table}");
    assert!(table.contains("measured on this GPU at these clocks"), "{table}");
    let mut c = gpumodel();
    c.args(["predict", "--kernel", "k.toml", "--arch", "a100", "--model", "models/mygpu-default.json"]);
    c.args(["--format", "json"]);
    let p = predicted_power(&run(c, d));
    let truth = true_power();
    let err = (p - truth).abs() / truth;
    assert!(err < 0.10, "predicted {p:.1} W, the scripted GPU draws {truth:.1} W ({:.1} % off)", 100.0 * err);
}

/// The same kernel as an Nsight Compute export (`ncu --csv --page raw`, with the GA100 range-map metrics
/// and the SM clock in ncu's own unit, cycles per nanosecond) → `import ncu --profiles` → `predict`: the
/// GPU comes from the export, the measured time answers, and the power is within 10 % of the law.
#[test]
fn an_ncu_export_of_that_kernel_predicts_the_same_power_within_ten_percent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    suite_and_model(d);
    let metrics: &[(&str, &str, &str)] = &[
        ("smsp__inst_executed.sum", "inst", "inst_executed"),
        ("smsp__inst_executed_pipe_fma.sum", "inst", "inst_fp_32"),
        ("smsp__inst_executed_pipe_alu.sum", "inst", "inst_integer"),
        ("smsp__inst_executed_pipe_fp64.sum", "inst", "inst_fp_64"),
        ("smsp__inst_executed_pipe_xu.sum", "inst", "inst_special"),
        ("smsp__sass_inst_executed_op_branch.sum", "inst", "branch"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum", "sector", "l1_global_load_hit"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum", "sector", "l1_global_load_miss"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sector", "global_store_transaction"),
        ("smsp__inst_executed_op_shared_ld.sum", "inst", "shared_load"),
        ("smsp__inst_executed_op_shared_st.sum", "inst", "shared_store"),
        ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "", "l1_shared_bank_conflict"),
        ("dram__bytes_read.sum", "byte", "dram_read_bytes"),
        ("dram__bytes_write.sum", "byte", "dram_write_bytes"),
    ];
    let q = |v: &str| format!("\"{v}\"");
    let mut head = vec![q("ID"), q("Kernel Name"), q("Block Size"), q("Grid Size")];
    head.extend(
        ["device__attribute_display_name", "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second"]
            .map(q),
    );
    let mut units = vec![q(""); 5];
    units.extend([q("msecond"), q("cycle/nsecond")]);
    let mut row = vec![q("0"), q("stencil_mix(float*)"), q("(256, 1, 1)"), q("(864, 1, 1)")];
    row.extend([q("NVIDIA A100-SXM4-40GB"), q("1"), q("1.41")]);
    for (m, unit, counter) in metrics {
        let v = COUNTERS.iter().find(|(c, _)| c == counter).unwrap().1;
        head.push(q(m));
        units.push(q(unit));
        row.push(q(&format!("{v}")));
    }
    let csv = [head.join(","), units.join(","), row.join(",")].join("\n") + "\n";
    std::fs::write(d.join("k.csv"), csv).unwrap();
    let mut c = gpumodel();
    c.args(["import", "ncu", "k.csv", "--profiles", "profiles"]);
    run(c, d);
    let profile = std::fs::read_dir(d.join("profiles")).unwrap().next().unwrap().unwrap().path();
    let mut c = gpumodel();
    c.args([
        "predict",
        "--arch",
        "a100",
        "--model",
        "models/mygpu-default.json",
        "--format",
        "json",
        "--kernel",
    ]);
    c.arg(&profile);
    let p = predicted_power(&run(c, d));
    let truth = true_power();
    let err = (p - truth).abs() / truth;
    assert!(err < 0.10, "predicted {p:.1} W, the scripted GPU draws {truth:.1} W ({:.1} % off)", 100.0 * err);
}
