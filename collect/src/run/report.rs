//! What `gpumodel collect ./program` prints when the run ends: where the trace is, how the run went and
//! its summary (the sidecar holds the same and more), through the one output layer
//! ([`gpumodel_models::export`]) like every other command. The trace itself always goes to its file.

use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::trace::{Replay, RunStatus, Spread, TraceMeta, TraceSummary};
use serde::Serialize;

/// The per-kernel totals of `collect --kernel-totals` (a second run under the range profiler).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelTotals {
    /// Kernel profiles for `predict` (JSON).
    pub profiles: String,
    /// One row per kernel launch (CSV).
    pub rows: String,
    /// How many kernel profiles were written.
    pub kernels: usize,
    /// Exit code of the profiled run (None when it was killed by a signal).
    pub exit_code: Option<i32>,
}

/// The result of one `gpumodel collect ./program` run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectReport {
    /// The trace CSV, as the caller named it.
    pub trace: String,
    /// Its JSON sidecar (GPU, sampling, counters, launches, this summary).
    pub metadata: String,
    /// The program and its arguments.
    pub program: Vec<String>,
    pub host: String,
    /// GPU index (CUDA ordinal) and name.
    pub device: u32,
    pub gpu: String,
    /// How the run ended.
    pub status: RunStatus,
    /// Samples, run time, power, energy, idle power, the profiler's own power, the sampler's CPU time.
    pub summary: TraceSummary,
    /// Application replay (`--pm-passes all`): each pass and the spread across them.
    pub replay: Option<Replay>,
    pub kernel_totals: Option<KernelTotals>,
    /// Everything the sampler or the profiler had to say (also printed on stderr as it happens).
    pub warnings: Vec<String>,
}

impl CollectReport {
    /// The report of a finished run whose trace is `trace` with its sidecar `metadata`.
    pub fn new(trace: &str, metadata: &str, meta: &TraceMeta, kernel_totals: Option<KernelTotals>) -> Self {
        CollectReport {
            trace: trace.to_string(),
            metadata: metadata.to_string(),
            program: meta.command.clone(),
            host: meta.host.clone(),
            device: meta.device,
            gpu: meta.gpu.clone(),
            status: meta.status.clone(),
            summary: meta.summary.clone().unwrap_or_default(),
            replay: meta.replay.clone(),
            kernel_totals,
            warnings: meta.warnings.clone(),
        }
    }
}

/// How a run or a pass ended, in words.
pub fn status_text(s: &RunStatus) -> String {
    match s {
        RunStatus::Running => "unfinished".to_string(),
        RunStatus::Complete => "complete".to_string(),
        RunStatus::Interrupted => "interrupted".to_string(),
        RunStatus::Failed(why) => format!("failed: {why}"),
    }
}

fn spread(s: Option<Spread>, unit: &str) -> String {
    s.map_or("n/a".to_string(), |s| {
        format!("{:.3}–{:.3} {unit} ({:.1}% of the mean)", s.min, s.max, s.range_pct)
    })
}

impl Export for CollectReport {
    const COMMAND: &'static str = "collect";

    /// For people, the run's figures one per line; then the replay passes, if any.
    fn sections(&self) -> Vec<Section> {
        let s = &self.summary;
        let mut run = Section::new(vec![
            Column::new("figure", "figure"),
            Column::new("value", "value"),
            Column::new("unit", "unit"),
        ]);
        let mut row =
            |name: &str, value: Cell, unit: &str| run.push(vec![Cell::text(name), value, Cell::text(unit)]);
        row("samples", Cell::int(i64::try_from(s.samples).unwrap_or(i64::MAX)), "");
        row("sample rate", Cell::num(s.achieved_rate_hz, 1), "Hz");
        row("run time", Cell::num(s.duration_s, 3), "s");
        row("program runs", Cell::int(s.repetitions), "");
        row("mean power", Cell::num(s.mean_power_w, 2), "W");
        row("energy", Cell::num(s.energy_j, 3), &format!("J ({})", s.energy_source));
        row("∫ power dt", Cell::num(s.power_integral_j, 3), "J");
        row("idle power", Cell::opt(s.idle_power_w, 2), "W");
        row("profiler overhead", Cell::opt(s.profiler_overhead_w, 2), "W");
        row("sampler CPU", Cell::opt(s.sampler_cpu_s, 3), "s");
        row("exit code", s.exit_code.map_or(Cell::Empty, Cell::int), "");
        let mut out = vec![run];
        if let Some(rp) = &self.replay {
            let mut p = Section::titled(
                "application replay: one run per counter group",
                vec![
                    Column::new("pass", "pass"),
                    Column::new("trace", "trace"),
                    Column::new("duration_s", "run time s"),
                    Column::new("mean_power_w", "mean W"),
                    Column::new("repetitions", "runs"),
                    Column::new("status", "status"),
                    Column::new("counters", "counters"),
                ],
            );
            for pass in &rp.passes {
                p.push(vec![
                    Cell::int(i64::try_from(pass.pass).unwrap_or(i64::MAX)),
                    Cell::text(&pass.trace),
                    Cell::opt(pass.duration_s, 3),
                    Cell::opt(pass.mean_power_w, 2),
                    Cell::int(pass.repetitions),
                    Cell::Text(status_text(&pass.status)),
                    Cell::Text(pass.counters.join(", ")),
                ]);
            }
            p.then(format!(
                "passes are separate runs: run time {}, mean power {}",
                spread(rp.duration_spread, "s"),
                spread(rp.mean_power_spread, "W")
            ));
            out.push(p);
        }
        out
    }

