//! `gpumodel import ncu|nvprof --profiles` on the file layouts real exports come in, each mimicked by a
//! HAND-WRITTEN fixture in collect/tests/fixtures (they say so in their first lines; not real captures):
//! older ncu long-layout exports without Block Size / Grid Size columns, nvprof metric tables with their
//! `--print-gpu-trace` companion, and a gpu trace alone. Expected values are worked out by hand from the
//! fixtures' cells.

mod common;

use common::{Import, profiler_fixture as fixture, real_export as real};
use std::path::Path;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn profiles(dir: &Path) -> Vec<serde_json::Value> {
    let files = profile_files(dir);
    files.iter().map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()).collect()
}

#[test]
fn old_ncu_long_layout_yields_a_profile_per_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("p");
    Import::new("ncu", fixture("ncu_long_no_launch_columns.csv"))
        .out(&dir.path().join("t.csv"))
        .profiles(&pdir)
        .ok();
    let p = profiles(&pdir);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0]["name"], "saxpy(int, float, float*, float*)");
    assert_eq!(p[0]["launch"]["grid"], serde_json::json!([4096, 1, 1]));
    assert_eq!(p[0]["launch"]["block"], serde_json::json!([256, 1, 1]));
    assert_eq!(p[0]["launch"]["registers_per_thread"], 16);
    // 1.31 Minst, 65.54 Kinst: ncu's scaling undone.
    assert_eq!(p[0]["counters"]["inst_executed"], 1_310_000.0);
    assert_eq!(p[0]["counters"]["gld_request"], 65_540.0);
    assert_eq!(p[1]["launch"]["grid"], serde_json::json!([80, 1, 1]));
    assert_eq!(p[1]["launch"]["shared_mem_per_block"], 2050);
    let t = p[1]["measured"]["time_s"].as_f64().unwrap();
    assert!((t - 3.2e-6).abs() < 1e-15, "{t}");
}

#[test]
fn nvprof_metrics_with_a_gpu_trace_companion_get_each_kernels_shape() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("p");
    Import::new("nvprof", fixture("nvprof_events_metrics_gtx580.csv"))
        .arg("--gpu-trace")
        .arg(fixture("nvprof_gpu_trace_gtx580.csv"))
        .out(&dir.path().join("t.csv"))
        .profiles(&pdir)
        .ok();
    let p = profiles(&pdir);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0]["launch"]["grid"], serde_json::json!([1, 4096, 1]));
    assert_eq!(p[0]["launch"]["block"], serde_json::json!([16, 16, 1]));
    assert_eq!(p[0]["launch"]["registers_per_thread"], 21);
    // 1.0625 KB of static shared memory = 1088 bytes.
    assert_eq!(p[0]["launch"]["shared_mem_per_block"], 1088);
    // Mean of 250 us and 254 us.
    assert!((p[0]["measured"]["time_s"].as_f64().unwrap() - 252e-6).abs() < 1e-12);
    assert_eq!(p[1]["launch"]["registers_per_thread"], 12);
    assert_eq!(p[0]["counters"]["divergent_branch"], 8_192.0);
}

#[test]
fn a_gpu_trace_alone_gives_per_kernel_times() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let o = Import::new("nvprof", fixture("nvprof_gpu_trace_gtx580.csv")).out(&out).ok();
    assert!(stderr(&o).contains("gpu trace"), "{}", stderr(&o));
    let t = gpumodel_models::Table::read_csv(&out, "kernel").unwrap();
    assert_eq!(t.n_rows(), 2);
    let times = t.column("time_s").unwrap().to_vec();
    assert!((times[0] - 252e-6).abs() < 1e-12 && (times[1] - 180e-6).abs() < 1e-12, "{times:?}");
}

