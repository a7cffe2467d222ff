use super::*;
use crate::nvrtc;
use crate::suite::{ptx_function, ptx_has};
use gpumodel_models::arch::ArchProfile;

/// Constants chosen by hand (Ampere-like orders of magnitude), not by the code under test.
const TRUTH: TrueConstants = TrueConstants::AMPERE_LIKE;

/// Pascal and Volta as well as the suite's targets: calibration is how a GPU the model was not built on
/// gets its constants, and those are the oldest it runs on.
/// `SOURCE` compiled with the real NVRTC for Pascal and Volta and the suite's targets, or None (skip) when
/// NVRTC is missing and not required.
fn compile_all() -> Option<Vec<(&'static str, String)>> {
    if !nvrtc::loaded_or_skip() {
        return None;
    }
    let arches = ["sm_60", "sm_70"].iter().chain(nvrtc::TEST_ARCHES);
    Some(arches.map(|a| (*a, nvrtc::compile_ptx("calibrate", SOURCE, a).unwrap())).collect())
}

#[test]
fn every_calibration_kernel_compiles_for_pascal_to_hopper_and_keeps_its_instructions() {
    for (arch, ptx) in compile_all().unwrap_or_default() {
        for e in ENTRIES {
            let body = ptx_function(&ptx, e.name).unwrap_or_else(|| panic!("{arch}: no .entry {}", e.name));
            for want in e.ptx {
                assert!(ptx_has(body, want), "{arch}: {} lacks `{want}`:\n{body}", e.name);
            }
        }
    }
}

/// The unrolled loop of a throughput kernel's PTX: from the first `nounroll` (the main loop after the
/// compiler's own unrolling) to its back-edge, instructions only (no inline-asm markers).
fn unrolled_loop(body: &str) -> Vec<&str> {
    body.lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with(".pragma \"nounroll\""))
        .skip(1)
        .take_while(|l| !l.contains(" bra"))
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect()
}

