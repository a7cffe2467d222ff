use super::*;
use crate::clocks::{ClockPair, ClockPlan};
use crate::nvrtc;
use gpumodel_models::Table;
use gpumodel_models::profile::CANONICAL_COUNTERS;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Compiles `SOURCE` with the real NVRTC, or returns None (skip) when NVRTC is missing and not required.
fn compile_all() -> Option<Vec<(&'static str, String)>> {
    if !nvrtc::loaded_or_skip() {
        return None;
    }
    Some(nvrtc::TEST_ARCHES.iter().map(|a| (*a, nvrtc::compile_ptx("suite", SOURCE, a).unwrap())).collect())
}

/// Every suite function compiles for sm_75…sm_90 and its PTX still holds the instructions it claims, so
/// a kernel the optimizer emptied fails here.
#[test]
fn every_kernel_compiles_for_five_targets_and_keeps_its_instructions() {
    let Some(ptxs) = compile_all() else { return };
    for (arch, ptx) in &ptxs {
        for e in ENTRIES {
            let body = ptx_function(ptx, e.name).unwrap_or_else(|| panic!("{arch}: no .entry {}", e.name));
            for want in e.ptx {
                assert!(ptx_has(body, want), "{arch}: {} lacks `{want}`:\n{body}", e.name);
            }
        }
    }
}

/// The PTX checks can fail: a kernel without the claimed instruction is caught.
#[test]
fn ptx_check_catches_a_missing_instruction() {
    let body = ".entry k(\n{\n\tld.global.f32 %f1, [%rd1];\n\t@%p1 bra.uni $L1;\n\tret;\n}\n";
    assert!(ptx_has(body, "ld.global"));
    assert!(!ptx_has(body, "fma.rn.f64"));
    assert!(!ptx_has(body, "@%p bra"), "bra.uni is uniform, not divergent");
    assert!(ptx_has("\t@!%p7 bra \t$L__BB0_3;", "@%p bra"));
    let two = ".entry a(\n ld.shared.f32\n}\n.entry b(\n st.global.f32\n}\n";
    assert!(!ptx_has(ptx_function(two, "b").unwrap(), "ld.shared"));
}

/// A kernel whose only branches are loops over the `iters` parameter (uniform across the warp).
const UNIFORM_CONTROL: &str = "fp32_fma";

/// The divergence check follows the predicate back to the lane, so a uniform loop back-edge does not pass
/// for a divergent branch.
#[test]
fn lane_dependent_branch_check_is_selective() {
    let uniform_loop = "\tld.param.u32 %r1, [k_param_0];\n\tmov.u32 %r2, 0;\n$L__BB0_1:\n\
        \tadd.s32 %r2, %r2, 1;\n\tsetp.lt.s32 %p1, %r2, %r1;\n\t@%p1 bra $L__BB0_1;\n\tret;\n";
    assert!(ptx_has(uniform_loop, "@%p bra"), "the plain pattern matches any back-edge");
    assert!(!ptx_has(uniform_loop, LANE_DEPENDENT_BRANCH));
    // The same loop bounded by a lane-derived value, through a chain and a predicated mov.
    let lane_loop = uniform_loop.replace(
        "\tmov.u32 %r2, 0;",
        "\tmov.u32 %r7, %tid.x;\n\tand.b32 %r8, %r7, 31;\n\t@%p9 mov.u32 %r1, %r8;\n\tmov.u32 %r2, 0;",
    );
    assert!(ptx_has(&lane_loop, LANE_DEPENDENT_BRANCH));
    // A uniform branch on a lane-derived predicate is `bra.uni` only if the compiler proved it uniform;
    // `bra.uni` never counts.
    assert!(!ptx_has(&lane_loop.replace("@%p1 bra ", "@%p1 bra.uni "), LANE_DEPENDENT_BRANCH));
    // Taint carried around a loop: %r3 depends on the lane only through the loop-carried %r4.
    let carried = "$L1:\n\tsetp.ne.s32 %p2, %r3, 0;\n\t@!%p2 bra $L2;\n\tadd.s32 %r3, %r4, 1;\n\
        \tmov.u32 %r4, %laneid;\n\tbra.uni $L1;\n$L2:\n\tret;\n";
    assert!(ptx_has(carried, LANE_DEPENDENT_BRANCH));
    // A vector load's destinations are the whole brace list: %r3 is written here, so the branch on it is
    // lane-dependent only when the address is.
    let vec_load = |addr: &str| {
        format!(
            "\tmov.u32 %r9, %tid.x;\n\tld.global.v2.u32 {{%r2, %r3}}, [{addr}];\n\
             \tsetp.ne.s32 %p4, %r3, 0;\n\t@%p4 bra $L3;\n"
        )
    };
    assert!(ptx_has(&vec_load("%r9"), LANE_DEPENDENT_BRANCH));
    assert!(!ptx_has(&vec_load("%rd1"), LANE_DEPENDENT_BRANCH));
}

