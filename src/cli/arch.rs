//! `gpumodel arch list|new` — the built-in architecture profiles, and a profile for a GPU that has none,
//! from its board's numbers and NVIDIA's documents for its compute capability.

use super::output::{ExportFormat, print};
use gpumodel_collect::calibrate::{BoardSpec, DeviceFacts, documents_toml, profile_name};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::capability;
use gpumodel_models::export::{Cell, Column, Export, Section};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// `gpumodel arch …`: its subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// The built-in profiles (`predict --arch NAME`): GPU, chip, compute capability, SMs, clocks and
    /// whether the DRAM latency follows measured DVFS constants.
    List(ListArgs),
    /// Write a profile for a GPU without one: the occupancy limits and instruction rates of its compute
    /// capability (Programming Guide, whitepapers), the board's SMs, clocks and bandwidth as given, and
    /// the latencies carried over from the built-in profile nearest in compute capability (or --like),
    /// each value citing where it came from. `gpumodel calibrate` on the GPU measures instead.
    New(NewArgs),
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
}

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// Compute capability (`nvidia-smi --query-gpu=compute_cap --format=csv`), e.g. 8.9.
    #[arg(long = "cc")]
    pub compute_capability: String,
    /// Streaming multiprocessors (`deviceQuery`'s "Multiprocessors").
    #[arg(long)]
    pub sms: f64,
    /// Default (boost) core clock, MHz (`nvidia-smi -q -d CLOCK`, "Max Clocks: SM").
    #[arg(long)]
    pub core_mhz: f64,
    /// Memory clock, MHz, as nvidia-smi reports it ("Max Clocks: Memory").
    #[arg(long)]
    pub mem_mhz: f64,
    /// Peak DRAM bandwidth, GB/s (the board's specification).
    #[arg(long)]
    pub bandwidth_gbs: f64,
    /// Board power limit, W (default: the reference profile's, cited as carried over).
    #[arg(long)]
    pub tdp_w: Option<f64>,
    /// The GPU's name, e.g. "NVIDIA GeForce RTX 4090".
    #[arg(long)]
    pub display_name: String,
    /// Short name of the profile (default: from the GPU's name, e.g. `rtx4090`).
    #[arg(long)]
    pub name: Option<String>,
    /// The built-in profile whose latencies are carried over (default: the one nearest in compute
    /// capability; see `gpumodel arch list`).
    #[arg(long)]
    pub like: Option<String>,
    /// Where to write the profile (default: stdout); load it with `gpumodel predict --arch FILE`.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Replace an existing --out file.
    #[arg(long)]
    pub force: bool,
}

pub fn run(action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::List(a) => {
            print(&List { profiles: list()? }, a.format)?;
            Ok(ExitCode::SUCCESS)
        }
        Action::New(a) => new(a),
    }
}

/// One built-in profile.
#[derive(Debug, Serialize)]
struct Entry {
    name: String,
    gpu: String,
    chip: String,
    compute_capability: String,
    sms: f64,
    core_mhz: f64,
    mem_mhz: f64,
    dvfs_memory: bool,
}

#[derive(Debug, Serialize)]
struct List {
    profiles: Vec<Entry>,
}

fn list() -> anyhow::Result<Vec<Entry>> {
    ArchProfile::builtin_names()
        .into_iter()
        .map(|n| {
            let a = ArchProfile::builtin(n)?;
            Ok(Entry {
                name: a.name.clone(),
                gpu: a.display_name.clone(),
                chip: a.chip.clone(),
                compute_capability: a.compute_capability.clone(),
                sms: a.sm_count.value,
                core_mhz: a.core_mhz.value,
                mem_mhz: a.mem_mhz.value,
                dvfs_memory: a.dvfs_memory.is_some(),
            })
        })
        .collect()
}

impl Export for List {
    const COMMAND: &'static str = "arch list";

    fn sections(&self) -> Vec<Section> {
        let columns = [
            ("name", "name"),
            ("gpu", "GPU"),
            ("chip", "chip"),
            ("compute_capability", "cc"),
            ("sms", "SMs"),
            ("core_mhz", "core MHz"),
            ("mem_mhz", "mem MHz"),
            ("dvfs_memory", "DRAM latency vs clocks"),
        ]
        .into_iter()
        .map(|(n, l)| Column::new(n, l))
        .collect();
        let rows = self
            .profiles
            .iter()
            .map(|e| {
                vec![
                    Cell::text(&e.name),
                    Cell::text(&e.gpu),
                    Cell::text(&e.chip),
                    Cell::text(&e.compute_capability),
                    Cell::num(e.sms, 0),
                    Cell::num(e.core_mhz, 0),
                    Cell::num(e.mem_mhz, 0),
                    Cell::text(if e.dvfs_memory { "measured constants" } else { "scaled" }),
                ]
            })
            .collect();
        let mut section = Section::titled("built-in architecture profiles (`predict --arch NAME`)", columns);
        section.rows = rows;
        section.then("a GPU without one: `gpumodel arch new --cc X.Y ...` (from documents) or `gpumodel calibrate` (measured)");
        vec![section]
    }
}

/// The built-in profile nearest to compute capability `cc` (same major first, then the nearest number;
/// ties to the newer).
fn nearest(cc: &str) -> anyhow::Result<ArchProfile> {
    let want: f64 =
        cc.trim().parse().map_err(|_| anyhow::anyhow!("--cc {cc}: expected a number such as 8.9"))?;
    let mut best: Option<(f64, ArchProfile)> = None;
    for n in ArchProfile::builtin_names() {
        let a = ArchProfile::builtin(n)?;
        let Ok(have) = a.compute_capability.parse::<f64>() else { continue };
        // A different major counts as far; within it, the nearest minor.
        let d = (have - want).abs() + if have.trunc() == want.trunc() { 0.0 } else { 10.0 };
        if best
            .as_ref()
            .is_none_or(|(bd, b)| d < *bd || (d == *bd && have > b.compute_capability.parse().unwrap_or(0.0)))
        {
            best = Some((d, a));
        }
    }
    best.map(|(_, a)| a).ok_or_else(|| anyhow::anyhow!("no built-in profile to carry latencies from"))
}

fn new(a: NewArgs) -> anyhow::Result<ExitCode> {
    capability::require(&a.compute_capability)?;
    if let Some(out) = &a.out
        && out.exists()
        && !a.force
    {
        anyhow::bail!("{} exists: choose another --out or pass --force to replace it", out.display());
    }
    let like = match &a.like {
        Some(n) => ArchProfile::builtin(n)?,
        None => nearest(&a.compute_capability)?,
    };
    let board = BoardSpec {
        display_name: a.display_name.clone(),
        compute_capability: a.compute_capability.clone(),
        sm_count: a.sms,
        core_mhz: a.core_mhz,
        mem_mhz: a.mem_mhz,
        mem_bandwidth_gbs: a.bandwidth_gbs,
        tdp_w: a.tdp_w,
    };
    let facts = DeviceFacts::from_documents(&board, &like)?;
    let name = a.name.clone().unwrap_or_else(|| profile_name(&a.display_name));
    let text = documents_toml(&name, &facts)?;
    match &a.out {
        Some(out) => {
            gpumodel_models::atomic::write_atomic(out, text.as_bytes())?;
            eprintln!(
                "wrote {} ({}; latencies carried over from '{}'): use it with `gpumodel predict --arch {}`",
                out.display(),
                a.display_name,
                like.name,
                out.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
