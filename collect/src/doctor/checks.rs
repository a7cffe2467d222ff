//! The checklist: asks [`Probes`] in order, turns each answer into a row with its fix, and judges which
//! commands work.

use super::{
    Check, CuptiFacts, DoctorOptions, DoctorReport, Facts, InputFacts, NvmlFacts, Probes, SamplingFacts,
    Status, Verdict, guarded,
};
use crate::error::{Error, Result};
use crate::power::{PowerField, PowerSource};
use crate::sampler::{Clock, Event, spawn_power};

/// The driver package named in fixes: branch 575 supports CUDA 12.9, the CUPTI gpumodel is built for.
const DRIVER_PACKAGE: &str =
    "sudo apt install nvidia-driver-575 (or your distribution's NVIDIA driver 575 or newer)";

/// The CUDA version (e.g. 12090) of a CUPTI API version (`cupti_version.h`: 24 = CUDA 12.6, 26 = 12.8,
/// 27 = 12.9, 28 = 12.9 Update 1; 25 was not released).
pub fn cuda_of_cupti_api(api: u32) -> Option<u32> {
    match api {
        19 => Some(12000),
        20 => Some(12020),
        21 => Some(12030),
        22 => Some(12040),
        23 => Some(12050),
        24 => Some(12060),
        25 => Some(12070),
        26 => Some(12080),
        27 | 28 => Some(12090),
        _ => None,
    }
}

