//! `gpumodel report`: figures drawn from the JSON the real binary prints on the shipped examples. The
//! expected number of marks is counted from that JSON here (rows, kernels, cells), independently of the
//! drawing code; the snapshots pin the SVG's structure (figure ids, element counts per layer), not pixels.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gpumodel() -> Command {
    Command::cargo_bin("gpumodel").unwrap()
}

/// Runs gpumodel with `args` and returns its stdout (JSON).
fn run(args: &[&str]) -> String {
    let out = gpumodel().current_dir(root()).args(args).output().unwrap();
    assert!(out.status.success(), "gpumodel {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn split_example(name: &str) -> String {
    let p = format!("datasets/examples/split/{name}.toml");
    run(&["split", &p, "--format", "json"])
}

fn figures(name: &str, json: &str) -> Vec<gpumodel_report::Figure> {
    let s = gpumodel_report::source_from_str(name, json).unwrap();
    gpumodel_report::section(&s).unwrap().figures
}

fn marks(figs: &[gpumodel_report::Figure], id: &str) -> usize {
    figs.iter().find(|f| f.id == id).unwrap_or_else(|| panic!("no figure {id}")).marks
}

fn len(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

/// Element counts per layer and tag: what the snapshot pins.
fn structure(figs: &[gpumodel_report::Figure]) -> String {
    let mut out = String::new();
    for f in figs {
        out.push_str(&format!("{} marks={} title={:?}\n", f.id, f.marks, f.title));
        for layer in ["frame", "lines", "marks", "highlights", "labels"] {
            let start = f.svg.find(&format!("<g class=\"{layer}\">")).expect("layer");
            let body = &f.svg[start..];
            let body = &body[body.find('\n').unwrap() + 1..body.find("</g>\n<g class").unwrap_or(body.len())];
            let mut counts = std::collections::BTreeMap::new();
            for l in body.lines().filter(|l| l.starts_with('<') && !l.starts_with("</")) {
                let tag: String = l[1..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
                *counts.entry(tag).or_insert(0) += 1;
            }
            out.push_str(&format!("  {layer}: {counts:?}\n"));
        }
    }
    out
}

#[test]
fn predict_marks_one_segment_per_component_and_one_point_per_sweep_step() {
    let p = run(&["predict", "--warps", "32", "--format", "json"]);
    let v: Value = serde_json::from_str(&p).unwrap();
    let figs = figures("predict.json", &p);
    let nonzero = v["prediction"]["detail"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["time_s"].as_f64().unwrap() > 0.0)
        .count();
    assert_eq!(marks(&figs, "predict-components"), nonzero);
    insta::assert_snapshot!("predict_structure", structure(&figs));

    let s = run(&["predict", "--sweep", "warps", "--format", "json"]);
    let v: Value = serde_json::from_str(&s).unwrap();
    let figs = figures("sweep.json", &s);
    // Panels: time, power, and one per objective; every panel marks every sweep point.
    let panels = 2 + len(&v["sweep"]["optima"]);
    assert_eq!(marks(&figs, "predict-sweep"), len(&v["sweep"]["points"]) * panels);
    let svg = &figs[0].svg;
    let hl = &svg[svg.find("<g class=\"highlights\">").unwrap()..svg.find("<g class=\"labels\">").unwrap()];
    assert_eq!(
        hl.matches("<polygon").count(),
        1 + len(&v["sweep"]["optima"]),
        "one optimum per objective and the fastest"
    );
    insta::assert_snapshot!("sweep_structure", structure(&figs));
}

#[test]
fn split_marks_every_candidate_and_every_clock_cell() {
    let two = split_example("peach_system_i");
    let v: Value = serde_json::from_str(&two).unwrap();
    let figs = figures("peach_system_i.json", &two);
    assert_eq!(marks(&figs, "split-pareto"), len(&v["candidates"]));

    let dvfs = split_example("peach_table_vii");
    let v: Value = serde_json::from_str(&dvfs).unwrap();
    let figs = figures("peach_table_vii.json", &dvfs);
    assert_eq!(marks(&figs, "split-pareto"), len(&v["cells"]));
    assert_eq!(marks(&figs, "split-share-time"), len(&v["cells"]));
    assert_eq!(marks(&figs, "split-share-energy"), len(&v["cells"]));
    insta::assert_snapshot!("split_dvfs_structure", structure(&figs));

    let pareto = split_example("hepopta_small");
    let v: Value = serde_json::from_str(&pareto).unwrap();
    let figs = figures("hepopta_small.json", &pareto);
    assert_eq!(marks(&figs, "split-pareto"), len(&v["total"]["points"]) + len(&v["dynamic"]["points"]));

    let cg = split_example("lang_runger_cg");
    let v: Value = serde_json::from_str(&cg).unwrap();
    assert_eq!(marks(&figures("cg.json", &cg), "split-pareto"), len(&v["report"]["runs"]));
}

#[test]
fn the_envelope_is_read_and_an_older_version_is_refused_in_one_line() {
    let p = run(&["predict", "--warps", "32", "--format", "json"]);
    let mut v: Value = serde_json::from_str(&p).unwrap();
    v["command"] = "predict".into();
    v["format_version"] = 1.into();
    assert_eq!(figures("tagged.json", &v.to_string()).len(), 1);
    v["format_version"] = 0.into();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let out = dir.path().join("r.html");
    let a = gpumodel().arg("report").arg(&old).arg("--out").arg(&out).output().unwrap();
    assert!(!a.status.success());
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(err.contains("old.json") && err.contains("format_version 1"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!out.exists(), "nothing may be written on bad input");
}

#[test]
fn a_result_of_another_command_names_the_file_and_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.json");
    std::fs::write(&cluster, run(&["cluster", "--format", "json"])).unwrap();
    let notjson = dir.path().join("notes.json");
    std::fs::write(&notjson, "not json").unwrap();
    for (file, says) in [(&cluster, "gpumodel cluster"), (&notjson, "not JSON")] {
        let a =
            gpumodel().arg("report").arg(file).arg("--out").arg(dir.path().join("r.html")).output().unwrap();
        assert!(!a.status.success());
        let err = String::from_utf8_lossy(&a.stderr);
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(err.contains(&*name) && err.contains(says) && err.contains("expected"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn report_creates_its_directory_and_keeps_an_existing_report_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    std::fs::write(&json, run(&["predict", "--sweep", "warps", "--format", "json"])).unwrap();
    let out = dir.path().join("new/dir/report.html");
    gpumodel().arg("report").arg(&json).arg("--out").arg(&out).assert().success();
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("Content-Security-Policy") && html.contains("<svg"));
    assert!(
        !html.contains("http://")
            || html.matches("http://").count() == html.matches("http://www.w3.org/2000/svg").count()
    );

    std::fs::write(&out, "mine").unwrap();
    let a = gpumodel().arg("report").arg(&json).arg("--out").arg(&out).output().unwrap();
    assert!(!a.status.success());
    assert!(String::from_utf8_lossy(&a.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine", "an existing report is kept");
    gpumodel().arg("report").arg(&json).arg("--out").arg(&out).arg("--force").assert().success();
    assert!(std::fs::read_to_string(&out).unwrap().starts_with("<!DOCTYPE html>"));

    let svg = dir.path().join("fig.svg");
    gpumodel()
        .arg("report")
        .arg(&json)
        .arg("--svg")
        .arg(&svg)
        .arg("--figure")
        .arg("predict-sweep")
        .assert()
        .success();
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // No temporary file is left beside the output.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("new/dir")).unwrap().collect();
    assert_eq!(left.len(), 1);
}

/// A trace from the scripted GPU (no hardware needed) draws power and counters over time.
#[test]
fn a_collector_trace_draws_power_counters_and_both_energies() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let o = gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--format", "json", "--out"])
        .arg(&csv)
        .args(["--", "sleep", "0.3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The run summary collect prints is not the trace: the report says which file to give it.
    let err = gpumodel_report::source_from_str("summary.json", &String::from_utf8(o.stdout).unwrap())
        .expect_err("a run summary is refused")
        .to_string();
    assert!(err.contains("run summary") && err.contains(&csv.display().to_string()), "{err}");
    let s = gpumodel_report::read_source(&csv.with_extension("json")).unwrap();
    let sec = gpumodel_report::section(&s).unwrap();
    let ids: Vec<&str> = sec.figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["collect-trace", "collect-energy"]);
    assert_eq!(marks(&sec.figures, "collect-energy"), 2, "integral and counter");
    let _ = Path::new("");
}

#[test]
fn plot_writes_the_headline_figure_of_predict_and_split_as_svg() {
    let dir = tempfile::tempdir().unwrap();
    // The directory does not exist yet: --plot creates it, like every output.
    let svg = dir.path().join("figs/sweep.svg");
    let json = run(&["predict", "--sweep", "warps", "--format", "json", "--plot", svg.to_str().unwrap()]);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg"), "an SVG document");
    // The same figure `gpumodel report` draws first for this result.
    let first = &figures("sweep.json", &json)[0];
    assert_eq!(drawn, first.svg, "--plot writes the report's headline figure");

    let svg = dir.path().join("pareto.svg");
    let p = "datasets/examples/split/hepopta_small.toml";
    let json = run(&["split", p, "--format", "json", "--plot", svg.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), figures("split.json", &json)[0].svg);
}

/// `split fit`: one figure per fitted clock table, one mark per measured point (counted from the JSON's
/// clock tables here); a law the file gives is a note, not a figure.
#[test]
fn split_fit_draws_each_fitted_law_over_its_measured_points() {
    let json =
        run(&["split", "fit", "datasets/examples/split/peach_table_vii_gpu_fit.toml", "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let s = gpumodel_report::source_from_str("fit.json", &json).unwrap();
    let sec = gpumodel_report::section(&s).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let fitted: Vec<&Value> = rows.iter().filter(|r| !r["fit"].is_null()).collect();
    assert!(!fitted.is_empty());
    assert_eq!(sec.figures.len(), fitted.len());
    assert_eq!(sec.notes.len(), rows.len() - fitted.len(), "{:?}", sec.notes);
    for r in fitted {
        let id = format!("split-fit-{}-{}", r["device"].as_str().unwrap(), r["quantity"].as_str().unwrap());
        assert_eq!(marks(&sec.figures, &id), len(&r["measured"]), "{id}");
        assert_eq!(len(&r["measured"]), len(&r["clocks"]));
    }
    insta::assert_snapshot!("split_fit_structure", structure(&sec.figures));
}

/// The held-out bars of `train` carry their bootstrap intervals as whiskers (three strokes each, one per
/// model the JSON gives an interval for), drawn over the bars; a result without intervals has none.
#[test]
fn train_held_out_bars_carry_their_bootstrap_intervals() {
    let highlights = |json: &str| {
        let figs = figures("train.json", json);
        let f = figs.iter().find(|f| f.id == "train-model-error").expect("the model-error figure");
        let start = f.svg.find("<g class=\"highlights\">").expect("layer");
        let body = &f.svg[start..];
        let body = &body[body.find('\n').unwrap() + 1..body.find("</g>").unwrap()];
        body.lines().filter(|l| l.starts_with('<') && !l.starts_with("</")).count()
    };
    let args = ["train", "--models", "physical,mlr,mlr+", "--folds", "0", "--group-folds", "0", "--no-write"];
    let json = run(&[&args[..], &["--format", "json"]].concat());
    let v: Value = serde_json::from_str(&json).unwrap();
    let with = len(&v["held_out_uncertainty"]["models"]);
    assert_eq!(with, 3);
    assert_eq!(highlights(&json), 3 * with);
    let json = run(&[&args[..], &["--format", "json", "--bootstrap", "0"]].concat());
    assert_eq!(highlights(&json), 0);
}
