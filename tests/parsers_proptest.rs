//! Every reader of user files, hardened by property tests: random bytes, and structured
//! mutations of real files — truncated, reordered or missing columns, NaN/Inf, negative and huge values,
//! wrong units, a byte-order mark, CRLF line ends, duplicated and deleted lines — fed to each reader:
//! Guerreiro and NV-DVFS imports (the public datasets), training tables, kernel profiles, architecture
//! profiles, trained model artifacts, split case files, time calibrations, ncu / nvprof CSV (and the
//! nvprof gpu trace, the injection library's rows), collector traces and sidecars, the dataset registry
//! and the counter maps.
//!
//! Each must return, never panic (a panic fails the property), and every error it returns must be one
//! line naming the file. The library readers write nothing; `import` through the binary is checked to
//! leave no output behind when it fails.
//!
//! Fixed seed ([`SEED`]) and bounded case counts ([`CASES`] mutations + [`CASES`] random inputs per
//! reader, [`CLI_CASES`] runs of the binary), so CI time stays small and failures reproduce; the counts
//! are printed by `cases_are_bounded_and_reported` (`cargo test --test parsers_proptest -- --nocapture`).

mod common;

use gpumodel_models::import::{BadRows, Format, import_bytes};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use std::path::{Path, PathBuf};

/// The seed of every runner here.
const SEED: u64 = 0x1605_2026;
/// Mutated-file cases per reader; the same number again of random-byte cases.
const CASES: u32 = 128;
/// Runs of the `gpumodel` binary per CLI property (each is a process start).
const CLI_CASES: u32 = 10;

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(SEED),
        failure_persistence: None,
        // Shrinking a parser failure is cheap, but bound it so a failure reports quickly.
        max_shrink_iters: 256,
        ..Config::default()
    })
}

/// One structured change to a text file.
#[derive(Debug, Clone)]
enum Mutation {
    /// Keep this fraction (per mille) of the bytes.
    Truncate(u16),
    /// Remove the k-th comma-separated cell of every line (a missing column).
    DropColumn(usize),
    /// Swap two cells of every line (reordered columns).
    SwapColumns(usize, usize),
    /// Replace one cell (line, cell) by a hostile value.
    SetCell(usize, usize, &'static str),
    /// Replace a number anywhere in the text by a hostile value.
    SetNumber(usize, &'static str),
    /// Duplicate a line (duplicate kernels, repeated headers).
    DuplicateLine(usize),
    /// Delete a line.
    DeleteLine(usize),
    /// A UTF-8 byte-order mark in front.
    Bom,
    /// CRLF line ends.
    Crlf,
    /// One byte overwritten.
    Byte(usize, u8),
}

/// Values users' files really contain where a number is expected.
const HOSTILE: &[&str] = &[
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "-1",
    "-0",
    "0",
    "1e308",
    "-1e308",
    "1e999",
    "18446744073709551616",
    "4294967296",
    "",
    " ",
    "n/a",
    "abc",
    "1,5",
    "12 W",
    "12.5ms",
    "0x10",
    "\"",
    "\"\"",
    "1e-320",
    "Tbyte",
    "msecond",
    "Kinst/second",
    "(0, 1, 1)",
    "(4294967296, 1, 1)",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    let hostile = proptest::sample::select(HOSTILE);
    prop_oneof![
        (0u16..1000).prop_map(Mutation::Truncate),
        (0usize..40).prop_map(Mutation::DropColumn),
        (0usize..40, 0usize..40).prop_map(|(a, b)| Mutation::SwapColumns(a, b)),
        (0usize..60, 0usize..40, hostile.clone()).prop_map(|(l, c, v)| Mutation::SetCell(l, c, v)),
        (0usize..400, hostile).prop_map(|(k, v)| Mutation::SetNumber(k, v)),
        (0usize..60).prop_map(Mutation::DuplicateLine),
        (0usize..60).prop_map(Mutation::DeleteLine),
        Just(Mutation::Bom),
        Just(Mutation::Crlf),
        (0usize..100_000, any::<u8>()).prop_map(|(i, b)| Mutation::Byte(i, b)),
    ]
}

/// Split on commas outside quotes (enough for the CSV and TOML lines mutated here).
fn cells(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                out.last_mut().unwrap().push(ch);
            }
            ',' if !quoted => out.push(String::new()),
            _ => out.last_mut().unwrap().push(ch),
        }
    }
    out
}