/// `12040` → `12.4`.
pub fn cuda_text(v: u32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The first driver branch that supports CUDA `v` (CUDA release notes, "CUDA Toolkit and Corresponding
/// Driver Versions").
fn driver_branch_for(v: u32) -> &'static str {
    match v {
        ..=12060 => "560",
        12061..=12080 => "570",
        _ => "575",
    }
}

/// The fix for an error a probe returned, by its kind.
pub fn fix_for(e: &Error) -> Option<String> {
    Some(match e {
        Error::NoDriver { .. } => format!(
            "install the NVIDIA driver and check that `nvidia-smi` lists the GPU: {DRIVER_PACKAGE}; on a cluster, \
             run on a GPU node (e.g. `srun --gres=gpu:1 gpumodel doctor`)"
        ),
        Error::NoCudaDriver(_) => "install the driver's CUDA library libcuda.so: sudo apt install libnvidia-compute-575 \
             (it comes with the NVIDIA driver)"
            .into(),
        Error::MissingLibrary { .. } => "pip install nvidia-cuda-cupti-cu12 (or sudo apt install cuda-cupti-12-9), then \
             export GPUMODEL_CUDA_LIBS=<its lib folder> (pip: `python3 -c \"import nvidia.cuda_cupti as m; \
             print(m.__path__[0] + '/lib')\"`)"
            .into(),
        Error::NvrtcNotFound { .. } => "pip install nvidia-cuda-nvrtc-cu12 (or sudo apt install cuda-nvrtc-12-9), then \
             export GPUMODEL_CUDA_LIBS=<its lib folder> (pip: `python3 -c \"import nvidia.cuda_nvrtc as m; \
             print(m.__path__[0] + '/lib')\"`)"
            .into(),
        Error::InsufficientPrivileges => "ask an administrator to allow GPU performance counters for all users: add \
             `options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file in /etc/modprobe.d/, then \
             `sudo update-initramfs -u` and reboot (https://developer.nvidia.com/ERR_NVGPUCTRPERM); or run gpumodel \
             as root"
            .into(),
        Error::NoGpu { .. } => {
            "list the GPUs with `nvidia-smi -L` and pass --device N (numbered as CUDA sees them, after \
             CUDA_VISIBLE_DEVICES)"
                .into()
        }
        _ => return None,
    })
}

struct Rows(Vec<Check>);

impl Rows {
    fn push(
        &mut self,
        part: &'static str,
        id: &'static str,
        status: Status,
        found: String,
        fix: Option<String>,
    ) {
        self.0.push(Check { part, id, status, found, fix });
    }
    fn ok(&mut self, part: &'static str, id: &'static str, found: String) {
        self.push(part, id, Status::Ok, found, None);
    }
    fn failed(&mut self, part: &'static str, id: &'static str, e: &Error, facts: &mut Facts) {
        facts.errors.push(e.to_string());
        self.push(part, id, Status::Missing, e.to_string(), fix_for(e));
    }
    /// A check that could not run because the rows `after` failed: `needs` says what it needs.
    fn not_tried(&mut self, part: &'static str, id: &'static str, needs: &str, after: &str) {
        self.push(
            part,
            id,
            Status::Missing,
            format!("not tried: needs {needs}"),
            Some(format!("see row {after}")),
        );
    }
    fn status(&self, id: &str) -> Option<Status> {
        self.0.iter().find(|c| c.id == id).map(|c| c.status)
    }
    fn is_ok(&self, id: &str) -> bool {
        self.status(id) == Some(Status::Ok)
    }
}

/// Runs the checklist on `probes`.
pub fn run(probes: &mut dyn Probes, o: &DoctorOptions) -> Result<DoctorReport> {
    o.check()?;
    let mut rows = Rows(Vec::new());
    let mut facts = Facts::default();

    // 1. Driver and NVML.
    let nvml = guarded("NVML", || probes.nvml(o.device));
    match &nvml {
        Ok(n) => driver_rows(&mut rows, n),
        Err(e) => rows.failed("driver", "nvml", e, &mut facts),
    }
    let cuda = guarded("the CUDA driver", || probes.cuda(o.device));
    match &cuda {
        Ok(c) => rows.ok(
            "driver",
            "cuda_driver",
            format!(
                "libcuda: CUDA {}; {} CUDA device(s); device {} is on bus {}",
                cuda_text(c.driver_version),
                c.device_count,
                o.device,
                c.pci_bus_id.as_deref().unwrap_or("?")
            ),
        ),
        Err(e) => rows.failed("driver", "cuda_driver", e, &mut facts),
    }

    // 2. Power.
    match &nvml {
        Ok(n) => power_rows(&mut rows, &mut facts, probes, n, o),
        Err(_) => {
            for id in ["power_reading", "energy_counter", "sampling"] {
                rows.not_tried("power", id, "the NVIDIA driver", "nvml");
            }
        }
    }

    // 3. Counters. NVRTC is asked first: the profiler checks run a kernel it compiles.
    let nvrtc = guarded("NVRTC", || probes.nvrtc());
    let cupti = guarded("CUPTI", || probes.cupti());
    match &cupti {
        Ok(c) => rows.ok(
            "counters",
            "cupti",
            format!(
                "{} (API version {}, CUDA {})",
                c.path,
                c.api_version,
                cuda_of_cupti_api(c.api_version).map_or("?".into(), cuda_text)
            ),
        ),
        Err(e) => rows.failed("counters", "cupti", e, &mut facts),
    }
    let driver_cuda =
        cuda.as_ref().ok().map(|c| c.driver_version).or(nvml.as_ref().ok().and_then(|n| n.cuda_version));
    match (&cupti, driver_cuda) {
        (Ok(c), Some(v)) => cupti_driver_row(&mut rows, c, v),
        (Ok(_), None) => {
            rows.not_tried("counters", "cupti_driver", "the CUDA driver's version", "cuda_driver")
        }
        (Err(_), _) => rows.not_tried("counters", "cupti_driver", "CUPTI", "cupti"),
    }
    let can_profile = rows.is_ok("cupti_driver") && rows.is_ok("cuda_driver");
    let mut chip = None;
    if can_profile {
        match guarded("PM sampling", || probes.pm_sampling(o.device, o.rate_hz)) {
            Ok(pm) => {
                rows.ok(
                    "counters",
                    "profiling_permission",
                    format!(
                        "PM sampling started and stopped on {} around {}: {} sample(s)",
                        pm.chip,
                        if pm.kernel_launched { "a tiny kernel" } else { "an idle GPU (no kernel compiled)" },
                        pm.samples
                    ),
                );
                chip = Some(pm.chip.clone());
                facts.pm_sampling = Some(pm);
            }
            Err(e) => rows.failed("counters", "profiling_permission", &e, &mut facts),
        }
        match nvrtc.is_ok().then(|| guarded("the Range Profiler", || probes.range_profiler(o.device))) {
            None => rows.push(
                "counters",
                "range_profiler",
                Status::Degraded,
                "not tried: the check profiles a kernel compiled with NVRTC (`collect --kernel-totals` itself does \
                 not need NVRTC)"
                    .into(),
                Some("see row nvrtc".into()),
            ),
            Some(Ok(r)) => {
                rows.ok(
                    "counters",
                    "range_profiler",
                    format!(
                        "{} over {} range(s): {}",
                        r.metric,
                        r.ranges,
                        r.value.map_or("no value".into(), |v| format!("{v}"))
                    ),
                );
                facts.range_profiler = Some(r);
            }
            Some(Err(e)) => rows.failed("counters", "range_profiler", &e, &mut facts),
        }
    } else {
        let (needs, after) = ("a CUPTI the driver can run", "cupti, cupti_driver or cuda_driver");
        rows.not_tried("counters", "profiling_permission", needs, after);
        rows.not_tried("counters", "range_profiler", needs, after);
    }
    match chip {
        Some(chip) => inputs_row(&mut rows, &mut facts, &chip),
        None => rows.not_tried(
            "counters",
            "model_inputs",
            "the chip name, which PM sampling reports",
            "profiling_permission",
        ),
    }

    // 4. Compilation.
    match &nvrtc {
        Ok(v) => rows.ok("compiler", "nvrtc", format!("NVRTC {}.{}", v.version.0, v.version.1)),
        Err(e) => rows.failed("compiler", "nvrtc", e, &mut facts),
    }
    if nvrtc.is_ok() && cuda.is_ok() {
        match guarded("the suite kernel", || probes.kernel(o.device)) {
            Ok(k) => {
                rows.ok(
                    "compiler",
                    "suite_kernel",
                    format!(
                        "{} compiled for {} in {:.0} ms; one launch ran {:.3} ms",
                        k.kernel, k.arch, k.compile_ms, k.kernel_ms
                    ),
                );
                facts.kernel = Some(k);
            }
            Err(e) => rows.failed("compiler", "suite_kernel", &e, &mut facts),
        }
    } else {
        rows.not_tried("compiler", "suite_kernel", "NVRTC and the CUDA driver", "nvrtc or cuda_driver");
    }

    // 5. Clocks.
    match &nvml {
        Ok(n) => clock_rows(&mut rows, n),
        Err(_) => {
            rows.not_tried("clocks", "clocks_supported", "the NVIDIA driver", "nvml");
            rows.not_tried("clocks", "clocks_settable", "the NVIDIA driver", "nvml");
        }
    }

    facts.nvml = nvml.ok();
    facts.cuda = cuda.ok();
    facts.cupti = cupti.ok();
    facts.nvrtc = nvrtc.ok();
    let verdict = verdicts(&rows);
    let ready = verdict
        .iter()
        .filter(|v| v.command == "collect" || v.command == "collect --suite")
        .all(|v| v.status != Status::Missing);
    Ok(DoctorReport { device: o.device, rate_hz: o.rate_hz, checks: rows.0, verdict, ready, facts })
}

/// The GPU as `nvidia-smi -i` names it: its PCI bus id, else its NVML index.
fn smi_id(n: &NvmlFacts) -> String {
    n.pci_bus_id.clone().unwrap_or_else(|| n.index.to_string())
}

fn driver_rows(rows: &mut Rows, n: &NvmlFacts) {
    let devices: Vec<String> = n
        .devices
        .iter()
        .map(|d| format!("{} {} ({})", d.index, d.pci_bus_id.as_deref().unwrap_or("?"), d.name))
        .collect();
    rows.ok(
        "driver",
        "nvml",
        format!(
            "driver {}, CUDA {}; {} GPU(s): {}",
            n.driver_version.as_deref().unwrap_or("?"),
            n.cuda_version.map_or("?".into(), cuda_text),
            n.devices.len(),
            devices.join(", ")
        ),
    );
    let cc = n.compute_capability.map_or("?".into(), |(a, b)| format!("{a}.{b}"));
    let limit = n.power_limit_w.map_or("?".into(), |w| format!("{w:.0} W"));
    let how = if n.matched_by_pci_bus_id {
        "matched by PCI bus id"
    } else {
        "NVML index = --device (no CUDA driver)"
    };
    rows.ok(
        "driver",
        "gpu",
        format!(
            "NVML {} {} on {} ({how}): compute capability {cc}, power limit {limit}",
            n.index,
            n.name,
            n.pci_bus_id.as_deref().unwrap_or("?")
        ),
    );
    let id = smi_id(n);
    match n.mig {
        Some(m) if m.current => rows.push(
            "driver",
            "mig",
            Status::Degraded,
            format!(
                "MIG mode is on{}: counters of units a compute instance shares read NaN (CUPTI profiles isolated \
                 compute instances only), and NVML power is the whole board's, all instances together",
                if m.pending { "" } else { " (off after the next GPU reset)" }
            ),
            Some(format!(
                "sudo nvidia-smi -i {id} -mig 0 (with no process on the GPU; reset it with `sudo nvidia-smi -i {id} -r` \
                 if asked), or profile on an isolated compute instance"
            )),
        ),
        Some(m) => rows.ok(
            "driver",
            "mig",
            format!("MIG mode off{}", if m.pending { " (on after the next GPU reset)" } else { "" }),
        ),
        None => rows.ok("driver", "mig", "no MIG mode on this GPU".into()),
    }
    match n.virtualization.as_deref() {
        Some("vgpu") => rows.push(
            "driver",
            "virtualization",
            Status::Degraded,
            "a vGPU guest: counters need profiling enabled for this VM by the host, and power may not be readable"
                .into(),
            Some(
                "ask the vGPU host administrator to enable the CUDA profilers for this VM (NVIDIA vGPU documentation, \
                 \"Enabling NVIDIA CUDA Toolkit Profilers for NVIDIA vGPU\"), or use a passthrough or bare-metal GPU"
                    .into(),
            ),
        ),
        Some(v) => rows.ok("driver", "virtualization", format!("virtualization mode: {v}")),
        None => rows.ok("driver", "virtualization", "virtualization mode not reported".into()),
    }
    match n.persistence {
        Some(false) => rows.push(
            "driver",
            "persistence",
            Status::Degraded,
            "persistence mode off: the driver is torn down whenever no program holds the GPU, so each run starts \
             with driver initialization and idle power is read from a waking GPU"
                .into(),
            Some(format!("sudo nvidia-smi -i {id} -pm 1")),
        ),
        Some(true) => rows.ok("driver", "persistence", "persistence mode on".into()),
        None => rows.ok("driver", "persistence", "persistence mode not reported".into()),
    }
    if !n.notes.is_empty() {
        rows.push(
            "driver",
            "nvml_notes",
            Status::Degraded,
            n.notes.join("; "),
            Some("check that `nvidia-smi -q` can read these for this user".into()),
        );
    }
}

fn power_rows(rows: &mut Rows, facts: &mut Facts, probes: &mut dyn Probes, n: &NvmlFacts, o: &DoctorOptions) {
    match n.power_field {
        Some(PowerField::Instant) => {
            rows.ok("power", "power_reading", "instantaneous (NVML_FI_DEV_POWER_INSTANT)".into())
        }
        Some(_) => rows.push(
            "power",
            "power_reading",
            Status::Degraded,
            "averaged only (nvmlDeviceGetPowerUsage; NVML_FI_DEV_POWER_INSTANT not supported): on Ampere and newer a \
             1-second average, so kernels shorter than a second blur together"
                .into(),
            Some(format!(
                "update the NVIDIA driver to 535 or newer, which adds the instantaneous field: {DRIVER_PACKAGE}; on GPUs \
                 before Ampere the average is already a ~20 ms reading"
            )),
        ),
        None => rows.push(
            "power",
            "power_reading",
            Status::Missing,
            n.power_error.clone().unwrap_or_else(|| "no power reading".into()),
            Some(
                "run as a user allowed to query the GPU (or root); a GPU without any power reading needs an external \
                 meter"
                    .into(),
            ),
        ),
    }
    if n.energy_counter {
        rows.ok(
            "power",
            "energy_counter",
            "total-energy counter readable (nvmlDeviceGetTotalEnergyConsumption)".into(),
        );
    } else {
        rows.push(
            "power",
            "energy_counter",
            Status::Degraded,
            "no total-energy counter (GPUs before Volta, or refused): run energy is integrated from the samples".into(),
            Some("nothing to do: energy = ∫P dt of the power samples".into()),
        );
    }
    if n.power_field.is_none() {
        rows.not_tried("power", "sampling", "a power reading", "power_reading");
        return;
    }
    match guarded("the power sampler", || probes.sampling(n.index, o.rate_hz, o.sample_seconds)) {
        Ok(s) => {
            let period_ms = 1e3 / s.requested_hz;
            let good = s.achieved_hz >= 0.95 * s.requested_hz && s.p99_jitter_ms <= 0.5 * period_ms;
            let mut found = format!(
                "{} samples in {:.1} s: {:.1} Hz of {:.1} Hz asked, p99 interval jitter {:.2} ms, mean {:.1} W",
                s.samples, o.sample_seconds, s.achieved_hz, s.requested_hz, s.p99_jitter_ms, s.mean_power_w
            );
            if n.power_field == Some(PowerField::Average) {
                found.push_str("; the averaged reading itself changes about once a second");
            }
            if good {
                rows.ok("power", "sampling", found);
            } else {
                let lower = (s.achieved_hz * 0.8).floor().max(1.0);
                rows.push(
                    "power",
                    "sampling",
                    Status::Degraded,
                    found,
                    Some(format!(
                        "sample slower: --rate {lower} (this machine kept up with {:.0} Hz), or free a CPU core",
                        s.achieved_hz
                    )),
                );
            }
            facts.sampling = Some(s);
        }
        Err(e) => rows.failed("power", "sampling", &e, facts),
    }
}

/// Samples `source` at `rate_hz` for `seconds`: the achieved rate and the p99 of |interval − period|.
pub fn sampling_run(source: Box<dyn PowerSource>, rate_hz: f64, seconds: f64) -> Result<SamplingFacts> {
    let clock = Clock::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let running = spawn_power(source, rate_hz, clock, tx)?;
    std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
    running.stop()?;
    let mut times = Vec::new();
    let mut watts = Vec::new();
    for ev in rx.try_iter() {
        match ev {
            Event::Power(p) => {
                times.push(p.t_s);
                watts.push(p.reading.power.get());
            }
            Event::Failed(e) => return Err(e),
            _ => {}
        }
    }
    Ok(sampling_stats(&times, &watts, rate_hz))
}

/// Achieved rate and p99 jitter of sample times `t_s` (seconds) against `rate_hz`.
pub fn sampling_stats(t_s: &[f64], watts: &[f64], rate_hz: f64) -> SamplingFacts {
    let period = 1.0 / rate_hz;
    let span = match (t_s.first(), t_s.last()) {
        (Some(a), Some(b)) if t_s.len() > 1 => b - a,
        _ => 0.0,
    };
    let achieved_hz = if span > 0.0 { (t_s.len() - 1) as f64 / span } else { 0.0 };
    let mut jitter: Vec<f64> = t_s.windows(2).map(|w| ((w[1] - w[0]) - period).abs()).collect();
    jitter.sort_by(f64::total_cmp);
    let p99 = if jitter.is_empty() {
        f64::NAN
    } else {
        jitter[((jitter.len() as f64 * 0.99).ceil() as usize).clamp(1, jitter.len()) - 1]
    };
    let mean = if watts.is_empty() { f64::NAN } else { watts.iter().sum::<f64>() / watts.len() as f64 };
    SamplingFacts {
        requested_hz: rate_hz,
        achieved_hz,
        samples: t_s.len(),
        p99_jitter_ms: p99 * 1e3,
        mean_power_w: mean,
    }
}

fn cupti_driver_row(rows: &mut Rows, c: &CuptiFacts, driver: u32) {
    let Some(need) = cuda_of_cupti_api(c.api_version) else {
        rows.push(
            "counters",
            "cupti_driver",
            Status::Missing,
            format!("CUPTI API version {} is not one gpumodel knows", c.api_version),
            fix_for(&Error::MissingLibrary { library: String::new(), detail: String::new() }),
        );
        return;
    };
    if driver >= need {
        rows.ok(
            "counters",
            "cupti_driver",
            format!("the driver's CUDA {} is at least CUPTI's CUDA {}", cuda_text(driver), cuda_text(need)),
        );
        return;
    }
    let mut fix =
        format!("update the NVIDIA driver to {} or newer: {DRIVER_PACKAGE}", driver_branch_for(need));
    if driver >= 12060 {
        fix.push_str(&format!(
            "; or use the CUPTI of the driver's CUDA: pip install 'nvidia-cuda-cupti-cu12=={}.*'",
            cuda_text(driver)
        ));
    }
    rows.push(
        "counters",
        "cupti_driver",
        Status::Missing,
        format!(
            "the driver supports CUDA {} but this CUPTI is CUDA {}'s: a CUPTI needs a driver of its CUDA version or \
             newer, else its calls fail with CUPTI_ERROR_NOT_INITIALIZED",
            cuda_text(driver),
            cuda_text(need)
        ),
        Some(fix),
    );
}

fn inputs_row(rows: &mut Rows, facts: &mut Facts, chip: &str) {
    use gpumodel_models::counters::{CounterMap, MapKind};
    let map = match CounterMap::builtin(chip) {
        Ok(m) => m,
        Err(e) => {
            rows.push(
                "counters",
                "model_inputs",
                Status::Missing,
                format!("no counter map for chip {chip} ({e}): `collect` can record power only"),
                Some(format!(
                    "pass --no-counters, or add models/counters/{}.toml (`gpumodel counters --chip GA102` shows the form)",
                    chip.to_lowercase()
                )),
            );
            return;
        }
    };
    let has = |kind| -> Vec<String> {
        map.input_metrics(kind)
            .into_iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(i, _)| i.to_string())
            .collect()
    };
    let (pm, range) = (has(MapKind::Pm), has(MapKind::Range));
    // Every PM-sampling group together (`collect --pm-passes all`).
    let mut all = std::collections::BTreeSet::new();
    for g in map.pm_groups() {
        all.extend(g.keys().cloned());
    }
    let pm_all = gpumodel_models::profile::MODEL_INPUTS
        .iter()
        .filter(|(_, parts)| parts.iter().all(|p| all.contains(*p)))
        .count();
    let none: Vec<String> = gpumodel_models::profile::MODEL_INPUTS
        .iter()
        .map(|(i, _)| i.to_string())
        .filter(|i| !pm.contains(i) && !range.contains(i))
        .collect();
    let total = gpumodel_models::profile::MODEL_INPUTS.len();
    let found = format!(
        "{chip}: the 60 Hz series (PM sampling, one run) gives {} of {total} model inputs ({}), {pm_all} with \
         --pm-passes all; per-kernel totals (Range Profiler) give {} of {total}{}",
        pm.len(),
        pm.join(", "),
        range.len(),
        if none.is_empty() { String::new() } else { format!("; neither gives {}", none.join(", ")) }
    );
    if pm.is_empty() {
        rows.push(
            "counters",
            "model_inputs",
            Status::Degraded,
            found,
            Some(
                "use `collect --pm-passes all` or `--kernel-totals` for the inputs one run cannot hold"
                    .into(),
            ),
        );
    } else {
        rows.ok("counters", "model_inputs", found);
    }
    facts.inputs = Some(InputFacts { chip: chip.to_string(), pm, range, none });
}

