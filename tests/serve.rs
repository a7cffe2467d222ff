//! `gpumodel serve`: one scrape of a recorded trace with hand-computed totals, the HTTP server with a clean
//! SIGTERM, the refusals, clock advice from a clock model trained on the scripted GPU, and the deployment
//! files.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Two GPUs. GPU 0 idles for a second (60 W at 1410 MHz), then runs two processes for a second:
/// ΔE = 200 J, so 60 J idle and 140 J dynamic. GPU 1 answers once, then falls off the bus.
const TRACE: &str = r#"{"format":"gpumodel-nvml-trace/1","gpus":[{"index":0,"uuid":"GPU-aaaa","name":"NVIDIA H100 80GB HBM3"},{"index":1,"uuid":"GPU-bbbb","name":"NVIDIA H100 80GB HBM3"}],"processes":{"11":{"comm":"train","cgroup":"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e3d4c_5b6a_4789_9abc_def012345678.slice/cri-containerd-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope"},"12":{"comm":"stream"}}}
{"gpu":0,"reading":{"time_s":0.0,"energy_j":1000.0,"power_w":60.0,"sm_mhz":1410,"mem_mhz":1215}}
{"gpu":1,"reading":{"time_s":0.0,"energy_j":500.0,"power_w":60.0,"sm_mhz":1410}}
{"gpu":0,"reading":{"time_s":1.0,"energy_j":1060.0,"power_w":60.0,"sm_mhz":1410,"mem_mhz":1215}}
{"gpu":1,"error":{"call":"nvmlDeviceGetTotalEnergyConsumption","code":"gpu_lost"}}
{"gpu":0,"reading":{"time_s":2.0,"energy_j":1260.0,"power_w":200.0,"sm_mhz":1410,"mem_mhz":1215,"processes":[{"pid":11,"sm":0.5,"mem":0.0},{"pid":12,"sm":0.25,"mem":0.5}],"running":[11,12]}}
"#;

fn trace() -> tempfile::TempPath {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(TRACE.as_bytes()).unwrap();
    f.into_temp_path()
}

/// The value of the first exposition line that starts with `prefix` and contains every `has`.
fn value(text: &str, prefix: &str, has: &[&str]) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix) && has.iter().all(|h| l.contains(h)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} {has:?} in\n{text}"))
}

/// `gpumodel` on the scripted GPU in `dir`, without the user's model folders.
fn scripted(dir: &std::path::Path) -> assert_cmd::Command {
    let mut c = common::gpumodel();
    c.env("GPUMODEL_FAKE_GPU", "1").env_remove("GPUMODEL_MODELS").current_dir(dir);
    c
}

