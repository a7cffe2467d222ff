//! `predict --kernel` on the real Nsight Compute and nvprof exports of `../shared/profiles/`: an export is
//! read in place, as `import` reads it, without a separate import step.

mod common;
use common::{gpumodel, real_export as real};

fn predict(args: &[&str], file: &str) -> std::process::Output {
    gpumodel().args(["predict", "--format", "json", "--kernel"]).arg(real(file)).args(args).output().unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One launch: predicted on the GPU the export names (or, when it names none, as `--arch` says), with the
/// time the export measured as the anchor.
#[test]
fn an_export_with_one_launch_is_predicted_in_place() {
    let o = predict(&["--arch", "a100"], "ncu-long_a100_conv2d.csv");
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // A roofline answer: the export has no instruction or load counts for the pipeline model.
    let t = v["roofline"]["time_s"].as_f64().unwrap();
    assert!(t > 0.0 && t < 1.0, "{v}");
    assert!(v["kernel"].as_str().unwrap().contains("implicit_convolve_sgemm"), "{v}");

    let o = predict(&[], "nvprof-metrics_gtx1080ti_matrixMul.csv");
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["arch"], "gtx1080ti", "{v}");
}

/// Several launches: one line that counts them and names --launch; --launch picks one; a gpu trace alone
/// and --launch on a kernel profile say what to give instead.
#[test]
fn several_launches_need_a_choice_and_other_files_say_what_to_give() {
    let o = predict(&[], "nvprof-metrics_gtx1080ti_reduction.csv");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("holds 2 kernel launches") && e.contains("--launch 1..2") && e.lines().count() == 1,
        "{e}"
    );
    let a = predict(&["--launch", "1"], "nvprof-metrics_gtx1080ti_reduction.csv");
    let b = predict(&["--launch", "2"], "nvprof-metrics_gtx1080ti_reduction.csv");
    assert!(a.status.success() && b.status.success(), "{}{}", stderr(&a), stderr(&b));
    assert_ne!(a.stdout, b.stdout, "two launches, two answers");
    let o = predict(&["--launch", "3"], "nvprof-metrics_gtx1080ti_reduction.csv");
    assert!(stderr(&o).contains("holds kernel launches 1 to 2"), "{}", stderr(&o));

    let o = predict(&[], "nvprof-gputrace_gtx1080ti_matrixMul.csv");
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("nvprof gpu trace") && e.contains("--gpu-trace"), "{e}");

    let o = gpumodel().args(["predict", "--kernel", "transpose", "--launch", "1"]).output().unwrap();
    assert!(!o.status.success() && stderr(&o).contains("--launch picks a kernel launch"), "{}", stderr(&o));
}