/// Without the companion, the profiles are still written (the roofline fallback reads them) and the
/// kernel's line names the gpu trace and --grid/--block.
#[test]
fn nvprof_without_shapes_still_writes_profiles_and_names_the_gpu_trace() {
    let dir = tempfile::tempdir().unwrap();
    let pdir = dir.path().join("p");
    let out = dir.path().join("t.csv");
    let o = Import::new("nvprof", fixture("nvprof_events_metrics_gtx580.csv")).out(&out).profiles(&pdir).ok();
    let e = stderr(&o);
    assert!(e.contains("--gpu-trace") && e.contains("--print-gpu-trace") && e.contains("roofline"), "{e}");
    assert_eq!(profiles(&pdir).len(), 2);
}

#[test]
fn gpu_trace_with_ncu_is_refused() {
    let o = Import::new("ncu", fixture("ncu_long_no_launch_columns.csv"))
        .arg("--gpu-trace")
        .arg(fixture("nvprof_gpu_trace_gtx580.csv"))
        .run();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--gpu-trace is nvprof's companion"), "{}", stderr(&o));
}

// ---- The real exports in ../shared/profiles (read there, never copied; README there). ----

fn import_real(tool: &str, file: &str, trace: Option<&str>, dir: &Path) -> (Vec<serde_json::Value>, String) {
    let pdir = dir.join(file);
    let mut i = Import::new(tool, real(file)).out(&dir.join(format!("{file}.table.csv"))).profiles(&pdir);
    if let Some(t) = trace {
        i = i.arg("--gpu-trace").arg(real(t));
    }
    let o = i.ok();
    (profiles(&pdir), stderr(&o))
}

fn predict_json(profile: &Path, args: &[&str]) -> serde_json::Value {
    let o = common::gpumodel()
        .args(["predict", "--kernel"])
        .arg(profile)
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Profile files in kernel order: by the number their names end with (`<short name>-001.json`).
fn profile_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut f: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    let number = |p: &std::path::PathBuf| {
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        stem.rsplit('-').next().unwrap().parse::<u32>().unwrap()
    };
    f.sort_by_key(number);
    f
}

/// The GTX 1080 Ti nvprof pairs feed the full pipeline model: every kernel predicts with it.
#[test]
fn real_gtx1080ti_nvprof_pairs_predict_with_the_full_model() {
    let dir = tempfile::tempdir().unwrap();
    for (m, t, n) in [
        ("nvprof-metrics_gtx1080ti_matrixMul.csv", "nvprof-gputrace_gtx1080ti_matrixMul.csv", 1),
        ("nvprof-metrics_gtx1080ti_reduction.csv", "nvprof-gputrace_gtx1080ti_reduction.csv", 2),
    ] {
        let (p, e) = import_real("nvprof", m, Some(t), dir.path());
        assert_eq!(p.len(), n);
        assert!(e.contains(&format!("imported {n} kernel(s)")) && e.contains("counters mapped"), "{e}");
        assert_eq!(e.matches("full pipeline timing model").count(), n, "{e}");
        assert!(!e.contains("roofline"), "{e}");
        // Readable names: the kernel's short name and its number.
        let files = profile_files(&dir.path().join(m));
        let first = files[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(first == "matrixMulCUDA-001.json" || first == "reduce6-001.json", "{first}");
        for f in files {
            // Without --arch: the GPU the export names (nvprof's Device column).
            let j = predict_json(&f, &[]);
            assert_eq!(j["arch"], "gtx1080ti", "{j}");
            assert!(j["context"]["arch_note"].as_str().unwrap().contains("is the built-in gtx1080ti"), "{j}");
            assert!(j["context"].get("measured_on").is_none_or(|m| m.is_null()), "{j}");
            assert!(j["prediction"]["time_s"].as_f64().unwrap() > 0.0, "{j}");
            assert!(j.get("roofline").is_none(), "{j}");
            // The table says which model gave the time, and which GPU and why.
            let o = common::gpumodel().args(["predict", "--kernel"]).arg(&f).output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("(the pipeline timing model)") && !out.contains("roofline"), "{out}");
            assert!(out.contains("gpu from    the GPU the profile names"), "{out}");
            // --arch overrides it.
            assert_eq!(predict_json(&f, &["--arch", "titanx"])["arch"], "titanx");
        }
    }
}

