//! `gpumodel serve` against the real Prometheus tools (Debian package `prometheus`): promtool lints one
//! scrape of a long trace, and a Prometheus server scrapes a live replay for ~30 s, after which PromQL must
//! find, per GPU, board energy = idle + unattributed + Σ process dynamic energy, at every scrape.
//!
//! Without the package these tests print a note and pass, unless GPUMODEL_REQUIRE_PROMETHEUS=1 (set by
//! scripts/test, which installs it), where they fail.

mod common;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Readings per GPU, and the trace's spacing between them (= serve's `--interval`, so that the live replay
/// lasts READINGS × INTERVAL_S = 30 s: serve takes one reading per GPU per tick).
const READINGS: usize = 150;
const INTERVAL_S: f64 = 0.2;
/// GPU 0's energy counter starts over at this reading (a driver reload).
const RESET_AT: usize = 75;
/// GPU 1's reading at this index fails.
const FAILED_AT: usize = 90;

/// Board power of the synthetic GPUs: idle power plus, per running process, 250 W × SM activity + 90 W ×
/// memory activity.
fn power(idle_w: f64, procs: &[(u32, f64, f64)]) -> f64 {
    idle_w + procs.iter().map(|&(_, sm, mem)| 250.0 * sm + 90.0 * mem).sum::<f64>()
}

/// The processes running on `gpu` at reading `k`, as (pid, SM activity, memory activity).
fn processes(gpu: usize, k: usize) -> Vec<(u32, f64, f64)> {
    let x = k as f64;
    let mut p = Vec::new();
    if gpu == 0 {
        if (10..140).contains(&k) {
            p.push((101, 0.6 + 0.3 * (x / 7.0).sin(), 0.2 + 0.1 * (x / 5.0).cos()));
        }
        if (40..100).contains(&k) {
            p.push((102, 0.2, 0.7 + 0.2 * (x / 3.0).sin()));
        }
    } else {
        if (15..145).contains(&k) {
            p.push((201, if (k / 10).is_multiple_of(2) { 0.9 } else { 0.1 }, 0.3));
        }
        if (60..120).contains(&k) {
            // NVML reports values above 100 % now and then; one such sample.
            p.push((202, if k == 70 { 1.05 } else { 0.35 }, 0.05 * (k % 4) as f64));
        }
    }
    p
}

/// A replay trace of two GPUs (idle first, then processes with varying activity), whose energy counters
/// follow [`power`], with a counter reset on GPU 0 and a failed reading on GPU 1. Returns the trace and
/// each GPU's board energy over it, J.
fn trace() -> (String, [f64; 2]) {
    let pod = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e3d4c_5b6a_4789_9abc_def012345678.slice";
    let header = json!({
        "format": "gpumodel-nvml-trace/1",
        "gpus": [
            {"index": 0, "uuid": "GPU-00000000-1111-2222-3333-444444444444", "name": "NVIDIA H100 80GB HBM3"},
            {"index": 1, "uuid": "GPU-55555555-6666-7777-8888-999999999999", "name": "NVIDIA H100 80GB HBM3"},
        ],
        "processes": {
            "101": {"comm": "train", "cgroup": format!("{pod}/cri-containerd-{}.scope", "a".repeat(64))},
            "102": {"comm": "stream"},
            "201": {"comm": "infer", "cgroup": format!("0::/system.slice/docker-{}.scope", "b".repeat(64))},
            "202": {"comm": "prep", "cgroup": format!("{pod}/cri-containerd-{}.scope", "c".repeat(64))},
        },
    });
    let mut lines = vec![header.to_string()];
    let idle_w = [60.0, 55.0];
    let mut counter = [1.0e6, 2.5e6];
    let mut total = [0.0; 2];
    for k in 0..READINGS {
        for gpu in 0..2 {
            let procs = processes(gpu, k);
            let p = power(idle_w[gpu], &procs);
            if k > 0 {
                counter[gpu] += p * INTERVAL_S;
                total[gpu] += p * INTERVAL_S;
            }
            if gpu == 0 && k == RESET_AT {
                // After a reload the counter restarts near zero; serve takes this tick from power × Δt.
                counter[gpu] = p * INTERVAL_S;
            }
            if gpu == 1 && k == FAILED_AT {
                // The next good reading accounts for the energy since the last one.
                let error = json!({"call": "nvmlDeviceGetTotalEnergyConsumption", "code": "timeout"});
                lines.push(json!({"gpu": gpu, "error": error}).to_string());
                continue;
            }
            let reading = json!({
                "time_s": k as f64 * INTERVAL_S,
                "energy_j": counter[gpu],
                "power_w": p,
                "sm_mhz": if procs.is_empty() { 1410 } else { 1980 },
                "mem_mhz": 2619,
                "processes": procs.iter().map(|&(pid, sm, mem)| json!({"pid": pid, "sm": sm, "mem": mem})).collect::<Vec<_>>(),
                "running": procs.iter().map(|p| p.0).collect::<Vec<_>>(),
            });
            lines.push(json!({"gpu": gpu, "reading": reading}).to_string());
        }
    }
    (lines.join("\n") + "\n", total)
}

