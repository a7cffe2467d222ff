//! The report as a person sees it: headless Chromium (Debian package `chromium`) loads a report built from
//! predict, predict --sweep, split, validate and train results. Checked: no console message (a blocked fetch
//! or a script error would print one), no request from the page in Chromium's network log, every figure in
//! the DOM with as many marks as the JSON has rows / kernels / cells, and a screenshot that is not blank.
//!
//! Without Chromium the test is skipped with a message, unless GPUMODEL_REQUIRE_CHROMIUM=1 (scripts/test
//! sets it and installs the package), where a missing browser fails it.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

const CHROMIUM: &str = "/usr/bin/chromium";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> String {
    let out = Command::cargo_bin("gpumodel").unwrap().current_dir(root()).args(args).output().unwrap();
    assert!(out.status.success(), "gpumodel {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn chromium_or_skip() -> Option<&'static str> {
    if Path::new(CHROMIUM).exists() {
        return Some(CHROMIUM);
    }
    assert!(
        std::env::var("GPUMODEL_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
        "{CHROMIUM} is missing but GPUMODEL_REQUIRE_CHROMIUM=1: install it with `apt-get install -y chromium`"
    );
    eprintln!("skipped: {CHROMIUM} is missing (apt-get install -y chromium)");
    None
}

/// Runs headless Chromium with a fresh profile and no way out to the network.
fn chromium(bin: &str, profile: &Path, args: &[String]) -> std::process::Output {
    std::process::Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .unwrap()
}

/// Opening tags inside each `<g class="marks">` of the DOM, in document order.
fn marks_in_dom(dom: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in dom.split("<g class=\"marks\">").skip(1) {
        let body = &part[..part.find("</g>").unwrap_or(part.len())];
        out.push(body.matches('<').count() - body.matches("</").count());
    }
    out
}

fn len(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

#[test]
fn chromium_loads_the_report_offline_with_every_figure_and_its_marks() {
    let Some(bin) = chromium_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let kernels = "BlackScholes,histogram,transpose";
    let inputs: Vec<(&str, String)> = vec![
        (
            "train.json",
            run(&[
                "train",
                "--models",
                "bpann,physical,mlr,mlrplus",
                "--epochs",
                "100",
                "--restarts",
                "1",
                "--folds",
                "0",
                "--group-folds",
                "3",
                "--format",
                "json",
            ]),
        ),
        (
            "validate.json",
            run(&[
                "validate",
                "--data",
                "nvdvfs-gtx1080ti",
                "--arch",
                "gtx1080ti",
                "--kernels",
                kernels,
                "--baseline",
                "wang-chu-2018",
                "--rows",
                "--format",
                "json",
            ]),
        ),
        ("sweep.json", run(&["predict", "--sweep", "warps", "--format", "json"])),
        ("split.json", run(&["split", "datasets/examples/split/peach_table_vii.toml", "--format", "json"])),
    ];
    let mut expected = Vec::new();
    let mut paths = Vec::new();
    for (name, json) in &inputs {
        let v: Value = serde_json::from_str(json).unwrap();
        match *name {
            "train.json" => {
                let models = v["models"].as_object().unwrap();
                let evals = ["group-kfold", "random-kfold", "held-out"];
                let n = evals.iter().filter(|e| models.values().any(|m| m.get(**e).is_some())).count();
                expected.push(models.len() * n);
                let held = models.values().any(|m| m.get("held-out").is_some());
                let key = if held { "held-out" } else { "group-kfold" };
                expected.push(2 * models.values().filter(|m| m.get(key).is_some()).count());
                // Per-row figures: the default (chosen), the peer and the paper's BP-ANN, where predicted.
                let rows = v["rows"].as_array().unwrap();
                let mut shown: Vec<String> = Vec::new();
                for n in [&v["selection"]["chosen"], &v["peer"], &Value::from("bpann")] {
                    if let Some(n) = n.as_str()
                        && rows[0]["predicted_w"].get(n).is_some()
                        && !shown.iter().any(|s| s == n)
                    {
                        shown.push(n.to_string());
                    }
                }
                assert!(!shown.is_empty(), "train's rows carry predictions");
                expected.push(rows.len() * shown.len());
                let apps = v["applications"].as_array().unwrap();
                expected.push(
                    apps.iter()
                        .map(|a| shown.iter().filter(|m| a["models"].get(m.as_str()).is_some()).count())
                        .sum(),
                );
                let mut cells: Vec<(String, String)> =
                    rows.iter().map(|r| (r["core_mhz"].to_string(), r["mem_mhz"].to_string())).collect();
                cells.sort();
                cells.dedup();
                expected.push(cells.len());
            }
            "validate.json" => {
                expected.push(len(&v["per_row"]));
                let k = v["per_kernel"].as_array().unwrap();
                expected.push(k.iter().map(|x| 2 + x["baseline_mape_pct"].as_object().unwrap().len()).sum());
                expected.push(k.iter().map(|x| len(&x["choices"])).sum());
            }
            "sweep.json" => expected.push(len(&v["sweep"]["points"]) * (2 + len(&v["sweep"]["optima"]))),
            _ => expected.extend([
                len(&v["cells"]) * len(&v["objectives"]),
                len(&v["cells"]),
                len(&v["cells"]),
            ]),
        }
        let p = dir.path().join(name);
        std::fs::write(&p, json).unwrap();
        paths.push(p);
    }
    let html = dir.path().join("out/report.html");
    let mut cmd = Command::cargo_bin("gpumodel").unwrap();
    cmd.arg("report").args(&paths).arg("--out").arg(&html).assert().success();

    let url = format!("file://{}", html.display());
    let profile = tempfile::tempdir().unwrap();
    let netlog = dir.path().join("net.json");
    let out = chromium(
        bin,
        profile.path(),
        &[format!("--log-net-log={}", netlog.display()), "--dump-dom".into(), url.clone()],
    );
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    // Each figure's caption is drawn once, in its SVG, not repeated below it (the sweep's caption starts so).
    assert_eq!(dom.matches("Diamonds mark each").count(), 1, "the sweep's caption is not shown exactly once");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");

    // Chromium's own services (update checks …) show in the log with no page origin; anything the page
    // asked for would carry one.
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap()).unwrap();
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].as_i64().unwrap();
    let from_page: Vec<&Value> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_i64() == Some(start))
        // Begin events carry the URL and the initiator; end events only the result.
        .filter(|e| e["params"].get("url").is_some())
        .filter(|e| e["params"]["initiator"].as_str() != Some("not an origin"))
        .collect();
    assert!(from_page.is_empty(), "requests from the page: {from_page:#?}");

    assert_eq!(dom.matches("<figure").count(), expected.len(), "every figure is in the DOM");
    assert_eq!(marks_in_dom(&dom), expected, "marks per figure = rows / kernels / cells in the JSON");

    let png = dir.path().join("shot.png");
    let out = chromium(
        bin,
        profile.path(),
        &[format!("--screenshot={}", png.display()), "--window-size=1100,2400".into(), url],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = &buf[..info.buffer_size()];
    let channels = info.line_size / info.width as usize;
    // Not blank: a fair share of pixels is clearly darker than the white page.
    let dark =
        px.chunks(channels).filter(|p| p.iter().take(3).map(|&c| c as u32).sum::<u32>() < 3 * 160).count();
    let total = (info.width * info.height) as usize;
    assert!(dark * 200 > total, "only {dark} of {total} pixels are ink: the screenshot looks blank");
    if let Ok(keep) = std::env::var("GPUMODEL_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }

    // Every text of every figure inside its figure, as Chromium lays it out with its own font: titles,
    // legends, captions, axis and cell labels. The report forbids scripts, so a copy of the page without its
    // Content-Security-Policy, with the component chart and a split fit's figures added, measures them.
    let more = [
        ("predict.json", run(&["predict", "--warps", "32", "--format", "json"])),
        (
            "fit.json",
            run(&[
                "split",
                "fit",
                "datasets/examples/split/peach_table_vii_gpu_fit.toml",
                "--format",
                "json",
            ]),
        ),
    ];
    for (name, json) in &more {
        let p = dir.path().join(name);
        std::fs::write(&p, json).unwrap();
        paths.push(p);
    }
    let all = dir.path().join("out/all.html");
    Command::cargo_bin("gpumodel")
        .unwrap()
        .arg("report")
        .args(&paths)
        .arg("--out")
        .arg(&all)
        .assert()
        .success();
    let page = std::fs::read_to_string(&all).unwrap();
    let csp_start = page.find("<meta http-equiv=\"Content-Security-Policy\"").expect("the page's CSP");
    let csp_end = csp_start + page[csp_start..].find('>').unwrap() + 1;
    let harness = format!("{}{}", &page[..csp_start], &page[csp_end..]).replace("</body>", MEASURE_TEXTS);
    let harness_path = dir.path().join("out/measure.html");
    std::fs::write(&harness_path, harness).unwrap();
    let out =
        chromium(bin, profile.path(), &["--dump-dom".into(), format!("file://{}", harness_path.display())]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let report = dom.split("<pre id=\"extents\">").nth(1).and_then(|r| r.split("</pre>").next());
    let report = report.expect("the measuring script ran");
    let (checked, outside) = report.split_once('\n').unwrap_or((report, ""));
    assert!(checked.trim().parse::<usize>().unwrap() > 100, "texts measured: {checked}");
    assert!(
        outside.trim().is_empty(),
        "texts outside their figure (figure: text [left, right, top, bottom overflow px]):\n{outside}"
    );
}

/// Appended to the report's body: for each figure's SVG, every non-empty `<text>` whose box (as laid out,
/// rotation included) reaches more than 1 px past the SVG's box; printed into `<pre id="extents">` after
/// the count of texts measured.
const MEASURE_TEXTS: &str = r#"<script>
const out = []; let n = 0;
for (const svg of document.querySelectorAll("figure svg")) {
  const b = svg.getBoundingClientRect();
  const k = b.width / svg.viewBox.baseVal.width;
  for (const t of svg.querySelectorAll("text")) {
    if (!t.textContent.trim()) continue;
    n++;
    const r = t.getBoundingClientRect();
    const over = [b.left - r.left, r.right - b.right, b.top - r.top, r.bottom - b.bottom].map(v => Math.round(v / k));
    if (over.some(v => v > 1)) out.push(svg.id + ": " + JSON.stringify(t.textContent.trim()) + " " + JSON.stringify(over));
  }
}
const pre = document.createElement("pre"); pre.id = "extents";
pre.textContent = n + "\n" + out.join("\n");
document.body.appendChild(pre);
</script>
</body>"#;