/// The A100 ncu export (bytes, wavefronts, FP counts, elapsed cycles) predicts with the roofline, says
/// so and what it lacked, and at the measured SM clock gives the measured time.
#[test]
fn real_a100_ncu_export_predicts_with_the_roofline_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let (p, e) = import_real("ncu", "ncu-long_a100_conv2d.csv", None, dir.path());
    assert_eq!(p.len(), 1);
    assert!(e.contains("roofline fallback (lacks inst_executed"), "{e}");
    // 6,387.24 cycles at 959,621,505.52 cycles/s; 64 × 64 threads; 2,304 + 1,024 bytes of shared memory.
    let t = p[0]["measured"]["time_s"].as_f64().unwrap();
    assert!((t - 6387.24 / 959_621_505.52).abs() < 1e-12, "{t}");
    assert_eq!(p[0]["launch"]["grid"], serde_json::json!([64, 1, 1]));
    assert_eq!(p[0]["launch"]["shared_mem_per_block"], 3328);
    let f = &profile_files(&dir.path().join("ncu-long_a100_conv2d.csv"))[0];
    assert_eq!(f.file_name().unwrap(), "implicit_convolve_sgemm-001.json");
    let j = predict_json(f, &["--arch", "a100", "--core-mhz", "959.62150552"]);
    assert_eq!(j["model"], "roofline", "{j}");
    assert!(j["roofline"]["lacked"][0].as_str().unwrap().contains("inst_executed"), "{j}");
    assert!((j["roofline"]["time_s"].as_f64().unwrap() - t).abs() < 1e-12, "{j}");
    // Anchored, the terms are scaled as the time is: none exceeds it, the longest plus the fill is it.
    let terms: Vec<f64> =
        j["roofline"]["terms"].as_array().unwrap().iter().map(|x| x["time_s"].as_f64().unwrap()).collect();
    let fill = j["roofline"]["fill_s"].as_f64().unwrap();
    assert!(terms.iter().all(|x| *x <= t), "{terms:?} vs {t}");
    assert!((terms[0] + fill - t).abs() < 1e-9 * t, "{terms:?} + {fill} vs {t}");
    assert!(j["roofline"]["expected_error_pct"].as_f64().is_some(), "{j}");
    // At the default clock, faster than measured at 960 MHz.
    let d = predict_json(f, &["--arch", "a100"]);
    // The export names no GPU (no device name, no compute capability): without --arch the answer says
    // it fell back on the default and how to choose.
    let n = predict_json(f, &[]);
    assert_eq!(n["arch"], "titanx", "{n}");
    assert!(n["context"]["arch_note"].as_str().unwrap().contains("the profile names no GPU"), "{n}");
    assert!(d["roofline"]["time_s"].as_f64().unwrap() < t, "{d}");
}

/// sm_80 semantics on the A100 row: a 128-bit shared load takes 4 wavefronts without any conflict, so the
/// bank conflicts are the conflict metric's 0, not wavefronts − requests; occupancy (%) agrees with the
/// achieved active warps of 64.
#[test]
fn sm80_shared_wavefronts_are_not_conflicts_and_occupancy_sources_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = import_real("ncu", "ncu-long_a100_conv2d.csv", None, dir.path());
    let c = &p[0]["counters"];
    assert_eq!(c["shared_load"], 2048.0);
    assert_eq!(c["shared_wavefronts"], 8640.0);
    assert_eq!(c["l1_shared_bank_conflict"], 0.0);
    let occ = p[0]["code"]["achieved_occupancy"].as_f64().unwrap();
    assert!((occ - 1.97 / 64.0).abs() < 0.0005, "Achieved Occupancy 3.08% vs 1.97 warps of 64: {occ}");
    // FFMA + FMUL + FADD thread instructions (524,288 + 16,384 + 0) in warp instructions.
    assert_eq!(c["inst_fp_32"], (524_288.0 + 16_384.0) / 32.0);
}

