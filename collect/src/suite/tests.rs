use super::*;
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
        clocks: parse_clocks(clocks).unwrap(),
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
    // The power the fake GPU drew is the power in the table, row by row.
    let fp32 = select_kernels(&["fp32_fma_full".into()]).unwrap().remove(0);
    let at = ClockPair { core_mhz: 1095.0, mem_mhz: 1215.0 };
    let expected_rate = dev.rates(&fp32, at)["inst_fp_32"];
    let i = t
        .groups
        .iter()
        .zip(t.column("core_mhz").unwrap())
        .position(|(g, c)| g == "fp32_fma_full" && *c == 1095.0);
    let i = i.unwrap();
    let rate = t.column("inst_fp_32").unwrap()[i] / t.column("time_s").unwrap()[i];
    assert!((rate - expected_rate).abs() <= 1e-9 * expected_rate, "{rate} vs {expected_rate}");
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
    let total = p.kernels.len() * p.clocks.len();
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
    assert_eq!(parse_clocks("current").unwrap(), vec![None]);
    assert_eq!(
        parse_clocks("1410:1215").unwrap(),
        vec![Some(ClockPair { core_mhz: 1410.0, mem_mhz: 1215.0 })]
    );
    for bad in ["", "1410", "fast:1215", "-5:1215"] {
        let msg = parse_clocks(bad).unwrap_err().to_string();
        assert!(msg.contains("--clocks") && msg.contains("1410:1215"), "{bad}: {msg}");
    }
    assert_eq!(select_kernels(&["shared_conflict".into()]).unwrap().len(), 6);
    let msg = select_kernels(&["warp_shuffle".into()]).unwrap_err().to_string();
    assert!(msg.contains("no suite kernel 'warp_shuffle'") && msg.contains("global_load"), "{msg}");
    let p = Plan { min_seconds: 0.0, ..plan(Path::new("/nonexistent"), "current", &["idle"]) };
    let msg = run_suite(&mut FakeSuiteDevice::new(), &p, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(msg.to_string().contains("--min-seconds"), "{msg}");
}

/// "current" after a clock pair means the driver's defaults again, so the clocks are reset first.
#[test]
fn current_after_a_pair_resets_the_clocks_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut dev = FakeSuiteDevice::new();
    let p = plan(dir.path(), "900:1215,current", &["idle_sleep"]);
    run_suite(&mut dev, &p, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(dev.log, ["set 900/1215", "run idle_sleep", "reset", "run idle_sleep"]);
    let t = Table::read_csv(&p.out, "kernel").unwrap();
    assert_eq!(t.distinct_values("core_mhz"), vec![900.0, 1410.0]);
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
    assert_eq!(p.clocks, [None], "`current` is no clock pair");
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
