//! `gpumodel collect ./kernel [args…]` and `gpumodel collect --suite`.

use anyhow::Context;
use gpumodel_collect::counters::CounterSource;
use gpumodel_collect::cupti::pm::{CuptiPmCounters, PmOptions};
use gpumodel_collect::fake::{FakeCounters, FakePower};
use gpumodel_collect::nvml::{NvmlPower, open_nvml};
use gpumodel_collect::run::{ProgramExit, RunOptions, resolve_program, run as run_program, run_replay};
use gpumodel_collect::sampler::Clock;
use gpumodel_models::trace::{RunStatus, sidecar_path};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run the built-in microbenchmark suite instead of a program (writes a training table).
    #[arg(long)]
    pub suite: bool,
    #[command(flatten)]
    pub suite_args: super::suite::SuiteArgs,
    /// Output file (trace CSV, with a JSON sidecar; or the suite's training table). Default for a
    /// program: `<program>-<host>-gpu<device>.csv`, one file per host and GPU (for `srun`).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Sampling rate, Hz.
    #[arg(long, default_value_t = 60.0)]
    pub rate: f64,
    /// Repeat short programs (or suite kernels) until at least this long.
    #[arg(long, default_value_t = 1.0)]
    pub min_seconds: f64,
    /// GPU: the CUDA device ordinal, numbered as the program sees it (after CUDA_VISIBLE_DEVICES). Power
    /// is read from the NVML device with the same PCI bus id, so the two numberings need not agree.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Idle measurement before the program, seconds (once with power only, once with the counter
    /// profiler running too, to report the profiler's own power); 0 skips it.
    #[arg(long, default_value_t = 0.5)]
    pub idle_seconds: f64,
    /// Sample power only, without CUPTI counters.
    #[arg(long)]
    pub no_counters: bool,
    /// PM-sampling passes: `1` runs the program once with the chip's one-pass counter group (`[pm]`);
    /// `all` runs it once per counter group of the chip's map (application replay) so the trace also has
    /// the global, local and texture sectors and the instruction mix, each pass in `<out>.pass<k>.csv`
    /// and all merged into `<out>`. The passes are separate runs: see the sidecar's `replay`.
    #[arg(long, value_enum, default_value_t = PmPasses::One)]
    pub pm_passes: PmPasses,
    /// After the trace, run the program once more under the CUPTI Range Profiler (injection library,
    /// kernel replay) for exact per-kernel totals: `<out>.kernels.csv` (rows) and `<out>.kernels.json`
    /// (kernel profiles for `predict`).
    #[arg(long)]
    pub kernel_totals: bool,
    /// Turing and GA100 only: the GPU's SYS-clock frequency, MHz. These chips trigger PM samples on
    /// SYS-clock cycles (CUPTI has no time trigger there) and NVML cannot read that clock; without this
    /// flag 1000 MHz is assumed and the trace's warnings say so. Rates are unaffected either way.
    #[arg(long, value_name = "MHZ")]
    pub sysclk_mhz: Option<f64>,
    /// The program to run and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub program: Vec<String>,
}

/// How many PM-sampling groups `collect` records. One is the default: a single run, with every
/// counter sampled in the same execution as the power; `all` multiplies the run time by the number of
/// groups (5–6 on the built-in chips) and mixes runs, so it is asked for, not imposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PmPasses {
    /// One run, the `[pm]` group.
    #[value(name = "1")]
    One,
    /// One run per PM-sampling group (application replay), merged.
    All,
}

/// The scripted GPU's counter groups under `--pm-passes all`: pass 1 as without replay, then the extra
/// groups of the built-in GA102 map (real canonical names, so model inputs are derived across passes).
/// Counter j of extra pass k (k ≥ 2, j from 0) reads a constant (k·10 + j)·1e6 events/s, so tests can
/// check every merged column against a known value.
fn fake_counters(pass: usize) -> anyhow::Result<Box<dyn CounterSource>> {
    if pass == 0 {
        return Ok(Box::new(FakeCounters::new(&["inst_executed", "dram_read_bytes"], 0.01, |t| {
            vec![1e9 + 1e8 * t, 5e8]
        })));
    }
    let map = gpumodel_models::counters::CounterMap::builtin("GA102")?;
    let names: Vec<String> = map.pm_group(pass)?.keys().cloned().collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let rates: Vec<f64> = (0..names.len()).map(|j| ((pass + 1) * 10 + j) as f64 * 1e6).collect();
    Ok(Box::new(FakeCounters::new(&refs, 0.01, move |_| rates.clone())))
}

