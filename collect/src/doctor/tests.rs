use super::checks::{cuda_of_cupti_api, sampling_stats};
use super::fake::FakeProbes;
use super::*;

fn opts() -> DoctorOptions {
    DoctorOptions { device: 0, rate_hz: 100.0, sample_seconds: 0.05 }
}

fn check<'a>(r: &'a DoctorReport, id: &str) -> &'a Check {
    r.checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no row {id}: {:?}", r.checks))
}

fn verdict(r: &DoctorReport, command: &str) -> Status {
    r.verdict.iter().find(|v| v.command == command).map(|v| v.status).unwrap()
}

#[test]
fn a_healthy_gpu_passes_every_check() {
    let r = run(&mut FakeProbes::healthy(), &opts()).unwrap();
    // The sampling row measures this machine's scheduler (a loaded test host may miss the rate): it is
    // judged by its own test, not here.
    let bad: Vec<_> = r.checks.iter().filter(|c| c.status != Status::Ok && c.id != "sampling").collect();
    assert!(bad.is_empty(), "{bad:?}");
    assert!(r.ready);
    assert!(r.verdict.iter().all(|v| v.status != Status::Missing), "{:?}", r.verdict);
    assert!(r.facts.errors.is_empty());
    let inputs = r.facts.inputs.as_ref().unwrap();
    assert_eq!(inputs.chip, "GA102");
    assert!(!inputs.pm.is_empty() && inputs.range.len() >= inputs.pm.len(), "{inputs:?}");
}

#[test]
fn restricted_counters_name_the_driver_option_and_stop_collect_but_not_power_only() {
    let mut p = FakeProbes::healthy();
    p.pm = Err(|| Error::InsufficientPrivileges);
    p.range = Err(|| Error::InsufficientPrivileges);
    let r = run(&mut p, &opts()).unwrap();
    let c = check(&r, "profiling_permission");
    assert_eq!(c.status, Status::Missing);
    assert!(c.found.contains("restricted to admin users"), "{}", c.found);
    let fix = c.fix.as_deref().unwrap();
    assert!(fix.contains("options nvidia NVreg_RestrictProfilingToAdminUsers=0"), "{fix}");
    assert!(fix.contains("ERR_NVGPUCTRPERM") && fix.contains("root"), "{fix}");
    assert_eq!(check(&r, "range_profiler").status, Status::Missing);
    assert_eq!(verdict(&r, "collect"), Status::Missing);
    // Power-only collection stays available; only the sampling row (this machine's scheduler, which a
    // loaded test host may slow) can degrade it.
    let power_only = if check(&r, "sampling").status == Status::Ok { Status::Ok } else { Status::Degraded };
    assert_eq!(verdict(&r, "collect --no-counters"), power_only);
    assert_eq!(verdict(&r, "calibrate"), Status::Ok);
    assert!(!r.ready);
}

#[test]
fn a_driver_older_than_cupti_is_refused_with_the_driver_branch_needed() {
    let mut p = FakeProbes::healthy();
    p.cuda = Ok(CudaFacts { driver_version: 12040, device_count: 1, pci_bus_id: None });
    let r = run(&mut p, &opts()).unwrap();
    let c = check(&r, "cupti_driver");
    assert_eq!(c.status, Status::Missing);
    assert!(c.found.contains("CUDA 12.4") && c.found.contains("CUDA 12.9"), "{}", c.found);
    assert!(c.found.contains("CUPTI_ERROR_NOT_INITIALIZED"), "{}", c.found);
    assert!(c.fix.as_deref().unwrap().contains("update the NVIDIA driver to 575"), "{:?}", c.fix);
    // Profiling is not tried on a CUPTI the driver cannot run.
    assert!(check(&r, "profiling_permission").found.starts_with("not tried"));
    assert!(!r.ready);
    // A driver new enough for CUPTI 12.6 is offered the matching CUPTI too.
    let mut p = FakeProbes::healthy();
    p.cuda = Ok(CudaFacts { driver_version: 12060, device_count: 1, pci_bus_id: None });
    let r = run(&mut p, &opts()).unwrap();
    let fix = check(&r, "cupti_driver").fix.clone().unwrap();
    assert!(fix.contains("pip install 'nvidia-cuda-cupti-cu12==12.6.*'") && fix.contains("575"), "{fix}");
}

