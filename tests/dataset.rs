//! `gpumodel dataset` and `gpumodel import` driven through the real binary, on the real public files
//! (GPUMODEL_DATA_DIR, set by .ci/run to ../shared/datasets).

use std::io::{Read, Write};
use std::net::TcpListener;

mod common;
use common::{data_dir, gpumodel};

fn show_json(name: &str) -> serde_json::Value {
    let out = gpumodel().args(["dataset", "show", name, "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn titanx_micro_has_6528_rows_of_102_microbenchmarks() {
    let s = show_json("guerreiro-titanx-micro");
    assert_eq!(s["rows"], 6528);
    assert_eq!(s["kernels"], 102);
    assert_eq!(numbers(&s["core_mhz"]).len(), 16);
    assert_eq!(numbers(&s["mem_mhz"]), vec![810.0, 3300.0, 3505.0, 4005.0]);
    let p = numbers(&s["power_w"]);
    assert!(p[0] > 30.0 && p[0] < 45.0 && p[1] > 200.0 && p[1] < 300.0, "{p:?}");
}

#[test]
fn titanx_real_has_2240_rows_of_35_applications() {
    let s = show_json("guerreiro-titanx-real");
    assert_eq!(s["rows"], 2240);
    assert_eq!(s["kernels"], 35);
    assert_eq!(numbers(&s["core_mhz"])[0], 595.0);
}

#[test]
fn gtx1080ti_has_600_rows_of_30_kernels_with_time() {
    let s = show_json("nvdvfs-gtx1080ti");
    assert_eq!(s["rows"], 600);
    assert_eq!(s["kernels"], 30);
    assert_eq!(numbers(&s["core_mhz"]), vec![1600.0, 1700.0, 1800.0, 1900.0, 2000.0]);
    assert_eq!(numbers(&s["mem_mhz"]), vec![4000.0, 4500.0, 5000.0, 5500.0]);
    let t = numbers(&s["time_s"]);
    assert!(t[0] > 0.0 && t[1] < 10.0, "{t:?}");
}

#[test]
fn gtx980_has_750_rows() {
    let s = show_json("nvdvfs-gtx980");
    assert_eq!(s["rows"], 750);
    assert_eq!(s["kernels"], 30);
}

#[test]
fn list_shows_all_four_as_present() {
    let out = gpumodel().args(["dataset", "list", "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["command"], "dataset-list");
    let rows = v["datasets"].as_array().unwrap();
    assert!(rows.len() >= 4);
    for r in rows {
        assert_eq!(r["found"], "data-dir", "{r}");
    }
}

#[test]
fn import_writes_a_training_table_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let src = data_dir().join("nvdvfs/gtx1080ti-dvfs-real-Performance-Power.csv");
    gpumodel().args(["import", "nvdvfs"]).arg(&src).arg("--out").arg(&out).assert().success();
    let text = std::fs::read_to_string(&out).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.starts_with("kernel,app,argNo,kernel_function,blocks,source_index,core_mhz"), "{header}");
    assert!(header.contains("power_w") && header.contains("time_s") && header.contains("grid_x"));
    assert_eq!(text.lines().count(), 601);
    // The written table is itself a dataset `show` reads.
    let v = gpumodel().args(["dataset", "show", "--format", "json"]).arg(&out).output().unwrap();
    let s: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(s["rows"], 600);
    assert_eq!(s["kernels"], 30);
}

#[test]
fn a_truncated_file_is_one_clear_line_and_keeps_the_old_output() {
    let dir = tempfile::tempdir().unwrap();
    let src =
        std::fs::read_to_string(data_dir().join("guerreiro-titanx/titanx_real_allFsPower_HPCAandCF.csv"))
            .unwrap();
    // Cut the file in the middle of line 11.
    let cut: String = src.lines().take(10).collect::<Vec<_>>().join("\n") + "\nmri-gridding,183.1,1164";
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, cut).unwrap();
    let out = dir.path().join("out.csv");
    std::fs::write(&out, "precious").unwrap();
    let o = gpumodel().args(["import", "guerreiro"]).arg(&bad).arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.csv:11:") && err.contains("expected 12 fields, found 3"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious");
    // With --skip-bad-rows the good rows are written and the skip is counted.
    let o = gpumodel()
        .args(["import", "guerreiro", "--skip-bad-rows"])
        .arg(&bad)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("skipped 1 malformed row(s)"));
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 7);
}