fn apply(text: &[u8], m: &Mutation) -> Vec<u8> {
    let s = String::from_utf8_lossy(text).into_owned();
    let lines: Vec<&str> = s.split('\n').collect();
    let per_line = |f: &dyn Fn(Vec<String>) -> Vec<String>| -> Vec<u8> {
        lines.iter().map(|l| f(cells(l)).join(",")).collect::<Vec<_>>().join("\n").into_bytes()
    };
    match m {
        Mutation::Truncate(k) => text[..text.len() * usize::from(*k) / 1000].to_vec(),
        Mutation::DropColumn(k) => per_line(&|mut c| {
            if *k < c.len() && c.len() > 1 {
                c.remove(*k);
            }
            c
        }),
        Mutation::SwapColumns(a, b) => per_line(&|mut c| {
            if *a < c.len() && *b < c.len() {
                c.swap(*a, *b);
            }
            c
        }),
        Mutation::SetCell(l, k, v) => {
            let mut ls: Vec<String> = lines.iter().map(|x| x.to_string()).collect();
            if let Some(line) = ls.get_mut(*l) {
                let mut c = cells(line);
                if let Some(cell) = c.get_mut(*k) {
                    *cell = v.to_string();
                }
                *line = c.join(",");
            }
            ls.join("\n").into_bytes()
        }
        Mutation::SetNumber(k, v) => {
            // The k-th run of digits (mod their count) becomes `v`.
            let bytes = s.as_bytes();
            let mut runs = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i].is_ascii_digit() {
                    let j = (i..bytes.len()).find(|&j| !bytes[j].is_ascii_digit()).unwrap_or(bytes.len());
                    runs.push((i, j));
                    i = j;
                } else {
                    i += 1;
                }
            }
            if runs.is_empty() {
                return text.to_vec();
            }
            let (a, b) = runs[k % runs.len()];
            [&bytes[..a], v.as_bytes(), &bytes[b..]].concat()
        }
        Mutation::DuplicateLine(l) => {
            let mut ls = lines.clone();
            if *l < ls.len() {
                ls.insert(*l, lines[*l]);
            }
            ls.join("\n").into_bytes()
        }
        Mutation::DeleteLine(l) => {
            let mut ls = lines.clone();
            if *l < ls.len() {
                ls.remove(*l);
            }
            ls.join("\n").into_bytes()
        }
        Mutation::Bom => [b"\xef\xbb\xbf".as_slice(), text].concat(),
        Mutation::Crlf => s.replace('\n', "\r\n").into_bytes(),
        Mutation::Byte(i, b) => {
            let mut t = text.to_vec();
            if !t.is_empty() {
                let n = t.len();
                t[i % n] = *b;
            }
            t
        }
    }
}

/// The checks on one reader's answer: an error is one line and names the file.
fn check_error(reader: &str, source: &str, r: Result<(), String>) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        prop_assert!(!e.trim().is_empty(), "{reader}: empty error");
        prop_assert!(!e.contains('\n'), "{reader}: error of several lines:\n{e}");
        prop_assert!(e.contains(source), "{reader}: error does not name the file {source}: {e}");
    }
    Ok(())
}