/// A run that must succeed.
fn ok(out: std::process::Output) -> std::process::Output {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `collect --suite` on the scripted GPU in `dir` with `args` (its clocks), then `train` on its utilization
/// profiles: the clock model written, as JSON.
fn suite_then_clock_model(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    ok(scripted(dir)
        .args(["collect", "--suite", "--min-seconds", "0.01", "--out", "s.csv"])
        .args(args)
        .output()
        .unwrap());
    ok(scripted(dir)
        .args(["train", "--data", "s.csv.profiles.csv", "--no-test", "--out-dir", "models"])
        .output()
        .unwrap());
    let model = std::fs::read_dir(dir.join("models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("train wrote no model");
    serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap()
}

#[test]
fn one_scrape_of_a_trace_gives_the_hand_computed_split() {
    let path = trace();
    let out = common::gpumodel()
        .args(["serve", "--once", "--per-pid", "--attribution", "ratio", "--replay"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let gpu0 = "gpu=\"0\"";
    assert_eq!(value(&text, "gpumodel_gpu_energy_joules_total", &[gpu0]), 260.0);
    assert_eq!(value(&text, "gpumodel_gpu_idle_energy_joules_total", &[gpu0]), 120.0);
    // The SM ratio: 0.5 : 0.25 of the 140 J.
    let dynamic =
        |pid: &str| value(&text, "gpumodel_process_energy_joules_total", &[pid, "component=\"dynamic\""]);
    assert!((dynamic("pid=\"11\"") - 140.0 * 2.0 / 3.0).abs() < 1e-9, "{text}");
    assert!((dynamic("pid=\"12\"") - 140.0 / 3.0).abs() < 1e-9, "{text}");
    // The pod and container of PID 11, from its cgroup; the GPU that fell off the bus is down, counted.
    assert!(text.contains("pod=\"1f2e3d4c-5b6a-4789-9abc-def012345678\""), "{text}");
    assert!(text.contains(&format!("container_id=\"{}\"", "a".repeat(64))), "{text}");
    assert_eq!(value(&text, "gpumodel_gpu_up", &["gpu=\"1\""]), 0.0);
    assert_eq!(value(&text, "gpumodel_gpu_up", &[gpu0]), 1.0);
    assert_eq!(value(&text, "gpumodel_nvml_errors_total", &["code=\"gpu_lost\""]), 1.0);
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn the_model_split_gives_the_memory_bound_process_more_than_the_ratio_and_conserves_energy() {
    let path = trace();
    let out =
        common::gpumodel().args(["serve", "--once", "--per-pid", "--replay"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let d11 = value(&text, "gpumodel_process_energy_joules_total", &["pid=\"11\"", "component=\"dynamic\""]);
    let d12 = value(&text, "gpumodel_process_energy_joules_total", &["pid=\"12\"", "component=\"dynamic\""]);
    let un = value(&text, "gpumodel_gpu_unattributed_energy_joules_total", &["gpu=\"0\""]);
    assert!(d12 > 140.0 / 3.0, "{d12}");
    assert!((d11 + d12 + un + 120.0 - 260.0).abs() < 1e-9, "{text}");
}

/// A GPU in MIG mode, replayed: an idle second (70 W), then a 3g and a 4g instance busy for a second,
/// the 3g one twice as active by its own GPM (0.6 against 0.3 of its SMs), the 4g one with one process in a
/// pod. ΔE 210 J: 70 J idle; the SM ratio gives the dynamic 140 J as 0.6·3 : 0.3·4 = 3 : 2.
const MIG_TRACE: &str = r#"{"format":"gpumodel-nvml-trace/1","gpus":[{"index":0,"uuid":"GPU-cccc","name":"NVIDIA H100 80GB HBM3"}],"processes":{"21":{"comm":"infer","cgroup":"0::/kubepods.slice/kubepods-pod0a0b0c0d_1111_2222_3333_444455556666.slice/cri-containerd-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.scope"}}}
{"gpu":0,"reading":{"time_s":0.0,"energy_j":0.0,"power_w":70.0,"sm_mhz":1980,"mig_slices":7,"instances":[{"gi":1,"profile":"3g.40gb","sm":0.0,"dram":0.0},{"gi":2,"profile":"4g.40gb","sm":0.0,"dram":0.0}]}}
{"gpu":0,"reading":{"time_s":1.0,"energy_j":70.0,"power_w":70.0,"sm_mhz":1980,"mig_slices":7,"instances":[{"gi":1,"profile":"3g.40gb","sm":0.0,"dram":0.0},{"gi":2,"profile":"4g.40gb","sm":0.0,"dram":0.0}]}}
{"gpu":0,"reading":{"time_s":2.0,"energy_j":280.0,"power_w":210.0,"sm_mhz":1980,"mig_slices":7,"instances":[{"gi":1,"profile":"3g.40gb","sm":0.6,"dram":0.1,"running":[]},{"gi":2,"profile":"4g.40gb","sm":0.3,"dram":0.5,"running":[21]}]}}
"#;

#[test]
fn a_mig_trace_is_split_by_instance_and_the_instance_s_one_process_gets_its_part() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(MIG_TRACE.as_bytes()).unwrap();
    let scrape = |attribution: &str| {
        let out = common::gpumodel()
            .args(["serve", "--once", "--per-pid", "--attribution", attribution, "--replay"])
            .arg(f.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = scrape("ratio");
    let instance = |text: &str, gi: &str, component: &str| {
        value(
            text,
            "gpumodel_mig_instance_energy_joules_total",
            &[&format!("mig_gi=\"{gi}\""), &format!("component=\"{component}\"")],
        )
    };
    assert_eq!(value(&text, "gpumodel_gpu_energy_joules_total", &["gpu=\"0\""]), 280.0);
    assert!((instance(&text, "1", "dynamic") - 84.0).abs() < 1e-9, "{text}");
    assert!((instance(&text, "2", "dynamic") - 56.0).abs() < 1e-9, "{text}");
    // The idle energy of each instance's slices: 140 J over the two seconds, 3 : 4.
    assert!((instance(&text, "1", "idle") - 60.0).abs() < 1e-9, "{text}");
    assert!(text.contains("mig_profile=\"4g.40gb\""), "{text}");
    // PID 21 alone in instance 2: its part, and its pod's.
    let pid = value(&text, "gpumodel_process_energy_joules_total", &["pid=\"21\"", "component=\"dynamic\""]);
    assert!((pid - 56.0).abs() < 1e-9, "{text}");
    assert!(text.contains("pod=\"0a0b0c0d-1111-2222-3333-444455556666\""), "{text}");
    // The model split gives the DRAM-heavy 4g instance more than the SM ratio does, and conserves the counter.
    let text = scrape("model");
    let (a, b) = (instance(&text, "1", "dynamic"), instance(&text, "2", "dynamic"));
    let un = value(&text, "gpumodel_gpu_unattributed_energy_joules_total", &["gpu=\"0\""]);
    assert!(b > 56.0, "{text}");
    assert!((a + b + un + 140.0 - 280.0).abs() < 1e-9, "{text}");
}

/// A live H100 in MIG mode through the stand-in NVML (serve/tests/fake_nvml_mig): two ticks 0.2 s apart
/// read each GPU instance's GPM activity between its two samples (SM 60 % of the 3g instance, 30 % of the 4g
/// one), its processes merged over its compute instances, and free every GPM sample they took.
#[test]
fn a_live_mig_gpu_is_read_through_gpm_per_instance_and_its_samples_are_freed() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libnvidia-ml.so.1");
    common::cc("serve/tests/fake_nvml_mig/fake_nvml_mig.c", &lib, &[]);
    let log = dir.path().join("gpm.log");
    let out = common::gpumodel()
        .env("GPUMODEL_NVML_LIB", &lib)
        .env("FAKE_NVML_GPM_LOG", &log)
        .args(["serve", "--once", "--per-pid", "--attribution", "ratio", "--interval", "0.2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // 50 J between the two readings, no idle yet: all dynamic, 0.6·3 : 0.3·4 = 3 : 2 by the SM ratio.
    assert_eq!(value(&text, "gpumodel_gpu_energy_joules_total", &["gpu=\"0\""]), 50.0);
    let instance = |gi: &str| {
        value(
            &text,
            "gpumodel_mig_instance_energy_joules_total",
            &[&format!("mig_gi=\"{gi}\""), "component=\"dynamic\""],
        )
    };
    assert!((instance("1") - 30.0).abs() < 1e-9 && (instance("2") - 20.0).abs() < 1e-9, "{text}");
    assert!(text.contains("mig_profile=\"3g.40gb\""), "{text}");
    let dynamic =
        |pid: &str| value(&text, "gpumodel_process_energy_joules_total", &[pid, "component=\"dynamic\""]);
    assert!((dynamic("pid=\"4321\"") - 20.0).abs() < 1e-9, "{text}");
    assert_eq!(dynamic("pid=\"4400\""), 0.0, "two processes share instance 1: neither is given a part");
    assert_eq!(std::fs::read_to_string(&log).unwrap().trim(), "0", "GPM samples left allocated");
}

#[test]
fn the_server_answers_scrapes_and_stops_cleanly_on_sigterm() {
    let path = trace();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .args(["serve", "--listen", "127.0.0.1:0", "--interval", "0.2", "--replay"])
        .arg(&path)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let get = |path: &str| -> String {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body
    };
    // The trace ends after three ticks; wait for them.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut metrics = get("/metrics");
    while !metrics.contains("gpumodel_gpu_energy_joules_total{gpu=\"0\"") || !metrics.contains(" 260") {
        assert!(Instant::now() < deadline, "no full scrape:\n{metrics}");
        std::thread::sleep(Duration::from_millis(100));
        metrics = get("/metrics");
    }
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(metrics.contains("application/openmetrics-text"), "{metrics}");
    assert!(get("/healthz").starts_with("HTTP/1.1 200"));
    assert!(get("/nothing").starts_with("HTTP/1.1 404"));
    let t = Instant::now();
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        // A bound for a hang, not a speed: a loaded machine may take seconds to schedule the exit.
        assert!(t.elapsed() < Duration::from_secs(30), "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn without_a_driver_serve_says_what_to_do_and_exits_non_zero() {
    let out = common::gpumodel()
        .env("GPUMODEL_NVML_LIB", "/nonexistent/libnvidia-ml.so")
        .env_remove("GPUMODEL_FAKE_GPU")
        .args(["serve", "--once"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-no-gpu") && err.lines().count() <= 2, "{err}");
}

#[test]
fn bad_flags_and_bad_traces_are_refused_in_one_line() {
    for (args, want) in [
        (vec!["serve", "--interval", "20"], "outside 0.2 to 10"),
        (vec!["serve", "--attribution", "sm"], "use `model` or `ratio`"),
        (vec!["serve", "--keep-exited=-1"], "--keep-exited"),
        (vec!["serve", "--advice-window", "2"], "outside 5 to 3600"),
        (vec!["serve", "--advice-window", "4000"], "outside 5 to 3600"),
    ] {
        let out = common::gpumodel().args(&args).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, "{}", TRACE.lines().next().unwrap()).unwrap();
    writeln!(f, "{{\"gpu\":5,\"reading\":{{\"time_s\":0}}}}").unwrap();
    let out = common::gpumodel().args(["serve", "--once", "--replay"]).arg(f.path()).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(":2: GPU 5 is not in the header"), "{err}");
    // A file that is not text names what it is not, in one line.
    let mut bin = tempfile::NamedTempFile::new().unwrap();
    bin.write_all(&[0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0x00, 0x80]).unwrap();
    let out = common::gpumodel().args(["serve", "--once", "--replay"]).arg(bin.path()).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a gpumodel NVML trace (not UTF-8 text)") && err.lines().count() == 1, "{err}");
}

/// `GPUMODEL_REPLAY` chooses the recorded GPU for `serve` as it does for `collect`: the same scrape as
/// `--replay`, and a recording wins over the scripted GPU.
#[test]
fn the_replay_variable_serves_the_same_trace_as_the_flag() {
    let path = trace();
    let scrape = |cmd: &mut assert_cmd::Command| ok(cmd.output().unwrap()).stdout;
    let by_flag = scrape(common::gpumodel().args(["serve", "--once", "--per-pid", "--replay"]).arg(&path));
    let by_var =
        scrape(common::gpumodel().env("GPUMODEL_REPLAY", &path).env("GPUMODEL_FAKE_GPU", "1").args([
            "serve",
            "--once",
            "--per-pid",
        ]));
    let text = String::from_utf8(by_var.clone()).unwrap();
    assert_eq!(value(&text, "gpumodel_gpu_energy_joules_total", &["gpu=\"0\""]), 260.0);
    assert_eq!(by_flag, by_var);
}

#[test]
fn the_scripted_node_serves_every_gpu() {
    let out = common::gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["serve", "--once", "--per-pid", "--interval", "0.2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("gpumodel_gpu_up{")).count(), 2, "{text}");
    assert!(value(&text, "gpumodel_gpu_energy_joules_total", &["gpu=\"1\""]) > 0.0);
    // Its processes are named by the scripted node itself, never by whatever holds those PIDs on this host.
    let comms: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gpumodel_process_energy_joules_total{"))
        .filter_map(|l| l.split("comm=\"").nth(1)?.split('"').next())
        .collect();
    assert!(!comms.is_empty(), "{text}");
    assert!(
        comms.iter().all(|c| c.starts_with("fake-compute-") || c.starts_with("fake-memory-")),
        "{comms:?}"
    );
}

/// On the scripted node: a clock model of its GPU trained from a suite at three core clocks, then one
/// scrape with `--models-dir`: each GPU has the four advice series, each value one of the model's core
/// clocks (read from the model's JSON) in Hz. Without `--models-dir` no GPU has advice (no shipped model
/// is of an A100), and stderr names the missing model once per GPU.
#[test]
fn the_scripted_node_gets_clock_advice_from_a_model_trained_on_its_gpu_and_none_without() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fake = || scripted(d);
    let json = suite_then_clock_model(d, &["--clocks", "1410:1215,1110:1215,810:1215"]);
    let levels: Vec<f64> = json["levels"]
        .as_array()
        .unwrap_or_else(|| panic!("no levels in {json}"))
        .iter()
        .map(|l| l["core_mhz"].as_f64().unwrap() * 1e6)
        .collect();
    assert_eq!(levels.len(), 3, "{levels:?}");

    let out =
        ok(fake().args(["serve", "--once", "--interval", "0.2", "--models-dir", "models"]).output().unwrap());
    let text = String::from_utf8(out.stdout).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("clock advice for GPU 0 from clock model"), "{err}");
    // The fields the model's terms read beyond DRAMA and SMACT (from its JSON) are named as taken as 0.
    let mut unread: Vec<&str> = ["knee", "slope", "static_share"]
        .iter()
        .flat_map(|t| json[*t]["inputs"].as_array().into_iter().flatten())
        .filter_map(|f| f.as_str())
        .filter(|f| *f != "DRAMA" && *f != "SMACT")
        .collect();
    unread.sort_unstable();
    unread.dedup();
    for f in &unread {
        assert!(err.contains("the model also reads") && err.contains(f), "{f} not named: {err}");
    }
    if unread.is_empty() {
        assert!(!err.contains("the model also reads"), "{err}");
    }
    for gpu in ["gpu=\"0\"", "gpu=\"1\""] {
        for objective in ["energy", "ed", "ed2", "energy_within_5pct"] {
            let v = value(
                &text,
                "gpumodel_advice_sm_clock_hertz{",
                &[gpu, &format!("objective=\"{objective}\"")],
            );
            assert!(levels.contains(&v), "{gpu} {objective}: {v} Hz is not one of {levels:?}");
        }
    }
    assert_eq!(
        text.lines().filter(|l| l.starts_with("gpumodel_advice_sm_clock_hertz{")).count(),
        8,
        "{text}"
    );

    let out = ok(fake().args(["serve", "--once", "--interval", "0.2"]).output().unwrap());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("gpumodel_advice_sm_clock_hertz{"), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    let missing: Vec<&str> =
        err.lines().filter(|l| l.contains("no clock model of NVIDIA A100-SXM4-40GB")).collect();
    assert_eq!(missing.len(), 2, "{err}");
    assert!(missing[0].contains("no clock advice for GPU 0") && missing[0].contains("train"), "{err}");
}

/// The systemd unit passes `systemd-analyze verify` (with the binary's path swapped for one that exists),
/// and the DaemonSet reads the host's PIDs, probes /healthz and runs `serve` read-only.
/// `collect --suite --clocks auto` on the scripted GPU spreads over its (core, memory) clock pairs; the clock
/// model trained on its profiles covers the pairs, and `serve` advises a memory clock with each SM clock,
/// each one of the model's levels.
#[test]
fn a_clock_model_over_pairs_advises_the_memory_clock_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fake = || scripted(d);
    let kernels = "fp32_fma,global_load,global_store,mix_compute_memory,idle";
    let json = suite_then_clock_model(d, &["--clocks", "auto", "--kernels", kernels]);
    let mem_levels: Vec<f64> = json["memory"]["levels"]
        .as_array()
        .unwrap_or_else(|| panic!("not a model over clock pairs: {json}"))
        .iter()
        .map(|l| l["mem_mhz"].as_f64().unwrap() * 1e6)
        .collect();
    assert_eq!(mem_levels.len(), 4, "auto spreads over the scripted GPU's 4 memory clocks: {mem_levels:?}");
    let out =
        ok(fake().args(["serve", "--once", "--interval", "0.2", "--models-dir", "models"]).output().unwrap());
    let text = String::from_utf8(out.stdout).unwrap();
    for objective in ["energy", "ed", "ed2", "energy_within_5pct"] {
        let has = ["gpu=\"0\"", &format!("objective=\"{objective}\"")];
        let v = value(&text, "gpumodel_advice_memory_clock_hertz{", &has);
        assert!(mem_levels.contains(&v), "{objective}: {v} Hz is not one of {mem_levels:?}");
        value(&text, "gpumodel_advice_sm_clock_hertz{", &has);
    }
}

#[test]
fn the_deployment_files_are_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let unit = std::fs::read_to_string(root.join("deploy/gpumodel-serve.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/gpumodel serve"));
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("gpumodel-serve.service");
    std::fs::write(&copy, unit.replace("/usr/local/bin/gpumodel", env!("CARGO_BIN_EXE_gpumodel"))).unwrap();
    let out =
        Command::new("systemd-analyze").arg("verify").arg(&copy).output().unwrap_or_else(|e| {
            panic!("systemd-analyze is needed for this test (Debian package systemd): {e}")
        });
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ds = std::fs::read_to_string(root.join("deploy/daemonset.yaml")).unwrap();
    for want in [
        "kind: DaemonSet",
        "hostPID: true",
        "path: /healthz",
        "args: [\"serve\"",
        "readOnlyRootFilesystem: true",
    ] {
        assert!(ds.contains(want), "daemonset.yaml lacks {want:?}");
    }
    assert!(!ds.contains('\t'), "YAML must not hold tabs");
}
