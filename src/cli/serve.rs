//! `gpumodel serve` — live energy per GPU, process, container and MIG instance for Prometheus
//! (`gpumodel_serve`).
//!
//! Flags are checked first; then the GPUs are opened (NVML, a recorded trace with `--replay`, or the
//! scripted node of `GPUMODEL_FAKE_GPU=1`) and each GPU's clock model looked up for its clock advice; then
//! one thread ticks and renders while the HTTP server answers scrapes from the last rendering. Read-only on
//! the GPU.

use super::gpu::{Backend, interrupt_flag};
use gpumodel_collect::device::Node;
use gpumodel_predict::clock::choose::model_for_gpu;
use gpumodel_serve::advice::{self, Advisor, unread_fields};
use gpumodel_serve::attribution::{Method, Params};
use gpumodel_serve::metrics::{Render, render};
use gpumodel_serve::state::{Exporter, Options};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Metrics: gpumodel_gpu_energy_joules_total = gpumodel_gpu_idle_energy_joules_total + \
gpumodel_gpu_unattributed_energy_joules_total + Σ gpumodel_process_energy_joules_total{component=\"dynamic\"}, \
per GPU, every tick (on a GPU in MIG mode, Σ gpumodel_mig_instance_energy_joules_total{component=\"dynamic\"} \
in place of the processes'). Grafana: sum by (pod) (rate(gpumodel_container_energy_joules_total[5m])) is each pod's \
power in watts.\n\nA replay trace is JSON lines: a header {\"format\":\"gpumodel-nvml-trace/1\",\"gpus\":[…]} \
and one {\"gpu\":N,\"reading\":{…}} or {\"gpu\":N,\"error\":{…}} per line (see the README)."
)]
pub struct Args {
    /// Address to serve /metrics and /healthz on (loopback by default; 0.0.0.0:9400 for Prometheus on
    /// another host).
    #[arg(long, default_value = "127.0.0.1:9400")]
    pub listen: String,
    /// Seconds between two readings of every GPU (0.2 to 10).
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
    /// How each tick's dynamic energy is split: `model` (activity model corrected by the energy counter)
    /// or `ratio` (SM utilization alone, the baseline).
    #[arg(long, default_value = "model")]
    pub attribution: String,
    /// Export one series per process (PID), besides the per-container ones.
    #[arg(long)]
    pub per_pid: bool,
    /// Seconds an exited process's series stay before they go.
    #[arg(long, default_value_t = 60.0)]
    pub keep_exited: f64,
    /// Read the GPUs for one tick (or a whole --replay trace), print one scrape and exit.
    #[arg(long)]
    pub once: bool,
    /// Replay a recorded trace of NVML answers instead of reading the GPUs (also GPUMODEL_REPLAY=FILE).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Serve even when no NVIDIA driver is found (no GPU series; /healthz answers 503).
    #[arg(long)]
    pub allow_no_gpu: bool,
    /// Folders of your clock models, searched by GPU name before the shipped ones, for each GPU's clock
    /// advice (also GPUMODEL_MODELS, folders separated by ':').
    #[arg(long, value_name = "DIR")]
    pub models_dir: Vec<PathBuf>,
    /// Seconds of activity the clock advice is computed over (5 to 3600).
    #[arg(long, value_name = "SECONDS", default_value_t = advice::WINDOW_S)]
    pub advice_window: f64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(args.interval.is_finite() && (0.2..=10.0).contains(&args.interval)) {
        anyhow::bail!("--interval {} is outside 0.2 to 10 seconds: give e.g. --interval 1", args.interval);
    }
    if !(args.keep_exited.is_finite() && args.keep_exited >= 0.0) {
        anyhow::bail!(
            "--keep-exited {} is not a number of seconds: give e.g. --keep-exited 60",
            args.keep_exited
        );
    }
    let (lo, hi) = (advice::WINDOW_MIN_S, advice::WINDOW_MAX_S);
    if !(args.advice_window.is_finite() && (lo..=hi).contains(&args.advice_window)) {
        anyhow::bail!(
            "--advice-window {} is outside {lo} to {hi} seconds: give e.g. --advice-window 60",
            args.advice_window
        );
    }
    let method: Method =
        args.attribution.parse().map_err(|e: String| anyhow::anyhow!("--attribution: {e}"))?;
    let how = Render { per_pid: args.per_pid, method };
    let opts = Options { params: Params { method, ..Params::default() }, keep_exited_s: args.keep_exited };