#[test]
fn no_nvrtc_stops_the_suite_and_names_the_package() {
    let mut p = FakeProbes::healthy();
    p.nvrtc = Err(|| Error::NvrtcNotFound { looked: "x".into() });
    let r = run(&mut p, &opts()).unwrap();
    let c = check(&r, "nvrtc");
    assert_eq!(c.status, Status::Missing);
    assert!(c.fix.as_deref().unwrap().contains("pip install nvidia-cuda-nvrtc-cu12"), "{:?}", c.fix);
    assert!(c.fix.as_deref().unwrap().contains("apt install cuda-nvrtc-12-9"), "{:?}", c.fix);
    assert!(check(&r, "suite_kernel").found.starts_with("not tried"));
    assert_eq!(verdict(&r, "collect --suite"), Status::Missing);
    assert_eq!(verdict(&r, "calibrate"), Status::Missing);
    assert_eq!(verdict(&r, "collect"), Status::Ok);
    assert!(!r.ready);
}

#[test]
fn averaged_power_only_is_degraded_and_still_ready() {
    let mut p = FakeProbes::healthy();
    p.nvml_mut().power_field = Some(crate::power::PowerField::Average);
    let r = run(&mut p, &opts()).unwrap();
    let c = check(&r, "power_reading");
    assert_eq!(c.status, Status::Degraded);
    assert!(c.found.contains("1-second average"), "{}", c.found);
    assert!(c.fix.as_deref().unwrap().contains("535 or newer"), "{:?}", c.fix);
    assert_eq!(verdict(&r, "collect"), Status::Degraded);
    assert!(r.ready);
}

#[test]
fn mig_mode_is_degraded_with_the_command_that_turns_it_off() {
    let r = run(&mut FakeProbes::healthy().with_mig(), &opts()).unwrap();
    let c = check(&r, "mig");
    assert_eq!(c.status, Status::Degraded);
    assert!(c.found.contains("NaN") && c.found.contains("whole board"), "{}", c.found);
    assert!(
        c.fix.as_deref().unwrap().starts_with("sudo nvidia-smi -i 00000000:65:00.0 -mig 0"),
        "{:?}",
        c.fix
    );
    assert_eq!(verdict(&r, "collect"), Status::Degraded);
    assert!(r.verdict.iter().find(|v| v.command == "collect").unwrap().because.contains(&"mig"));
}

#[test]
fn persistence_off_suggests_pm_1() {
    let mut p = FakeProbes::healthy();
    p.nvml_mut().persistence = Some(false);
    let r = run(&mut p, &opts()).unwrap();
    let c = check(&r, "persistence");
    assert_eq!(c.status, Status::Degraded);
    assert_eq!(c.fix.as_deref(), Some("sudo nvidia-smi -i 00000000:65:00.0 -pm 1"));
}

#[test]
fn clocks_a_user_cannot_set_come_with_the_nvidia_smi_commands() {
    let mut p = FakeProbes::healthy();
    p.nvml_mut().clocks.root = false;
    let r = run(&mut p, &opts()).unwrap();
    let c = check(&r, "clocks_settable");
    assert_eq!(c.status, Status::Degraded);
    let fix = c.fix.as_deref().unwrap();
    assert!(fix.contains("-acp UNRESTRICTED"), "{fix}");
    assert!(fix.contains("-ac 7251,1740") && fix.contains("-lgc 1740,1740"), "{fix}");
    assert_eq!(verdict(&r, "collect --suite"), Status::Degraded);
    assert!(r.ready);
    // Application clocks open to every user are enough.
    let mut p = FakeProbes::healthy();
    p.nvml_mut().clocks.root = false;
    p.nvml_mut().clocks.applications_restricted = Some(false);
    let r = run(&mut p, &opts()).unwrap();
    assert_eq!(check(&r, "clocks_settable").status, Status::Ok);
}