/// The integer and special-function costs are only what they say if every chain instruction survives
/// compilation as one instruction of its kind and nothing else runs in the loop: 8 chains x 8 unrolled
/// steps of an add and a xor (one more add counts the loop), no multiply (several XMADs on Maxwell and
/// Pascal; a run-time constant was once recomputed in the loop with one), and 8 x 4 reciprocal square
/// roots. A chain the compiler folded, fused or padded fails here.
#[test]
fn the_integer_and_special_function_loops_hold_only_their_chains() {
    for (arch, ptx) in compile_all().unwrap_or_default() {
        let int = unrolled_loop(ptx_function(&ptx, "int_throughput").unwrap());
        let count = |body: &[&str], op: &str| body.iter().filter(|l| l.starts_with(op)).count();
        assert_eq!(count(&int, "xor.b32"), 64, "{arch}:\n{}", int.join("\n"));
        assert_eq!(count(&int, "add.s32"), 65, "{arch}:\n{}", int.join("\n"));
        assert_eq!(
            int.len(),
            64 + 65 + 1,
            "{arch}: more than the chains and the loop test:\n{}",
            int.join("\n")
        );
        assert!(!ptx_function(&ptx, "int_throughput").unwrap().contains("mul.lo"), "{arch}: a multiply");
        let sfu = unrolled_loop(ptx_function(&ptx, "sfu_throughput").unwrap());
        assert_eq!(count(&sfu, "rsqrt.approx.ftz.f32"), 32, "{arch}:\n{}", sfu.join("\n"));
        assert_eq!(sfu.len(), 32 + 2, "{arch}: more than the chains and the loop test:\n{}", sfu.join("\n"));
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
        // Bytes per SM per cycle as the fake GPU has it; costs from the Guide-style rates: a warp instruction
        // is 32 results (64 for a packed half2 FMA) over the results per clock per SM.
        ("shared_bytes_per_cycle", TRUTH.shared_bytes_per_cycle),
        ("cost_fp32", 32.0 / TRUTH.fp32_per_clock),
        ("cost_fp64", 32.0 / TRUTH.fp64_per_clock),
        ("cost_fp16", 64.0 / TRUTH.fp16_per_clock),
        ("cost_conversion64", 32.0 / TRUTH.conversion64_per_clock),
        ("cost_int", 32.0 / TRUTH.int_per_clock),
        ("cost_sfu", 32.0 / TRUTH.sfu_per_clock),
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
    assert_eq!(launches, 6 * 9 + 8 * 9 + 6 * 9 + 2 * 9 + 7 * 9);
    assert_eq!(launches, super::launches(CalParams::default()));
}

#[test]
fn the_profile_loads_with_the_models_loader_and_cites_the_spread() {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    let est = calibrate(&mut dev, CalParams { repeats: 5, steps: 1024 }, &mut |_| {}).unwrap();
    let text = arch_toml("a100cal", &dev.facts(), &est, &[], "NVIDIA A100 (fake)", "2026-11-22").unwrap();
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
    impl ClockControl for Flat {}
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
    impl ClockControl for Dead {}
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

// --- the DVFS sweep and its fits ---

use super::dvfs::{self, PairPoint};
use crate::clocks::{self, ClockPair, ClockPlan};

fn auto_pairs(dev: &FakeCalibrationDevice) -> Vec<ClockPair> {
    clocks::resolve_pairs(&ClockPlan::Auto, &dev.supported_clocks().unwrap()).unwrap()
}

fn value(fit: &dvfs::DvfsFit, field: &str) -> f64 {
    fit.constants.iter().find(|c| c.field == field).unwrap_or_else(|| panic!("no {field}: {fit:?}")).value
}

/// The truths the fits must find, computed from the constants the test chose (not by the code under test).
fn truths() -> Vec<(&'static str, f64)> {
    vec![
        ("dvfs_memory.latency_a", TRUTH.latency_a),
        ("dvfs_memory.latency_b", TRUTH.latency_b),
        ("dvfs_memory.delay_a", TRUTH.delay_a),
        ("dvfs_memory.delay_b", TRUTH.delay_b),
        ("dvfs_memory.l2_latency", TRUTH.l2_latency),
        // 32-byte transactions of 108 SMs at 1410 MHz over the L2's 4800 GB/s.
        ("dvfs_memory.l2_delay", 32.0 * 108.0 * 1410e6 / 4800e9),
        ("l2_dram_bytes_per_core_cycle", TRUTH.l2_dram_bytes_per_core_cycle),
    ]
}

fn sweep_and_fit(noise: f64, repeats: usize) -> (FakeCalibrationDevice, Vec<PairPoint>, dvfs::DvfsFit) {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    dev.noise = noise;
    let pairs = auto_pairs(&dev);
    let p = CalParams { repeats, steps: 4096 };
    let pts = dvfs::sweep(&mut dev, &pairs, p, &mut |_| {}, &|| false).unwrap();
    let fit = dvfs::fit(&pts);
    (dev, pts, fit)
}

/// Without noise every DVFS constant comes back to 0.1 %: a wrong regressor, a wrong delay formula
/// (D from bytes per core cycle per SM) or a wrong unit fails here. The L2 ceiling binds at the lowest core
/// clock on this fake GPU (3.7 kB/cycle uncapped there), so this also checks that it is found and that the
/// capped pairs stay out of the delay fit.
#[test]
fn without_noise_the_dvfs_fits_recover_the_fake_gpus_constants() {
    let (_, pts, fit) = sweep_and_fit(0.0, 3);
    assert_eq!(pts.len(), 12, "auto: 4 memory clocks x 3 core clocks");
    assert!(fit.rejected.is_empty(), "{:?}", fit.rejected);
    assert!(fit.ceiling_reached);
    for (field, truth) in truths() {
        let got = value(&fit, field);
        assert!(((got - truth) / truth).abs() < 1e-3, "{field}: fitted {got}, true {truth}");
    }
    for l in &fit.lines {
        assert!(l.r2 > 0.9999 && l.max_residual_pct() < 0.1, "{l:?}");
    }
    // The delay fit left out the pairs at the ceiling (all four at 510 MHz at least).
    let delay = fit.lines.iter().find(|l| l.name == "dram_delay").unwrap();
    assert!(delay.points.len() <= 8 && delay.points.iter().all(|p| p.0 > 510.0), "{:?}", delay.points);
}

/// With ±noise per launch (uniform) and the median of 9 repetitions per pair, each constant is within a
/// bound proportional to the noise, from error propagation: a per-pair value is off by at most e = noise
/// (chases) or 3 × noise (streams: the k / 2k time difference triples it); a slope fitted over a regressor
/// span Δx is off by at most 2 e ȳ / Δx, so relative to the slope a by 2 e ȳ / (a Δx); an intercept b by
/// 2 e ȳ (1 + x̄ / Δx) / b; a median over pairs by 2 e. (The delay's slope is weakly determined: its term is
/// a tenth of D on this GPU, so its bound is wide; the noise-free test above is the tight one.)
#[test]
fn with_noise_the_dvfs_fits_stay_within_a_noise_dependent_tolerance() {
    // Regressor spans of the auto pairs of the fake GPU: f_core/f_mem 510/1215 to 1410/800, 1/f_mem.
    let (r_lo, r_hi) = (510.0 / 1215.0, 1410.0 / 800.0);
    let (m_lo, m_hi) = (1.0 / 1215.0, 1.0 / 800.0);
    let lat_mean = TRUTH.latency_a * (r_lo + r_hi) / 2.0 + TRUTH.latency_b;
    let del_mean = TRUTH.delay_a * (m_lo + m_hi) / 2.0 + TRUTH.delay_b;
    for noise in [0.005, 0.02] {
        let (_, _, fit) = sweep_and_fit(noise, 9);
        assert!(fit.rejected.is_empty(), "{noise}: {:?}", fit.rejected);
        let (chase, stream) = (noise, 3.0 * noise);
        for (field, truth) in truths() {
            let bound = match field {
                "dvfs_memory.latency_a" => 2.0 * chase * lat_mean / (TRUTH.latency_a * (r_hi - r_lo)),
                "dvfs_memory.latency_b" => {
                    2.0 * chase * lat_mean * (1.0 + (r_lo + r_hi) / 2.0 / (r_hi - r_lo)) / TRUTH.latency_b
                }
                "dvfs_memory.delay_a" => 2.0 * stream * del_mean / (TRUTH.delay_a * (m_hi - m_lo)),
                "dvfs_memory.delay_b" => {
                    2.0 * stream * del_mean * (1.0 + (m_lo + m_hi) / 2.0 / (m_hi - m_lo)) / TRUTH.delay_b
                }
                "dvfs_memory.l2_latency" => 2.0 * chase,
                _ => 2.0 * stream,
            };
            let got = value(&fit, field);
            let rel = ((got - truth) / truth).abs();
            assert!(rel < bound, "noise {noise}: {field} fitted {got}, true {truth} ({rel:.4} > {bound:.4})");
        }
    }
}

#[test]
fn at_the_current_clocks_only_the_dram_fits_are_rejected_with_what_to_pass() {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    let pts =
        dvfs::sweep(&mut dev, &[], CalParams { repeats: 3, steps: 512 }, &mut |_| {}, &|| false).unwrap();
    assert_eq!(pts.len(), 1);
    assert!(!pts[0].set_by_calibrate);
    assert!(dev.clock_log.is_empty(), "no clock was set or reset: {:?}", dev.clock_log);
    let fit = dvfs::fit(&pts);
    let rejected: Vec<&str> = fit.rejected.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        rejected,
        [
            "dvfs_memory.latency_a, latency_b",
            "dvfs_memory.delay_a, delay_b",
            "dvfs_memory.l2_latency, l2_delay"
        ]
    );
    assert!(
        fit.rejected[0].1.contains("needs 3 distinct f_core/f_mem ratios, the clock pairs gave 1"),
        "{:?}",
        fit.rejected
    );
    assert!(fit.rejected[0].1.contains("--clocks auto"));
    // What needs no clock change is still written: the ceiling, as a lower bound.
    let names: Vec<&str> = fit.constants.iter().map(|c| c.field).collect();
    assert_eq!(names, ["l2_dram_bytes_per_core_cycle"]);
    assert!(!fit.ceiling_reached && fit.constants[0].method.contains("lower bound"));
}

#[test]
fn the_clocks_are_restored_after_the_sweep_on_error_and_on_interrupt() {
    let (dev, _, _) = sweep_and_fit(0.02, 1);
    assert_eq!(dev.clock_log.len(), 13);
    assert_eq!(dev.clock_log.last(), Some(&None));
    assert_eq!(dev.clocks, fake::FAKE_DEFAULT);

    let mut dev = FakeCalibrationDevice::new(TRUTH);
    dev.fail_after = Some(20);
    let pairs = auto_pairs(&dev);
    let err = dvfs::sweep(&mut dev, &pairs, CalParams { repeats: 2, steps: 64 }, &mut |_| {}, &|| false);
    assert!(err.unwrap_err().to_string().contains("scripted"));
    assert_eq!(dev.clock_log.last(), Some(&None), "{:?}", dev.clock_log);
    assert_eq!(dev.clocks, fake::FAKE_DEFAULT);

    let mut dev = FakeCalibrationDevice::new(TRUTH);
    let polls = std::cell::Cell::new(0);
    let stop = || {
        polls.set(polls.get() + 1);
        polls.get() > 30
    };
    let err =
        dvfs::sweep(&mut dev, &pairs, CalParams { repeats: 2, steps: 64 }, &mut |_| {}, &stop).unwrap_err();
    assert!(matches!(err, Error::Interrupted(_)), "{err}");
    assert_eq!(dev.clock_log.last(), Some(&None));
    assert_eq!(dev.clocks, fake::FAKE_DEFAULT);
}

#[test]
fn clocks_that_need_root_give_the_one_line_remedy() {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    dev.clocks_settable = false;
    let pairs = auto_pairs(&dev);
    let err = dvfs::sweep(&mut dev, &pairs, CalParams { repeats: 1, steps: 64 }, &mut |_| {}, &|| false)
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ClockPermission { .. }), "{msg}");
    assert!(msg.contains("needs root") && msg.contains("--clocks current"), "{msg}");
    assert_eq!(msg.lines().count(), 1);
    assert_eq!(dev.launches, 0, "nothing ran");
    // Asked as the suite asks, the same refusal is an outcome to go on past, and nothing is changed.
    let logged = dev.clock_log.len();
    let outcome = dev.set_clocks(pairs[0]).unwrap();
    assert!(
        matches!(&outcome, crate::clock_control::ClockOutcome::Refused(why) if why.contains("needs root"))
    );
    assert_eq!((dev.clocks, dev.clock_log.len()), (fake::FAKE_DEFAULT, logged));
}