fn nvprof_metric(file: &str, kernel_prefix: &str, metric: &str) -> String {
    let text = std::fs::read_to_string(real(file)).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("\"{metric}\"")) && l.contains(kernel_prefix))
        .unwrap_or_else(|| panic!("{metric} not in {file}"));
    line.rsplit(',').next().unwrap().to_string()
}

/// sm_61 semantics and units on each GTX 1080 Ti file: global loads are read as uncached transactions
/// (the NV-DVFS meaning); the half that hit in the unified cache (global_hit_rate 50%) are the rest of
/// l2_tex_read_transactions; DRAM bytes over nvprof's throughput (binary GB/s) give the gpu trace's
/// duration within 5% (decimal GB/s would be 9–12% off); inst_executed = inst_per_warp × warps.
#[test]
fn sm61_counters_agree_across_sources_on_each_file() {
    let dir = tempfile::tempdir().unwrap();
    for (m, t, kernel) in [
        (
            "nvprof-metrics_gtx1080ti_matrixMul.csv",
            "nvprof-gputrace_gtx1080ti_matrixMul.csv",
            "matrixMulCUDA",
        ),
        ("nvprof-metrics_gtx1080ti_reduction.csv", "nvprof-gputrace_gtx1080ti_reduction.csv", "=256"),
    ] {
        let (p, _) = import_real("nvprof", m, Some(t), dir.path());
        let p = &p[0];
        let c = &p["counters"];
        let num = |metric: &str| nvprof_metric(m, kernel, metric).trim().parse::<f64>().unwrap();
        let gld = num("gld_transactions");
        assert_eq!(c["uncached_global_load_transaction"], gld, "{m}");
        assert_eq!(gld * 0.5, num("l2_tex_read_transactions"), "{m}: misses of the unified cache reach L2");
        let gbs = nvprof_metric(m, kernel, "dram_read_throughput");
        let gbs: f64 = gbs.trim_end_matches("GB/s").parse().unwrap();
        let implied = c["dram_read_bytes"].as_f64().unwrap() / (gbs * 1024.0 * 1024.0 * 1024.0);
        let traced = p["measured"]["time_s"].as_f64().unwrap();
        assert!((implied / traced - 1.0).abs() < 0.05, "{m}: {implied} s vs {traced} s");
        let warps = p["launch"]["grid"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .product::<f64>()
            * (p["launch"]["block"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).product::<f64>()
                / 32.0);
        assert_eq!(c["inst_executed"].as_f64().unwrap(), num("inst_per_warp") * warps, "{m}");
        assert_eq!(p["arch"], "gtx1080ti", "the Device column names the GPU");
    }
}

/// sm_70 semantics (the same file as if from a V100): global loads are cached in the unified L1, so they
/// split into hits and misses by global_hit_rate; the sum the timing model reads is unchanged.
#[test]
fn sm70_global_loads_split_by_the_l1_hit_rate() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(real("nvprof-metrics_gtx1080ti_matrixMul.csv"))
        .unwrap()
        .replace("GeForce GTX 1080 Ti (0)", "Tesla V100-SXM2-16GB (0)");
    let f = dir.path().join("v100.csv");
    std::fs::write(&f, text).unwrap();
    let pdir = dir.path().join("p");
    Import::new("nvprof", &f).out(&dir.path().join("t.csv")).profiles(&pdir).ok();
    let c = &profiles(&pdir)[0]["counters"];
    assert_eq!(c["l1_global_load_hit"], 512_000.0);
    assert_eq!(c["l1_global_load_miss"], 512_000.0);
    assert!(c.get("uncached_global_load_transaction").is_none(), "{c}");
}