#[test]
fn without_a_driver_every_gpu_row_is_missing_and_the_gpu_free_commands_still_work() {
    let mut p = FakeProbes::healthy();
    p.nvml = Err(|| Error::NoDriver { detail: "libnvidia-ml.so: cannot open".into() });
    p.cuda = Err(|| Error::NoCudaDriver("libcuda.so cannot be loaded".into()));
    let r = run(&mut p, &opts()).unwrap();
    let c = check(&r, "nvml");
    assert_eq!(c.status, Status::Missing);
    assert!(c.fix.as_deref().unwrap().contains("nvidia-smi"), "{:?}", c.fix);
    for id in [
        "cuda_driver",
        "power_reading",
        "sampling",
        "cupti_driver",
        "profiling_permission",
        "clocks_settable",
    ] {
        assert_eq!(check(&r, id).status, Status::Missing, "{id}");
    }
    assert_eq!(verdict(&r, "import, train, predict, validate, split, cluster, report"), Status::Ok);
    assert_eq!(verdict(&r, "counters"), Status::Ok);
    assert!(!r.ready);
    assert_eq!(r.facts.errors.len(), 2, "{:?}", r.facts.errors);
}

#[test]
fn a_probe_that_panics_is_a_missing_row_not_a_crash() {
    struct Panicking(FakeProbes);
    impl Probes for Panicking {
        fn nvml(&mut self, d: u32) -> Result<NvmlFacts> {
            self.0.nvml(d)
        }
        fn power_source(&mut self, i: u32) -> Result<Box<dyn PowerSource>> {
            self.0.power_source(i)
        }
        fn cuda(&mut self, d: u32) -> Result<CudaFacts> {
            self.0.cuda(d)
        }
        fn cupti(&mut self) -> Result<CuptiFacts> {
            self.0.cupti()
        }
        fn nvrtc(&mut self) -> Result<NvrtcFacts> {
            self.0.nvrtc()
        }
        fn kernel(&mut self, _: u32) -> Result<KernelFacts> {
            panic!("Missing symbol cuLaunchKernel")
        }
        fn pm_sampling(&mut self, d: u32, r: f64) -> Result<PmFacts> {
            self.0.pm_sampling(d, r)
        }
        fn range_profiler(&mut self, d: u32) -> Result<RangeFacts> {
            self.0.range_profiler(d)
        }
        fn sampling(&mut self, i: u32, r: f64, s: f64) -> Result<super::SamplingFacts> {
            self.0.sampling(i, r, s)
        }
    }
    let r = run(&mut Panicking(FakeProbes::healthy()), &opts()).unwrap();
    let c = check(&r, "suite_kernel");
    assert_eq!(c.status, Status::Missing);
    assert!(c.found.contains("Missing symbol cuLaunchKernel"), "{}", c.found);
}

#[test]
fn sampling_statistics_are_the_achieved_rate_and_the_99th_percentile_jitter() {
    // Intervals 10, 10, 15 ms at 100 Hz: jitters 0, 0, 5 ms; 3 intervals over 35 ms.
    let s = sampling_stats(&[0.0, 0.01, 0.02, 0.035], &[10.0, 20.0, 30.0, 40.0], 100.0);
    assert!((s.achieved_hz - 3.0 / 0.035).abs() < 1e-9, "{s:?}");
    assert!((s.p99_jitter_ms - 5.0).abs() < 1e-9, "{s:?}");
    assert_eq!(s.samples, 4);
    assert_eq!(s.mean_power_w, 25.0);
    let empty = sampling_stats(&[], &[], 60.0);
    assert_eq!(empty.achieved_hz, 0.0);
    assert!(empty.p99_jitter_ms.is_nan());
}

