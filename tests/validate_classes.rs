//! `gpumodel validate`'s per-bottleneck-class figures, ours beside the peer's, in every output format.

mod common;
use common::gpumodel;

const ARGS: [&str; 8] =
    ["validate", "--data", "nvdvfs-gtx980", "--arch", "gtx980", "--baseline", "wang-chu-2018", "-q"];
/// Kernels of several classes (memory, shared, compute), few enough to keep the runs short.
const KERNELS: &str = "vectorAdd,scalarProd,matrixMulShared,sortingNetworks,BlackScholes,hotspot";

fn run(extra: &[&str]) -> String {
    let out = gpumodel().args(ARGS).args(["--kernels", KERNELS]).args(extra).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// JSON carries each class with ours and the baseline's error; the table and Markdown print the same
/// table; CSV carries it with `--classes`, one line per class whose figures are the JSON's.
#[test]
fn the_per_class_table_is_in_every_format() {
    let v: serde_json::Value = serde_json::from_str(&run(&["--format", "json"])).unwrap();
    let classes = v["per_class"].as_array().unwrap();
    assert!(classes.len() >= 2, "{classes:?}");
    let kernels: u64 = classes.iter().map(|c| c["kernels"].as_u64().unwrap()).sum();
    assert_eq!(kernels, 6);
    for c in classes {
        for key in ["model_mape_pct", "mape_pct"] {
            assert!(c[key].as_f64().unwrap() >= 0.0, "{c}");
        }
        assert!(c["baseline_mape_pct"]["wang-chu-2018"].as_f64().unwrap() >= 0.0, "{c}");
    }
    for format in ["table", "markdown"] {
        let s = run(&["--format", format]);
        assert!(s.contains("per bottleneck class"), "{format}: {s}");
        let header = s
            .lines()
            .find(|l| l.trim_start_matches(['|', ' ']).starts_with("bottleneck"))
            .unwrap_or_else(|| panic!("{format}: no class header in {s}"));
        assert!(header.contains("model MAPE %") && header.contains("wang-chu-2018 MAPE %"), "{header}");
    }
    // CSV holds one table: the per-kernel one by default, the per-class one with --classes.
    let default = run(&["--format", "csv"]);
    assert!(default.starts_with("kernel,"), "{default}");
    let csv = run(&["--format", "csv", "--classes"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "class,kernels,model_mape_pct,calibrated_mape_pct,wang_chu_2018_mape_pct"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), classes.len(), "{csv}");
    for (row, c) in rows.iter().zip(classes) {
        assert_eq!(row[0], c["class"].as_str().unwrap());
        assert_eq!(row[1].parse::<u64>().unwrap(), c["kernels"].as_u64().unwrap());
        let close = |cell: &str, want: &serde_json::Value| {
            let (got, want) = (cell.parse::<f64>().unwrap(), want.as_f64().unwrap());
            assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{cell} vs {want}");
        };
        close(row[2], &c["model_mape_pct"]);
        close(row[3], &c["mape_pct"]);
        close(row[4], &c["baseline_mape_pct"]["wang-chu-2018"]);
    }
    // The table puts the class table first too.
    let s = run(&["--classes"]);
    let class_at = s.find("per bottleneck class").unwrap();
    assert!(class_at < s.find("per kernel").unwrap(), "{s}");
}

/// `--classes` and `--rows` each choose the table CSV carries: asking for both is one clear error.
#[test]
fn classes_and_rows_together_are_refused() {
    let out = gpumodel().args(ARGS).args(["--kernels", "vectorAdd", "--classes", "--rows"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--classes") && err.contains("--rows"), "{err}");
}
