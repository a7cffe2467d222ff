//! `gpumodel predict --calibration FILE` applies the timing model's structure a calibration file records
//! (`shared_overlap`, with the `fill` and `stores` it implies; format versions 5 and 6): with bank-conflict
//! replays overlapping issue, a replay-heavy kernel is predicted faster than with the additive model and
//! the same factors. Older files are refused with the command that writes a new one.

mod common;
use common::gpumodel;

/// A calibration file written by hand (factors 1, so only the structure differs) of this version with
/// these structure lines.
fn calibration(version: u32, structure: &str) -> String {
    format!(
        "format_version = {version}\nkind = \"gpumodel-time-calibration\"\n\
         form = \"T = ((a_memory*M)^p + (a_compute*C + a_shared*S)^p + (a_l2*L)^p)^(1/p) + sync\"\n\
         arch = \"gtx1080ti\"\n{structure}\n[dataset]\nname = \"hand\"\npath = \"hand.csv\"\nsha256 = \"00\"\n\
         rows = 1\nkernels = 1\n\n[coefficients]\na_memory = 1.0\na_compute = 1.0\na_shared = 1.0\n\
         a_l2 = 1.0\np = 8.0\n\n[fit]\nout_of_fold_mape_pct = 10.0\nin_sample_mape_pct = 9.0\n\
         uncalibrated_mape_pct = 12.0\n"
    )
}

/// The default model's structure as a version-5 file records it.
const ADDITIVE: &str = "shared_overlap = \"additive\"\nfill = \"core-clock\"\nstores = \"per-l2-write\"\n";
/// `validate`'s structural alternative (`TimingConfig::structural`) as a version-5 file records it.
const OVERLAP: &str =
    "shared_overlap = \"replays-overlap-issue\"\nfill = \"default-core-clock\"\nstores = \"per-l2-write\"\n";

/// `predict --format json` of an example kernel with a calibration, at the default clocks or at `core`
/// MHz core and 5500 MHz memory.
fn predict_at(kernel: &str, cal: &std::path::Path, core: Option<&str>) -> serde_json::Value {
    let mut cmd = gpumodel();
    cmd.args(["predict", "--arch", "gtx1080ti", "--kernel", kernel, "--format", "json"]);
    if let Some(core) = core {
        cmd.args(["--core-mhz", core, "--mem-mhz", "5500"]);
    }
    let out = cmd.arg("--calibration").arg(cal).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn predict(kernel: &str, cal: &std::path::Path) -> serde_json::Value {
    predict_at(kernel, cal, None)
}

/// reduction (stores partly not counted as DRAM writes: 37 471 DRAM write sectors, 65 542 L2 write
/// transactions) at `core` MHz core and 5500 MHz memory with this calibration.
fn reduction_at(cal: &std::path::Path, core: &str) -> serde_json::Value {
    predict_at("reduction", cal, Some(core))
}

/// Writes `text` to `dir/name` and gives its path.
fn write(dir: &tempfile::TempDir, name: &str, text: String) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_saved_replay_overlap_structure_speeds_up_a_replay_heavy_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let additive = write(&dir, "additive.toml", calibration(5, ADDITIVE));
    let overlap = write(&dir, "overlap.toml", calibration(5, OVERLAP));
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
    // reduction has no replays: the structure changes nothing.
    assert_eq!(time(&predict("reduction", &overlap)), time(&predict("reduction", &additive)));
}

