//! Whole journeys through the real binary on the scripted GPU (`GPUMODEL_FAKE_GPU=1`), checked against the
//! scripted GPU's own law ([`FakeSuiteDevice::true_power`]), never against the tool's earlier output:
//! a suite measured on this GPU, a model trained from it, and a kernel that is not in the suite predicted
//! from each source a user has (a kernel profile written by hand, an Nsight Compute export of it, the
//! per-kernel totals `collect --kernel-totals` writes).
//! The README's "Build a model for your GPU" runs these same commands.

use assert_cmd::Command;
use gpumodel_collect::suite::FakeSuiteDevice;
use gpumodel_models::timing::Clocks;
use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::gpumodel;
#[path = "common/stencil.rs"]
mod stencil;
use stencil::{COUNTERS, TIME_S, run, true_power};

fn fake() -> Command {
    let mut c = gpumodel();
    c.env("GPUMODEL_FAKE_GPU", "1");
    c
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

/// collect --kernel-totals on the scripted GPU → `<out>.kernels.json` (the rows the injection library writes
/// for the scripted program's kernel, read as a real GPU's rows are) → predict with the suite-trained
/// model: the power within 10 % of the law for that kernel at the default clocks. A program that fails
/// gets no per-kernel totals.
#[test]
fn collect_kernel_totals_then_predict_with_the_suite_model_within_ten_percent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    suite_and_model(d);
    let quick = ["collect", "--kernel-totals", "--min-seconds", "0", "--idle-seconds", "0"];
    let mut c = fake();
    c.args(quick).args(["--out", "app.csv", "--", "true"]);
    run(c, d);
    let text = std::fs::read_to_string(d.join("app.kernels.json")).unwrap();
    let profiles: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(profiles.len(), 1, "{text}");
    assert_eq!(profiles[0]["name"], FakeSuiteDevice::APP_KERNEL, "{text}");
    assert!(d.join("app.kernels.csv").is_file());

    let mut c = gpumodel();
    c.args(["predict", "--kernel", "app.kernels.json", "--model", "models/mygpu-default.json"]);
    c.args(["--format", "json"]);
    let out = run(c, d);
    let p = predicted_power(&out);
    let dev = FakeSuiteDevice::new();
    let work = dev.app_work();
    // The profile names the GPU and the clock it ran at, so its measured time answers.
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let t = v["prediction"]["time_s"].as_f64().unwrap_or_else(|| panic!("no prediction.time_s: {out}"));
    let true_t = dev.true_time(&work, dev.default_clocks);
    assert!((t / true_t - 1.0).abs() < 1e-6, "time {t:e} s, the law's {true_t:e} s");
    let truth = dev.work_power(&work, dev.default_clocks);
    let err = (p - truth).abs() / truth;
    assert!(err < 0.10, "predicted {p:.1} W, the scripted GPU draws {truth:.1} W ({:.1} % off)", 100.0 * err);

    let mut c = fake();
    c.args(quick).args(["--out", "fail.csv", "--", "sh", "-c", "exit 3"]);
    let o = c.current_dir(d).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!d.join("fail.kernels.json").exists() && !d.join("fail.kernels.csv").exists());
}

/// A DRAM-bound kernel: global loads that miss to DRAM and stores, little arithmetic.
const STREAM: &[(&str, f64)] = &[
    ("inst_executed", 0.6e6),
    ("inst_fp_32", 0.1e6),
    ("inst_integer", 0.2e6),
    ("l1_global_load_hit", 0.1e6),
    ("l1_global_load_miss", 3.0e6),
    ("global_store_transaction", 1.5e6),
    ("dram_read_bytes", 96e6),
    ("dram_write_bytes", 48e6),
];

/// A kernel profile without a measured time (so the timing model answers), launched as `stencil_mix` is.
fn untimed_toml(name: &str, counters: &[(&str, f64)]) -> String {
    let mut s = format!(
        "name = \"{name}\"\nsource = \"written for this test\"\n[launch]\n\
         grid = [864, 1, 1]\nblock = [256, 1, 1]\nregisters_per_thread = 32\n[counters]\n"
    );
    for (c, v) in counters {
        s.push_str(&format!("{c} = {v:?}\n"));
    }
    s
}

