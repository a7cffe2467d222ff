//! Helpers shared by the tests that load a stand-in `libnvidia-ml.so` built from C.

use std::path::{Path, PathBuf};

/// Compiles the stand-in NVML `tests/<c_file>` for `scenario` (its `-DSCENARIO`) into `dir` and returns
/// the shared object's path.
pub fn build_fake_nvml(dir: &Path, c_file: &str, scenario: u32) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(c_file);
    let stem = Path::new(c_file).file_stem().and_then(|s| s.to_str()).unwrap_or("fake");
    let out = dir.join(format!("libnvidia-ml-{stem}{scenario}.so"));
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .arg(format!("-DSCENARIO={scenario}"))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("a C compiler (`cc`) is needed to build the fake NVML");
    assert!(st.success(), "cc failed on {}", src.display());
    out
}