/// Values outside their physical range, in files that keep the real layout, are refused with one line
/// naming the field; nothing is written.
#[test]
fn out_of_range_values_in_real_layouts_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let mm = std::fs::read_to_string(real("nvprof-metrics_gtx1080ti_matrixMul.csv")).unwrap();
    let ncu = std::fs::read_to_string(real("ncu-long_a100_conv2d.csv")).unwrap();
    let cases = [
        ("nvprof", mm.replace("0.927360,0.943526,0.935178", "7.0,7.0,7.0"), "achieved_occupancy"),
        (
            "nvprof",
            mm.replace(
                "\"Global Load Transactions\",1024000,1024000,1024000",
                "\"Global Load Transactions\",1e308,1e308,1e308",
            ),
            "gld_transactions",
        ),
        (
            "ncu",
            ncu.replace("\"dram__bytes.sum\",\"byte\",\"66,048\"", "\"dram__bytes.sum\",\"byte\",\"1e308\""),
            "dram__bytes.sum",
        ),
        (
            "ncu",
            ncu.replace("\"Achieved Occupancy\",\"%\",\"3.08\"", "\"Achieved Occupancy\",\"%\",\"700\""),
            "occupancy",
        ),
    ];
    for (i, (tool, text, field)) in cases.iter().enumerate() {
        assert!(text != &mm && text != &ncu, "case {i}: the mutation must apply");
        let f = dir.path().join(format!("case{i}.csv"));
        std::fs::write(&f, text).unwrap();
        let pdir = dir.path().join(format!("p{i}"));
        let o = Import::new(tool, &f).out(&dir.path().join(format!("t{i}.csv"))).profiles(&pdir).run();
        assert!(!o.status.success(), "case {i}");
        let e = stderr(&o);
        let errors: Vec<&str> = e.lines().filter(|l| l.starts_with("error") || l.contains("Error")).collect();
        assert!(e.contains(field), "case {i}: {e}");
        assert!(errors.len() <= 1 && e.trim().lines().count() == 1, "case {i}: one line: {e}");
        assert!(!pdir.exists(), "case {i}: nothing written");
    }
}

/// The import report is counts by default and lists with --verbose.
#[test]
fn import_warnings_are_counts_with_verbose_lists() {
    let dir = tempfile::tempdir().unwrap();
    let f = real("nvprof-metrics_gtx1080ti_matrixMul.csv");
    let quiet = stderr(&Import::new("nvprof", &f).out(&dir.path().join("a.csv")).ok());
    assert!(quiet.contains("counters mapped 24 / dropped 96"), "{quiet}");
    assert!(!quiet.contains("stall_sync"), "{quiet}");
    assert!(quiet.lines().all(|l| l.len() < 300), "{quiet}");
    let verbose = stderr(&Import::new("nvprof", &f).out(&dir.path().join("b.csv")).arg("--verbose").ok());
    assert!(verbose.contains("stall_sync") && verbose.contains("gld_transactions"), "{verbose}");
}

/// `import --help` names the command lines that give a complete profile.
#[test]
fn import_help_names_the_complete_profile_command_lines() {
    let o = common::gpumodel().args(["import", "--help"]).output().unwrap();
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(
        h.contains("ncu --csv --page raw --metrics") && h.contains("nvprof --csv --print-gpu-trace"),
        "{h}"
    );
}

/// A real export cut short (it stops in the middle of a metric row, as a copy that did not finish leaves
/// it) is an error naming the line, and leaves no table or profiles behind.
#[test]
fn a_truncated_ncu_export_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(real("ncu-long_a100_conv2d.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last_line = 30;
    let half = lines[last_line - 1];
    let cut = format!("{}\n{}", lines[..last_line - 1].join("\n"), &half[..half.len() / 2]);
    let f = dir.path().join("cut.csv");
    std::fs::write(&f, cut).unwrap();
    let (out, pdir) = (dir.path().join("t.csv"), dir.path().join("p"));
    let o = Import::new("ncu", f).out(&out).profiles(&pdir).run();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains(&format!("cut.csv:{last_line}:")) && e.contains("the export is cut short"), "{e}");
    assert!(!out.exists() && !pdir.exists());
}