#[test]
fn text_in_a_numeric_column_names_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(
        data_dir().join("nvdvfs/gtx980-high-dvfs-real-small-workload-Performance-Power.csv"),
    )
    .unwrap();
    let mut lines: Vec<String> = src.lines().map(String::from).collect();
    lines[5] = lines[5].replacen(",700,", ",fast,", 1);
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let o = gpumodel().args(["import", "nvdvfs"]).arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.csv:6: column coreF: 'fast' is not a finite number"), "{err}");
}

#[test]
fn a_wrong_column_count_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "2\n975,3505\n7,1\nSP,INT,DP,SFU,CF,L2,Shared,DRAM\nk,100,975,3505,0,0,0,0,0,0,0,0,0,0\n",
    )
    .unwrap();
    let o = gpumodel().args(["import", "guerreiro"]).arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.csv:5:") && err.contains("expected 12 fields") && err.contains("found 14"),
        "{err}"
    );
}

#[test]
fn a_missing_dataset_says_how_to_get_it() {
    let empty = tempfile::tempdir().unwrap();
    let o = gpumodel()
        .env("GPUMODEL_DATA_DIR", empty.path())
        .args(["dataset", "show", "nvdvfs-gtx980"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("gpumodel dataset fetch nvdvfs-gtx980") && err.contains("GPUMODEL_DATA_DIR"),
        "{err}"
    );
}

/// Serves `body` for every request on 127.0.0.1, `n` times, then stops.
fn serve(body: Vec<u8>, n: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    format!("http://{addr}")
}

#[test]
fn fetch_downloads_from_a_mirror_and_verifies_sha256() {
    let body =
        std::fs::read(data_dir().join("nvdvfs/gtx980-high-dvfs-real-small-workload-Performance-Power.csv"))
            .unwrap();
    let mirror = serve(body.clone(), 1);
    let cache = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    gpumodel()
        .env("GPUMODEL_DATA_DIR", empty.path())
        .env("GPUMODEL_CACHE_DIR", cache.path())
        .env("GPUMODEL_DATASET_MIRROR", &mirror)
        .args(["dataset", "fetch", "nvdvfs-gtx980"])
        .assert()
        .success()
        .stdout(predicates::str::contains("downloaded, sha256 verified"));
    let got =
        std::fs::read(cache.path().join("nvdvfs/gtx980-high-dvfs-real-small-workload-Performance-Power.csv"))
            .unwrap();
    assert_eq!(got, body);
    // Now it resolves from the cache.
    let o = gpumodel()
        .env("GPUMODEL_DATA_DIR", empty.path())
        .env("GPUMODEL_CACHE_DIR", cache.path())
        .args(["dataset", "show", "nvdvfs-gtx980", "--format", "json"])
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["found"], "cache");
}