/// On the real NVRTC output, the divergence kernel has a lane-dependent branch and a kernel whose only
/// branches are loops over a parameter has none.
#[test]
fn real_ptx_divergence_check_tells_the_kernels_apart() {
    let Some(ptxs) = compile_all() else { return };
    for (arch, ptx) in &ptxs {
        let div = ptx_function(ptx, "branch_divergence").unwrap();
        assert!(ptx_has(div, LANE_DEPENDENT_BRANCH), "{arch}: branch_divergence");
        let uniform = ptx_function(ptx, UNIFORM_CONTROL).unwrap();
        assert!(ptx_has(uniform, "@%p bra"), "{arch}: {UNIFORM_CONTROL} has a loop branch");
        assert!(!ptx_has(uniform, LANE_DEPENDENT_BRANCH), "{arch}: {UNIFORM_CONTROL}:\n{uniform}");
    }
}

#[test]
fn every_kernel_names_an_entry_and_canonical_counters() {
    let ks = kernels();
    assert_eq!(ks.len(), 48, "the count in kernels()'s doc comment");
    let mut names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), ks.len(), "kernel names must be unique (they are the table's groups)");
    for k in &ks {
        assert!(k.entry().is_some(), "{}", k.name);
        assert!(k.iters > 0 && k.grid_fraction > 0.0 && k.grid_fraction <= 1.0, "{}", k.name);
    }
    for e in ENTRIES {
        assert!(SOURCE.contains(&format!("void {}(SUITE_ARGS)", e.name)), "{}", e.name);
        for d in e.drives {
            assert!(CANONICAL_COUNTERS.iter().any(|(c, _)| c == d), "{}: {d}", e.name);
        }
        assert!(ks.iter().any(|k| k.entry == e.name), "{} has no kernel", e.name);
    }
}

fn plan(dir: &Path, clocks: &str, kernels: &[&str]) -> Plan {
    let filter: Vec<String> = kernels.iter().map(|s| s.to_string()).collect();
    Plan {
        kernels: select_kernels(&filter).unwrap(),
        clocks: clocks.parse().unwrap(),
        min_seconds: 1.0,
        out: dir.join("suite.csv"),
        resume: false,
    }
}

fn rows(path: &Path) -> Vec<(String, String)> {
    let t = Table::read_csv(path, "kernel").unwrap();
    let clocks = t.text_column("clocks").unwrap().to_vec();
    t.groups.iter().cloned().zip(clocks).collect()
}

