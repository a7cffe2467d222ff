//! `gpumodel predict` driven through the real binary: the fresh-clone default, sweeps, and the bad inputs
//! the issue lists (missing profile fields, launches over hardware limits, unknown architectures, models
//! whose inputs a kernel profile cannot provide).

use assert_cmd::Command;
use std::path::{Path, PathBuf};

mod common;

fn gpumodel() -> Command {
    Command::cargo_bin("gpumodel").unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = gpumodel().args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn fails_with(args: &[&str], needles: &[&str]) {
    let out = gpumodel().args(args).output().unwrap();
    assert!(!out.status.success(), "expected failure: {args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    for n in needles {
        assert!(err.contains(n), "stderr lacks '{n}': {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const KERNEL: &str = r#"
name = "k"
[launch]
grid = [1000, 1, 1]
block = [256, 1, 1]
[counters]
inst_executed = 1e6
uncached_global_load_transaction = 1e5
global_store_transaction = 1e4
"#;

/// The README's main-job command: no argument but --warps, on a fresh clone (embedded kernel, arch, model).
#[test]
fn warps_32_alone_prints_time_power_energy_and_bottleneck() {
    let out = gpumodel().args(["predict", "--warps", "32"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8_lossy(&out.stdout);
    for needle in ["time", "power", "energy", "bottleneck", "32 warps/SM", "share %", "access ratio"] {
        assert!(s.contains(needle), "{needle}: {s}");
    }
}

#[test]
fn json_prediction_is_consistent() {
    let v = json(&["predict", "--warps", "32"]);
    let p = &v["prediction"];
    let (t, w, e) =
        (p["time_s"].as_f64().unwrap(), p["power_w"].as_f64().unwrap(), p["energy_j"].as_f64().unwrap());
    assert!(t > 0.0 && w > 20.0 && w < 400.0, "{p}");
    assert!((e - t * w).abs() <= 1e-12 * e.abs().max(1.0), "E = P·T");
    assert_eq!(p["detail"]["occupancy"]["active_warps_per_sm"], 32);
    let shares: f64 =
        p["detail"]["components"].as_array().unwrap().iter().map(|c| c["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9);
}

/// Fewer resident warps hide less latency: the reduction example cannot get faster with fewer warps.
#[test]
fn warps_sweep_covers_every_setting_and_prints_optima() {
    let v = json(&["predict", "--sweep", "warps", "--objective", "ed2", "--objective", "0.5,2"]);
    let pts = v["sweep"]["points"].as_array().unwrap();
    // 256-thread blocks = 8 warps; the Titan X holds 64 warps per SM: settings 8..=64.
    assert_eq!(pts.len(), 57);
    let t: Vec<f64> = pts.iter().map(|p| p["time_s"].as_f64().unwrap()).collect();
    assert!(t.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)), "{t:?}");
    let optima = v["sweep"]["optima"].as_array().unwrap();
    assert_eq!(optima.len(), 2);
    assert_eq!(optima[1]["objective"], "E^0.5·D^2");
}

#[test]
fn core_clock_sweep_uses_the_arch_clocks() {
    // The Titan X profile lists the 16 core clocks of Guerreiro et al.'s grid, 595..1164 MHz.
    let v = json(&["predict", "--sweep", "core-clock"]);
    let pts = v["sweep"]["points"].as_array().unwrap();
    let xs: Vec<f64> = pts.iter().map(|p| p["x"].as_f64().unwrap()).collect();
    assert_eq!((xs.len(), xs[0], xs[15]), (16, 595.0, 1164.0));
    // Compute-bound example: time falls as the core clock rises.
    let t: Vec<f64> = pts.iter().map(|p| p["time_s"].as_f64().unwrap()).collect();
    assert!(t[15] < t[0]);
}

/// A profile the pipeline model cannot read predicts with the roofline, naming what it lacked; one with
/// nothing any model reads is refused with the metrics to profile, one paste-ready line per profiler.
#[test]
fn missing_profile_fields_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let k = write(&dir, "k.toml", &KERNEL.replace("global_store_transaction = 1e4\n", ""));
    let o = gpumodel().args(["predict", "--kernel"]).arg(&k).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("roofline fallback") && out.contains("global_store_transaction"), "{out}");
    let empty = write(&dir, "e.toml", "name = \"k\"\n[launch]\ngrid = [1, 1, 1]\nblock = [32, 1, 1]\n");
    fails_with(
        &["predict", "--kernel", empty.to_str().unwrap()],
        &["no counter any model reads", "`gpumodel import --help` prints"],
    );
    // The refusal is one short line; the command lines it points to are in `import --help`.
    let o = gpumodel().args(["predict", "--kernel"]).arg(&empty).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.lines().count() == 1 && e.len() < 400, "{e}");
    let help = gpumodel().args(["import", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("ncu --csv --page raw --metrics") && help.contains("nvprof --csv --metrics"),
        "{help}"
    );
}

#[test]
fn launch_over_a_hardware_limit_names_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let k = write(&dir, "k.toml", &KERNEL.replace("block = [256, 1, 1]", "block = [2048, 1, 1]"));
    fails_with(
        &["predict", "--kernel", k.to_str().unwrap()],
        &["threads per block is 2048, the limit is 1024"],
    );
    let k = write(
        &dir,
        "r.toml",
        &KERNEL.replace("block = [256, 1, 1]", "block = [256, 1, 1]\nregisters_per_thread = 300"),
    );
    fails_with(
        &["predict", "--kernel", k.to_str().unwrap()],
        &["registers per thread is 300, the limit is 255"],
    );
    fails_with(&["predict", "--warps", "65"], &["--warps 65 is outside 1..=64"]);
}

#[test]
fn unknown_architecture_lists_the_known_ones() {
    fails_with(
        &["predict", "--arch", "rtx9090"],
        &["unknown architecture 'rtx9090'", "c2075", "gtx1080ti", "h100"],
    );
}

#[test]
fn a_model_the_profile_cannot_feed_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/trained/titanx-bpann.json"),
    )
    .unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["inputs"][0] = "fan_speed_pct".into();
    let p = write(&dir, "m.json", &m.to_string());
    fails_with(&["predict", "--model", p.to_str().unwrap()], &["needs base value(s) fan_speed_pct"]);
}

#[test]
fn core_clock_sweep_needs_a_clock_input() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/trained/titanx-bpann.json"),
    )
    .unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let i = m["inputs"].as_array().unwrap().iter().position(|x| x == "core_mhz").unwrap();
    m["inputs"][i] = "SP".into();
    let p = write(&dir, "m.json", &m.to_string());
    fails_with(
        &["predict", "--sweep", "core-clock", "--model", p.to_str().unwrap()],
        &["has no core_mhz input"],
    );
}