fn clock_rows(rows: &mut Rows, n: &NvmlFacts) {
    let c = &n.clocks;
    let now = format!(
        "now {}/{} MHz (SM/memory), max {}/{}",
        c.sm_mhz.map_or("?".into(), |v| v.to_string()),
        c.mem_mhz.map_or("?".into(), |v| v.to_string()),
        c.max_sm_mhz.map_or("?".into(), |v| v.to_string()),
        c.max_mem_mhz.map_or("?".into(), |v| v.to_string())
    );
    if c.supported_mem_mhz.is_empty() {
        rows.push(
            "clocks",
            "clocks_supported",
            Status::Degraded,
            format!("this GPU does not list its clocks (nvmlDeviceGetSupportedMemoryClocks); {now}"),
            Some("sweeps can use the current clocks only: pass --clocks current to collect --suite and calibrate".into()),
        );
    } else {
        let mems: Vec<String> = c.supported_mem_mhz.iter().map(u32::to_string).collect();
        let sm = match (c.supported_sm_mhz.iter().min(), c.supported_sm_mhz.iter().max()) {
            (Some(lo), Some(hi)) => format!("; SM {lo}–{hi} MHz in {} steps", c.supported_sm_mhz.len()),
            _ => String::new(),
        };
        rows.ok("clocks", "clocks_supported", format!("memory {} MHz{sm}; {now}", mems.join(", ")));
    }
    let id = smi_id(n);
    let mem = c.supported_mem_mhz.iter().max().copied().or(c.max_mem_mhz).unwrap_or(0);
    let gr = c.supported_sm_mhz.iter().max().copied().or(c.max_sm_mhz).unwrap_or(0);
    if c.root {
        rows.ok(
            "clocks",
            "clocks_settable",
            "running as root: application and locked clocks can be set".into(),
        );
    } else if c.applications_restricted == Some(false) && c.applications_mhz.is_some() {
        rows.ok(
            "clocks",
            "clocks_settable",
            "application clocks can be set by every user (not restricted to root); locked clocks need root"
                .into(),
        );
    } else {
        rows.push(
            "clocks",
            "clocks_settable",
            Status::Degraded,
            "this user cannot set clocks (application clocks are restricted to root or absent; locked clocks need \
             root): clock sweeps run at the current clocks only"
                .into(),
            Some(format!(
                "run the sweep as root, or let every user set application clocks: sudo nvidia-smi -i {id} -acp UNRESTRICTED; \
                 or pin clocks for the run: sudo nvidia-smi -i {id} -ac {mem},{gr} (application clocks) or \
                 sudo nvidia-smi -i {id} -lgc {gr},{gr} (locked, Volta and newer); undo with -rac / -rgc"
            )),
        );
    }
}