#[test]
fn clock_pairs_are_the_outer_loop_and_clocks_are_reset() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    let p = plan(dir.path(), "1410:1215,1095:1215", &["fp32_fma_full", "idle_sleep"]);
    let stop = AtomicBool::new(false);
    let s = run_suite(&mut dev, &p, &stop, &mut |_| {}).unwrap();
    assert_eq!(s.rows_written, 4);
    assert_eq!(
        dev.log,
        [
            "set 1410/1215",
            "run fp32_fma_full",
            "run idle_sleep",
            "set 1095/1215",
            "run fp32_fma_full",
            "run idle_sleep",
            "reset"
        ]
    );
    let t = Table::read_csv(&p.out, "kernel").unwrap();
    assert_eq!(t.distinct_values("core_mhz"), vec![1095.0, 1410.0]);
    // FP32 FMA without DRAM traffic is compute-bound: one launch takes its 1 ms of cycles at 1410 MHz, at
    // 1095 MHz those cycles over the lower clock, plus the 5 µs launch latency (the time law, by hand);
    // its counter totals are the same at both pairs and its rates are totals over that time.
    let row = |core: f64| {
        let i = t
            .groups
            .iter()
            .zip(t.column("core_mhz").unwrap())
            .position(|(g, c)| g == "fp32_fma_full" && *c == core)
            .unwrap();
        (
            t.column("inst_fp_32").unwrap()[i],
            t.column("time_s").unwrap()[i],
            t.column("fp32_per_s").unwrap()[i],
        )
    };
    let (n_fast, t_fast, _) = row(1410.0);
    let (n_slow, t_slow, rate_slow) = row(1095.0);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(t_fast, 1e-3 + 5e-6), "{t_fast}");
    assert!(close(t_slow, 1e-3 * 1410.0 / 1095.0 + 5e-6), "{t_slow}");
    assert!(n_fast > 0.0 && close(n_slow, n_fast), "totals are clock-independent: {n_fast} vs {n_slow}");
    assert!(close(rate_slow, n_slow / t_slow), "{rate_slow} vs {}", n_slow / t_slow);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(SuiteMetadata::path_for(&p.out)).unwrap()).unwrap();
    assert_eq!(meta["gpu"]["chip"], "GA100");
    assert_eq!(meta["gpu"]["driver"], "550.54.15");
    assert_eq!(meta["kernels"][0]["drives"][1], "inst_fp_32");
}

#[test]
fn refused_clocks_warn_once_and_run_once_at_the_current_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    dev.clocks_allowed = false;
    let p = plan(dir.path(), "1410:1215,1095:1215,900:1215", &["integer_full"]);
    let mut warnings = Vec::new();
    let s = run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |e| {
        if let Progress::Warning(w) = e {
            warnings.push(w)
        }
    })
    .unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("cannot set clocks") && warnings[0].contains("current clocks"));
    assert_eq!(s.rows_written, 1);
    assert_eq!(dev.log, ["set 1410/1215", "run integer_full"]);
    assert_eq!(rows(&p.out), [("integer_full".to_string(), "current".to_string())]);
}

#[test]
fn an_interrupted_run_keeps_its_rows_and_resume_finishes_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut dev = FakeSuiteDevice::new();
    dev.stop_after = Some((3, stop.clone()));
    let mut p = plan(dir.path(), "1410:1215,1095:1215", &["fp32_fma", "sfu_full"]);
    let total = p.kernels.len() * 2;
    assert_eq!(total, 8);
    let s = run_suite(&mut dev, &p, &stop, &mut |_| {}).unwrap();
    assert!(s.interrupted);
    assert_eq!(s.rows_written, 3);
    assert_eq!(rows(&p.out).len(), 3);

    // Without --resume the table is not touched.
    let before = std::fs::read(&p.out).unwrap();
    let err = run_suite(&mut FakeSuiteDevice::new(), &p, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("pass --resume"), "{err}");
    assert_eq!(std::fs::read(&p.out).unwrap(), before);

    // A row cut off by a kill is dropped, then the run continues where it stopped.
    let mut f = std::fs::OpenOptions::new().append(true).open(&p.out).unwrap();
    std::io::Write::write_all(&mut f, b"sfu_full,special functions,1410/12").unwrap();
    drop(f);
    p.resume = true;
    let mut dev2 = FakeSuiteDevice::new();
    let mut steps = 0;
    let s2 = run_suite(&mut dev2, &p, &AtomicBool::new(false), &mut |e| {
        if let Progress::Start { total, already_done } = e {
            assert_eq!((total, already_done), (8, 3));
        }
        if matches!(e, Progress::Step { .. }) {
            steps += 1
        }
    })
    .unwrap();
    assert_eq!((s2.rows_written, s2.rows_kept, steps), (5, 3, 8));
    let mut got = rows(&p.out);
    assert_eq!(got.len(), 8);
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 8, "no kernel × clock row twice");
}

