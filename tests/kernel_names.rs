//! A templated C++ kernel name — `void f<int, 2>(float*, int)`, with commas, angle brackets, spaces and
//! parentheses — goes through `import ncu` → training table → kernel profile → `predict --format csv` and
//! comes back intact. Hand-written CSV writers without quoting split such names into several columns; this
//! test guards every hop a real ncu export takes.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

const NAME: &str = "void f<int, 2>(float*, int)";

fn gpumodel() -> Command {
    Command::cargo_bin("gpumodel").unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("collect/tests/fixtures").join(name)
}

/// The hand-written ncu raw export with its first kernel renamed to [`NAME`] (ncu quotes every cell, so
/// the name's commas stay inside one field).
fn ncu_export_with_templated_name(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture("ncu_raw_ga102.csv")).unwrap();
    let old = "vecAdd(const float *, const float *, float *, int)";
    assert!(text.contains(old), "the fixture changed: update this test");
    let p = dir.join("ncu.csv");
    std::fs::write(&p, text.replace(old, NAME)).unwrap();
    p
}

fn column(csv_text: &[u8], name: &str) -> Vec<String> {
    let mut r = csv::Reader::from_reader(csv_text);
    let i = r.headers().unwrap().iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    r.records().map(|rec| rec.unwrap()[i].to_string()).collect()
}

#[test]
fn templated_kernel_name_survives_import_table_and_predict_csv() {
    let dir = tempfile::tempdir().unwrap();
    let export = ncu_export_with_templated_name(dir.path());
    let table = dir.path().join("table.csv");
    let profiles = dir.path().join("profiles");

    // import ncu → training table (written by csv::Writer) and kernel profiles.
    let o = gpumodel()
        .args(["import", "ncu"])
        .arg(&export)
        .arg("--out")
        .arg(&table)
        .arg("--profiles")
        .arg(&profiles)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["command"], "import");
    let kernels = column(&std::fs::read(&table).unwrap(), "kernel");
    assert!(kernels.iter().any(|k| k == NAME), "{kernels:?}");

    // Without --out the table goes to stdout, read back the same way.
    let o = gpumodel().args(["import", "ncu"]).arg(&export).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(column(&o.stdout, "kernel").iter().any(|k| k == NAME));

    // The kernel's profile carries the name; predict prints it in CSV, JSON and the table.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&profiles).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let profile = files
        .iter()
        .find(|f| std::fs::read_to_string(f).unwrap().contains("f<int, 2>"))
        .expect("a profile for the templated kernel");
    let predict = |format: &str| {
        let o = gpumodel()
            .args(["predict", "--kernel"])
            .arg(profile)
            .args(["--model", "titanx-bpann", "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    assert_eq!(column(&predict("csv"), "kernel"), [NAME]);
    let v: serde_json::Value = serde_json::from_slice(&predict("json")).unwrap();
    assert_eq!(v["kernel"], NAME);
    let table_text = String::from_utf8(predict("table")).unwrap();
    assert!(table_text.contains(NAME), "{table_text}");
    let md = String::from_utf8(predict("markdown")).unwrap();
    assert!(md.contains(NAME), "{md}");
}