#[test]
fn clock_pair_lists_parse_and_bad_ones_say_the_syntax() {
    assert_eq!("auto".parse::<ClockPlan>(), Ok(ClockPlan::Auto));
    assert_eq!("current".parse::<ClockPlan>(), Ok(ClockPlan::Current));
    let p = |c, m| ClockPair { core_mhz: c, mem_mhz: m };
    assert_eq!(
        " 1410:1215, 960:1107,1410:1215".parse::<ClockPlan>(),
        Ok(ClockPlan::List(vec![p(1410, 1215), p(960, 1107)]))
    );
    for bad in ["1410", "a:b", "", ",", "0:1215", "1410:1215:3", "1410;1215", "-5:100"] {
        let e = bad.parse::<ClockPlan>().unwrap_err();
        assert!(e.contains("--clocks") && e.contains("1410:1215,1110:1215"), "{bad}: {e}");
        assert_eq!(e.lines().count(), 1);
    }
}

#[test]
fn a_pair_the_gpu_does_not_support_is_an_error_naming_what_it_supports() {
    let dev = FakeCalibrationDevice::new(TRUTH);
    let sup = dev.supported_clocks().unwrap();
    let list = |s: &str| clocks::resolve_pairs(&s.parse().unwrap(), &sup);
    assert_eq!(list("1410:1215,510:800").unwrap().len(), 2);
    let e = list("1410:1215,1400:1215").unwrap_err().to_string();
    assert!(e.contains("core clock of 1400 MHz with memory at 1215 MHz") && e.contains("1410"), "{e}");
    let e = list("1410:999").unwrap_err().to_string();
    assert!(e.contains("memory clock of 999 MHz") && e.contains("1215, 1107"), "{e}");
    assert_eq!(clocks::resolve_pairs(&ClockPlan::Current, &sup).unwrap(), []);
}