/// The scripted calibration GPU's own constants as an architecture profile: the built-in `a100`, whose facts
/// that GPU reports, with every constant `calibrate` measures set to the value the scripted GPU was given
/// ([`TrueConstants::AMPERE_LIKE`]), not to anything `calibrate` printed.
fn true_arch() -> gpumodel_models::arch::ArchProfile {
    use gpumodel_collect::calibrate::TrueConstants;
    use gpumodel_models::arch::{ArchProfile, DvfsMemory, Sourced};
    let t = TrueConstants::AMPERE_LIKE;
    let s = |value: f64| Sourced { value, src: "truth".to_string() };
    let mut a = ArchProfile::builtin("a100").unwrap();
    a.cyc_load = s(t.cyc_load);
    a.cyc_store = s(t.cyc_store);
    a.cyc_s = s(t.cyc_s);
    a.cyc_t = s(t.cyc_t);
    a.cyc_r = s(t.cyc_r);
    a.alu_latency = s(t.alu_latency);
    a.in_warp_delay = s(t.in_warp_delay);
    a.out_warp_delay = s(t.out_warp_delay);
    a.l2_bandwidth_gbs = s(t.l2_bandwidth_gbs);
    // Issue cycles of one warp instruction = 32 threads / results per clock per SM (a half2 FMA is two).
    a.cost_fp32 = s(32.0 / t.fp32_per_clock);
    a.cost_fp64 = s(32.0 / t.fp64_per_clock);
    a.cost_int = s(32.0 / t.int_per_clock);
    a.cost_sfu = s(32.0 / t.sfu_per_clock);
    a.cost_fp16 = Some(s(64.0 / t.fp16_per_clock));
    a.cost_conversion64 = Some(s(32.0 / t.conversion64_per_clock));
    a.shared_bytes_per_cycle = Some(s(t.shared_bytes_per_cycle));
    a.l2_dram_bytes_per_core_cycle = Some(s(t.l2_dram_bytes_per_core_cycle));
    // The L2 stream: 32-byte transactions of one SM at the L2 bandwidth (which runs on the core clock).
    let l2_bytes_per_core_cycle = t.l2_bandwidth_gbs * 1e3 / a.core_mhz.value;
    a.dvfs_memory = Some(DvfsMemory {
        latency_a: s(t.latency_a),
        latency_b: s(t.latency_b),
        delay_a: s(t.delay_a),
        delay_b: s(t.delay_b),
        l2_latency: s(t.l2_latency),
        l2_delay: s(32.0 * a.sm_count.value / l2_bytes_per_core_cycle),
    });
    a
}