/// The structural alternative a `replays-overlap-issue` file names also takes each wave's pipeline fill
/// at the DRAM latency's time at the default core clock:
/// with it, the fill does not shorten when the core clock rises; with the additive model it does.
#[test]
fn a_saved_structural_alternative_keeps_the_fill_time_over_the_core_clock() {
    let dir = tempfile::tempdir().unwrap();
    let additive = write(&dir, "additive.toml", calibration(5, ADDITIVE));
    let overlap = write(&dir, "overlap.toml", calibration(5, OVERLAP));
    let fill = |cal: &std::path::Path, core: &str| {
        reduction_at(cal, core)["prediction"]["detail"]["timing"]["fill_s"].as_f64().unwrap()
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
    let table = |name: &str, structure: &str| {
        let p = dir.path().join(format!("{name}.toml"));
        std::fs::write(&p, calibration(5, structure)).unwrap();
        let out = gpumodel()
            .args(["predict", "--arch", "gtx1080ti", "--kernel", "matrixmul", "--calibration"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let said = "replays overlapping issue";
    let (o, a) = (table("overlap", OVERLAP), table("additive", ADDITIVE));
    assert!(common::logical_lines(&o).iter().any(|l| l.starts_with("time") && l.contains(said)), "{o}");
    assert!(!a.contains(said), "{a}");
}

/// Files of format versions 3 and 4 were fitted to an earlier timing model: `predict` refuses them in one
/// line that says how to write a new one, never predicting with factors that mean something else now.
/// So is a file whose fill or stores are not the ones its `shared_overlap` implies.
#[test]
fn older_calibrations_and_foreign_structures_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        write(&dir, "v3.toml", calibration(3, "")),
        write(&dir, "v4.toml", calibration(4, "shared_overlap = \"replays-overlap-issue\"\n")),
        write(
            &dir,
            "v5_old_stores.toml",
            calibration(
                5,
                "shared_overlap = \"additive\"\nfill = \"core-clock\"\nstores = \"per-dram-write\"\n",
            ),
        ),
    ];
    for (p, said) in files.iter().zip(["version 3", "version 4", "per-dram-write"]) {
        let out = gpumodel()
            .args(["predict", "--arch", "gtx1080ti", "--kernel", "reduction", "--calibration"])
            .arg(p)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(said) && err.contains("--save-calibration"), "{err}");
    }
}

/// A version-5 file without one of its structure fields is refused in one line that says what to do,
/// never read as some default structure.
#[test]
fn a_version_5_file_without_its_fill_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nofill.toml");
    std::fs::write(
        &p,
        calibration(5, "shared_overlap = \"replays-overlap-issue\"\nstores = \"per-l2-write\"\n"),
    )
    .unwrap();
    let out = gpumodel()
        .args(["predict", "--arch", "gtx1080ti", "--kernel", "reduction", "--calibration"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("fill is missing") && err.contains("--save-calibration"), "{err}");
}

/// A version-6 file whose factors the keep rule dropped (`validate --save-calibration` where they do not
/// beat the structure out of fold) predicts with its structure alone: the time is that structure's
/// uncalibrated model time, not the plain model's, and nothing is called calibrated.
#[test]
fn a_structure_alone_file_predicts_with_its_structure_uncalibrated() {
    let dir = tempfile::tempdir().unwrap();
    let with_factors = calibration(5, OVERLAP);
    let alone = with_factors
        .replace("format_version = 5", "format_version = 6")
        .replace(
            "T = ((a_memory*M)^p + (a_compute*C + a_shared*S)^p + (a_l2*L)^p)^(1/p) + sync",
            "T = the timing model with the structure below, no factors",
        )
        .replace(
            "[coefficients]\na_memory = 1.0\na_compute = 1.0\na_shared = 1.0\na_l2 = 1.0\np = 8.0\n\n",
            "",
        );
    assert!(!alone.contains("coefficients"), "{alone}");
    let alone = write(&dir, "alone.toml", alone);
    let factors = write(&dir, "factors.toml", with_factors);
    let v = predict("matrixmul", &alone);
    let p = &v["prediction"];
    let time = p["time_s"].as_f64().unwrap();
    assert_eq!(time, p["detail"]["timing"]["time_s"].as_f64().unwrap());
    assert_eq!(p["detail"]["calibrated"], false);
    // The file was applied (its structure), its factors were not: scripts can tell from `factors`.
    assert_eq!((&v["calibration"]["applied"], &v["calibration"]["factors"]), (&true.into(), &false.into()));
    let f = predict("matrixmul", &factors);
    assert_eq!(
        (&f["calibration"]["factors"], &f["prediction"]["detail"]["calibrated"]),
        (&true.into(), &true.into())
    );
    // The structure is the file's: the replays overlap (the plain model adds them), and the factors of a
    // version-5 file with the same structure give another time.
    let plain = gpumodel()
        .args(["predict", "--arch", "gtx1080ti", "--kernel", "matrixmul", "--format", "json"])
        .output()
        .unwrap();
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(time < plain["prediction"]["time_s"].as_f64().unwrap(), "{time} vs {plain}");
    assert_ne!(time, predict("matrixmul", &factors)["prediction"]["time_s"].as_f64().unwrap());
    let out = gpumodel()
        .args(["predict", "--arch", "gtx1080ti", "--kernel", "matrixmul", "--calibration"])
        .arg(&alone)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("the structure alone") && !s.contains("calibrated by") && !s.contains("a_l2"), "{s}");
}