#[test]
fn a_failing_kernel_keeps_the_finished_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    dev.fail_on = Some("sfu_full".into());
    let p = plan(dir.path(), "current", &["fp64_fma_full", "sfu_full", "idle"]);
    let err = run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("unspecified launch failure"), "{err}");
    assert_eq!(rows(&p.out), [("fp64_fma_full".to_string(), "current".to_string())]);
}

/// A kernel that fails at a set clock pair: the error comes back and the clocks are put back first (the
/// GPU is not left at the last pair).
#[test]
fn a_failing_kernel_at_a_clock_pair_still_resets_the_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    dev.fail_on = Some("sfu_full".into());
    let p = plan(dir.path(), "1410:1215,1095:1215", &["fp64_fma_full", "sfu_full"]);
    let err = run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("unspecified launch failure"), "{err}");
    assert_eq!(dev.log, ["set 1410/1215", "run fp64_fma_full", "run sfu_full", "reset"]);
    assert_eq!(rows(&p.out), [("fp64_fma_full".to_string(), "1410/1215".to_string())]);
}

#[test]
fn a_foreign_csv_is_not_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(dir.path(), "current", &["idle"]);
    std::fs::write(&p.out, "kernel,power_w\nk,1\n").unwrap();
    p.resume = true;
    let err = run_suite(&mut FakeSuiteDevice::new(), &p, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("not a suite table"), "{err}");
    assert_eq!(std::fs::read_to_string(&p.out).unwrap(), "kernel,power_w\nk,1\n");
}

#[test]
fn clocks_and_kernel_filters_are_checked() {
    assert_eq!("current".parse(), Ok(ClockPlan::Current));
    assert_eq!("auto".parse(), Ok(ClockPlan::Auto));
    assert_eq!("1410:1215".parse(), Ok(ClockPlan::List(vec![ClockPair { core_mhz: 1410, mem_mhz: 1215 }])));
    for bad in ["", "1410", "fast:1215", "-5:1215", "1410.5:1215"] {
        let msg = bad.parse::<ClockPlan>().unwrap_err();
        assert!(msg.contains("--clocks") && msg.contains("1410:1215"), "{bad}: {msg}");
    }
    assert_eq!(select_kernels(&["shared_conflict".into()]).unwrap().len(), 6);
    let msg = select_kernels(&["warp_shuffle".into()]).unwrap_err().to_string();
    assert!(msg.contains("no suite kernel 'warp_shuffle'") && msg.contains("global_load"), "{msg}");
    let p = Plan { min_seconds: 0.0, ..plan(Path::new("/nonexistent"), "current", &["idle"]) };
    let msg = run_suite(&mut FakeSuiteDevice::new(), &p, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(msg.to_string().contains("--min-seconds"), "{msg}");
}

/// A shared GPU's clocks are not ours to change: the suite at the current clocks (`current`, the default
/// of `collect --suite --clocks`) runs every kernel without one set-clock or reset call, and a resumed
/// run at the current clocks does not either, even on a GPU that would accept them.
#[test]
fn the_suite_at_the_current_clocks_never_calls_the_clock_setters() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    assert!(dev.clocks_allowed, "a GPU that would accept a clock change, so that none may hide");
    let mut p = Plan { min_seconds: 0.01, ..plan(dir.path(), "current", &[]) };
    assert_eq!(p.clocks, ClockPlan::Current, "`current` is no clock pair");
    let stop = Arc::new(AtomicBool::new(false));
    dev.stop_after = Some((5, stop.clone()));
    let first = run_suite(&mut dev, &p, &stop, &mut |_| {}).unwrap();
    assert!(first.interrupted && first.rows_written == 5, "{first:?}");
    stop.store(false, std::sync::atomic::Ordering::SeqCst);
    dev.stop_after = None;
    p.resume = true;
    let rest = run_suite(&mut dev, &p, &stop, &mut |_| {}).unwrap();
    assert_eq!(first.rows_written + rest.rows_written, p.kernels.len());
    let clock_calls: Vec<&String> = dev.log.iter().filter(|c| !c.starts_with("run ")).collect();
    assert!(clock_calls.is_empty(), "clock calls at the current clocks: {clock_calls:?}");
    assert_eq!(dev.log.len(), p.kernels.len(), "one run per kernel");
    assert!(rows(&p.out).iter().all(|(_, clocks)| clocks == "current"));
    assert!(first.warnings.is_empty() && rest.warnings.is_empty());
}