/// Fits whose slope or intercept come out negative do not follow the form: rejected, not written.
#[test]
fn a_fit_with_a_negative_constant_is_rejected() {
    let est = |field, v: f64| Estimate::from_samples(field, "test", vec![v]).unwrap();
    let pts: Vec<PairPoint> = [(1400.0, 1200.0), (1000.0, 1200.0), (600.0, 1200.0)]
        .into_iter()
        .map(|(c, m): (f64, f64)| PairPoint {
            core_mhz: c,
            mem_mhz: m,
            set_by_calibrate: true,
            observed: None,
            // Latency falling with f_core/f_mem: a negative latency_a.
            dram_latency: est("dram_latency", 900.0 - 300.0 * c / m),
            l2_latency: est("l2_latency", 200.0),
            dram_delay: est("dram_delay", 2.0),
            l2_delay: est("l2_delay", 1.0),
            dram_bytes_per_core_cycle: est("dram_bytes_per_core_cycle", 1000.0),
            idle: None,
        })
        .collect();
    let fit = dvfs::fit(&pts);
    let lat = fit.rejected.iter().find(|r| r.0.starts_with("dvfs_memory.latency_a")).unwrap();
    assert!(lat.1.contains("must be positive"), "{lat:?}");
    assert!(fit.constants.iter().all(|c| !c.field.starts_with("dvfs_memory.")), "{:?}", fit.constants);
}