    /// For programs, one row per run with every figure in its own column (append runs into one table).
    fn csv_section(&self) -> Option<Section> {
        let s = &self.summary;
        let mut t = Section::new(
            [
                "trace",
                "host",
                "device",
                "gpu",
                "status",
                "samples",
                "achieved_rate_hz",
                "duration_s",
                "repetitions",
                "mean_power_w",
                "energy_j",
                "energy_source",
                "power_integral_j",
                "idle_power_w",
                "profiler_overhead_w",
                "sampler_cpu_s",
                "exit_code",
            ]
            .iter()
            .map(|c| Column::new(*c, *c))
            .collect(),
        );
        t.push(vec![
            Cell::text(&self.trace),
            Cell::text(&self.host),
            Cell::int(self.device),
            Cell::text(&self.gpu),
            Cell::Text(status_text(&self.status)),
            Cell::int(i64::try_from(s.samples).unwrap_or(i64::MAX)),
            Cell::num(s.achieved_rate_hz, 1),
            Cell::num(s.duration_s, 3),
            Cell::int(s.repetitions),
            Cell::num(s.mean_power_w, 2),
            Cell::num(s.energy_j, 3),
            Cell::text(&s.energy_source),
            Cell::num(s.power_integral_j, 3),
            Cell::opt(s.idle_power_w, 2),
            Cell::opt(s.profiler_overhead_w, 2),
            Cell::opt(s.sampler_cpu_s, 3),
            s.exit_code.map_or(Cell::Empty, Cell::int),
        ]);
        Some(t)
    }

    fn preamble(&self) -> Vec<String> {
        vec![format!(
            "{}: {} on {} (GPU {} of {}), {}",
            self.trace,
            self.program.join(" "),
            self.gpu,
            self.device,
            self.host,
            status_text(&self.status)
        )]
    }

    fn notes(&self) -> Vec<String> {
        let mut n = vec![format!("metadata: {}", self.metadata)];
        if let Some(k) = &self.kernel_totals {
            n.push(format!(
                "{}: {} kernel profiles from {} (program exit {})",
                k.profiles,
                k.kernels,
                k.rows,
                k.exit_code.map_or("by a signal".to_string(), |c| c.to_string())
            ));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumodel_models::export::{Format, render};

    fn report() -> CollectReport {
        CollectReport {
            trace: "run, 1.csv".into(),
            metadata: "run, 1.json".into(),
            program: vec!["./app".into(), "--n".into(), "3".into()],
            host: "node1".into(),
            device: 0,
            gpu: "Fake GPU".into(),
            status: RunStatus::Complete,
            summary: TraceSummary {
                samples: 30,
                duration_s: 0.5,
                mean_power_w: 80.0,
                energy_j: 40.0,
                energy_source: "power_integral".into(),
                power_integral_j: 40.0,
                idle_power_w: None,
                profiler_overhead_w: Some(1.5),
                sampler_cpu_s: None,
                repetitions: 2,
                exit_code: Some(0),
                achieved_rate_hz: 60.0,
            },
            replay: None,
            kernel_totals: None,
            warnings: vec![],
        }
    }

    /// CSV is one wide row a program can append across runs; a trace name with a comma stays one cell.
    #[test]
    fn csv_is_one_row_with_every_figure() {
        let csv = render(&report(), Format::Csv).unwrap();
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 1);
        let get = |k: &str| rows[0][head.iter().position(|h| h == k).unwrap()].to_string();
        assert_eq!(get("trace"), "run, 1.csv");
        assert_eq!(get("status"), "complete");
        assert_eq!(get("energy_j"), "40");
        assert_eq!(get("idle_power_w"), "");
        assert_eq!(get("repetitions"), "2");
    }

    #[test]
    fn table_says_what_was_not_measured() {
        let t = render(&report(), Format::Table).unwrap();
        assert!(t.starts_with("run, 1.csv: ./app --n 3 on Fake GPU (GPU 0 of node1), complete\n"), "{t}");
        assert!(t.lines().any(|l| l.starts_with("idle power") && l.contains(" - ")), "{t}");
        assert!(t.trim_end().ends_with("metadata: run, 1.json"), "{t}");
    }
}