/// The row of `kernel` at `core`/`mem` MHz in a suite table: (totals of `counter`, time of one launch, power).
fn row_at(t: &Table, kernel: &str, core: f64, mem: f64, counter: &str) -> (f64, f64, f64) {
    let (c, m) = (t.column("core_mhz").unwrap(), t.column("mem_mhz").unwrap());
    let i = (0..t.groups.len())
        .find(|&i| t.groups[i] == kernel && c[i] == core && m[i] == mem)
        .unwrap_or_else(|| panic!("no row of {kernel} at {core}/{mem}"));
    (t.column(counter).unwrap()[i], t.column("time_s").unwrap()[i], t.column("power_w").unwrap()[i])
}

/// The scripted GPU's time law, by hand: a launch takes the longer of its compute (1 ms of cycles at
/// 1410 MHz, over the core clock) and its DRAM traffic (its bytes over 2 GB/s × memory clock / 1215 MHz),
/// plus 5 µs. A DRAM-bound kernel slows with the memory clock and not the core clock; a compute-bound one
/// the other way round; power is the power law at the rates those times give.
#[test]
fn the_scripted_time_law_bounds_each_kernel_by_the_slower_of_compute_and_dram() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    let p = Plan {
        min_seconds: 0.01,
        ..plan(dir.path(), "1410:1215,1410:800,900:1215,900:800", &["global_load_s32", "fp64_fma_full"])
    };
    run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let t = Table::read_csv(&p.out, "kernel").unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    for (core, mem) in [(1410.0, 1215.0), (1410.0, 800.0), (900.0, 1215.0), (900.0, 800.0)] {
        // The table's DRAM columns are totals per launch.
        let (read, time, power) = row_at(&t, "global_load_s32", core, mem, "dram_read_bytes");
        let (write, _, _) = row_at(&t, "global_load_s32", core, mem, "dram_write_bytes");
        let bytes = read + write;
        let law = (1e-3 * 1410.0 / core).max(bytes / (2e9 * mem / 1215.0)) + 5e-6;
        assert!(close(time, law), "global_load_s32 at {core}/{mem}: {time} s, the law says {law} s");
        let (fp64, t64, _) = row_at(&t, "fp64_fma_full", core, mem, "inst_fp_64");
        assert!(close(t64, 1e-3 * 1410.0 / core + 5e-6), "fp64_fma_full at {core}/{mem}: {t64}");
        assert!(fp64 > 0.0);
        // Power: idle 55 W, DRAM 14 W per GB/s × m/m₀, instructions 6 W and global loads 9 W per G/s × (f/f₀)².
        let (loads, _, _) = row_at(&t, "global_load_s32", core, mem, "gld_per_s");
        let (inst, _, _) = row_at(&t, "global_load_s32", core, mem, "inst_per_s");
        let f2 = (core / 1410.0).powi(2);
        let want = 55.0 + 14.0 * bytes / time / 1e9 * mem / 1215.0 + (6.0 * inst + 9.0 * loads) / 1e9 * f2;
        assert!((power - want).abs() < 1e-6 * want, "global_load_s32 at {core}/{mem}: {power} W vs {want} W");
    }
    // Both regimes occur: the strided load moves more bytes than 1 ms at 2 GB/s, so at the default pair it
    // is DRAM-bound (slower than its compute, and slower again at a lower memory clock); at 900 MHz its
    // compute is the longer.
    let (_, a, _) = row_at(&t, "global_load_s32", 1410.0, 1215.0, "time_s");
    let (_, b, _) = row_at(&t, "global_load_s32", 900.0, 1215.0, "time_s");
    let (_, c, _) = row_at(&t, "global_load_s32", 1410.0, 800.0, "time_s");
    assert!(a > 1.2e-3 && c > 1.4 * a && close(b, 1e-3 * 1410.0 / 900.0 + 5e-6), "{a} {b} {c}");
}