fn write_trace(dir: &Path) -> (PathBuf, [f64; 2]) {
    let (text, total) = trace();
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, text).unwrap();
    (path, total)
}

/// promtool and prometheus from PATH (or /usr/bin). When missing: a failure naming the Debian package if
/// GPUMODEL_REQUIRE_PROMETHEUS=1, else a note and `None` (the caller returns).
fn prometheus_tools() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain([PathBuf::from("/usr/bin")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    match (find("promtool"), find("prometheus")) {
        (Some(promtool), Some(prometheus)) => Some((promtool, prometheus)),
        _ if std::env::var("GPUMODEL_REQUIRE_PROMETHEUS").is_ok_and(|v| v == "1") => panic!(
            "promtool and prometheus are needed (GPUMODEL_REQUIRE_PROMETHEUS=1): install the Debian package \
             prometheus (scripts/test does, as root)"
        ),
        _ => {
            eprintln!("note: promtool or prometheus not found (Debian package prometheus); test skipped");
            None
        }
    }
}

/// A child process killed and reaped when dropped, so that a failing assertion leaves none behind.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A plain HTTP/1.0 GET (no chunked encoding, the server closes): status and body.
fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Ok((status, body.to_string()))
}

/// Percent-encoding of a query-string value (every byte but the unreserved ones).
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A Prometheus HTTP API answer's `data.result`, or why there is none.
fn api(addr: &str, path: &str) -> Result<Vec<Value>, String> {
    let (status, body) = http_get(addr, path).map_err(|e| format!("GET {path}: {e}"))?;
    let v: Value = serde_json::from_str(&body).map_err(|e| format!("GET {path}: {status} {e}: {body}"))?;
    if v["status"] != "success" {
        return Err(format!("GET {path}: {status} {body}"));
    }
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

/// An instant PromQL query: value by `gpu` label.
fn query(addr: &str, promql: &str) -> Result<BTreeMap<String, f64>, String> {
    let result = api(addr, &format!("/api/v1/query?query={}", url_encode(promql)))?;
    Ok(result
        .iter()
        .filter_map(|r| {
            let gpu = r["metric"]["gpu"].as_str().unwrap_or_default().to_string();
            r["value"][1].as_str().and_then(|v| v.parse().ok()).map(|v| (gpu, v))
        })
        .collect())
}

/// A range PromQL query over [start, end] at 1 s steps: per `gpu`, value by evaluation time (ms).
fn query_range(
    addr: &str,
    promql: &str,
    start: f64,
    end: f64,
) -> Result<BTreeMap<String, BTreeMap<i64, f64>>, String> {
    let path =
        format!("/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step=1", url_encode(promql));
    let result = api(addr, &path)?;
    Ok(result
        .iter()
        .map(|r| {
            let gpu = r["metric"]["gpu"].as_str().unwrap_or_default().to_string();
            let points = r["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    let t = (p[0].as_f64()? * 1000.0).round() as i64;
                    Some((t, p[1].as_str()?.parse().ok()?))
                })
                .collect();
            (gpu, points)
        })
        .collect())
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// The last lines of a log file, for failure messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// `promtool check metrics` on `text`: its exit status and report.
fn promtool_check(promtool: &Path, text: &str) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status, format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// The counter families of an OpenMetrics text (names without `_total`).
fn counter_families(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| Some(l.strip_prefix("# TYPE ")?.strip_suffix(" counter")?.to_string()))
        .collect()
}

