//! `gpumodel dataset show|list` on utilization-profile datasets (DCGM fields, power, time per job and
//! clock), through the real binary on the real public files.

mod common;
use common::{data_dir, gpumodel};

fn show(name: &str, format: &str) -> String {
    let out = gpumodel().args(["dataset", "show", name, "--format", format]).output().unwrap();
    assert!(out.status.success(), "{name} {format}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn show_json(name: &str) -> serde_json::Value {
    serde_json::from_str(&show(name, "json")).unwrap()
}

fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

/// The ten core clocks of the NV-DVFS V100 files (the dataset's README: 405–1380 MHz, memory 877 MHz).
const CLOCKS: [f64; 10] = [405.0, 502.0, 600.0, 705.0, 802.0, 945.0, 1087.0, 1102.0, 1237.0, 1380.0];

#[test]
fn the_v100_microbenchmarks_are_138_jobs_of_6_programs_at_10_clocks() {
    let s = show_json("nvdvfs-dcgm-v100-micro");
    assert_eq!(s["format"], "dcgm-profile");
    // 138 × 10 rows, one of which (shmembench input005 at one clock) has no DCGM sample and is named.
    assert_eq!(s["rows"], 1379);
    assert_eq!(s["kernels"], 138);
    assert_eq!(s["profiles"]["programs"], 6);
    let skipped = s["profiles"]["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].as_str().unwrap().contains("shmembench_input005"), "{skipped:?}");
    assert_eq!(numbers(&s["core_mhz"]), CLOCKS);
    assert_eq!(numbers(&s["mem_mhz"]), vec![877.0]);
    assert_eq!(s["test_set"], "nvdvfs-dcgm-v100-real");
    assert!(s["citation"].as_str().unwrap().contains("arXiv:2407.13096"));
    let fields = s["profiles"]["fields"].as_array().unwrap();
    let names: Vec<&str> = fields.iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert_eq!(names, ["SMACT", "SMOCC", "TENSO", "DRAMA", "FP64A", "FP32A", "FP16A"]);
    // The microbenchmarks never leave the SMs idle: SM activity stays above 0.75.
    let smact = &fields[0];
    assert_eq!(
        (smact["id"].as_u64(), smact["dcgm_name"].as_str()),
        (Some(1002), Some("DCGM_FI_PROF_SM_ACTIVE"))
    );
    let (lo, hi) = (smact["min"].as_f64().unwrap(), smact["max"].as_f64().unwrap());
    assert!(lo > 0.75 && lo < 0.76 && hi <= 1.0, "{lo} {hi}");
}

#[test]
fn the_real_applications_and_the_ptx_variants_show_too() {
    for (name, rows, jobs, columns) in [
        ("nvdvfs-dcgm-v100-real", 200, 20, 11),
        ("nvdvfs-dcgm-v100-real-ptx", 200, 20, 100),
        ("nvdvfs-dcgm-v100-micro-ptx", 1379, 138, 100),
    ] {
        let s = show_json(name);
        assert_eq!((s["rows"].as_u64(), s["kernels"].as_u64()), (Some(rows), Some(jobs)), "{name}");
        assert_eq!(numbers(&s["core_mhz"]), CLOCKS, "{name}");
        let n = s["numeric_columns"].as_array().unwrap().len();
        assert!(n >= columns, "{name}: {n} numeric columns");
        // The near-idle application (SM activity about 1%) is in the test set.
        let p = numbers(&s["power_w"]);
        assert!(p[0] > 20.0 && p[1] < 260.0, "{name}: {p:?}");
    }
    let real = show_json("nvdvfs-dcgm-v100-real");
    let smact = real["profiles"]["fields"][0]["min"].as_f64().unwrap();
    assert!(smact < 0.02, "{smact}");
}

#[test]
fn every_output_format_names_the_fields_and_the_license() {
    let table = show("nvdvfs-dcgm-v100-real", "table");
    for want in [
        "jobs",
        "(1002, DCGM_FI_PROF_SM_ACTIVE)",
        "(1005, DCGM_FI_PROF_DRAM_ACTIVE)",
        "license",
        "arXiv:2407.13096",
    ] {
        assert!(table.contains(want), "table lacks {want}:\n{table}");
    }
    let csv = show("nvdvfs-dcgm-v100-real", "csv");
    assert!(csv.starts_with("field,value\n") && csv.contains("\nrows,200\n"), "{csv}");
    assert!(csv.contains("\nFP32A,") && csv.contains("1007, DCGM_FI_PROF_PIPE_FP32_ACTIVE"), "{csv}");
    let md = show("nvdvfs-dcgm-v100-real", "markdown");
    assert!(
        md.contains("FP64A")
            && md.contains("(1006, DCGM_FI_PROF_PIPE_FP64_ACTIVE)")
            && md.contains("core clocks"),
        "{md}"
    );
}

#[test]
fn a_profile_file_given_by_path_is_recognised() {
    let path = data_dir().join("nvdvfs-dcgm/v100-dvfs-real-profile.csv");
    let out = gpumodel().args(["dataset", "show", "--format", "json"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["format"].as_str(), s["rows"].as_u64(), s["found"].as_str()),
        (Some("dcgm-profile"), Some(200), Some("user-path"))
    );
}

#[test]
fn a_field_out_of_range_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "DRAMA,FP16A,FP32A,FP64A,SMACT,SMOCC,TENSO,argNo,average_power,benchmark,core_frequency,kernel,memory_frequency,time\n\
         45.0,0,0.4,0,0.97,0.8,0,input000,157.9,app,1087,k,877,0.91\n",
    )
    .unwrap();
    let out = gpumodel().args(["dataset", "show"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("DRAMA") && err.contains("outside [0, 1]") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn list_names_the_profile_datasets_as_present() {
    let out = gpumodel().args(["dataset", "list", "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["datasets"].as_array().unwrap();
    let dcgm: Vec<&serde_json::Value> = rows.iter().filter(|r| r["importer"] == "dcgm-profile").collect();
    assert_eq!(dcgm.len(), 4, "{rows:?}");
    assert!(dcgm.iter().all(|r| r["found"] == "data-dir" && r["gpu"].as_str().unwrap().contains("V100")));
}