#[test]
fn the_profile_with_the_dvfs_constants_loads_and_cites_the_clock_pairs() {
    let (mut dev, _, fit) = sweep_and_fit(0.005, 9);
    assert!(fit.rejected.is_empty(), "{:?}", fit.rejected);
    let est = calibrate(&mut dev, CalParams { repeats: 3, steps: 1024 }, &mut |_| {}).unwrap();
    let text =
        arch_toml("a100cal", &dev.facts(), &est, &fit.constants, "NVIDIA A100 (fake)", "2026-11-24").unwrap();
    let a = ArchProfile::from_toml_str(&text, "a100cal.toml").unwrap();
    let d = a.dvfs_memory.as_ref().expect("a [dvfs_memory] table");
    assert!((d.latency_a.value - value(&fit, "dvfs_memory.latency_a")).abs() < 1e-3);
    let src = a.source_of(&d.delay_b);
    let delay_pairs = fit.lines.iter().find(|l| l.name == "dram_delay").map(|l| l.points.len()).unwrap();
    assert!(src.contains(&format!("over {delay_pairs} clock pairs")), "{src}");
    assert!(src.contains("R²") && src.contains("2026-11-24"), "{src}");
    let c = a.l2_dram_bytes_per_core_cycle.as_ref().unwrap();
    assert!(a.source_of(c).contains("1410:1215"), "{}", a.source_of(c));
    // The model's DRAM latency at a pair the sweep did not visit is the fake GPU's within the noise.
    let want = TRUTH.dram_latency(ClockPair { core_mhz: 1200, mem_mhz: 1000 });
    let got = a.dram_latency_cycles(1200.0, 1000.0);
    assert!(((got - want) / want).abs() < 0.03, "{got} vs {want}");
}

