use super::*;
use crate::nvrtc;
use crate::suite::{ptx_function, ptx_has};
use gpumodel_models::arch::ArchProfile;

/// Constants chosen by hand (Ampere-like orders of magnitude), not by the code under test.
const TRUTH: TrueConstants = TrueConstants::AMPERE_LIKE;

#[test]
fn every_calibration_kernel_compiles_for_five_targets_and_keeps_its_instructions() {
    if let Err(e) = nvrtc::ensure_loaded() {
        assert!(!nvrtc::libs_required(), "GPUMODEL_REQUIRE_CUDA_LIBS=1 but {e}");
        eprintln!("skipping: {e}");
        return;
    }
    for arch in nvrtc::TEST_ARCHES {
        let ptx = nvrtc::compile_ptx("calibrate", SOURCE, arch).unwrap();
        for e in ENTRIES {
            let body = ptx_function(&ptx, e.name).unwrap_or_else(|| panic!("{arch}: no .entry {}", e.name));
            for want in e.ptx {
                assert!(ptx_has(body, want), "{arch}: {} lacks `{want}`:\n{body}", e.name);
            }
        }
    }
}

#[test]
fn the_estimators_recover_the_fake_gpus_constants() {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    let mut launches = 0;
    let est = calibrate(&mut dev, CalParams::default(), &mut |_| launches += 1).unwrap();
    let want = [
        ("cyc_load", TRUTH.cyc_load),
        ("cyc_store", TRUTH.cyc_store),
        ("cyc_s", TRUTH.cyc_s),
        ("cyc_t", TRUTH.cyc_t),
        ("cyc_r", TRUTH.cyc_r),
        ("alu_latency", TRUTH.alu_latency),
        ("in_warp_delay", TRUTH.in_warp_delay),
        ("out_warp_delay", TRUTH.out_warp_delay),
        ("l2_bandwidth_gbs", TRUTH.l2_bandwidth_gbs),
    ];
    assert_eq!(est.len(), want.len());
    for (e, (field, truth)) in est.iter().zip(want) {
        assert_eq!(e.field, field);
        let rel = (e.median - truth).abs() / truth;
        // ±2 % noise per launch; slopes amplify it, hence the wider bound for the two delays.
        let tol = if field.ends_with("delay") { 0.12 } else { 0.03 };
        assert!(rel < tol, "{field}: measured {} for true {truth}", e.median);
        assert!(e.q1 <= e.median && e.median <= e.q3 && e.min <= e.q1 && e.q3 <= e.max, "{e:?}");
        assert_eq!(e.n, 9);
    }
    assert_eq!(launches, dev.launches);
    assert_eq!(launches, 6 * 9 + 8 * 9 + 6 * 9 + 2 * 9);
    assert_eq!(launches, super::launches(CalParams::default()));
}

#[test]
fn the_profile_loads_with_the_models_loader_and_cites_the_spread() {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    let est = calibrate(&mut dev, CalParams { repeats: 5, steps: 1024 }, &mut |_| {}).unwrap();
    let text = arch_toml("a100cal", &dev.facts(), &est, "NVIDIA A100 (fake)", "2026-11-22").unwrap();
    let a = ArchProfile::from_toml_str(&text, "a100cal.toml").unwrap();
    assert_eq!(a.name, "a100cal");
    assert_eq!(a.sm_count.value, 108.0);
    assert!((a.cyc_load.value - TRUTH.cyc_load).abs() / TRUTH.cyc_load < 0.05, "{}", a.cyc_load.value);
    let src = a.source_of(&a.cyc_load);
    assert!(src.contains("median of 5 repetitions") && src.contains("quartiles"), "{src}");
    assert!(src.contains("NVIDIA A100 (fake)") && src.contains("2026-11-22"), "{src}");
    // The L2 bandwidth is measured now, not the old "3x DRAM" assumption, and its spread is in GB/s.
    assert!((a.l2_bandwidth_gbs.value - TRUTH.l2_bandwidth_gbs).abs() / TRUTH.l2_bandwidth_gbs < 0.05);
    let l2 = a.source_of(&a.l2_bandwidth_gbs);
    assert!(l2.contains("half the L2") && l2.contains("GB/s") && !l2.contains("assum"), "{l2}");
}

/// Equal times for k and 2k passes (a kernel that did no work) give no bandwidth, not an infinite one.
#[test]
fn an_l2_stream_that_takes_no_time_is_an_error() {
    struct Flat(FakeCalibrationDevice);
    impl CalibrationDevice for Flat {
        fn facts(&self) -> DeviceFacts {
            self.0.facts()
        }
        fn run(&mut self, l: &CalLaunch) -> Result<Vec<u64>, Error> {
            self.0.run(l)
        }
        fn run_timed(&mut self, _: &CalLaunch, _: u32) -> Result<f64, Error> {
            Ok(1e-3)
        }
    }
    let err = calibrate(
        &mut Flat(FakeCalibrationDevice::new(TRUTH)),
        CalParams { repeats: 2, steps: 64 },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("l2_bandwidth_gbs produced no finite measurement"), "{err}");
}

#[test]
fn a_kernel_that_did_not_run_is_an_error_not_a_zero() {
    struct Dead;
    impl CalibrationDevice for Dead {
        fn facts(&self) -> DeviceFacts {
            FakeCalibrationDevice::new(TRUTH).facts()
        }
        fn run(&mut self, _: &CalLaunch) -> Result<Vec<u64>, Error> {
            Ok(vec![0, 0])
        }
        fn run_timed(&mut self, _: &CalLaunch, _: u32) -> Result<f64, Error> {
            Ok(0.0)
        }
    }
    let err = calibrate(&mut Dead, CalParams::default(), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("chase_global returned no cycle count"), "{err}");
}

#[test]
fn the_chain_is_one_cycle_through_every_slot() {
    let c = Chain { elems: 4096, stride: 32, seed: 9 };
    let v = c.build();
    let mut seen = std::collections::BTreeSet::new();
    let mut j = 0u32;
    for _ in 0..128 {
        assert_eq!(j % 32, 0);
        assert!(seen.insert(j), "slot {j} visited twice before the cycle closed");
        j = v[j as usize];
    }
    assert_eq!(j, 0, "128 slots, so the chase is back at the start");
    assert_eq!(profile::profile_name("NVIDIA GeForce RTX 4090"), "rtx4090");
}

#[test]
fn dates_are_civil_utc() {
    assert_eq!(civil_date(0), "1970-01-01");
    assert_eq!(civil_date(1_700_000_000), "2023-11-14");
    assert_eq!(civil_date(951_782_400), "2000-02-29");
}

/// Regression guard: the store kernel writes into the buffer it is given, so it must never be given a
/// chase chain — on a GPU that would turn later pointer chases into a loop on one cached line.
#[test]
fn stores_never_touch_a_chase_chain() {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    calibrate(&mut dev, CalParams { repeats: 1, steps: 64 }, &mut |_| {}).unwrap();
    let store: Vec<Chain> = dev.log.iter().filter(|(e, _)| *e == "store_cost").map(|(_, c)| *c).collect();
    assert!(!store.is_empty());
    for (entry, chain) in &dev.log {
        if entry.starts_with("chase") || entry.ends_with("_loads") {
            assert!(!store.contains(chain), "{entry} chases the store target");
        }
    }
}
