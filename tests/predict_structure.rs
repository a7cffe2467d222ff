//! `gpumodel predict --calibration FILE` applies the timing model's structure a calibration file records
//! (`shared_overlap`, format version 4): with bank-conflict replays overlapping issue, a replay-heavy
//! kernel is predicted faster than with the additive model and the same factors.

mod common;
use common::gpumodel;

/// A calibration file written by hand (factors 1, so only the structure differs), version 4 with the
/// given structure, or version 3 (no structure: additive).
fn calibration(version: u32, shared_overlap: Option<&str>) -> String {
    let structure = shared_overlap.map(|s| format!("shared_overlap = \"{s}\"\n")).unwrap_or_default();
    format!(
        "format_version = {version}\nkind = \"gpumodel-time-calibration\"\n\
         form = \"T = ((a_memory*M)^p + (a_compute*C + a_shared*S)^p + (a_l2*L)^p)^(1/p) + sync\"\n\
         arch = \"gtx1080ti\"\n{structure}\n[dataset]\nname = \"hand\"\npath = \"hand.csv\"\nsha256 = \"00\"\n\
         rows = 1\nkernels = 1\n\n[coefficients]\na_memory = 1.0\na_compute = 1.0\na_shared = 1.0\n\
         a_l2 = 1.0\np = 8.0\n\n[fit]\nout_of_fold_mape_pct = 10.0\nin_sample_mape_pct = 9.0\n\
         uncalibrated_mape_pct = 12.0\n"
    )
}

fn predict(kernel: &str, cal: &std::path::Path) -> serde_json::Value {
    let out = gpumodel()
        .args(["predict", "--arch", "gtx1080ti", "--kernel", kernel, "--format", "json", "--calibration"])
        .arg(cal)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_saved_replay_overlap_structure_speeds_up_a_replay_heavy_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let additive = write("additive.toml", calibration(4, Some("additive")));
    let overlap = write("overlap.toml", calibration(4, Some("replays-overlap-issue")));
    let v3 = write("v3.toml", calibration(3, None));
    // matrixmul: 1 048 576 bank-conflict replays (datasets/examples/kernels/matrixmul.toml).
    let (a, o) = (predict("matrixmul", &additive), predict("matrixmul", &overlap));
    let time = |v: &serde_json::Value| v["prediction"]["time_s"].as_f64().unwrap();
    let hidden = o["prediction"]["detail"]["timing"]["replays_hidden_s"].as_f64().unwrap();
    assert!(hidden > 0.0, "{o}");
    assert!(time(&o) < time(&a), "overlap {} vs additive {}", time(&o), time(&a));
    // The breakdown is the model's in both; only how the SM side combines differs.
    assert_eq!(
        o["prediction"]["detail"]["timing"]["components_s"],
        a["prediction"]["detail"]["timing"]["components_s"]
    );
    // A version-3 file is the additive model it was fitted to.
    assert_eq!(time(&predict("matrixmul", &v3)), time(&a));
    // reduction has no replays: the structure changes nothing.
    assert_eq!(time(&predict("reduction", &overlap)), time(&predict("reduction", &additive)));
}

/// The structural alternative a `replays-overlap-issue` file names also takes each wave's pipeline fill
/// at the DRAM latency's time at the default core clock (BENCHMARKS.md, issue 14, session 8, round 2):
/// with it, the fill does not shorten when the core clock rises; with the additive model it does.
#[test]
fn a_saved_structural_alternative_keeps_the_fill_time_over_the_core_clock() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let additive = write("additive.toml", calibration(4, Some("additive")));
    let overlap = write("overlap.toml", calibration(4, Some("replays-overlap-issue")));
    let fill = |cal: &std::path::Path, core: &str| {
        let out = gpumodel()
            .args(["predict", "--arch", "gtx1080ti", "--kernel", "reduction", "--format", "json"])
            .args(["--core-mhz", core, "--mem-mhz", "5500", "--calibration"])
            .arg(cal)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["prediction"]["detail"]["timing"]["fill_s"].as_f64().unwrap()
    };
    let (o_low, o_high) = (fill(&overlap, "1600"), fill(&overlap, "2000"));
    assert!(o_low > 0.0 && (o_high / o_low - 1.0).abs() < 1e-12, "{o_low} vs {o_high}");
    let (a_low, a_high) = (fill(&additive, "1600"), fill(&additive, "2000"));
    assert!(a_high < 0.9 * a_low, "{a_low} vs {a_high}");
}

/// The table says which structure "the timing model alone" was: with a replay-overlap calibration it is
/// not the model a plain `predict` gives.
#[test]
fn the_table_names_a_calibration_s_replay_overlap_structure() {
    let dir = tempfile::tempdir().unwrap();
    let table = |structure: &str| {
        let p = dir.path().join(format!("{structure}.toml"));
        std::fs::write(&p, calibration(4, Some(structure))).unwrap();
        let out = gpumodel()
            .args(["predict", "--arch", "gtx1080ti", "--kernel", "matrixmul", "--calibration"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let said = "replays overlapping issue";
    let (o, a) = (table("replays-overlap-issue"), table("additive"));
    assert!(o.lines().any(|l| l.starts_with("time") && l.contains(said)), "{o}");
    assert!(!a.contains(said), "{a}");
}