#[test]
fn bad_objective_and_unknown_kernel() {
    fails_with(&["predict", "--objective", "ed-2"], &["objective 'ed-2'"]);
    fails_with(&["predict", "--kernel", "nope.toml"], &["'nope.toml' not found", "reduction"]);
}

/// A number of a `key = value` line of a saved calibration, read by hand (not by the code under test).
fn toml_number(text: &str, key: &str) -> f64 {
    common::toml_value(text, key).parse().unwrap()
}

/// A calibration saved by `gpumodel validate` on the real GTX 980 data, on the model's default
/// structure. On the GTX 980 its factors beat the model out of fold, so the
/// file keeps them (where they do not, the file records the structure alone: the keep rule is tested in
/// tests/validate.rs, `a_saved_calibration_keeps_its_factors_only_where_they_win_out_of_fold`, and how
/// such a file predicts in tests/predict_structure.rs).
fn saved_calibration(dir: &tempfile::TempDir) -> PathBuf {
    let file = dir.path().join("cal.toml");
    let out = common::gpumodel()
        .args(["validate", "--data", "nvdvfs-gtx980", "--arch", "gtx980"])
        .arg("--save-calibration")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    file
}

fn json_with(args: &[&str], cal: Option<&Path>) -> serde_json::Value {
    let mut c = gpumodel();
    c.args(args).args(["--format", "json"]);
    if let Some(p) = cal {
        c.arg("--calibration").arg(p);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `predict --calibration` changes the time by exactly
/// T = ((a_m·M)^p + (a_c·C + a_s·S)^p + (a_l·L)^p)^(1/p) + sync + fill, with the coefficients read from the
/// saved file and M, C, S, sync from the uncalibrated prediction's components, L from its `l2_s`, fill from
/// its `fill_s`; energy follows. Files of format versions 1 and 2 (fitted to the earlier timing model) are
/// refused with the command that writes a new one.
#[test]
fn calibration_changes_the_time_by_exactly_its_formula() {
    let dir = tempfile::tempdir().unwrap();
    let cal = saved_calibration(&dir);
    let text = std::fs::read_to_string(&cal).unwrap();
    let (am, ac, as_, al, p) = (
        toml_number(&text, "a_memory"),
        toml_number(&text, "a_compute"),
        toml_number(&text, "a_shared"),
        toml_number(&text, "a_l2"),
        toml_number(&text, "p"),
    );
    assert!(p >= 1.0 && al >= 0.0, "{p} {al}");
    for old in [1, 2] {
        let old_file =
            write(&dir, "old.toml", &text.replace("format_version = 6", &format!("format_version = {old}")));
        let out = gpumodel()
            .args(["predict", "--arch", "gtx980", "--calibration"])
            .arg(&old_file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && err.contains(&format!("version {old}"))
                && err.contains("--save-calibration"),
            "{err}"
        );
    }
    let mut kinds = std::collections::BTreeSet::new();
    for kernel in ["reduction", "transpose", "matrixmul"] {
        for clocks in [&[][..], &["--core-mhz", "1800", "--mem-mhz", "4500"][..]] {
            let args: Vec<&str> =
                ["predict", "--arch", "gtx980", "--kernel", kernel].iter().chain(clocks).copied().collect();
            let plain = json_with(&args, None);
            assert_eq!(plain["calibration"]["applied"], false);
            let t = &plain["prediction"]["detail"]["timing"];
            kinds.insert(t["bound_kind"].as_str().unwrap().to_string());
            // Components in the order global load, global store, shared, bank conflicts, texture,
            // compute, sync.
            let c: Vec<f64> =
                t["components_s"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            let (m, comp, s) = (c[0] + c[1] + c[4], c[5], c[2] + c[3]);
            let l = t["l2_s"].as_f64().unwrap();
            assert!(l > 0.0, "{kernel}: the examples move DRAM data");
            let fill = t["fill_s"].as_f64().unwrap();
            let want = ((am * m).powf(p) + (ac * comp + as_ * s).powf(p) + (al * l).powf(p)).powf(1.0 / p)
                + c[6]
                + fill;
            let calibrated = json_with(&args, Some(&cal));
            let p = &calibrated["prediction"];
            let got = p["time_s"].as_f64().unwrap();
            assert!((got - want).abs() <= 1e-12 * want, "{kernel} {clocks:?}: {got} vs {want}");
            assert_ne!(got, plain["prediction"]["time_s"].as_f64().unwrap());
            let e = p["energy_j"].as_f64().unwrap();
            assert!((e - p["power_w"].as_f64().unwrap() * got).abs() <= 1e-12 * e, "E = P·T");
            assert_eq!(calibrated["calibration"]["applied"], true);
            assert_eq!(calibrated["calibration"]["file"], cal.display().to_string());
            assert_eq!(p["detail"]["calibrated"], true);
        }
    }
    assert!(kinds.len() >= 2, "the examples should exercise more than one bound: {kinds:?}");

    // The table says so, and names the file.
    let out = gpumodel().args(["predict", "--arch", "gtx980", "--calibration"]).arg(&cal).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains(&format!("calibrated by {}", cal.display())), "{s}");

    // Sweeps use it: each calibrated sweep point is the calibrated single prediction at that clock.
    let sweep = json_with(&["predict", "--arch", "gtx980", "--sweep", "core-clock"], Some(&cal));
    assert_eq!(sweep["calibration"]["applied"], true);
    let pt = &sweep["sweep"]["points"][2];
    let x = pt["x"].as_f64().unwrap().to_string();
    let single = json_with(&["predict", "--arch", "gtx980", "--core-mhz", &x], Some(&cal));
    assert_eq!(pt["time_s"], single["prediction"]["time_s"]);
}

/// Every way a calibration file can be wrong is one line that says what to do.
#[test]
fn bad_calibration_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cal = saved_calibration(&dir);
    let text = std::fs::read_to_string(&cal).unwrap();
    let one_line = |args: &[&str], file: &Path, needles: &[&str]| {
        let out = gpumodel().args(args).arg("--calibration").arg(file).output().unwrap();
        assert!(!out.status.success(), "expected failure with {}", file.display());
        let err = String::from_utf8_lossy(&out.stderr);
        for n in needles {
            assert!(err.contains(n), "stderr lacks '{n}': {err}");
        }
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    };
    // Fitted for another architecture than --arch (the default is titanx).
    one_line(&["predict"], &cal, &["fitted for architecture 'gtx980', not 'titanx'", "--arch gtx980"]);
    let gtx = ["predict", "--arch", "gtx980"];
    let variant = |name: &str, t: String| {
        let p = write(&dir, name, &t);
        assert_ne!(t, text, "{name}: the replacement must change the file");
        p
    };
    one_line(
        &gtx,
        &variant("v9.toml", text.replace("format_version = 6", "format_version = 9")),
        &["format version 9", "--save-calibration"],
    );
    one_line(&gtx, &variant("junk.toml", "not = [toml".into()), &["not a usable gpumodel time calibration"]);
    one_line(
        &gtx,
        &variant("neg.toml", text.replace("a_shared = ", "a_shared = -")),
        &["coefficients.a_shared", "≥ 0"],
    );
    one_line(&gtx, &variant("other.toml", KERNEL.to_string()), &["not a usable gpumodel time calibration"]);
    one_line(&gtx, &dir.path().join("missing.toml"), &["cannot read calibration"]);
}

/// A negative clock parses as a number (not as a flag) and is refused as out of range, in one line.
#[test]
fn negative_clock_is_refused_as_out_of_range() {
    let o = gpumodel().args(["predict", "--warps", "32", "--core-mhz", "-500"]).output().unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--core-mhz -500") && e.contains("within"), "{e}");
    assert!(!e.contains("unexpected argument"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}

/// Clocks no GPU has are refused naming the flag; a clock outside the architecture's table but physical
/// is predicted and flagged as extrapolated in every format.
#[test]
fn unphysical_clocks_are_refused_and_off_table_clocks_flagged() {
    fails_with(&["predict", "--warps", "32", "--core-mhz", "99999", "--mem-mhz", "1"], &["--core-mhz 99999"]);
    let base = ["predict", "--warps", "32", "--arch", "titanx", "--core-mhz", "2000"];
    let j = json(&base);
    assert!(j["extrapolation"][0].as_str().unwrap().contains("outside"), "{j}");
    for (format, needle) in [("table", "extrapol"), ("csv", "extrapolated"), ("markdown", "extrapol")] {
        let o = gpumodel().args(base).args(["--format", format]).output().unwrap();
        assert!(o.status.success());
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(needle), "{format}: {out}");
    }
    // Within the table: no flag.
    let j = json(&["predict", "--warps", "32", "--arch", "titanx"]);
    assert!(j.get("extrapolation").is_none(), "{j}");
}

/// `predict --help` lists the built-in architecture profiles (every one of them).
#[test]
fn arch_help_lists_the_built_in_profiles() {
    let o = gpumodel().args(["predict", "--help"]).output().unwrap();
    let h = String::from_utf8_lossy(&o.stdout);
    for name in gpumodel_models::arch::ArchProfile::builtin_names() {
        assert!(h.contains(name), "{name} missing from --arch help: {h}");
    }
}

/// A profile whose counters come from another GPU than --arch says so, also on the roofline path.
#[test]
fn a_profile_from_another_gpu_gets_the_note() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "k.json",
        r#"{"name":"k","arch":"a100","launch":{"grid":[64,1,1],"block":[64,1,1]},
            "counters":{"dram_bytes":66048,"l2_bytes":877856},"measured":{"time_s":6.6e-6}}"#,
    );
    let o = gpumodel().args(["predict", "--arch", "titanx", "--kernel"]).arg(&p).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("measured on another GPU (a100)"), "{out}");
    assert!(out.contains("roofline fallback") && out.contains("no measured time on this GPU"), "{out}");
}

