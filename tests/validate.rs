//! `gpumodel validate` on the real NV-DVFS data (GPUMODEL_DATA_DIR, set by .ci/run to ../shared/datasets).

mod common;
use common::{data_dir, gpumodel};

#[test]
fn gtx1080ti_json_report() {
    let out = gpumodel()
        .args(["validate", "--data", "nvdvfs-gtx1080ti", "--arch", "gtx1080ti", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], 600);
    assert_eq!(v["kernels"], 30);
    assert_eq!(v["per_kernel"].as_array().unwrap().len(), 30);
    let mape = v["mape_pct"].as_f64().unwrap();
    assert!(mape > 0.0 && mape <= 20.0, "{mape}");
    let objs: Vec<&str> =
        v["objectives"].as_array().unwrap().iter().map(|o| o["objective"].as_str().unwrap()).collect();
    assert_eq!(objs, vec!["E", "ED", "ED^2"]);
    assert!(v["method"].to_string().contains("leave-one-kernel-out"));
}

#[test]
fn a_file_path_works_and_the_table_names_the_worst_kernel() {
    let p = data_dir().join("nvdvfs/gtx980-high-dvfs-real-small-workload-Performance-Power.csv");
    let out = gpumodel().args(["validate", "--arch", "gtx980", "--data"]).arg(&p).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("750 rows, 30 kernels") && s.contains("worst kernel") && s.contains("median regret"),
        "{s}"
    );
}

#[test]
fn unknown_arch_and_non_nvdvfs_data_are_clear_errors() {
    let out =
        gpumodel().args(["validate", "--data", "nvdvfs-gtx1080ti", "--arch", "gtx9999"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("known architectures are"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.csv");
    std::fs::write(&p, "a,b\n1,2\n").unwrap();
    let out = gpumodel().args(["validate", "--arch", "gtx1080ti", "--data"]).arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not an NV-DVFS file"), "{err}");
}
