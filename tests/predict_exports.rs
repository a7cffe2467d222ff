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

/// The list of kernel profiles `collect --kernel-totals` writes (`<out>.kernels.json`, serialized as the
/// collector does) is read by `--kernel` as an export is: one profile answers, several need --launch; a
/// collector trace is not a kernel profile and the one-line error says which files are.
#[test]
fn the_collectors_list_of_kernel_profiles_is_read_and_a_trace_says_what_to_give() {
    use gpumodel_models::profile::KernelProfile;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reduction = gpumodel_predict::examples::kernel("reduction").unwrap().unwrap();
    let transpose = gpumodel_predict::examples::kernel("transpose").unwrap().unwrap();
    let write = |name: &str, list: &[&KernelProfile]| {
        let p = d.join(name);
        std::fs::write(&p, serde_json::to_string_pretty(list).unwrap()).unwrap();
        p
    };
    let one = write("one.kernels.json", &[&reduction]);
    let two = write("two.kernels.json", &[&reduction, &transpose]);
    let json = |args: &[&str], file: &std::path::Path| {
        let o = gpumodel()
            .args(["predict", "--format", "json", "--kernel"])
            .arg(file)
            .args(args)
            .output()
            .unwrap();
        (o.status.success(), serde_json::from_slice::<serde_json::Value>(&o.stdout).ok(), stderr(&o))
    };
    let example = |name: &str| {
        let o = gpumodel()
            .args(["predict", "--arch", "titanx", "--format", "json", "--kernel", name])
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    // The same answer as the profile itself gives (on one GPU: an example is predicted on the default one).
    let (ok, v, e) = json(&["--arch", "titanx"], &one);
    assert!(ok, "{e}");
    assert_eq!(v.unwrap()["prediction"], example("reduction")["prediction"]);
    let (ok, _, e) = json(&[], &two);
    assert!(
        !ok && e.contains("holds 2 kernel profiles") && e.contains("--launch 1..2") && e.lines().count() == 1,
        "{e}"
    );
    let (ok, v, e) = json(&["--launch", "2", "--arch", "titanx"], &two);
    assert!(ok, "{e}");
    assert_eq!(v.unwrap()["prediction"], example("transpose")["prediction"]);
    let (ok, _, e) = json(&["--launch", "3"], &two);
    assert!(!ok && e.contains("holds kernel profiles 1 to 2"), "{e}");
    std::fs::write(d.join("bad.kernels.json"), "[{\"name\": 3}]").unwrap();
    let (ok, _, e) = json(&[], &d.join("bad.kernels.json"));
    assert!(!ok && e.contains("not of kernel profiles") && e.lines().count() == 1, "{e}");

    // A trace written by the collector on the scripted GPU.
    let trace = d.join("t.csv");
    let o = gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "0.1", "-o"])
        .arg(&trace)
        .args(["/bin/sleep", "0.05"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (ok, _, e) = json(&[], &trace);
    assert!(
        !ok && e.contains("is a collector trace") && e.contains("--kernel-totals") && e.lines().count() == 1,
        "{e}"
    );
}

/// A kernel export given to `--profile` (which reads utilization profiles): one line naming the
/// `--kernel` command that answers it, and that command answers.
#[test]
fn a_kernel_export_given_as_a_profile_names_the_command_that_predicts_it() {
    for file in ["nvprof-metrics_gtx1080ti_matrixMul.csv", "ncu-long_a100_conv2d.csv"] {
        let o = gpumodel().args(["predict", "--profile"]).arg(real(file)).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let suggested = format!("`gpumodel predict --kernel {}`", real(file).display());
        assert!(e.contains(&suggested), "{e}");
        let o = predict(&[], file);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = gpumodel()
        .args(["predict", "--profile"])
        .arg(real("nvprof-gputrace_gtx1080ti_matrixMul.csv"))
        .output()
        .unwrap();
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("nvprof gpu trace") && e.contains("--metrics all"), "{e}");
}

/// The other way round: a `dcgmi dmon` log given as a kernel names `predict --profile` with the file, in one
/// line, and that command answers (the GH100 log, which names no GPU and has a clock outside the shipped
/// clock models, once its GPU is named, as that command's own one-line refusal says).
#[test]
fn a_dmon_log_given_as_a_kernel_names_the_command_that_predicts_it() {
    for (file, gpu) in [
        ("dcgm/dcgmi-dmon_GV100-baseline-LSTM-1380-0.txt", None),
        ("dcgm/dcgmi-dmon_GH100-baseline-LSTM-1785-0.txt", Some("h100")),
    ] {
        let o = predict(&[], file);
        let e = stderr(&o);
        assert_eq!((o.status.code(), e.lines().count()), (Some(2), 1), "{e}");
        let suggested = format!("`gpumodel predict --profile {}`", real(file).display());
        assert!(e.contains(&suggested) && e.contains("dmon format"), "{e}");
        let named = || {
            let mut c = gpumodel();
            c.args(["predict", "--format", "json", "--profile"]).arg(real(file));
            c
        };
        let o = named().output().unwrap();
        match gpu {
            None => assert!(o.status.success(), "{}", stderr(&o)),
            Some(gpu) => {
                let e = stderr(&o);
                assert!(!o.status.success() && e.lines().count() == 1 && e.contains("--gpu NAME"), "{e}");
                let o = named().args(["--gpu", gpu]).output().unwrap();
                assert!(o.status.success(), "{}", stderr(&o));
            }
        }
    }
}

/// The kernel table `import` writes, given as a kernel, says what to give instead in one line; its header
/// names every column once.
#[test]
fn the_import_table_given_as_a_kernel_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("kernels.csv");
    let o = gpumodel()
        .args(["import", "nvprof"])
        .arg(real("nvprof-metrics_gtx1080ti_matrixMul.csv"))
        .arg("--out")
        .arg(&table)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&table).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let mut unique = header.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), header.len(), "{header:?}");
    let o = gpumodel().args(["predict", "--kernel"]).arg(&table).output().unwrap();
    let e = stderr(&o);
    assert_eq!((o.status.code(), e.lines().count()), (Some(2), 1), "{e}");
    assert!(e.contains("the kernel table `gpumodel import` writes") && e.contains("--profiles DIR"), "{e}");
}