    let backend = args.replay.clone().map_or_else(Backend::from_env, Backend::Replay);
    let Node { mut telemetry, processes } = match backend.gpu().node() {
        Ok(node) => node,
        Err(e) if backend.is_replay() => return Err(e.into()),
        Err(e) if args.allow_no_gpu => {
            eprintln!("gpumodel serve: {e}; serving without GPUs (--allow-no-gpu)");
            Node::without_gpus()
        }
        Err(e) => anyhow::bail!("{e}; to serve anyway (no GPU series, /healthz 503), pass --allow-no-gpu"),
    };
    let mut exporter = Exporter::new(telemetry.gpus(), opts, processes);
    let advice_lines = add_advisors(&mut exporter, &args);
    let interval = Duration::from_secs_f64(args.interval);

    if args.once {
        advice_lines.iter().for_each(|l| eprintln!("{l}"));
        if backend.is_replay() {
            while !telemetry.exhausted() {
                exporter.tick(telemetry.as_mut());
            }
        } else {
            // Energy is a difference: two readings, one interval apart.
            exporter.tick(telemetry.as_mut());
            std::thread::sleep(interval);
            exporter.tick(telemetry.as_mut());
        }
        print!("{}", render(&exporter, how));
        return Ok(ExitCode::SUCCESS);
    }

    let text = Arc::new(RwLock::new(render(&exporter, how)));
    let up = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = {
        let (text, up) = (text.clone(), up.clone());
        gpumodel_serve::http::start(
            &args.listen,
            Arc::new(move || text.read().map(|t| t.clone()).unwrap_or_default()),
            Arc::new(move || up.load(Ordering::Relaxed)),
        )?
    };
    let stop = interrupt_flag();
    eprintln!(
        "gpumodel serve: http://{}/metrics, {} GPU(s), attribution {}, a reading every {} s",
        server.local_addr(),
        exporter.gpus.len(),
        args.attribution,
        args.interval
    );
    advice_lines.iter().for_each(|l| eprintln!("{l}"));
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        if Instant::now() >= next {
            next += interval;
            if next < Instant::now() {
                // A tick slower than the interval: skip the missed ones rather than run back to back.
                next = Instant::now() + interval;
            }
            if !(backend.is_replay() && telemetry.exhausted()) {
                exporter.tick(telemetry.as_mut());
                up.store(exporter.gpus.iter().any(|g| g.up), Ordering::Relaxed);
                let fresh = render(&exporter, how);
                if let Ok(mut t) = text.write() {
                    *t = fresh;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20).min(next.saturating_duration_since(Instant::now())));
    }
    server.stop();
    Ok(ExitCode::SUCCESS)
}

/// Gives each GPU with a clock model (the user's, by GPU name, else the shipped one) its advisor; one line
/// per GPU saying where its advice comes from, or why it has none.
fn add_advisors(exporter: &mut Exporter, args: &Args) -> Vec<String> {
    let mut dirs = args.models_dir.clone();
    if let Some(env) = std::env::var_os("GPUMODEL_MODELS") {
        dirs.extend(std::env::split_paths(&env));
    }
    let mut lines = Vec::new();
    for g in &mut exporter.gpus {
        let (i, name) = (g.info.index, &g.info.name);
        match model_for_gpu(name, &dirs) {
            Some((basis, model)) => {
                let unread: Vec<&str> = unread_fields(&model).iter().map(|f| f.name()).collect();
                let unread = if unread.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; the model also reads {}, which NVML does not give: taken as 0",
                        unread.join(", ")
                    )
                };
                lines.push(format!(
                    "gpumodel serve: clock advice for GPU {i} from {basis}, over {} s of activity (DRAM \
                     activity from NVML's per-process memory utilization, a proxy of DCGM's DRAMA, or in MIG \
                     mode from GPM's DRAM bandwidth utilization{unread})",
                    args.advice_window
                ));
                g.advisor = Some(Advisor::new(model, g.info.clone(), args.advice_window));
            }
            None => lines.push(format!(
                "gpumodel serve: no clock model of {name}: no clock advice for GPU {i} (train one: collect \
                 --suite --clocks …, train --data <suite>.profiles.csv; then --models-dir DIR)"
            )),
        }
    }
    lines
}
