//! Shared by the integration tests: where the public datasets are, and the binary with a clean environment.
#![allow(dead_code)] // each test file uses its own part

use assert_cmd::Command;
use std::path::PathBuf;

/// The public datasets (GPUMODEL_DATA_DIR, set by scripts/test to ../shared/datasets). Fails loudly when
/// they are missing: these tests exist to run on the real files.
pub fn data_dir() -> PathBuf {
    let dir = std::env::var_os("GPUMODEL_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"));
    assert!(
        dir.join("guerreiro-titanx").is_dir() && dir.join("nvdvfs").is_dir(),
        "the public datasets are not at {} — set GPUMODEL_DATA_DIR (CI sets it to ../shared/datasets)",
        dir.display()
    );
    dir
}

/// The `gpumodel` binary reading the public datasets, with an empty cache and no download mirror.
pub fn gpumodel() -> Command {
    let mut c = Command::cargo_bin("gpumodel").unwrap();
    c.env("GPUMODEL_DATA_DIR", data_dir());
    c.env("GPUMODEL_CACHE_DIR", std::env::temp_dir().join("gpumodel-test-empty-cache"));
    c.env_remove("GPUMODEL_DATASET_MIRROR");
    c
}

/// A value of a `key = value` line of a saved calibration (read by hand: the test must not trust the code
/// that wrote the file to read it back).
pub fn toml_value<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(key)
                .filter(|r| r.starts_with([' ', '=']))
                .and_then(|r| r.trim_start().strip_prefix('='))
        })
        .unwrap_or_else(|| panic!("no '{key} =' line in:\n{text}"))
        .trim()
}

/// A real profiler export of `../shared/profiles/` (read there, never copied; README there).
pub fn real_export(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/profiles").join(name);
    assert!(
        p.is_file(),
        "the real exports are not at {} (../shared/profiles from the repository)",
        p.display()
    );
    p
}

/// A hand-written profiler export of `collect/tests/fixtures` (each says so in its first lines).
pub fn profiler_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("collect/tests/fixtures").join(name)
}

/// `gpumodel import TOOL FILE …`, the set-up every importer test repeats: `--out`, `--profiles` and any
/// other flag chained on, then [`Import::run`] (whatever the outcome) or [`Import::ok`] (must succeed).
pub struct Import(Command);

impl Import {
    pub fn new(tool: &str, file: impl AsRef<std::ffi::OsStr>) -> Import {
        let mut c = gpumodel();
        c.args(["import", tool]).arg(file);
        Import(c)
    }
    /// The training table written (without it, the table goes to stdout).
    pub fn out(self, path: &std::path::Path) -> Import {
        self.arg("--out").arg(path)
    }
    /// The folder of kernel profiles written.
    pub fn profiles(self, dir: &std::path::Path) -> Import {
        self.arg("--profiles").arg(dir)
    }
    pub fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Import {
        self.0.arg(a);
        self
    }
    pub fn run(mut self) -> std::process::Output {
        self.0.output().unwrap()
    }
    /// Runs it and checks that it succeeded (the message carries its stderr).
    pub fn ok(self) -> std::process::Output {
        let o = self.run();
        assert!(o.status.success(), "import: {}", String::from_utf8_lossy(&o.stderr));
        o
    }
}

/// Builds the stand-in library `src` (a C file of the repository, e.g. `collect/tests/fake_nvml/fake_nvml.c`)
/// into `out` with `cc`, `defines` passed on (`-DSCENARIO=1`, linker flags).
pub fn cc(src: &str, out: &std::path::Path, defines: &[&str]) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(src);
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .args(defines)
        .arg(&src)
        .arg("-o")
        .arg(out)
        .status()
        .expect("a C compiler (`cc`) is needed to build the stand-in libraries");
    assert!(st.success(), "cc failed on {}", src.display());
}

/// The stand-in CUPTI (collect/tests/fake_cupti) built as `libcupti.so.12` and `libnvperf_host.so` in a new
/// folder `cupti` of `dir`, each with its SONAME so that cudarc's own lookup finds the copy loaded; the
/// folder goes first in GPUMODEL_CUDA_LIBS.
pub fn fake_cupti(dir: &std::path::Path, scenario: u32) -> PathBuf {
    let cupti = dir.join("cupti");
    std::fs::create_dir_all(&cupti).unwrap();
    for name in ["libcupti.so.12", "libnvperf_host.so"] {
        cc(
            "collect/tests/fake_cupti/fake_cupti.c",
            &cupti.join(name),
            &[&format!("-DSCENARIO={scenario}"), &format!("-Wl,-soname,{name}")],
        );
    }
    cupti
}

/// A table output's text lines as printed before wrapping at the table width: a line that begins with
/// two or more spaces right after a line that filled most of the width is joined to it.
pub fn logical_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut last_len = 0;
    for line in text.lines() {
        let len = line.chars().count();
        match out.last_mut() {
            Some(prev) if line.starts_with("  ") && last_len > 90 => {
                prev.push(' ');
                prev.push_str(line.trim_start());
            }
            _ => out.push(line.to_string()),
        }
        last_len = len;
    }
    out
}
