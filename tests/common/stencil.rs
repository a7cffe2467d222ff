//! The kernel outside the suite that the journeys on the scripted GPU predict, with the scripted GPU's true
//! power for it, and running the binary in a folder. Shared by `tests/journeys.rs` and
//! `tests/predict_partial.rs`.

use assert_cmd::Command;
use gpumodel_collect::suite::FakeSuiteDevice;
use gpumodel_models::timing::Clocks;
use std::collections::BTreeMap;
use std::path::Path;

/// Runs `c` in `dir`, which must succeed; its standard output.
pub fn run(mut c: Command, dir: &Path) -> String {
    let o = c.current_dir(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A kernel that no suite kernel is: it drives FP32, integer, global loads and stores, shared memory and
/// DRAM at once, at rates inside the suite's. Totals of one launch of 1 ms at the scripted GPU's default
/// clocks (1410 / 1215 MHz).
pub const TIME_S: f64 = 1e-3;
pub const COUNTERS: &[(&str, f64)] = &[
    ("inst_executed", 2.2e6),
    ("inst_fp_32", 0.9e6),
    ("inst_integer", 0.6e6),
    ("branch", 0.15e6),
    ("l1_global_load_hit", 0.4e6),
    ("l1_global_load_miss", 0.5e6),
    ("global_store_transaction", 0.7e6),
    ("shared_load", 0.6e6),
    ("shared_store", 0.2e6),
    ("l1_shared_bank_conflict", 0.1e6),
    ("dram_read_bytes", 0.8e6),
    ("dram_write_bytes", 0.5e6),
    ("inst_fp_64", 0.0),
    ("inst_special", 0.1e6),
];

/// The scripted GPU's true power for [`COUNTERS`] at its default clocks.
pub fn true_power() -> f64 {
    let rates: BTreeMap<&str, f64> = COUNTERS.iter().map(|(c, v)| (*c, v / TIME_S)).collect();
    let dev = FakeSuiteDevice::new();
    dev.true_power(|c| rates.get(c).copied(), Clocks { core_mhz: 1410.0, mem_mhz: 1215.0 })
}
