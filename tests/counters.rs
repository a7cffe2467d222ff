//! `gpumodel counters --chip NAME` through the real binary, with the real CUPTI host library when
//! GPUMODEL_CUDA_LIBS points at it (scripts/test does; GPUMODEL_REQUIRE_CUDA_LIBS=1 makes its absence
//! a failure).

use assert_cmd::Command;

fn require_libs() -> bool {
    std::env::var("GPUMODEL_REQUIRE_CUDA_LIBS").is_ok_and(|v| v == "1")
}

fn counters_json(chip: &str) -> serde_json::Value {
    let o = Command::cargo_bin("gpumodel")
        .unwrap()
        .args(["counters", "--chip", chip, "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn every_chip_lists_the_ten_inputs_for_both_profilers() {
    for chip in ["TU102", "GA100", "GA102", "AD102", "GH100"] {
        let r = counters_json(chip);
        let inputs = r["inputs"].as_array().unwrap();
        assert_eq!(inputs.len(), 20, "{chip}");
        let range: Vec<&serde_json::Value> = inputs.iter().filter(|i| i["profiler"] == "range").collect();
        assert_eq!(range.len(), 10);
        // The range map has an exact metric for every one of the paper's ten inputs.
        assert!(range.iter().all(|i| !i["metrics"].as_array().unwrap().is_empty()), "{chip}");
        if require_libs() {
            assert!(r["cupti"].is_string(), "{chip}: CUPTI must load in CI");
            assert!(range.iter().all(|i| i["exists"] == true), "{chip}: {range:?}");
            assert_eq!(r["pm_passes"], 1, "{chip}");
            assert_eq!(r["range_passes"], 4, "{chip}: measured with CUPTI 12.9.79");
        }
    }
}

/// The PM-sampling groups `collect --pm-passes all` runs: each is one hardware pass by CUPTI's own count,
/// no canonical counter is in two groups, and together they hold more than the first group alone.
#[test]
fn every_pm_group_is_one_hardware_pass() {
    for chip in ["TU102", "GA100", "GA102", "AD102", "GH100"] {
        let r = counters_json(chip);
        let groups = r["pm_groups"].as_array().unwrap();
        assert!(groups.len() >= 2, "{chip}: {groups:?}");
        let mut seen = std::collections::BTreeSet::new();
        for (k, g) in groups.iter().enumerate() {
            assert_eq!(g["run"], k + 1, "{chip}");
            for c in g["counters"].as_array().unwrap() {
                assert!(seen.insert(c.as_str().unwrap().to_string()), "{chip}: {c} in two groups");
            }
            if require_libs() {
                assert_eq!(g["hardware_passes"], 1, "{chip} run {}: {g}", k + 1);
            }
        }
    }
}

#[test]
fn gh100_pm_has_no_divergent_branch_and_says_why() {
    let r = counters_json("GH100");
    let row = r["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["profiler"] == "pm" && i["input"] == "divergent_branch")
        .unwrap()
        .clone();
    assert!(row["metrics"].as_array().unwrap().is_empty());
    assert!(row["note"].as_str().unwrap().contains("no PM-sampling counter"), "{row}");
}

#[test]
fn unknown_chip_is_one_line_with_the_known_ones() {
    let o = Command::cargo_bin("gpumodel").unwrap().args(["counters", "--chip", "GK110"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("no counter map for chip 'GK110'") && e.contains("GH100"), "{e}");
}
