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
    // The gap to the peer with its interval: a paired bootstrap over the kernels. The point is the
    // difference of the two reported figures; the interval holds it, and it is wide (whole kernels are
    // resampled, not rows, and 30 kernels err from 1% to 90%).
    let b = &v["baselines"][0];
    for (ours, key) in [("model_mape_pct", "model_vs"), ("mape_pct", "calibrated_vs")] {
        let gap = &b[key];
        let d = gap["difference_pct"].as_f64().unwrap();
        let want = v[ours].as_f64().unwrap() - b["mape_pct"].as_f64().unwrap();
        assert!((d - want).abs() < 1e-9, "{key}: {d} vs {want}");
        let (lo, hi) = (gap["ci95_pct"]["lo"].as_f64().unwrap(), gap["ci95_pct"]["hi"].as_f64().unwrap());
        assert!(lo < d && d < hi && hi - lo > 4.0, "{key}: {d} in [{lo}, {hi}]");
        assert_eq!(gap["reference"], "wang-chu-2018");
    }
    // Each objective's median and mean regret carry their interval over the kernels.
    for o in v["objectives"].as_array().unwrap() {
        for (point, ci) in
            [("median_regret_pct", "median_regret_ci95_pct"), ("mean_regret_pct", "mean_regret_ci95_pct")]
        {
            let x = o[point].as_f64().unwrap();
            let (lo, hi) = (o[ci]["lo"].as_f64().unwrap(), o[ci]["hi"].as_f64().unwrap());
            assert!(lo <= x && x <= hi, "{o}");
        }
    }
}

/// On the table, the gap to the peer is a line with its interval and what it says.
#[test]
fn p100_gap_to_the_peer_is_printed_with_its_interval() {
    let out = gpumodel()
        .args(["validate", "--data", "nvdvfs-p100", "--arch", "p100", "--baseline", "wang-chu-2018", "-q"])
        .args(["--kernels", "datasets/examples/kernel-sets/wangchu20.txt"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines = common::logical_lines(&text);
    let line = lines
        .iter()
        .find(|l| l.starts_with("ours - wang-chu-2018: model "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("95% interval") && line.contains("paired bootstrap over the 20 kernels"), "{line}");
    assert!(
        lines.iter().any(|l| l.starts_with("ED optimum: median regret") && l.contains("95% interval")),
        "{text}"
    );
}