#[test]
fn a_slow_sampler_is_degraded_with_a_lower_rate() {
    // A host that keeps 2 kHz, asked for 10 kHz: degraded, and the rate offered is 80 % of what it kept.
    let o = DoctorOptions { device: 0, rate_hz: 10_000.0, sample_seconds: 0.2 };
    let mut p = FakeProbes { kept_hz: 2000.0, ..FakeProbes::healthy() };
    let r = run(&mut p, &o).unwrap();
    let c = check(&r, "sampling");
    assert_eq!(c.status, Status::Degraded, "{c:?}");
    assert!(c.fix.as_deref().unwrap().contains("--rate 1600 (this machine kept up with 2000 Hz)"), "{c:?}");
    assert_eq!(verdict(&r, "collect"), Status::Degraded);
    // The rate kept (100 Hz), but intervals off by more than half the 10 ms period: degraded too.
    let mut p = FakeProbes { jitter_ms: 6.0, ..FakeProbes::healthy() };
    let r = run(&mut p, &opts()).unwrap();
    assert_eq!(check(&r, "sampling").status, Status::Degraded);
    let mut p = FakeProbes { jitter_ms: 4.0, ..FakeProbes::healthy() };
    let r = run(&mut p, &opts()).unwrap();
    assert_eq!(check(&r, "sampling").status, Status::Ok);
}

/// The real sampler on a scripted power source: it measures and reports, whatever the host's load.
#[test]
fn the_real_sampling_run_measures_the_scripted_power() {
    let s = super::checks::sampling_run(
        Box::new(crate::fake::FakePower::constant(crate::sampler::Clock::new(), 42.0)),
        50.0,
        0.2,
    )
    .unwrap();
    assert!(s.samples >= 1, "{s:?}");
    assert_eq!(s.mean_power_w, 42.0);
    assert_eq!(s.requested_hz, 50.0);
}

#[test]
fn cupti_api_versions_map_to_their_cuda_release() {
    assert_eq!(cuda_of_cupti_api(24), Some(12060));
    assert_eq!(cuda_of_cupti_api(26), Some(12080));
    assert_eq!(cuda_of_cupti_api(28), Some(12090));
    assert_eq!(cuda_of_cupti_api(130001), None);
}

#[test]
fn bad_options_are_refused_before_any_probe() {
    for rate in [0.0, -1.0, f64::NAN, 1e9] {
        let o = DoctorOptions { device: 0, rate_hz: rate, sample_seconds: 1.0 };
        let e = run(&mut FakeProbes::healthy(), &o).unwrap_err().to_string();
        assert!(e.contains("--rate"), "{e}");
    }
}

#[test]
fn the_table_shows_every_row_and_the_verdict_and_json_carries_the_facts() {
    use gpumodel_models::export::{Format, render};
    let mut p = FakeProbes::healthy();
    p.pm = Err(|| Error::InsufficientPrivileges);
    let r = run(&mut p, &opts()).unwrap();
    let table = render(&r, Format::Table).unwrap();
    assert!(
        table.contains("profiling_permission") && table.contains("NVreg_RestrictProfilingToAdminUsers=0")
    );
    assert!(table.contains("which gpumodel commands work here") && table.contains("not ready"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&render(&r, Format::Json).unwrap()).unwrap();
    assert_eq!(json["command"], "doctor");
    assert_eq!(json["ready"], false);
    assert_eq!(json["facts"]["nvml"]["pci_bus_id"], "00000000:65:00.0");
    assert_eq!(json["facts"]["cupti"]["api_version"], 28);
    assert_eq!(json["checks"].as_array().unwrap().len(), r.checks.len());
}
