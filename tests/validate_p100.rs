//! `gpumodel validate` on the Tesla P100 rows, a GPU no constant of the timing model was set on.

mod common;
use common::gpumodel;

/// Regression guard: the model as is (nothing fitted) on all 30 kernels reaches 20.6% (29.3% while
/// shared accesses cost the LD/ST rate instead of the bank bandwidth), and no bottleneck class is more
/// than twice Wang & Chu's general form on the same rows (shared memory was 66% against 8.6%).
#[test]
fn p100_model_and_its_classes_against_wang_chu() {
    let out = gpumodel()
        .args(["validate", "--data", "nvdvfs-p100", "--arch", "p100", "--baseline", "wang-chu-2018"])
        .args(["--format", "json", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kernels"], 30);
    let model = v["model_mape_pct"].as_f64().unwrap();
    assert!(model <= 20.6, "{model}");
    for c in v["per_class"].as_array().unwrap() {
        let ours = c["model_mape_pct"].as_f64().unwrap();
        let peer = c["baseline_mape_pct"]["wang-chu-2018"].as_f64().unwrap();
        assert!(ours <= 2.0 * peer, "{c}");
    }
}