// --- throughput of the SM's units ---

/// A second GPU, chosen by hand to differ from [`TRUTH`] in every rate: a consumer Pascal part in the
/// Guide's terms for compute capability 6.1 (128 FP32, 4 FP64, 2 FP16, 4 64-bit conversion, 128 32-bit
/// integer add and xor, and 32 special-function results per clock per SM) with half the shared bandwidth.
const PASCAL_LIKE: TrueConstants = TrueConstants {
    shared_bytes_per_cycle: 64.0,
    fp32_per_clock: 128.0,
    fp64_per_clock: 4.0,
    fp16_per_clock: 2.0,
    conversion64_per_clock: 4.0,
    int_per_clock: 128.0,
    sfu_per_clock: 32.0,
    ..TRUTH
};

/// Each unit's rate comes back in the profile's units: bytes per SM per cycle, and cycles per warp
/// instruction = 32 results (64 for a half2 FMA) over the results per clock per SM. An estimator off by the
/// warp size, by the half2 pair, by the chains per thread, or reading the first warp's finish instead of
/// the last (10 % earlier on the fake GPU) fails here; so does a block with too few warps in flight, which
/// the fake GPU times at one dependent step per latency.
#[test]
fn the_throughput_estimators_recover_each_units_rate() {
    for truth in [TRUTH, PASCAL_LIKE] {
        let mut dev = FakeCalibrationDevice::new(truth);
        let est = throughput::measure(&mut dev, CalParams::default(), &mut |_| {}).unwrap();
        let want = [
            ("shared_bytes_per_cycle", truth.shared_bytes_per_cycle, "bytes per SM per core cycle"),
            ("cost_fp32", 32.0 / truth.fp32_per_clock, "core cycles per warp instruction"),
            ("cost_fp64", 32.0 / truth.fp64_per_clock, "core cycles per warp instruction"),
            ("cost_fp16", 64.0 / truth.fp16_per_clock, "core cycles per warp instruction"),
            ("cost_conversion64", 32.0 / truth.conversion64_per_clock, "core cycles per warp instruction"),
            ("cost_int", 32.0 / truth.int_per_clock, "core cycles per warp instruction"),
            ("cost_sfu", 32.0 / truth.sfu_per_clock, "core cycles per warp instruction"),
        ];
        assert_eq!(est.len(), want.len());
        for (e, (field, w, unit)) in est.iter().zip(want) {
            assert_eq!((e.field, e.unit), (field, unit));
            assert!(((e.median - w) / w).abs() < 0.03, "{field}: measured {} for true {w}", e.median);
            assert_eq!(e.n, 9);
        }
        // One block of 32 warps per launch, on one SM.
        assert!(dev.log.iter().all(|(entry, _)| throughput::UNITS.iter().any(|u| u.entry == *entry)));
        assert_eq!(dev.launches, 7 * 9);
    }
}

/// A warp that reports no cycles, or too few values for the block, is an error naming the kernel, not a
/// rate computed from the warps that did report.
#[test]
fn a_throughput_kernel_with_a_silent_warp_is_an_error() {
    struct Silent(FakeCalibrationDevice, usize);
    impl ClockControl for Silent {}
    impl CalibrationDevice for Silent {
        fn facts(&self) -> DeviceFacts {
            self.0.facts()
        }
        fn run(&mut self, l: &CalLaunch) -> Result<Vec<u64>, Error> {
            let mut out = self.0.run(l)?;
            if self.1 == 0 {
                out[2 * 17] = 0;
            } else {
                out.truncate(self.1);
            }
            Ok(out)
        }
        fn run_timed(&mut self, l: &CalLaunch, blocks: u32) -> Result<f64, Error> {
            self.0.run_timed(l, blocks)
        }
    }
    let p = CalParams { repeats: 1, steps: 64 };
    let err = throughput::measure(&mut Silent(FakeCalibrationDevice::new(TRUTH), 0), p, &mut |_| {});
    let msg = err.unwrap_err().to_string();
    assert!(msg.contains("shared_bandwidth returned no cycle count for some warp"), "{msg}");
    let err = throughput::measure(&mut Silent(FakeCalibrationDevice::new(TRUTH), 2), p, &mut |_| {});
    let msg = err.unwrap_err().to_string();
    assert!(msg.contains("shared_bandwidth returned 2 values for 32 warps"), "{msg}");
}