/// Rows a command needs: `hard` ones make it missing when they are, `soft` ones only degrade it.
struct Needs {
    command: &'static str,
    hard: &'static [&'static str],
    soft: &'static [&'static str],
}

const POWER_HARD: &[&str] = &["nvml", "gpu", "cuda_driver", "power_reading"];
const POWER_SOFT: &[&str] =
    &["energy_counter", "sampling", "mig", "persistence", "virtualization", "nvml_notes"];
const COUNTERS_HARD: &[&str] = &[
    "nvml",
    "gpu",
    "cuda_driver",
    "power_reading",
    "cupti",
    "cupti_driver",
    "profiling_permission",
    "model_inputs",
];
const KERNEL_TOTALS_HARD: &[&str] = &[
    "nvml",
    "gpu",
    "cuda_driver",
    "power_reading",
    "cupti",
    "cupti_driver",
    "profiling_permission",
    "model_inputs",
    "range_profiler",
];
const SUITE_HARD: &[&str] = &[
    "nvml",
    "gpu",
    "cuda_driver",
    "power_reading",
    "cupti",
    "cupti_driver",
    "profiling_permission",
    "model_inputs",
    "nvrtc",
    "suite_kernel",
];
const SUITE_SOFT: &[&str] = &[
    "energy_counter",
    "sampling",
    "mig",
    "persistence",
    "virtualization",
    "nvml_notes",
    "clocks_supported",
    "clocks_settable",
];

