//! `gpumodel cluster` — energy and E^a·D^b of a GPU cluster versus node count (paper eq. 5.15/5.16,
//! Fig. 5.17), from per-node GPU power, idle power and time measured (or predicted) at a few node counts.

use crate::cli::output::{OutputFormat, render_table};
use anyhow::Context;
use gpumodel_models::energy::{ClusterModel, NodePoint, Objective};
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLE: &str = include_str!("../../datasets/examples/cluster/strong-scaling.csv");

#[derive(Debug, clap::Args)]
pub struct Args {
    /// CSV with `nodes,time_s,gpu_power_w,idle_power_w[,gpu_time_s]` at two or more node counts ('#' lines
    /// are comments). Default: the illustrative example in datasets/examples/cluster/.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Largest node count to evaluate (every count from 1).
    #[arg(long, default_value_t = 64)]
    pub max_nodes: u32,
    /// Objectives E^a·D^b: e, ed, ed2, ed3 or a,b (repeatable; default e, ed, ed2, ed3).
    #[arg(long = "objective")]
    pub objectives: Vec<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

fn parse(text: &str, source: &str) -> anyhow::Result<Vec<NodePoint>> {
    let mut lines =
        text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let (_, header) = lines.next().with_context(|| format!("{source}: empty file"))?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let col = |n: &str| names.iter().position(|h| *h == n);
    let need = ["nodes", "time_s", "gpu_power_w", "idle_power_w"];
    let missing: Vec<&str> = need.iter().copied().filter(|n| col(n).is_none()).collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "{source}: the header lacks column(s) {} (expected {}[,gpu_time_s])",
            missing.join(", "),
            need.join(",")
        );
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let get = |n: &str| -> anyhow::Result<Option<f64>> {
            match col(n).map(|j| cells.get(j).copied()) {
                None => Ok(None),
                Some(None) => anyhow::bail!("{source}:{}: column {n} is missing", i + 1),
                Some(Some(c)) => {
                    c.parse::<f64>().ok().filter(|v| v.is_finite()).map(Some).with_context(|| {
                        format!("{source}:{}: column {n}: '{c}' is not a finite number", i + 1)
                    })
                }
            }
        };
        let time_s = get("time_s")?.unwrap_or(0.0);
        out.push(NodePoint {
            nodes: get("nodes")?.unwrap_or(0.0),
            time_s,
            gpu_time_s: get("gpu_time_s")?.unwrap_or(time_s),
            gpu_power_w: get("gpu_power_w")?.unwrap_or(0.0),
            idle_power_w: get("idle_power_w")?.unwrap_or(0.0),
        });
    }
    Ok(out)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let objectives = if args.objectives.is_empty() {
        Objective::DEFAULTS.to_vec()
    } else {
        args.objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>, _>>()?
    };
    if args.max_nodes == 0 {
        anyhow::bail!("--max-nodes must be at least 1");
    }
    let (text, source) = match &args.input {
        Some(p) => (
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
            p.display().to_string(),
        ),
        None => (EXAMPLE.to_string(), "datasets/examples/cluster/strong-scaling.csv".to_string()),
    };
    let measured = parse(&text, &source)?;
    let model = ClusterModel::fit(&measured)?;
    let points: Vec<NodePoint> = (1..=args.max_nodes).map(|n| model.at(f64::from(n))).collect();
    let ed: Vec<(f64, f64)> = points.iter().map(|p| (p.energy_j(), p.time_s)).collect();
    let optima: Vec<(String, f64, f64)> = objectives
        .iter()
        .filter_map(|o| o.argmin(&ed).map(|i| (o.label(), points[i].nodes, o.value(ed[i].0, ed[i].1))))
        .collect();
    let mut sink = crate::cli::predict::Out::new();
    match args.format {
        OutputFormat::Json => {
            let v = serde_json::json!({
                "input": source,
                "model": model,
                "points": points.iter().map(|p| serde_json::json!({
                    "nodes": p.nodes, "time_s": p.time_s, "energy_j": p.energy_j(),
                    "gpu_power_w": p.gpu_power_w, "idle_power_w": p.idle_power_w,
                })).collect::<Vec<_>>(),
                "optima": optima.iter().map(|(o, n, v)| serde_json::json!({"objective": o, "nodes": n, "value": v})).collect::<Vec<_>>(),
            });
            writeln!(sink, "{}", serde_json::to_string_pretty(&v)?);
        }
        OutputFormat::Csv => {
            writeln!(sink, "nodes,time_s,energy_j");
            for p in &points {
                writeln!(sink, "{},{},{}", p.nodes, p.time_s, p.energy_j());
            }
        }
        OutputFormat::Table => {
            writeln!(
                sink,
                "fitted on {} point(s) of {source}: T(n) = {:.4} + {:.4}/n s, GPU busy {:.4} + {:.4}/n s",
                measured.len(),
                model.serial_s,
                model.parallel_s,
                model.gpu_serial_s,
                model.gpu_parallel_s
            );
            let mut header = vec!["nodes".to_string(), "time s".into(), "energy kJ".into()];
            header.extend(objectives.iter().filter(|o| o.b > 0.0).map(|o| o.label()));
            let rows: Vec<Vec<String>> = points
                .iter()
                .map(|p| {
                    let mut r = vec![
                        format!("{}", p.nodes),
                        format!("{:.3}", p.time_s),
                        format!("{:.3}", p.energy_j() / 1e3),
                    ];
                    r.extend(
                        objectives
                            .iter()
                            .filter(|o| o.b > 0.0)
                            .map(|o| format!("{:.4e}", o.value(p.energy_j(), p.time_s))),
                    );
                    r
                })
                .collect();
            let h: Vec<&str> = header.iter().map(String::as_str).collect();
            write!(sink, "{}", render_table(&h, &rows));
            writeln!(sink);
            for (o, n, v) in &optima {
                writeln!(sink, "optimum {o:>6}: {n} node(s) ({o} = {v:.4e})");
            }
        }
    }
    sink.emit()?;
    Ok(ExitCode::SUCCESS)
}