/// Reads `<out>.profiles.csv` as `gpumodel train` does (the NV-DVFS DCGM layout, format guessed).
fn read_profiles(out: &Path) -> gpumodel_models::utilization::ProfileSet {
    use gpumodel_models::utilization::read::{ReadOptions, read_file};
    read_file(&profiles::profiles_path(out), None, &ReadOptions::default()).unwrap()
}

/// A suite over clock pairs writes one utilization profile per kernel and pair, in the layout the clock
/// model's training reads, with each DCGM-like field the kernel's rate over the board's peak at that
/// pair (by hand: 2 GB/s × m/m₀ of DRAM, 1.5 FP32 and 0.75 FP64 warp instructions per core cycle; a full
/// grid covers every SM with 32 of its 64 warps), and the law's power and time.
#[test]
fn a_suite_over_clock_pairs_writes_utilization_profiles_with_fields_from_the_peaks() {
    use gpumodel_models::utilization::Field;
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    let kernels = ["global_store_s32", "fp32_fma_full", "fp64_fma_eighth"];
    let p = Plan { min_seconds: 0.01, ..plan(dir.path(), "1410:1215,1005:1215,1410:900", &kernels) };
    let s = run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(s.profiles.as_deref(), Some(profiles::profiles_path(&p.out).as_path()));
    let text = std::fs::read_to_string(profiles::profiles_path(&p.out)).unwrap();
    assert!(text.starts_with(
        "DRAMA,FP16A,FP32A,FP64A,SMACT,SMOCC,TENSO,argNo,average_power,benchmark,core_frequency,kernel,memory_frequency,time,gpu\n"
    ));
    let set = read_profiles(&p.out);
    assert_eq!(set.profiles.len(), 9);
    // The GPU's name as the device gives it, so the clock model trained from the file records it.
    assert!(
        set.profiles.iter().all(|q| q.gpu.as_deref() == Some(dev.info.name.as_str())),
        "{:?}",
        set.profiles[0].gpu
    );
    let t = Table::read_csv(&p.out, "kernel").unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
    for prof in &set.profiles {
        let kernel = kernels.iter().find(|k| prof.name.ends_with(*k)).unwrap();
        let (core, mem) = (prof.core_mhz, prof.mem_mhz.unwrap());
        let (_, time, power) = row_at(&t, kernel, core, mem, "time_s");
        assert!(close(prof.time_s.unwrap(), time) && close(prof.power_w.unwrap(), power), "{prof:?}");
        let f = |x: Field| prof.fields[&x];
        let (bytes, _, _) = row_at(&t, kernel, core, mem, "dram_write_bytes");
        let (fp32, _, _) = row_at(&t, kernel, core, mem, "inst_fp_32");
        let (fp64, _, _) = row_at(&t, kernel, core, mem, "inst_fp_64");
        assert!(close(f(Field::Drama), bytes / time / (2e9 * mem / 1215.0)), "{kernel}: {prof:?}");
        assert!(close(f(Field::Fp32a), fp32 / time / (1.5e6 * core)), "{kernel}: {prof:?}");
        assert!(close(f(Field::Fp64a), fp64 / time / (0.75e6 * core)), "{kernel}: {prof:?}");
        let grid: f64 = if kernel.ends_with("eighth") { 0.125 } else { 1.0 };
        assert!(close(f(Field::Smact), (4.0 * grid).min(1.0)), "{kernel}: {prof:?}");
        assert!(close(f(Field::Smocc), 32.0 * grid / 64.0), "{kernel}: {prof:?}");
        assert_eq!((f(Field::Fp16a), f(Field::Tenso)), (0.0, 0.0));
        // The program is the kernel's CUDA function (leave-one-program-out holds its variants out together).
        let entry = [
            ("global_store_s32", "global_store"),
            ("fp32_fma_full", "fp32_fma"),
            ("fp64_fma_eighth", "fp64_fma"),
        ];
        let want = entry.iter().find(|(k, _)| k == kernel).unwrap().1;
        assert_eq!(prof.program.as_deref(), Some(want), "{prof:?}");
    }
    // The DRAM-bound store runs its DRAM near the peak at the default pair; FP32 FMA not at all.
    let store = set.profiles.iter().find(|p| p.name.ends_with("global_store_s32") && p.core_mhz == 1410.0);
    assert!(store.unwrap().fields[&Field::Drama] > 0.5, "{store:?}");
}