/// The same samples in Prometheus' classic text format, which promtool's linter reads: a counter's HELP and
/// TYPE name its `_total` sample, and there are no `# UNIT` or `# EOF` lines.
fn classic_text(openmetrics: &str) -> String {
    let counters = counter_families(openmetrics);
    let mut out = String::new();
    for l in openmetrics.lines().filter(|l| !l.starts_with("# UNIT ") && *l != "# EOF") {
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|kw| {
            let rest = l.strip_prefix(kw)?;
            let (name, tail) = rest.split_once(' ')?;
            counters.iter().any(|c| c == name).then(|| format!("{kw}{name}_total {tail}"))
        });
        out += renamed.as_deref().unwrap_or(l);
        out.push('\n');
    }
    out
}

#[test]
fn promtool_accepts_one_scrape_of_a_long_trace() {
    let Some((promtool, _)) = prometheus_tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_trace(dir.path());
    let out =
        common::gpumodel().args(["serve", "--once", "--per-pid", "--replay"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("gpumodel_process_energy_joules_total{") && text.ends_with("# EOF\n"), "{text}");

    // The exposition as served. promtool reads the classic text format, where a counter's HELP and TYPE
    // carry the `_total` name; OpenMetrics names the family without it, so promtool sees each `X_total`
    // sample as an untyped family without help. Those lines, and only those, are the formats' difference.
    let (status, report) = promtool_check(&promtool, &text);
    let counters = counter_families(&text);
    let problems: Vec<&str> = report
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !counters.iter().any(|c| *l == format!("{c}_total no help text")))
        .collect();
    assert!(
        problems.is_empty() && (status.success() || status.code() == Some(3)),
        "promtool check metrics: {status:?}\n{report}\non:\n{text}"
    );
    // The same samples in the classic format, so that the linter sees each counter with its type and help:
    // no problem at all.
    let classic = classic_text(&text);
    let (status, report) = promtool_check(&promtool, &classic);
    assert!(
        status.success() && report.trim().is_empty(),
        "promtool check metrics: {status:?}\n{report}\non:\n{classic}"
    );
}