/// Counters of 1e308 and an occupancy of 7 in a profile are refused with one line naming the field.
#[test]
fn out_of_range_profile_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (text, field) in [
        (
            r#"{"name":"k","launch":{"grid":[1,1,1],"block":[32,1,1]},"counters":{"inst_executed":1e308}}"#,
            "inst_executed",
        ),
        (
            r#"{"name":"k","launch":{"grid":[1,1,1],"block":[32,1,1]},"code":{"achieved_occupancy":7.0}}"#,
            "achieved_occupancy",
        ),
        (
            r#"{"name":"k","launch":{"grid":[1,1,1],"block":[32,1,1]},"code":{"achieved_occupancy":-3.0}}"#,
            "achieved_occupancy",
        ),
    ] {
        let p = write(&dir, "k.json", text);
        let o = gpumodel().args(["predict", "--kernel"]).arg(&p).output().unwrap();
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(field) && e.trim().lines().count() == 1, "{e}");
    }
}

/// A power above the board's limit is an error in every format, not a note: the Titan X profile with its
/// limit set to 20 W (below what the default example draws) flags the default prediction in the table,
/// the JSON and the CSV, and every point of a sweep that passes it.
#[test]
fn power_above_the_board_limit_is_an_error_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let text = include_str!("../models/arch/titanx.toml")
        .replace("tdp_w = { value = 250, src = \"wp\" }", "tdp_w = { value = 20, src = \"wp\" }");
    assert!(text.contains("value = 20,"), "the Titan X profile no longer states tdp_w as this test expects");
    let arch = write(&dir, "low-limit.toml", &text);
    let arch = arch.to_str().unwrap();
    let j = json(&["predict", "--arch", arch]);
    let power = j["prediction"]["power_w"].as_f64().unwrap();
    assert!(power > 20.0, "{power}");
    let e = j["out_of_bounds"][0].as_str().unwrap();
    assert!(e.contains("above the titanx board limit of 20 W"), "{e}");
    let table = gpumodel().args(["predict", "--arch", arch]).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.lines().any(|l| l.starts_with("ERROR") && l.contains("board limit of 20 W")), "{table}");
    let csv = gpumodel().args(["predict", "--arch", arch, "--format", "csv"]).output().unwrap();
    let mut r = csv::Reader::from_reader(&csv.stdout[..]);
    let head = r.headers().unwrap().clone();
    let i = head.iter().position(|h| h == "out_of_bounds").unwrap();
    let row = r.records().next().unwrap().unwrap();
    assert!(row[i].contains("board limit of 20 W"), "{row:?}");
    let s = json(&["predict", "--arch", arch, "--sweep", "warps"]);
    let over = s["sweep"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["power_w"].as_f64().unwrap() > 20.0)
        .count();
    assert_eq!(s["out_of_bounds"].as_array().unwrap().len(), over, "{}", s["out_of_bounds"]);
    // At the real limit (250 W) the same prediction carries no such error.
    let ok = json(&["predict"]);
    assert!(ok.get("out_of_bounds").is_none(), "{ok}");
}