const NEEDS: &[Needs] = &[
    Needs { command: "collect --no-counters", hard: POWER_HARD, soft: POWER_SOFT },
    Needs { command: "collect", hard: COUNTERS_HARD, soft: POWER_SOFT },
    Needs { command: "collect --kernel-totals", hard: KERNEL_TOTALS_HARD, soft: POWER_SOFT },
    Needs { command: "collect --suite", hard: SUITE_HARD, soft: SUITE_SOFT },
    Needs {
        command: "calibrate",
        hard: &["nvml", "gpu", "cuda_driver", "power_reading", "nvrtc", "suite_kernel"],
        soft: &["clocks_supported", "clocks_settable", "mig", "persistence", "nvml_notes"],
    },
    Needs { command: "counters", hard: &["cupti"], soft: &[] },
    Needs { command: "import, train, predict, validate, split, cluster, report", hard: &[], soft: &[] },
];

fn verdicts(rows: &Rows) -> Vec<Verdict> {
    NEEDS
        .iter()
        .map(|n| {
            let mut status = Status::Ok;
            let mut because = Vec::new();
            for (ids, hard) in [(n.hard, true), (n.soft, false)] {
                for id in ids {
                    let s = match rows.status(id) {
                        Some(Status::Ok) | None => continue,
                        Some(s) if hard => s,
                        Some(_) => Status::Degraded,
                    };
                    status = status.max(s);
                    because.push(*id);
                }
            }
            Verdict { command: n.command, status, because }
        })
        .collect()
}