/// The written profile carries the throughput constants with their method, the models crate's loader
/// refuses a non-positive or non-finite one, and a profile without them (written before they existed)
/// still loads.
#[test]
fn the_throughput_constants_load_and_the_loader_checks_them() {
    let mut dev = FakeCalibrationDevice::new(TRUTH);
    let est = calibrate(&mut dev, CalParams { repeats: 3, steps: 256 }, &mut |_| {}).unwrap();
    let text = arch_toml("a100cal", &dev.facts(), &est, &[], "NVIDIA A100 (fake)", "2026-11-28").unwrap();
    let a = ArchProfile::from_toml_str(&text, "a100cal.toml").unwrap();
    let shared = a.shared_bytes_per_cycle.as_ref().expect("shared_bytes_per_cycle written");
    assert!((shared.value - TRUTH.shared_bytes_per_cycle).abs() / TRUTH.shared_bytes_per_cycle < 0.03);
    let src = a.source_of(shared);
    assert!(
        src.starts_with("measured on this GPU (NVIDIA A100 (fake)) by `gpumodel calibrate` on 2026-11-28")
    );
    assert!(src.contains("median of 3 repetitions") && src.contains("conflict-free"), "{src}");
    let fp16 = a.cost_fp16.as_ref().expect("cost_fp16 written");
    assert!(a.source_of(fp16).contains("fma.rn.f16x2"), "{}", a.source_of(fp16));
    assert!(a.source_of(a.cost_conversion64.as_ref().unwrap()).contains("f32->f64->f32"));

    let set = |field: &str, v: &str| -> String {
        text.lines()
            .map(|l| match l.strip_prefix(&format!("{field} = {{ value = ")) {
                Some(rest) => format!("{field} = {{ value = {v},{}", rest.split_once(',').unwrap().1),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (field, v) in [("shared_bytes_per_cycle", "0"), ("cost_fp16", "-0.25"), ("cost_fp16", "nan")] {
        let msg = ArchProfile::from_toml_str(&set(field, v), "x.toml").unwrap_err().to_string();
        assert!(msg.contains(field) && msg.contains("must be a finite number > 0"), "{field} = {v}: {msg}");
    }
    let old: String = text
        .lines()
        .filter(|l| !l.starts_with("shared_bytes_per_cycle =") && !l.starts_with("cost_fp16 ="))
        .collect::<Vec<_>>()
        .join("\n");
    let a = ArchProfile::from_toml_str(&old, "old.toml").unwrap();
    assert!(a.shared_bytes_per_cycle.is_none() && a.cost_fp16.is_none());
}

/// A fake GPU whose `int_throughput` launches go wrong: a silent warp (`None`), or a driver error.
struct BrokenInt(FakeCalibrationDevice, Option<Error>);

impl ClockControl for BrokenInt {}
impl CalibrationDevice for BrokenInt {
    fn facts(&self) -> DeviceFacts {
        self.0.facts()
    }
    fn run(&mut self, l: &CalLaunch) -> Result<Vec<u64>, Error> {
        let mut out = self.0.run(l)?;
        if l.entry == "int_throughput" {
            if let Some(e) = self.1.take() {
                return Err(e);
            }
            out[2 * 5] = 0;
        }
        Ok(out)
    }
    fn run_timed(&mut self, l: &CalLaunch, blocks: u32) -> Result<f64, Error> {
        self.0.run_timed(l, blocks)
    }
}

/// The integer and special-function costs replace the Programming Guide's values in the profile when
/// measured (the fake GPU's facts carry the a100's Guide values, 0.5 and 2; the Pascal-like GPU has 0.25
/// and 1), and the report does not list them as looked up.
#[test]
fn measured_integer_and_special_function_costs_replace_the_guides() {
    let mut dev = FakeCalibrationDevice::new(PASCAL_LIKE);
    assert_eq!((dev.facts().value("cost_int"), dev.facts().value("cost_sfu")), (Some(0.5), Some(2.0)));
    let est = calibrate(&mut dev, CalParams { repeats: 3, steps: 256 }, &mut |_| {}).unwrap();
    let text = arch_toml("p", &dev.facts(), &est, &[], "Pascal-like (fake)", "2026-11-28").unwrap();
    let a = ArchProfile::from_toml_str(&text, "p.toml").unwrap();
    for (v, want, chain) in
        [(&a.cost_int, 0.25, "add.s32, xor.b32"), (&a.cost_sfu, 1.0, "rsqrt.approx.ftz.f32")]
    {
        assert!((v.value - want).abs() / want < 0.03, "{} for true {want}", v.value);
        let src = a.source_of(v);
        assert!(src.starts_with("measured on this GPU (Pascal-like (fake))") && src.contains(chain), "{src}");
        assert!(src.contains("median of 3 repetitions") && src.contains("Mei & Chu"), "{src}");
    }
    let report = CalibrateReport::new("g", "p", "p.toml", &dev.facts(), &est, &[], &dvfs::fit(&[]));
    assert!(report.looked_up.iter().all(|v| v.field != "cost_int" && v.field != "cost_sfu"));
    assert!(report.looked_up.iter().any(|v| v.field == "cost_ldst"), "still looked up");
    assert!(gpumodel_models::export::Export::notes(&report).iter().all(|n| !n.contains("cost_")));
}

/// A kernel that gives no usable cycle count for cost_int leaves the Guide's value in the profile, and
/// the report lists it as looked up with why (what the other units cannot do: they have no value to keep,
/// so their failure stops the run); cost_sfu is still measured. A driver error is not such a failure: it
/// stops the run.
#[test]
fn a_failed_integer_measurement_keeps_the_guides_value_and_says_so() {
    let mut dev = BrokenInt(FakeCalibrationDevice::new(PASCAL_LIKE), None);
    let est = calibrate(&mut dev, CalParams { repeats: 3, steps: 256 }, &mut |_| {}).unwrap();
    let fields: Vec<&str> = est.iter().map(|e| e.field).collect();
    assert!(!fields.contains(&"cost_int") && fields.contains(&"cost_sfu"), "{fields:?}");
    let facts = dev.facts();
    let text = arch_toml("p", &facts, &est, &[], "Pascal-like (fake)", "2026-11-28").unwrap();
    let a = ArchProfile::from_toml_str(&text, "p.toml").unwrap();
    assert_eq!(a.cost_int.value, 0.5);
    assert!(a.source_of(&a.cost_int).contains("Programming Guide"), "{}", a.source_of(&a.cost_int));
    assert!((a.cost_sfu.value - 1.0).abs() < 0.03, "{}", a.cost_sfu.value);
    let report = CalibrateReport::new("g", "p", "p.toml", &facts, &est, &[], &dvfs::fit(&[]));
    let int = report.looked_up.iter().find(|v| v.field == "cost_int").expect("cost_int looked up");
    assert!(int.source.contains("kept: its measurement on this GPU gave no usable cycle count"), "{int:?}");
    assert!(report.looked_up.iter().all(|v| v.field != "cost_sfu"));
    let notes = gpumodel_models::export::Export::notes(&report);
    assert!(
        notes.iter().any(|n| n.starts_with("cost_int was not measured") && n.contains("0.5")),
        "{notes:?}"
    );

    let driver = Error::Cuda { call: "cuLaunchKernel", message: "unspecified launch failure".into() };
    let mut dev = BrokenInt(FakeCalibrationDevice::new(PASCAL_LIKE), Some(driver));
    let err = calibrate(&mut dev, CalParams { repeats: 3, steps: 256 }, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("cuLaunchKernel"), "{err}");
}