#[test]
fn prometheus_scrapes_a_live_replay_and_energy_is_conserved_at_every_scrape() {
    let Some((_, prometheus)) = prometheus_tools() else { return };
    let begun = Instant::now();
    let deadline = begun + Duration::from_secs(60);
    let dir = tempfile::tempdir().unwrap();
    let (path, want) = write_trace(dir.path());

    let mut serve = Running(
        Command::new(env!("CARGO_BIN_EXE_gpumodel"))
            .args(["serve", "--listen", "127.0.0.1:0", "--interval", &INTERVAL_S.to_string(), "--per-pid"])
            .arg("--replay")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Kept open until the end: serve's later messages must not meet a closed pipe.
    let mut serve_err = BufReader::new(serve.0.stderr.take().unwrap());
    let mut line = String::new();
    serve_err.read_line(&mut line).unwrap();
    let target = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in serve's first line {line:?}"))
        .to_string();
    let started = unix_now();

    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let web = format!("127.0.0.1:{port}");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: gpumodel\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let log = dir.path().join("prometheus.log");
    let _prometheus = Running(
        Command::new(&prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
            .stderr(Stdio::from(std::fs::File::options().append(true).open(&log).unwrap()))
            .spawn()
            .unwrap(),
    );

    // The final totals are in Prometheus once every GPU's board energy is the trace's whole energy (serve
    // holds its totals after the trace's end).
    let board = "sum by (gpu) (gpumodel_gpu_energy_joules_total)";
    let parts = "sum by (gpu) (gpumodel_gpu_idle_energy_joules_total) \
                 + sum by (gpu) (gpumodel_gpu_unattributed_energy_joules_total) \
                 + sum by (gpu) (gpumodel_process_energy_joules_total{component=\"dynamic\"})";
    let close = |a: f64, b: f64, rel: f64| (a - b).abs() <= rel * b.abs().max(1.0);
    loop {
        let last = query(&web, board);
        if let Ok(got) = &last
            && (0..2).all(|g| got.get(&g.to_string()).is_some_and(|&v| close(v, want[g], 1e-9)))
        {
            break;
        }
        if Instant::now() >= deadline {
            let (_, targets) = http_get(&web, "/api/v1/targets").unwrap_or_default();
            panic!(
                "Prometheus did not reach the final totals {want:?} in 60 s; last answer {last:?}\n\
                 targets: {targets}\nprometheus log:\n{}",
                tail(&log)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    // The scrape parsed (OpenMetrics) without error.
    let (_, targets) = http_get(&web, "/api/v1/targets").unwrap();
    let targets: Value = serde_json::from_str(&targets).unwrap();
    let active = &targets["data"]["activeTargets"][0];
    assert_eq!(active["health"], "up", "{active}");
    assert_eq!(active["lastError"], "", "{active}");

    // At the end: the parts add up to the board energy, per GPU.
    let board_now = query(&web, board).unwrap();
    let parts_now = query(&web, parts).unwrap();
    for g in ["0", "1"] {
        let (b, p) = (board_now[g], parts_now.get(g).copied().unwrap_or(f64::NAN));
        assert!(close(p, b, 0.01), "GPU {g}: idle + unattributed + Σ process dynamic = {p} J, board {b} J");
    }
    // And at every scrape since the start (a range query at 1 s steps sees one scrape per step: all of a
    // scrape's samples share its timestamp).
    let end = unix_now();
    let board_range = query_range(&web, board, started, end).unwrap();
    let parts_range = query_range(&web, parts, started, end).unwrap();
    for g in ["0", "1"] {
        let (bs, ps) = (&board_range[g], &parts_range[g]);
        let compared: Vec<_> = ps.iter().filter_map(|(t, p)| bs.get(t).map(|b| (*t, *p, *b))).collect();
        // Several scrapes, however late a loaded machine started Prometheus within the 30 s replay.
        assert!(compared.len() >= 5, "GPU {g}: only {} scrapes with processes: {ps:?}", compared.len());
        for (t, p, b) in compared {
            assert!(close(p, b, 0.01), "GPU {g} at {t} ms: parts {p} J, board {b} J");
        }
    }

    // The trace's quirks reached Prometheus: GPU 0's counter reset, GPU 1's failed reading.
    let resets = query(&web, "sum by (gpu) (gpumodel_gpu_energy_resets_total)").unwrap();
    assert_eq!((resets["0"], resets["1"]), (1.0, 0.0));
    let errors = query(&web, "sum(gpumodel_nvml_errors_total{code=\"timeout\"})").unwrap();
    assert_eq!(errors.values().copied().collect::<Vec<_>>(), [1.0]);
    let containers =
        query(&web, "count by (gpu) (gpumodel_container_energy_joules_total{component=\"dynamic\"})")
            .unwrap();
    assert_eq!((containers["0"], containers["1"]), (1.0, 2.0));

    // Stop serve as a node would (SIGTERM) and check it exits cleanly; Prometheus goes with its guard.
    assert!(Command::new("kill").args(["-TERM", &serve.0.id().to_string()]).status().unwrap().success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = serve.0.try_wait().unwrap() {
            break s;
        }
        // A bound for a hang, not a speed: a loaded machine may take seconds to schedule the exit.
        assert!(t.elapsed() < Duration::from_secs(30), "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    drop(serve_err);
}