/// calibrate → `predict --arch mine.toml`: on the scripted GPU (constants chosen by the test, ±2 % timing
/// noise), a compute-and-shared kernel and a DRAM-bound kernel, at the default clocks and at lower core and
/// memory clocks the board supports, are predicted within 3 % of the timing law at the true constants. The
/// profile also lists the board's supported clocks, so `--sweep core-clock` sweeps them.
#[test]
fn calibrate_then_predict_with_the_profile_follows_the_gpus_own_constants() {
    use gpumodel_models::profile::KernelProfile;
    use gpumodel_models::timing::Clocks;
    use gpumodel_predict::kernel::{Config, predict_time_only};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut c = fake();
    c.args(["calibrate", "--out", "mine.toml"]);
    run(c, d);
    let truth_arch = true_arch();
    let mut law = BTreeMap::new();
    for (name, counters) in [("stencil_mix", COUNTERS), ("stream", STREAM)] {
        let file = d.join(format!("{name}.toml"));
        std::fs::write(&file, untimed_toml(name, counters)).unwrap();
        let k = KernelProfile::from_file(&file).unwrap();
        for (core, mem) in [(1410.0, 1215.0), (1005.0, 1215.0), (1410.0, 800.0), (810.0, 900.0)] {
            let cfg = Config { clocks: Some(Clocks { core_mhz: core, mem_mhz: mem }), ..Config::default() };
            let truth = predict_time_only(&k, &truth_arch, &cfg).unwrap().time_s;
            law.insert((name, core as u32, mem as u32), truth);
            let mut c = gpumodel();
            c.args(["predict", "--arch", "mine.toml", "--format", "json", "--kernel"]).arg(&file);
            c.args(["--core-mhz", &format!("{core}"), "--mem-mhz", &format!("{mem}")]);
            let out = run(c, d);
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let t =
                v["prediction"]["time_s"].as_f64().unwrap_or_else(|| panic!("no prediction.time_s: {out}"));
            let err = (t - truth).abs() / truth;
            assert!(
                err < 0.03,
                "{name} at {core}/{mem} MHz: {t:e} s predicted, {truth:e} s at the true constants ({:.1} % off)",
                100.0 * err
            );
        }
    }
    // The pairs test both clocks: the first kernel follows the core clock, the second the memory clock.
    assert!(law[&("stencil_mix", 1005, 1215)] > 1.3 * law[&("stencil_mix", 1410, 1215)], "{law:?}");
    assert!(law[&("stream", 1410, 800)] > 1.3 * law[&("stream", 1410, 1215)], "{law:?}");
    let mine = gpumodel_models::arch::ArchProfile::resolve(d.join("mine.toml").to_str().unwrap()).unwrap();
    assert!(mine.core_clocks_mhz.value.len() > 10, "{:?}", mine.core_clocks_mhz.value);
    assert!(mine.mem_clocks_mhz.value.contains(&800.0), "{:?}", mine.mem_clocks_mhz.value);
}

/// The scripted A100's grid for the clock journey: three core and three memory clocks it supports.
const CORE_MHZ: [f64; 3] = [1410.0, 1110.0, 810.0];
const MEM_MHZ: [f64; 3] = [1215.0, 1000.0, 800.0];

/// [`COUNTERS`] as work on the scripted GPU's time law: 1 ms of compute at 1410 MHz and the DRAM bytes it
/// reads and writes (DRAM-light at the default memory clock, near the limit at 800 MHz).
fn stencil_work() -> gpumodel_collect::suite::Work {
    let counters: BTreeMap<String, f64> = COUNTERS.iter().map(|(c, v)| (c.to_string(), *v)).collect();
    let dram_bytes = counters["dram_read_bytes"] + counters["dram_write_bytes"];
    gpumodel_collect::suite::Work { core_cycles: TIME_S * 1410e6, dram_bytes, counters }
}