#[test]
fn a_corrupt_download_names_both_hashes_and_writes_nothing() {
    let mirror = serve(b"tampered".to_vec(), 1);
    let cache = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let o = gpumodel()
        .env("GPUMODEL_DATA_DIR", empty.path())
        .env("GPUMODEL_CACHE_DIR", cache.path())
        .env("GPUMODEL_DATASET_MIRROR", &mirror)
        .args(["dataset", "fetch", "nvdvfs-gtx980"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("b4fa0dfaed310e08705f1e4f399bafab191f606e4a01df91fff8da76ec9cca3e"), "{err}");
    assert!(err.contains(&gpumodel_sha(b"tampered")), "{err}");
    assert!(!cache.path().join("nvdvfs/gtx980-high-dvfs-real-small-workload-Performance-Power.csv").exists());
}

fn gpumodel_sha(_bytes: &[u8]) -> String {
    // Independent of the code under test: `printf tampered | sha256sum`.
    "d121be3103007b41edf96f8262925f8c7d61894afe9a041843b631f69445bc57".to_string()
}

/// A dataset's name stands for its file in `import`, as in `train --data`: the same table as importing
/// the file by its path.
#[test]
fn import_takes_a_dataset_name_for_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let (by_name, by_path) = (dir.path().join("n.csv"), dir.path().join("p.csv"));
    let o = gpumodel()
        .args(["import", "guerreiro", "guerreiro-titanx-micro", "--out"])
        .arg(&by_name)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file = data_dir().join("guerreiro-titanx/titanx_micro_names_peak_idle_HPCAandCF.csv");
    assert!(file.is_file(), "the registry's file moved: {}", file.display());
    gpumodel().args(["import", "guerreiro"]).arg(&file).arg("--out").arg(&by_path).assert().success();
    let (a, b) = (std::fs::read_to_string(&by_name).unwrap(), std::fs::read_to_string(&by_path).unwrap());
    assert_eq!(a.lines().count(), 6529);
    assert_eq!(a, b);
}

/// A binary file given where a text export belongs is named as such, in one line.
#[test]
fn a_binary_file_is_said_to_be_one() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("export.xlsx");
    std::fs::write(&bin, [0x50, 0x4b, 0x03, 0x04, 0xff, 0xfe, 0x00, 0x9c]).unwrap();
    let o = gpumodel()
        .args(["import", "guerreiro"])
        .arg(&bin)
        .arg("--out")
        .arg(dir.path().join("o.csv"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("export.xlsx: not a text file (not UTF-8)") && !e.contains("permissions"), "{e}");
    // The same file as a kernel profile, a utilization profile and a DCGM log to import.
    let out = dir.path().join("p.csv");
    for args in [
        vec!["predict", "--kernel"],
        vec!["predict", "--profile"],
        vec!["import", "dcgm", "--out", out.to_str().unwrap()],
    ] {
        let o = gpumodel().args(&args).arg(&bin).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains("export.xlsx: not a text file (not UTF-8)"), "{args:?}: {e}");
    }
    assert!(!out.exists(), "nothing is written");
}

/// The Titan X profile's idle table is the dataset's `Idle` rows (power rounded down to 0.1 W), and it is a
/// floor: no measured kernel row of the training or the test file draws less than the floor at its clocks.
#[test]
fn the_titanx_idle_table_is_the_dataset_s_idle_rows_and_no_measured_row_is_below_it() {
    let arch = gpumodel_models::arch::ArchProfile::builtin("titanx").unwrap();
    let table = &arch.idle_w.as_ref().expect("the Titan X profile has an idle table").value;
    let rows = |file: &str| -> Vec<(String, f64, f64, f64)> {
        let text = std::fs::read_to_string(data_dir().join("guerreiro-titanx").join(file)).unwrap();
        text.lines()
            .skip(4)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap())
            })
            .collect()
    };
    let micro = rows("titanx_micro_names_peak_idle_HPCAandCF.csv");
    let idle: Vec<_> = micro.iter().filter(|r| r.0 == "Idle").collect();
    assert_eq!((idle.len(), table.len()), (64, 64));
    for (_, w, core, mem) in &idle {
        let e =
            table.iter().find(|e| e[0] == *core && e[1] == *mem).unwrap_or_else(|| panic!("{core}/{mem}"));
        assert!(e[2] <= *w && *w - e[2] < 0.1 + 1e-9, "{core}/{mem}: table {} against measured {w}", e[2]);
    }
    let mut checked = 0;
    for (name, w, core, mem) in micro.iter().chain(&rows("titanx_real_allFsPower_HPCAandCF.csv")) {
        if name == "Idle" {
            continue;
        }
        let floor = arch.idle_floor(*core, *mem).unwrap();
        assert!(*w >= floor[2], "{name} at {core}/{mem}: {w} W below the idle floor {floor:?}");
        checked += 1;
    }
    assert_eq!(checked, 6464 + 2240);
}