/// A power below the board's measured idle power at the run's clocks is an error in every format: the
/// Titan X profile with one idle entry of 200 W at 1000 / 3505 MHz flags the default prediction (at
/// 1088 MHz, above that entry), and in a core-clock sweep exactly the points at 1000 MHz or more.
#[test]
fn power_below_the_measured_idle_is_an_error_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = include_str!("../models/arch/titanx.toml");
    let (start, end) =
        (shipped.find("idle_w = {").unwrap(), shipped.find("src = \"guerreiro_idle\" }").unwrap());
    let text = format!("{}idle_w = {{ value = [[1000, 3505, 200.0]], {}", &shipped[..start], &shipped[end..]);
    let arch = write(&dir, "high-idle.toml", &text);
    let arch = arch.to_str().unwrap();
    let at = ["predict", "--arch", arch, "--core-mhz", "1088"];
    let j = json(&at);
    let power = j["prediction"]["power_w"].as_f64().unwrap();
    assert!(power < 200.0, "{power}");
    let e = j["out_of_bounds"][0].as_str().unwrap();
    assert!(e.contains("below the titanx idle power of 200.0 W (measured idle at 1000 / 3505 MHz"), "{e}");
    let table = gpumodel().args(at).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.lines().any(|l| l.starts_with("ERROR") && l.contains("idle power of 200.0 W")), "{table}");
    let csv = gpumodel().args(at).args(["--format", "csv"]).output().unwrap();
    let mut r = csv::Reader::from_reader(&csv.stdout[..]);
    let i = r.headers().unwrap().iter().position(|h| h == "out_of_bounds").unwrap();
    assert!(r.records().next().unwrap().unwrap()[i].contains("idle power of 200.0 W"));
    // At 975 MHz no entry is at or below the run's clocks: no floor, no error.
    assert!(json(&["predict", "--arch", arch]).get("out_of_bounds").is_none());
    let s = json(&["predict", "--arch", arch, "--model", "titanx-bpann", "--sweep", "core-clock"]);
    let flagged: Vec<String> = s["out_of_bounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().split(':').next().unwrap().to_string())
        .collect();
    let expected: Vec<String> = s["sweep"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["x"].as_f64().unwrap() >= 1000.0 && p["power_w"].as_f64().unwrap() < 200.0)
        .map(|p| format!("at {}", p["x"].as_f64().unwrap()))
        .collect();
    assert!(!expected.is_empty() && flagged == expected, "{flagged:?} against {expected:?}");
    // The shipped profile's measured idle flags none of them.
    let ok = json(&["predict", "--model", "titanx-bpann", "--sweep", "core-clock"]);
    assert!(ok.get("out_of_bounds").is_none(), "{ok}");
}