/// A suite at one pair (or at the current clocks) writes no profiles; an interrupted one neither, and
/// removes those of an earlier run of the table; resuming it to the end writes them whole.
#[test]
fn profiles_come_only_from_a_finished_run_over_two_or_more_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let p = Plan { min_seconds: 0.01, ..plan(dir.path(), "current", &["fp32_fma_full", "sfu_full"]) };
    let s = run_suite(&mut FakeSuiteDevice::new(), &p, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(s.profiles, None);
    assert!(!profiles::profiles_path(&p.out).exists());
    let p1 = Plan { out: dir.path().join("one.csv"), ..plan(dir.path(), "1005:1215", &["sfu_full"]) };
    let s = run_suite(&mut FakeSuiteDevice::new(), &p1, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(s.profiles, None);
    assert!(!profiles::profiles_path(&p1.out).exists());

    let mut p2 = Plan {
        out: dir.path().join("two.csv"),
        ..plan(dir.path(), "1410:1215,1005:900", &["fp32_fma_full", "sfu_full"])
    };
    let stale = profiles::profiles_path(&p2.out);
    std::fs::write(&stale, "DRAMA,SMACT,core_frequency,benchmark\n0,1,1410,old\n").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut dev = FakeSuiteDevice::new();
    dev.stop_after = Some((3, stop.clone()));
    let s = run_suite(&mut dev, &p2, &stop, &mut |_| {}).unwrap();
    assert!(s.interrupted && s.profiles.is_none());
    assert!(!stale.exists(), "an interrupted run leaves no profiles");
    let part = dir.path().join("two.csv.profiles.csv.part");
    assert!(!part.exists());
    p2.resume = true;
    let s = run_suite(&mut FakeSuiteDevice::new(), &p2, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(!s.interrupted && s.profiles.is_some());
    assert_eq!(read_profiles(&p2.out).profiles.len(), 4);
    assert!(!part.exists());

    // A failed run leaves no profiles either.
    let mut p3 = Plan { out: dir.path().join("three.csv"), ..p2.clone() };
    p3.resume = false;
    let mut dev = FakeSuiteDevice::new();
    dev.fail_on = Some("sfu_full".into());
    assert!(run_suite(&mut dev, &p3, &AtomicBool::new(false), &mut |_| {}).is_err());
    assert!(!profiles::profiles_path(&p3.out).exists());
}

/// `--clocks auto` spreads over the clocks the GPU lists (the same plan as calibrate's): 4 memory clocks ×
/// 3 core clocks on the scripted GPU, the extremes included; a listed pair the GPU does not support is one
/// error naming what it supports, before any clock is set or row written.
#[test]
fn auto_clocks_spread_over_the_supported_ones_and_an_unsupported_pair_is_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    let p = Plan { min_seconds: 0.001, ..plan(dir.path(), "auto", &["idle"]) };
    let s = run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(s.rows_written, 12, "{s:?}");
    let sets: Vec<&str> = dev.log.iter().filter_map(|c| c.strip_prefix("set ")).collect();
    assert_eq!(sets.len(), 12, "{:?}", dev.log);
    for m in [1215, 1000, 900, 800] {
        for c in [1410, 810, 210] {
            assert!(sets.contains(&format!("{c}/{m}").as_str()), "{c}/{m} not in {sets:?}");
        }
    }
    assert_eq!(dev.log.last().map(String::as_str), Some("reset"), "the clocks are put back");

    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    let p = plan(dir.path(), "1410:1215,1407:1215", &["idle"]);
    let e = run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("--clocks 1407:1215") && e.contains("supported there include"), "{e}");
    assert!(dev.log.is_empty() && !p.out.exists(), "{:?}", dev.log);
}