fn fake_pass_count() -> usize {
    gpumodel_models::counters::CounterMap::builtin("GA102").map_or(1, |m| m.pm_groups().len())
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// PM-sampling options from the flags. Turing and GA100 count their sampling interval in SYS-clock
/// cycles; its frequency is the user's `--sysclk-mhz` or an assumption the trace reports
/// (`CuptiPmCounters` warns), never a clock read that may fail silently.
pub fn pm_options(args: &Args) -> anyhow::Result<PmOptions> {
    if let Some(mhz) = args.sysclk_mhz
        && !(mhz.is_finite() && mhz > 0.0)
    {
        anyhow::bail!(
            "--sysclk-mhz {mhz} is not a frequency: give the SYS clock in MHz, e.g. --sysclk-mhz 1000"
        );
    }
    Ok(PmOptions {
        device: args.device,
        interval_s: 1.0 / args.rate,
        sysclk_hz: args.sysclk_mhz.map(|m| m * 1e6),
        ..PmOptions::default()
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.suite {
        if args.pm_passes == PmPasses::All {
            anyhow::bail!("--pm-passes all applies to a program, not to --suite; drop one of them");
        }
        return super::suite::run(&args);
    }
    if args.pm_passes == PmPasses::All && args.no_counters {
        anyhow::bail!("--pm-passes all records counters in several runs; drop --no-counters or --pm-passes");
    }
    // Stage 1: the flags and the program, before touching any hardware.
    let Some(first) = args.program.first() else {
        anyhow::bail!("give the program to run: gpumodel collect ./kernel [args…] (or --suite)");
    };
    resolve_program(first)?;
    pm_options(&args)?;
    let host = host_name();
    let name = std::path::Path::new(first)
        .file_name()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    let out =
        args.out.clone().unwrap_or_else(|| PathBuf::from(format!("{name}-{host}-gpu{}.csv", args.device)));
    let mut opts = RunOptions {
        program: args.program.clone(),
        out: out.clone(),
        rate_hz: args.rate,
        min_seconds: args.min_seconds,
        idle_seconds: args.idle_seconds,
        device: args.device,
        host,
        chip: None,
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        // Ctrl-C / SIGTERM (srun's cancel) end the run cleanly: the trace is finished, not cut.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }

    // Stage 2: the hardware.
    let outcome = if super::suite::fake_gpu() {
        // The scripted GPU (GPUMODEL_FAKE_GPU=1): tests and demos on machines without one.
        let clock = Clock::new();
        let power = FakePower::from_fn(clock, |t| 80.0 + 10.0 * (t * 3.0).sin());
        if args.pm_passes == PmPasses::All {
            opts.chip = Some("GA102".into());
            let counters_for = |k: usize| {
                fake_counters(k).map_err(|e| gpumodel_collect::Error::Invalid(format!("fake counters: {e}")))
            };
            run_replay(&opts, power, fake_pass_count(), counters_for, interrupted)
        } else {
            let counters = if args.no_counters { None } else { Some(fake_counters(0)?) };
            run_program(&opts, power, counters, interrupted)
        }
    } else {
        let nvml = open_nvml()?;
        // NVML's numbering can differ from CUDA's: match the physical GPU by its PCI bus id.
        let power = NvmlPower::open_cuda_device(nvml, args.device)?;
        let pm = pm_options(&args)?;
        let counters = if args.no_counters {
            None
        } else {
            let c = CuptiPmCounters::open(&pm)
                .context("CUPTI PM sampling (pass --no-counters to sample power only)")?;
            opts.chip = Some(c.chip().to_string());
            Some(c)
        };
        match counters {
            Some(pass1) if args.pm_passes == PmPasses::All => {
                // Application replay: pass 1 uses the source opened above; pass k opens group k once the
                // previous pass has dropped its own (PM sampling is one configuration per device at a time).
                let passes = pass1.pass_count();
                let mut pass1 = Some(pass1);
                let counters_for = move |k: usize| -> gpumodel_collect::Result<Box<dyn CounterSource>> {
                    match pass1.take() {
                        Some(c) if k == 0 => Ok(Box::new(c)),
                        _ => Ok(Box::new(CuptiPmCounters::open_pass(&pm, k)?)),
                    }
                };
                run_replay(&opts, power, passes, counters_for, interrupted)
            }
            c => run_program(&opts, power, c.map(|c| Box::new(c) as Box<dyn CounterSource>), interrupted),
        }
    }
    .with_context(|| format!("collect {}", first))?;

    let meta = &outcome.meta;
    if args.kernel_totals && matches!(meta.status, RunStatus::Complete) {
        let rows = out.with_extension("kernels.csv");
        let (profiles, code) = gpumodel_collect::kernels::collect_kernel_totals(&args.program, &rows)
            .context("per-kernel totals (--kernel-totals)")?;
        let json = out.with_extension("kernels.json");
        let text = serde_json::to_string_pretty(&profiles)?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&json)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .with_context(|| format!("{}: cannot write (it must not exist yet)", json.display()))?;
        eprintln!(
            "{}: {} kernel profiles from {} (program exit {:?})",
            json.display(),
            profiles.len(),
            rows.display(),
            code
        );
    }
    let s = meta.summary.clone().unwrap_or_default();
    let fmt_opt = |x: Option<f64>, unit: &str| x.map_or("n/a".to_string(), |v| format!("{v:.2} {unit}"));
    eprintln!(
        "{}: {} samples ({:.1} Hz), {:.3} s, {} run(s); mean power {:.2} W, energy {:.3} J ({}); \
         idle {}, profiler overhead {}, sampler CPU {}",
        out.display(),
        s.samples,
        s.achieved_rate_hz,
        s.duration_s,
        s.repetitions,
        s.mean_power_w,
        s.energy_j,
        s.energy_source,
        fmt_opt(s.idle_power_w, "W"),
        fmt_opt(s.profiler_overhead_w, "W"),
        fmt_opt(s.sampler_cpu_s, "s"),
    );
    if let Some(rp) = &meta.replay {
        for p in &rp.passes {
            let status = match &p.status {
                RunStatus::Running => "unfinished".to_string(),
                RunStatus::Complete => "complete".to_string(),
                RunStatus::Interrupted => "interrupted".to_string(),
                RunStatus::Failed(why) => format!("failed: {why}"),
            };
            eprintln!(
                "  pass {} ({}): {} s, mean power {}, {} run(s), {}; counters: {}",
                p.pass,
                p.trace,
                p.duration_s.map_or("n/a".into(), |d| format!("{d:.3}")),
                fmt_opt(p.mean_power_w, "W"),
                p.repetitions,
                status,
                p.counters.join(", ")
            );
        }
        let spread = |s: Option<gpumodel_models::trace::Spread>, unit: &str| {
            s.map_or("n/a".to_string(), |s| {
                format!("{:.3}–{:.3} {unit} ({:.1}% of the mean)", s.min, s.max, s.range_pct)
            })
        };
        eprintln!(
            "  passes are separate runs: run time {}, mean power {}",
            spread(rp.duration_spread, "s"),
            spread(rp.mean_power_spread, "W")
        );
    }
    eprintln!("metadata: {}", sidecar_path(&out).display());
    for w in &meta.warnings {
        eprintln!("gpumodel: warning: {w}");
    }
    Ok(match (&meta.status, outcome.exit) {
        (RunStatus::Interrupted, _) => {
            eprintln!("gpumodel: interrupted; the trace holds everything measured until then");
            ExitCode::from(130)
        }
        (_, ProgramExit::Code(0)) if matches!(meta.status, RunStatus::Complete) => ExitCode::SUCCESS,
        (RunStatus::Failed(why), ProgramExit::Code(c)) => {
            eprintln!("gpumodel: {why}; the trace holds everything measured until then");
            ExitCode::from(u8::try_from(c).ok().filter(|c| *c != 0).unwrap_or(1))
        }
        (RunStatus::Failed(why), _) => {
            eprintln!("gpumodel: {why}; the trace holds everything measured until then");
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    })
}
