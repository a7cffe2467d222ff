//! A templated C++ kernel name — `void f<int, 2>(float*, int)`, with commas, angle brackets, spaces and
//! parentheses — goes through `import ncu` → training table → kernel profile → `predict --format csv`, and
//! through `import ncu` → training table (with a power column) → `train --format csv|json|table|markdown`,
//! and comes back intact. Hand-written CSV writers without quoting split such names into several columns;
//! these tests guard every hop a real ncu export takes.

mod common;

use common::{Import, gpumodel, profiler_fixture};
use std::path::{Path, PathBuf};

const NAME: &str = "void f<int, 2>(float*, int)";

/// The hand-written ncu raw export with its first kernel renamed to [`NAME`] (ncu quotes every cell, so
/// the name's commas stay inside one field).
fn ncu_export_with_templated_name(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(profiler_fixture("ncu_raw_ga102.csv")).unwrap();
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
    let o = Import::new("ncu", &export).out(&table).profiles(&profiles).arg("--format").arg("json").ok();
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["command"], "import");
    let kernels = column(&std::fs::read(&table).unwrap(), "kernel");
    assert!(kernels.iter().any(|k| k == NAME), "{kernels:?}");

    // Without --out the table goes to stdout, read back the same way.
    let o = Import::new("ncu", &export).ok();
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

/// `train` takes part once the imported table has a power column. An ncu export has none (ncu measures
/// counters and time, not power), so the power of each imported launch is written here by hand — as a user
/// who measured it separately would add it — and the table becomes `train`'s held-out test set: train's
/// per-row and per-application results and its worst-kernel column then name the imported kernels. The
/// training table is twelve synthetic kernels with a linear power law, also written here; only the names
/// are checked, not the fit. (`gpumodel merge` does not help: it joins collector traces of one program per
/// host, which carry no kernel names in their rows.)
#[test]
fn templated_kernel_name_survives_import_table_and_train() {
    let dir = tempfile::tempdir().unwrap();
    let export = ncu_export_with_templated_name(dir.path());
    let imported = dir.path().join("imported.csv");
    Import::new("ncu", &export).out(&imported).ok();

    // The imported table plus a power column (hand-chosen watts, one per launch).
    let mut r = csv::Reader::from_path(&imported).unwrap();
    let test = dir.path().join("test.csv");
    let mut w = csv::Writer::from_path(&test).unwrap();
    let mut head = r.headers().unwrap().clone();
    head.push_field("power_w");
    w.write_record(&head).unwrap();
    let watts = ["60", "150", "155"];
    let records: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), watts.len(), "the fixture changed: update this test");
    for (mut rec, p) in records.into_iter().zip(watts) {
        rec.push_field(p);
        w.write_record(&rec).unwrap();
    }
    w.flush().unwrap();

    // Twelve synthetic kernels, two rows each: power = 50 W + 2 nJ per instruction + 10 nJ per load.
    let train = dir.path().join("train.csv");
    let mut w = csv::Writer::from_path(&train).unwrap();
    w.write_record(["kernel", "exec_inst_per_s", "G_load_per_s", "power_w"]).unwrap();
    for i in 0..12 {
        for j in 0..2 {
            let exec = 1e10 * (1 + i) as f64 + 1e9 * j as f64;
            let load = 1e8 * (1 + (i * 7) % 5) as f64;
            let power = 50.0 + 2e-9 * exec + 1e-8 * load;
            w.write_record([format!("synthetic_{i}"), exec.to_string(), load.to_string(), power.to_string()])
                .unwrap();
        }
    }
    w.flush().unwrap();
    let features = dir.path().join("features.toml");
    std::fs::write(
        &features,
        "name = \"names\"\ninputs = [\"exec_inst_per_s\", \"G_load_per_s\"]\ntarget = \"power_w\"\n\
         group = \"kernel\"\nmlr_base = [\"exec_inst_per_s\", \"G_load_per_s\"]\n",
    )
    .unwrap();

    let run = |format: &str| {
        let o = gpumodel()
            .args(["train", "--data"])
            .arg(&train)
            .args(["--import", "table", "--test"])
            .arg(&test)
            .arg("--features")
            .arg(&features)
            .args(["--models", "mlr", "--folds", "0", "--group-folds", "0", "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "train --format {format}: {}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let sgemm = "void sgemm_kernel<128, 8>(const float *, const float *, float *, int, int, int)";
    let worst = column(&run("csv"), "worst_kernel");
    assert!(!worst.is_empty() && worst.iter().all(|k| k == NAME || k == sgemm), "{worst:?}");
    let v: serde_json::Value = serde_json::from_slice(&run("json")).unwrap();
    let names = |key: &str| -> Vec<String> {
        v[key].as_array().unwrap().iter().map(|r| r["kernel"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names("rows"), [NAME, sgemm, sgemm]);
    assert_eq!(names("applications"), [NAME, sgemm]);
    let table_text = String::from_utf8(run("table")).unwrap();
    assert!(table_text.contains(NAME), "{table_text}");
    let md = String::from_utf8(run("markdown")).unwrap();
    assert!(md.contains(NAME), "{md}");
}