/// collect --suite over a 3 × 3 grid of (core, memory) clocks → `<out>.profiles.csv` → train a clock model
/// → an NV-DVFS DCGM profile of a kernel that is not in the suite, at the default pair (its fields, power
/// and time from the scripted law) → `predict --profile` with the model found by the GPU's name: the
/// pair it picks for least energy costs, by the scripted law, within 2 % of the least energy over the
/// grid. The grid's best pair is not the default one (a lower memory clock saves DRAM power at no cost
/// in time), so a pick that ignores the memory clock fails.
#[test]
fn suite_over_clock_pairs_then_clock_model_then_predict_a_profile_picks_a_pair_within_two_percent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pairs: Vec<String> =
        CORE_MHZ.iter().flat_map(|c| MEM_MHZ.iter().map(move |m| format!("{c}:{m}"))).collect();
    let mut c = fake();
    c.args(["collect", "--suite", "--min-seconds", "0.01", "--out", "s.csv", "--clocks", &pairs.join(",")]);
    let printed = run(c, d);
    let follow_up = "gpumodel train --data s.csv.profiles.csv --no-test --out-dir models";
    assert!(printed.contains(follow_up), "{printed}");
    let mut c = gpumodel();
    c.args(["train", "--data", "s.csv.profiles.csv", "--no-test", "--out-dir", "models"]);
    run(c, d);

    // The workload's profile at the default pair, from the law: DRAMA = DRAM bytes/s over 2 GB/s, FP32A =
    // FP32 warp instructions/s over 1.5 per cycle, a full grid on every SM with half its warps.
    let dev = FakeSuiteDevice::new();
    let work = stencil_work();
    let default = Clocks { core_mhz: 1410.0, mem_mhz: 1215.0 };
    let t = dev.true_time(&work, default);
    let power = dev.work_power(&work, default);
    let drama = work.dram_bytes / t / 2e9;
    let fp32a = work.counters["inst_fp_32"] / t / (1.5 * 1410e6);
    let csv = format!(
        "DRAMA,FP16A,FP32A,FP64A,SMACT,SMOCC,TENSO,argNo,average_power,benchmark,core_frequency,kernel,\
         memory_frequency,time\n{drama},0,{fp32a},0,1,0.5,0,run0,{power},stencil_mix,1410,stencil_mix,1215,{t}\n"
    );
    std::fs::write(d.join("stencil.csv"), csv).unwrap();
    let mut c = gpumodel();
    c.args(["predict", "--profile", "stencil.csv", "--gpu", &dev.info.name, "--models-dir", "models"]);
    c.args(["--format", "json"]);
    let out = run(c, d);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let points = v["points"].as_array().unwrap_or_else(|| panic!("no points: {out}"));
    assert!(points.len() > 1, "no sweep over pairs ({}; {}): {out}", v["basis"], v["caveats"]);
    let i = v["optima"]["energy"].as_u64().unwrap_or_else(|| panic!("no energy optimum: {out}")) as usize;
    let chosen = Clocks {
        core_mhz: points[i]["core_mhz"].as_f64().unwrap(),
        mem_mhz: points[i]["mem_mhz"].as_f64().unwrap_or(default.mem_mhz),
    };

    let energy = |p: Clocks| dev.true_energy(&work, p);
    let grid: Vec<Clocks> = CORE_MHZ
        .iter()
        .flat_map(|&c| MEM_MHZ.iter().map(move |&m| Clocks { core_mhz: c, mem_mhz: m }))
        .collect();
    let best = grid.iter().copied().min_by(|a, b| energy(*a).total_cmp(&energy(*b))).unwrap();
    assert!(energy(default) > 1.02 * energy(best), "the default pair must not pass: {default:?} vs {best:?}");
    let regret = energy(chosen) / energy(best) - 1.0;
    assert!(
        regret <= 0.02,
        "picked {}/{} MHz: {:.4} J by the scripted law, {:.1} % above the least, {:.4} J at {}/{} MHz",
        chosen.core_mhz,
        chosen.mem_mhz,
        energy(chosen),
        100.0 * regret,
        energy(best),
        best.core_mhz,
        best.mem_mhz
    );
}

/// The collector's trace of a program on the scripted GPU names the same GPU as its suite: `predict
/// --profile` on the trace finds the clock model trained on the suite's profiles by that name and sweeps
/// its clocks, rather than answering at the measured clock only.
#[test]
fn a_trace_of_the_scripted_gpu_finds_the_clock_model_of_its_suite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = |c: &mut Command| {
        let out = c.current_dir(d).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out
    };
    ok(fake()
        .args(["collect", "--suite", "--min-seconds", "0.01", "--out", "s.csv"])
        .args(["--clocks", "1410:1215,1110:1215,810:1215"]));
    ok(fake().args(["train", "--data", "s.csv.profiles.csv", "--no-test", "--out-dir", "cm"]));
    ok(fake().args(["collect", "--pm-passes", "all", "--out", "t.csv", "sleep", "0.2"]));
    let out = ok(fake().args(["predict", "--profile", "t.csv", "--models-dir", "cm", "--format", "json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["basis"].as_str().unwrap().contains("s.csv.profiles-clock.json"), "{v}");
    assert_eq!(v["points"].as_array().unwrap().len(), 3, "{v}");
}
