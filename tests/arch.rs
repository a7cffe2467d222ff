//! `gpumodel arch list|new`: the built-in profiles, and a profile from documents for a GPU without one.

mod common;
use common::{Import, gpumodel, toml_value};

/// The board of an RTX 4090 (compute capability 8.9), as its specification gives it.
const RTX4090: &[&str] = &[
    "arch",
    "new",
    "--cc",
    "8.9",
    "--sms",
    "128",
    "--core-mhz",
    "2520",
    "--mem-mhz",
    "10501",
    "--bandwidth-gbs",
    "1008",
    "--tdp-w",
    "450",
    "--display-name",
    "NVIDIA GeForce RTX 4090",
];

fn num(text: &str, key: &str) -> f64 {
    let v = toml_value(text, key);
    let inner = v.trim_start_matches('{').split(',').next().unwrap().trim();
    inner.trim_start_matches("value = ").parse().unwrap_or_else(|_| panic!("{key}: {v}"))
}

#[test]
fn a_profile_from_documents_cites_each_value_and_predicts() {
    let out = gpumodel().args(RTX4090).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // The Guide's facts of compute capability 8.9, the board's numbers, the departure delay derived from
    // them: 32 B / (1008 GB/s / 128 SMs / 2520 MHz) = 10.24 cycles.
    assert_eq!(num(&text, "max_warps_per_sm"), 48.0);
    assert_eq!(num(&text, "max_blocks_per_sm"), 24.0);
    assert_eq!(num(&text, "cost_fp32"), 0.25);
    assert_eq!(num(&text, "cost_fp64"), 16.0);
    assert_eq!(num(&text, "sm_count"), 128.0);
    assert!((num(&text, "in_warp_delay") - 10.24).abs() < 1e-3, "{text}");
    assert!(toml_value(&text, "max_warps_per_sm").contains("src = \"guide\""));
    assert!(toml_value(&text, "sm_count").contains("src = \"board\""));
    // Latencies no document gives come from the built-in profile nearest in compute capability (8.0,
    // the A100), the DRAM one kept in time: A100's cyc_load × 2520 / 1410.
    assert!(toml_value(&text, "cyc_s").contains("carried_a100"), "{text}");
    let a100 = gpumodel_models::arch::ArchProfile::builtin("a100").unwrap();
    assert!((num(&text, "cyc_load") - a100.cyc_load.value * 2520.0 / 1410.0).abs() < 1e-3);
    assert!(text.contains("[sources]") && text.contains("carried_a100 = "));
    assert!(!text.contains("[dvfs_memory]"), "a board's DVFS constants are never carried over");

    // The written file is a profile `predict` takes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rtx4090.toml");
    std::fs::write(&path, &text).unwrap();
    let out = gpumodel().args(["predict", "--warps", "24", "--arch"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains("NVIDIA GeForce RTX 4090"), "{shown}");
    // The answer says its latencies were carried over, what that costs, and the fix.
    let expected = common::logical_lines(&shown)
        .into_iter()
        .find(|l| l.starts_with("expected"))
        .unwrap_or_else(|| panic!("no expected line in\n{shown}"));
    assert!(
        expected.contains("carried over from a100") && expected.contains("gpumodel calibrate"),
        "{expected}"
    );
    // A built-in profile with measured latencies says nothing of the kind.
    let out = gpumodel().args(["predict", "--warps", "24", "--arch", "gtx1080ti"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("carried over"));
}

/// The error `predict` states for a profile from documents is what such profiles score: each NV-DVFS GPU's
/// profile written by `arch new` from its board's numbers with another GPU's latencies (as
/// `benches/arch_new_nvdvfs.sh` writes them), validated on its file, against the figure stated.
#[test]
fn the_stated_error_of_a_profile_from_documents_is_the_measured_one() {
    use gpumodel_predict::kernel::gpu::FROM_DOCUMENTS_ERROR;
    // name, cc, SMs, boost MHz, memory MHz, GB/s, TDP W, display name, latencies from
    let boards = [
        ("p100", "6.0", "56", "1480", "715", "732", "300", "NVIDIA Tesla P100 (SXM2)", "gtx1080ti"),
        ("gtx1080ti", "6.1", "28", "1582", "5505", "484", "250", "NVIDIA GeForce GTX 1080 Ti", "p100"),
        ("gtx980", "5.2", "16", "1126", "3505", "224", "165", "NVIDIA GeForce GTX 980", "titanx"),
        ("v100", "7.0", "80", "1530", "877", "900", "300", "NVIDIA Tesla V100 (SXM2)", "p100"),
    ];
    let dir = tempfile::tempdir().unwrap();
    // One thread per board: the eight validations are independent.
    let check = |(name, cc, sms, core, mem, bw, tdp, display, like): (
        &str,
        &str,
        &str,
        &str,
        &str,
        &str,
        &str,
        &str,
        &str,
    )| {
        let path = dir.path().join(format!("{name}.toml"));
        let out = gpumodel()
            .args(["arch", "new", "--cc", cc, "--sms", sms, "--core-mhz", core, "--mem-mhz", mem])
            .args(["--bandwidth-gbs", bw, "--tdp-w", tdp, "--display-name", display, "--name", name])
            .args(["--like", like, "-o"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let data = format!("nvdvfs-{name}");
        let mape = |arch: &std::ffi::OsStr| {
            let out = gpumodel()
                .args(["validate", "--data", &data, "--format", "json", "-q", "--arch"])
                .arg(arch)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            (v["model_mape_pct"].as_f64().unwrap() * 10.0).round() / 10.0
        };
        let stated = FROM_DOCUMENTS_ERROR.iter().find(|r| r.0 == data).unwrap_or_else(|| panic!("{data}"));
        assert_eq!(mape(path.as_os_str()), stated.1, "{data}, from documents");
        assert_eq!(mape(std::ffi::OsStr::new(name)), stated.2, "{data}, built-in profile");
    };
    std::thread::scope(|s| {
        for b in boards {
            s.spawn(move || check(b));
        }
    });
}

#[test]
fn the_nearest_profile_or_like_gives_the_latencies() {
    // 7.5 (Turing) is nearest to the V100's 7.0; --like overrides it.
    let mut args: Vec<&str> = RTX4090.to_vec();
    args[3] = "7.5";
    let out = gpumodel().args(&args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(toml_value(&text, "cyc_s").contains("carried_v100"), "{text}");
    assert_eq!(num(&text, "max_warps_per_sm"), 32.0);
    args.extend(["--like", "gtx1080ti"]);
    let text = String::from_utf8(gpumodel().args(&args).output().unwrap().stdout).unwrap();
    assert!(toml_value(&text, "cyc_s").contains("carried_gtx1080ti"), "{text}");
}

#[test]
fn bad_input_is_refused_in_one_line_and_nothing_is_overwritten() {
    let mut args: Vec<&str> = RTX4090.to_vec();
    args[3] = "10.0";
    let out = gpumodel().args(&args).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("10.0") && err.contains("covered: 5.0") && err.contains("gpumodel calibrate"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let mut args: Vec<&str> = RTX4090.to_vec();
    args[5] = "0";
    let err = String::from_utf8(gpumodel().args(&args).output().unwrap().stderr).unwrap();
    assert!(err.contains("--sms must be a positive number"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(&path, "keep me").unwrap();
    let out = gpumodel().args(RTX4090).arg("--out").arg(&path).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    let out = gpumodel().args(RTX4090).arg("--out").arg(&path).arg("--force").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&path).unwrap().contains("name = \"rtx4090\""));
}

#[test]
fn list_names_every_built_in_profile() {
    let out = gpumodel().args(["arch", "list", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> =
        v["profiles"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, gpumodel_models::arch::ArchProfile::builtin_names());
    let p100 = v["profiles"].as_array().unwrap().iter().find(|p| p["name"] == "p100").unwrap();
    assert_eq!(
        (p100["compute_capability"].as_str(), p100["dvfs_memory"].as_bool()),
        (Some("6.0"), Some(true))
    );
}

/// A real export from a GPU without a built-in profile: `predict` says how to get one, and with the
/// profile `arch new` writes, predicts on that GPU and no longer calls it another GPU.
#[test]
fn an_export_from_a_gpu_without_a_profile_points_to_arch_new() {
    let export =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/profiles/ncu-long_a100_conv2d.csv");
    assert!(export.exists(), "the real exports are not at {}", export.display());
    let dir = tempfile::tempdir().unwrap();
    let profiles = dir.path().join("p");
    Import::new("ncu", &export)
        .arg("--gpu")
        .arg("NVIDIA GeForce RTX 4090")
        .arg("--gpu-cc")
        .arg("8.9")
        .out(&dir.path().join("t.csv"))
        .profiles(&profiles)
        .ok();
    let kernel = std::fs::read_dir(&profiles).unwrap().next().unwrap().unwrap().path();
    let out = gpumodel().args(["predict", "--kernel"]).arg(&kernel).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // Long lines wrap at the table width: compare the words.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("which has no built-in profile") && flat.contains("`gpumodel arch new`"), "{text}");

    let arch = dir.path().join("rtx4090.toml");
    let made = gpumodel().args(RTX4090).arg("--out").arg(&arch).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let out =
        gpumodel().args(["predict", "--kernel"]).arg(&kernel).arg("--arch").arg(&arch).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("gpu         NVIDIA GeForce RTX 4090"), "{text}");
    assert!(!text.contains("another GPU"), "{text}");
}