/// Runs `read` on [`CASES`] mutations (1–4 each) of `base` and [`CASES`] random byte strings.
fn harden(reader: &str, source: &str, base: &[u8], read: &dyn Fn(&[u8]) -> Result<(), String>) {
    // The unmutated file must be accepted, or the mutations prove nothing.
    if let Err(e) = read(base) {
        panic!("{reader}: the base file is refused: {e}");
    }
    let base = base.to_vec();
    runner(CASES)
        .run(&proptest::collection::vec(mutation(), 1..=4), |ms| {
            let mut t = base.clone();
            for m in &ms {
                t = apply(&t, m);
            }
            check_error(reader, source, read(&t))
        })
        .unwrap_or_else(|e| panic!("{reader} (mutations): {e}"));
    runner(CASES)
        .run(&proptest::collection::vec(any::<u8>(), 0..1500), |bytes| {
            check_error(reader, source, read(&bytes))
        })
        .unwrap_or_else(|e| panic!("{reader} (random bytes): {e}"));
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The first `n` lines of a file (the real datasets are large; their head has every column).
fn head(path: &Path, n: usize) -> Vec<u8> {
    let t = std::fs::read_to_string(path).unwrap();
    let mut out: String = t.lines().take(n).collect::<Vec<_>>().join("\n");
    out.push('\n');
    out.into_bytes()
}

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn import_reader(format: Format, source: &'static str) -> impl Fn(&[u8]) -> Result<(), String> {
    move |b| import_bytes(b, source, format, BadRows::Fail).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn guerreiro_import_never_panics() {
    let d = common::data_dir();
    let base = head(&d.join("guerreiro-titanx/titanx_real_allFsPower_HPCAandCF.csv"), 40);
    harden("guerreiro real", "g.csv", &base, &import_reader(Format::Guerreiro, "g.csv"));
    let base = head(&d.join("guerreiro-titanx/titanx_micro_names_peak_idle_HPCAandCF.csv"), 40);
    harden("guerreiro micro", "g.csv", &base, &import_reader(Format::Guerreiro, "g.csv"));
}

#[test]
fn nvdvfs_import_never_panics() {
    let d = common::data_dir();
    let base = head(&d.join("nvdvfs/gtx980-high-dvfs-real-small-workload-Performance-Power.csv"), 40);
    harden("nv-dvfs", "n.csv", &base, &import_reader(Format::Nvdvfs, "n.csv"));
}

#[test]
fn training_table_reader_never_panics() {
    let d = common::data_dir();
    let base = head(&d.join("nvdvfs/gtx980-high-dvfs-real-small-workload-Performance-Power.csv"), 30);
    let table = import_bytes(&base, "n.csv", Format::Nvdvfs, BadRows::Fail).unwrap().table;
    let mut csv = Vec::new();
    table.write_csv_to(&mut csv).unwrap();
    harden("table", "t.csv", &csv, &|b| {
        gpumodel_models::Table::read_csv_bytes(b, "t.csv", gpumodel_models::table::GROUP_COLUMN)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

#[test]
fn profiler_csv_readers_never_panic() {
    use gpumodel_models::ncu::{read_inject_rows, read_ncu, read_nvprof, read_nvprof_gpu_trace};
    let fx = |n: &str| std::fs::read(repo("collect/tests/fixtures").join(n)).unwrap();
    harden("ncu raw", "k.csv", &fx("ncu_raw_ga102.csv"), &|b| {
        read_ncu(&text(b), "k.csv").map(|_| ()).map_err(|e| e.to_string())
    });
    harden("ncu long", "k.csv", &fx("ncu_long_no_launch_columns.csv"), &|b| {
        read_ncu(&text(b), "k.csv").map(|_| ()).map_err(|e| e.to_string())
    });
    harden("nvprof", "k.csv", &fx("nvprof_events_metrics_gtx580.csv"), &|b| {
        read_nvprof(&text(b), "k.csv").map(|_| ()).map_err(|e| e.to_string())
    });
    harden("nvprof gpu trace", "k.csv", &fx("nvprof_gpu_trace_gtx580.csv"), &|b| {
        read_nvprof_gpu_trace(&text(b), "k.csv").map(|_| ()).map_err(|e| e.to_string())
    });
    let inject = "index,name,grid_x,grid_y,grid_z,block_x,block_y,block_z,registers_per_thread,shared_mem_bytes,duration_s,core_mhz,device,inst_executed\n\
                  0,\"k(int)\",8,1,1,128,1,1,24,512,0.000002,1410,\"NVIDIA A100-SXM4-40GB\",1000\n1,\"k(int)\",8,1,1,128,1,1,24,512,0.000003,NaN,\"\",1200\n";
    harden("inject rows", "k.csv", inject.as_bytes(), &|b| {
        // Rows become profiles the way `collect --kernel-totals` uses them.
        let ks = read_inject_rows(&text(b), "k.csv").map_err(|e| e.to_string())?;
        for k in ks {
            let _ = k.to_profile("k.csv", None).map_err(|e| e.to_string());
        }
        Ok(())
    });
}

/// Readers that take a path: the bytes go to a file named `name` in a scratch folder.
fn via_file(
    name: &'static str,
    read: impl Fn(&Path) -> Result<(), String>,
) -> impl Fn(&[u8]) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    move |b| {
        let p = dir.path().join(name);
        std::fs::write(&p, b).unwrap();
        read(&p)
    }
}

#[test]
fn kernel_profile_reader_never_panics() {
    let k = gpumodel_models::ncu::read_ncu(
        &std::fs::read_to_string(repo("collect/tests/fixtures/ncu_raw_ga102.csv")).unwrap(),
        "k.csv",
    )
    .unwrap()
    .0;
    let json = serde_json::to_string_pretty(&k[0].to_profile("k.csv", None).unwrap()).unwrap();
    harden(
        "kernel profile",
        "profile.json",
        json.as_bytes(),
        &via_file("profile.json", |p| {
            gpumodel_models::profile::KernelProfile::from_file(p).map(|_| ()).map_err(|e| e.to_string())
        }),
    );
}

#[test]
fn arch_profile_reader_never_panics() {
    let base = std::fs::read(repo("models/arch/titanx.toml")).unwrap();
    harden("arch profile", "arch.toml", &base, &|b| {
        gpumodel_models::arch::ArchProfile::from_toml_str(&text(b), "arch.toml")
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

#[test]
fn model_artifact_reader_never_panics() {
    let base = std::fs::read(repo("models/trained/titanx-bpann.json")).unwrap();
    harden("artifact", "model.json", &base, &|b| {
        gpumodel_models::artifact::ModelArtifact::from_json_str(&text(b), "model.json")
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

#[test]
fn split_case_reader_never_panics() {
    let base = std::fs::read(repo("datasets/examples/split/peach_system_i.toml")).unwrap();
    harden("split case", "case.toml", &base, &|b| {
        gpumodel_predict::split::input::parse(&text(b), "case.toml").map(|_| ()).map_err(|e| e.to_string())
    });
}

#[test]
fn calibration_reader_never_panics() {
    use gpumodel_predict::calibration::file::{
        CalibrationFile, Coefficients, DatasetInfo, FORM, FORMAT_VERSION, FitInfo,
    };
    let file = CalibrationFile {
        format_version: FORMAT_VERSION,
        kind: "gpumodel-time-calibration".into(),
        form: FORM.into(),
        arch: "gtx1080ti".into(),
        shared_overlap: Default::default(),
        // The structure the default shared_overlap implies, as the writer records it.
        fill: gpumodel_predict::calibration::file::fill_label(Default::default()).into(),
        stores: "per-l2-write".into(),
        dataset: DatasetInfo {
            name: "nvdvfs-gtx1080ti".into(),
            path: "x.csv".into(),
            sha256: "00".repeat(32),
            rows: 10,
            kernels: 2,
        },
        coefficients: Some(Coefficients { a_memory: 1.1, a_compute: 0.9, a_shared: 1.0, a_l2: 0.5, p: 4.0 }),
        fit: FitInfo { out_of_fold_mape_pct: 15.0, in_sample_mape_pct: 12.0, uncalibrated_mape_pct: 40.0 },
    };
    let base = file.to_toml().unwrap();
    harden("calibration", "cal.toml", base.as_bytes(), &|b| {
        CalibrationFile::parse(&text(b), "cal.toml").map(|_| ()).map_err(|e| e.to_string())
    });
}

#[test]
fn registry_and_counter_map_readers_never_panic() {
    let base = std::fs::read(repo("datasets/registry.toml")).unwrap();
    // The registry's errors carry no file name of their own (it is one built-in file): one line suffices.
    harden("registry", "", &base, &|b| {
        gpumodel_models::registry::Registry::from_toml_str(&text(b)).map(|_| ()).map_err(|e| e.to_string())
    });
    let base = std::fs::read(repo("models/counters/ga102.toml")).unwrap();
    harden("counter map", "ga102.toml", &base, &|b| {
        gpumodel_models::counters::CounterMap::parse(&text(b), "ga102.toml")
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

/// A trace and its sidecar, written by the collector's writer, then read back after mutation of either.
#[test]
fn trace_readers_never_panic() {
    use gpumodel_models::trace::{read_meta, read_rows};
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    // A real trace of the scripted GPU, written by the collector.
    let o = common::gpumodel()
        .env("GPUMODEL_FAKE_GPU", "1")
        .args(["collect", "--idle-seconds", "0", "--min-seconds", "0.2", "-o"])
        .arg(&csv)
        .args(["/bin/sleep", "0.05"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let base_csv = std::fs::read(&csv).unwrap();
    let base_json = std::fs::read(csv.with_extension("json")).unwrap();
    let sidecar = base_json.clone();
    // Errors name the trace or its sidecar (t.csv / t.json).
    harden(
        "trace rows",
        "t.",
        &base_csv,
        &via_file("t.csv", move |p| {
            std::fs::write(p.with_extension("json"), &sidecar).unwrap();
            let m = read_meta(p).map_err(|e| e.to_string())?;
            read_rows(p, &m).map(|_| ()).map_err(|e| e.to_string())
        }),
    );
    let rows_csv = base_csv.clone();
    harden(
        "trace sidecar",
        "t.",
        &base_json,
        &via_file("t.json", move |p| {
            let c = p.with_extension("csv");
            std::fs::write(&c, &rows_csv).unwrap();
            let m = read_meta(&c).map_err(|e| e.to_string())?;
            read_rows(&c, &m).map(|_| ()).map_err(|e| e.to_string())
        }),
    );
}

/// Through the binary: a failing `import` prints one line, no panic, and leaves no output file.
#[test]
fn failing_imports_write_nothing_and_say_one_line() {
    let d = common::data_dir();
    let base = head(&d.join("guerreiro-titanx/titanx_real_allFsPower_HPCAandCF.csv"), 25);
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    runner(CLI_CASES)
        .run(&proptest::collection::vec(mutation(), 1..=3), |ms| {
            let n = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut t = base.clone();
            for m in &ms {
                t = apply(&t, m);
            }
            let input = dir.path().join(format!("in{n}.csv"));
            let out = dir.path().join(format!("out{n}.csv"));
            std::fs::write(&input, &t).unwrap();
            let o = common::gpumodel()
                .args(["import", "guerreiro"])
                .arg(&input)
                .arg("--out")
                .arg(&out)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            prop_assert!(!err.contains("panicked"), "{err}");
            if !o.status.success() {
                prop_assert_eq!(err.trim().lines().count(), 1, "{}", err);
                prop_assert!(!out.exists(), "output written on error");
                prop_assert!(!out.with_extension("csv.part").exists(), "partial output left on error");
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn cases_are_bounded_and_reported() {
    println!(
        "parser property tests: seed {SEED:#x}; {CASES} mutated + {CASES} random-byte cases per reader (18 readers), \
         {CLI_CASES} binary runs"
    );
    const { assert!(CASES <= 128 && CLI_CASES <= 16, "keep CI fast") };
}
