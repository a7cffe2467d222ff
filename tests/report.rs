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

/// The body of one layer of a figure's SVG.
fn layer<'a>(svg: &'a str, class: &str) -> &'a str {
    let start = svg.find(&format!("<g class=\"{class}\">")).unwrap_or_else(|| panic!("no layer {class}"));
    let body = &svg[start..];
    &body[body.find('\n').unwrap() + 1..body.find("</g>").unwrap()]
}

/// The value of attribute `name` in an SVG element's line.
fn attr(line: &str, name: &str) -> Option<String> {
    let k = format!(" {name}=\"");
    line.find(&k).map(|i| line[i + k.len()..].split('"').next().unwrap_or("").to_string())
}

/// The pixel points of a `points="x,y x,y …"` attribute.
fn points(line: &str) -> Vec<(i64, i64)> {
    attr(line, "points")
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

/// The component chart's line (the predicted time, after overlap) ends where the stacked bar ends or before:
/// the overlap only takes time away from what the bar adds up.
#[test]
fn the_predicted_time_line_does_not_run_past_the_stacked_components() {
    let p = run(&["predict", "--warps", "32", "--format", "json"]);
    let figs = figures("predict.json", &p);
    let f = figs.iter().find(|f| f.id == "predict-components").unwrap();
    let bar_end = layer(&f.svg, "marks")
        .lines()
        .filter(|l| l.starts_with("<rect"))
        .map(|l| {
            let n = |k: &str| attr(l, k).unwrap().parse::<i64>().unwrap();
            n("x") + n("width")
        })
        .max()
        .unwrap();
    let line: Vec<(i64, i64)> = layer(&f.svg, "highlights").lines().flat_map(points).collect();
    assert_eq!(line.len(), 2, "one vertical line");
    assert_eq!(line[0].0, line[1].0);
    assert!(line[0].0 <= bar_end + 1, "the line at x = {} runs past the bar's end at {bar_end}", line[0].0);
    let v: Value = serde_json::from_str(&p).unwrap();
    let t = &v["prediction"]["detail"]["timing"];
    assert!(t["overlapped_s"].as_f64().unwrap() > 0.0, "the example overlaps some work");
}

/// A roofline answer (the real A100 ncu export lacks the pipeline model's counters) is drawn: one bar per
/// term of its JSON, plus the fill, and the caption names its bound.
#[test]
fn a_roofline_prediction_draws_its_terms() {
    let export = root().join("../shared/profiles/ncu-long_a100_conv2d.csv");
    let p = run(&["predict", "--format", "json", "--arch", "a100", "--kernel", export.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&p).unwrap();
    let r = &v["roofline"];
    let bars = len(&r["terms"]) + usize::from(r["fill_s"].as_f64().unwrap() > 0.0);
    let figs = figures("roofline.json", &p);
    assert_eq!(marks(&figs, "predict-roofline"), bars);
    let f = figs.iter().find(|f| f.id == "predict-roofline").unwrap();
    assert!(f.caption.contains(&format!("the largest, {}", r["bound"].as_str().unwrap())), "{}", f.caption);
}

/// PEACH's time–energy figure: each objective's optimum (a diamond) is a vertex of the drawn Pareto front,
/// so no optimum sits off the front as if the front had missed it.
#[test]
fn every_optimum_of_the_dvfs_split_lies_on_the_drawn_front() {
    let json = split_example("peach_table_vii");
    let v: Value = serde_json::from_str(&json).unwrap();
    let figs = figures("peach_table_vii.json", &json);
    let f = figs.iter().find(|f| f.id == "split-pareto").unwrap();
    let front: Vec<(i64, i64)> = layer(&f.svg, "lines").lines().flat_map(points).collect();
    assert!(front.len() >= 2, "a front is drawn");
    // A diamond's first vertex is straight above its centre, its second straight right of it.
    let diamonds: Vec<(i64, i64)> = layer(&f.svg, "highlights")
        .lines()
        .map(points)
        .filter(|p| p.len() == 4)
        .map(|p| (p[0].0, p[1].1))
        .collect();
    let distinct = {
        let mut d: Vec<String> =
            v["global"].as_array().unwrap().iter().map(|g| g["point"].to_string()).collect();
        d.sort();
        d.dedup();
        d.len()
    };
    assert_eq!(diamonds.len(), distinct, "one diamond per distinct optimum");
    for d in &diamonds {
        assert!(
            front.iter().any(|p| (p.0 - d.0).abs() <= 1 && (p.1 - d.1).abs() <= 1),
            "the optimum at {d:?} is not on the drawn front {front:?}"
        );
    }
}

/// The two GPU-share maps of PEACH (the time objective's and the chosen one's) use one colour scale: the
/// same extremes on both colour bars, and the same share gets the same colour on both.
#[test]
fn the_share_maps_share_one_colour_scale() {
    let json = split_example("peach_table_vii");
    let figs = figures("peach_table_vii.json", &json);
    let maps: Vec<&gpumodel_report::Figure> =
        figs.iter().filter(|f| f.id.starts_with("split-share-")).collect();
    assert_eq!(maps.len(), 2);
    let texts = |svg: &str| -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .map(|t| t.split_once('>').unwrap().1.split("</text>").next().unwrap().trim().to_string())
            .collect()
    };
    // The colour bar's two extremes are drawn just before its label.
    let extremes = |f: &gpumodel_report::Figure| {
        let t = texts(layer(&f.svg, "frame"));
        let i = t.iter().position(|s| s == "GPU share %").expect("the colour bar's label");
        (t[i - 2].clone(), t[i - 1].clone())
    };
    assert_eq!(extremes(maps[0]), extremes(maps[1]));
    // Cell colour by printed share, over both maps: one colour per share.
    let mut colour_of: std::collections::BTreeMap<String, String> = Default::default();
    for f in &maps {
        let fills: Vec<String> = layer(&f.svg, "marks").lines().filter_map(|l| attr(l, "fill")).collect();
        let values: Vec<String> = texts(layer(&f.svg, "labels"));
        assert_eq!(fills.len(), values.len());
        for (v, c) in values.into_iter().zip(fills) {
            let seen = colour_of.entry(v.clone()).or_insert_with(|| c.clone());
            assert_eq!(*seen, c, "share {v}% drawn in two colours");
        }
    }
}

/// `--plot` onto an existing file: refused in one line, before anything is written; the file is kept.
#[test]
fn plot_keeps_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("mine.svg");
    std::fs::write(&svg, "mine").unwrap();
    let out = gpumodel()
        .current_dir(root())
        .args(["predict", "--sweep", "warps", "--format", "json", "--plot"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mine.svg") && err.contains("already exists"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), "mine", "the existing file is kept");
    // The same rule as `report`: --force replaces it.
    for cmd in [
        &["predict", "--sweep", "warps", "--format", "json"][..],
        &["split", "datasets/examples/split/peach_table_vii.toml"][..],
    ] {
        std::fs::write(&svg, "mine").unwrap();
        let out =
            gpumodel().current_dir(root()).args(cmd).arg("--plot").arg(&svg).arg("--force").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(
            std::fs::read_to_string(&svg).unwrap().starts_with("<svg"),
            "{cmd:?}: --force replaced the file"
        );
    }
}

#[test]
fn predict_marks_one_segment_per_component_and_one_point_per_sweep_step() {
    let p = run(&["predict", "--warps", "32", "--format", "json"]);
    let v: Value = serde_json::from_str(&p).unwrap();
    let figs = figures("predict.json", &p);
    let detail = &v["prediction"]["detail"];
    let nonzero = detail["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["time_s"].as_f64().unwrap() > 0.0)
        .count();
    // One segment per component with time, and one for the pipeline fill the model adds.
    let fill = detail["timing"]["fill_s"].as_f64().unwrap();
    assert!(fill > 0.0, "the example kernel has a pipeline fill");
    assert_eq!(marks(&figs, "predict-components"), nonzero + 1);
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
    // Every clock pair once per objective, at that objective's share.
    assert_eq!(marks(&figs, "split-pareto"), len(&v["cells"]) * len(&v["objectives"]));
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

/// A result with nothing to plot (`cluster`, `counters`, …) has its fields in the page as tables; a file
/// that is not JSON is refused in one line that names it and what was expected.
#[test]
fn every_command_s_result_has_a_place_and_a_file_that_is_not_json_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.json");
    std::fs::write(&cluster, run(&["cluster", "--format", "json"])).unwrap();
    let counters = dir.path().join("counters.json");
    std::fs::write(&counters, run(&["counters", "--chip", "GH100", "--format", "json"])).unwrap();
    let page = dir.path().join("r.html");
    let a = gpumodel().arg("report").arg(&cluster).arg(&counters).arg("--out").arg(&page).output().unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let out = String::from_utf8_lossy(&a.stdout);
    assert!(out.contains("0 figures and ") && out.contains("tables from 2 result file(s)"), "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("`gpumodel cluster`: nothing to plot")
            && html.contains("`gpumodel counters`: nothing to plot")
    );
    // The chip and one of its model inputs, as the command printed them.
    assert!(
        html.contains("<td>chip</td><td>GH100</td>") && html.contains("<caption>inputs</caption>"),
        "{html}"
    );

    let notjson = dir.path().join("notes.json");
    std::fs::write(&notjson, "not json").unwrap();
    let a =
        gpumodel().arg("report").arg(&notjson).arg("--out").arg(dir.path().join("n.html")).output().unwrap();
    assert!(!a.status.success());
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(err.contains("notes.json") && err.contains("not JSON") && err.contains("expected"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
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
    // `-o`, as every other command that writes a file takes it.
    let short = dir.path().join("short.html");
    gpumodel().arg("report").arg(&json).arg("-o").arg(&short).assert().success();
    assert!(std::fs::read_to_string(&short).unwrap().starts_with("<!DOCTYPE html>"));

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
    // The trace's counters, from its sidecar; two names with equal samples (the scripted GPU writes
    // exec_inst as a copy of inst_executed) share one panel, so each distinct series is drawn once.
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(csv.with_extension("json")).unwrap()).unwrap();
    let names: Vec<&str> = meta["counters"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let column = |name: &str| -> Vec<String> {
        let i = header.iter().position(|h| *h == name).unwrap();
        text.lines().skip(1).map(|l| l.split(',').nth(i).unwrap().to_string()).collect()
    };
    let mut distinct: Vec<Vec<String>> = names.iter().map(|n| column(n)).collect();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() < names.len(), "the scripted trace has two equal counters: {names:?}");
    let trace = &sec.figures[0].svg;
    let counter_panels = layer(trace, "frame").lines().filter(|l| l.trim_end().ends_with("(/s)")).count();
    assert_eq!(counter_panels, distinct.len(), "one panel per distinct counter series");
    assert!(!trace.contains("the 0 kernel launches"), "a trace without launches claims none as bands");
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
    let args = ["train", "--models", "physical,mlr,mlrplus", "--folds", "0", "--group-folds", "0"];
    let json = run(&[&args[..], &["--format", "json"]].concat());
    let v: Value = serde_json::from_str(&json).unwrap();
    let with = len(&v["held_out_uncertainty"]["models"]);
    assert_eq!(with, 3);
    assert_eq!(highlights(&json), 3 * with);
    let json = run(&[&args[..], &["--format", "json", "--bootstrap", "0"]].concat());
    assert_eq!(highlights(&json), 0);
}

/// `predict --profile` with a clock model over (core, memory) pairs (trained from a suite over a 2 × 2 grid
/// on the scripted GPU): one curve per memory clock in every panel, each in the legend, every pair marked
/// once, and each optimum labelled with its pair. Counted from the JSON's points.
#[test]
fn a_pair_sweep_draws_one_curve_per_memory_clock_and_labels_optima_with_their_pair() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let in_dir = |args: &[&str]| {
        let out = gpumodel().current_dir(d).env("GPUMODEL_FAKE_GPU", "1").args(args).output().unwrap();
        assert!(out.status.success(), "gpumodel {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let grid = "1410:1215,1410:800,1110:1215,1110:800";
    in_dir(&["collect", "--suite", "--min-seconds", "0.01", "--out", "s.csv", "--clocks", grid]);
    in_dir(&["train", "--data", "s.csv.profiles.csv", "--no-test", "--out-dir", "models"]);
    let rows = std::fs::read_to_string(d.join("s.csv.profiles.csv")).unwrap();
    let one: String = rows.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(d.join("one.csv"), one).unwrap();
    let json = in_dir(&["predict", "--profile", "one.csv", "--models-dir", "models", "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let points = v["points"].as_array().unwrap();
    let mut mems: Vec<i64> = points.iter().map(|p| p["mem_mhz"].as_f64().unwrap() as i64).collect();
    mems.sort_unstable();
    mems.dedup();
    assert_eq!((points.len(), mems.len()), (4, 2), "{json}");

    let figs = figures("profile.json", &json);
    let f = figs.iter().find(|f| f.id == "predict-profile").expect("the sweep figure");
    // Five panels (time, power, E, E·D, E·D²), one curve per memory clock, every pair marked in each.
    assert_eq!(layer(&f.svg, "lines").matches("<polyline").count(), 5 * mems.len());
    assert_eq!(f.marks, 5 * points.len());
    for m in &mems {
        let entry = format!("memory {m} MHz");
        assert!(f.svg.lines().any(|l| l.trim() == entry), "no legend entry {entry:?}");
    }
    for (objective, key) in [("least energy", "energy"), ("least E·D", "ed"), ("least E·D²", "ed2")] {
        let p = &points[v["optima"][key].as_u64().unwrap() as usize];
        let label = format!(
            "{objective}: {} / {} MHz",
            p["core_mhz"].as_f64().unwrap(),
            p["mem_mhz"].as_f64().unwrap()
        );
        assert!(f.svg.lines().any(|l| l.trim() == label), "no label {label:?}");
    }
}
