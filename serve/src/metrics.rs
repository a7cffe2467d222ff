//! The exposition: every total as OpenMetrics text (`prometheus-client`'s encoder), rendered once per tick
//! by the sampling thread, so a scrape only copies a string.
//!
//! Base units and `_total` counters. GPU series carry `gpu`, `gpu_uuid`, `gpu_name`; process series add
//! `pid`, `comm`, `container_id`, `pod` and `component` (`dynamic` or `idle`); container series add
//! `container_id`, `pod` and `component`. The process `idle` component is the process's share of the GPU's
//! idle energy: `gpumodel_gpu_energy_joules_total` = idle + unattributed + Σ process dynamic, exactly.
//! On a GPU in MIG mode, `gpumodel_mig_instance_energy_joules_total` adds `mig_gi` and `mig_profile` and
//! `component`; there the identity holds with the instances' dynamic parts in place of the processes'.
//! `gpumodel_advice_sm_clock_hertz` adds `objective` (`energy`, `ed`, `ed2`, `energy_within_5pct`) to the GPU
//! labels, for a GPU with a clock model whose last window held activity; `gpumodel_advice_memory_clock_hertz`
//! the memory clock of the same pair, for a model over (core, memory) clock pairs. A MIG instance whose
//! window held GPM activity gets its own advice series, with `mig_gi` and `mig_profile` besides the GPU's
//! labels: the clock its activity alone would be advised (the GPU's clock is shared by its instances).
//! Label values are escaped as OpenMetrics asks (a process may name itself anything).

use crate::advice::OBJECTIVES;
use crate::attribution::Method;
use crate::state::{Exporter, GpuTotals, InstanceTotals};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabel, EncodeLabelSet, EncodeMetric, LabelSetEncoder,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use std::fmt::Write;
use std::ops::Range;

/// A label value: a byte range of [`Snapshot::text`].
type Span = (usize, usize);
/// A label: its name and value.
type Label = (&'static str, Span);

/// A metric family's name (without unit or `_total`), help, unit and type.
#[derive(Debug)]
struct Desc {
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    counter: bool,
}

/// One series: its labels (a range of [`Snapshot::labels`]) and value.
#[derive(Debug)]
struct Series {
    labels: Range<usize>,
    value: f64,
}

/// Every family of one render. Label values are written once each, escaped, into one string, and every
/// series' labels into one list: a render allocates a handful of growing buffers, not a string per label.
#[derive(Debug, Default)]
struct Snapshot {
    text: String,
    labels: Vec<Label>,
    series: Vec<Series>,
    families: Vec<(Desc, Range<usize>)>,
}

impl Snapshot {
    /// Writes a label value, escaped as OpenMetrics asks (`\\`, `\"`, `\n`).
    fn value(&mut self, v: &str) -> Span {
        let start = self.text.len();
        if v.contains(['\\', '"', '\n']) {
            for c in v.chars() {
                match c {
                    '\\' => self.text.push_str("\\\\"),
                    '"' => self.text.push_str("\\\""),
                    '\n' => self.text.push_str("\\n"),
                    c => self.text.push(c),
                }
            }
        } else {
            self.text.push_str(v);
        }
        (start, self.text.len())
    }

    fn number(&mut self, n: impl std::fmt::Display) -> Span {
        let start = self.text.len();
        // Writing to a String cannot fail.
        let _ = write!(self.text, "{n}");
        (start, self.text.len())
    }

    fn series(&mut self, labels: &[Label], value: f64) {
        let start = self.labels.len();
        self.labels.extend_from_slice(labels);
        self.series.push(Series { labels: start..self.labels.len(), value });
    }

    /// Closes a family over the series pushed since `first`.
    fn family(&mut self, desc: Desc, first: usize) {
        self.families.push((desc, first..self.series.len()));
    }

    /// One series per GPU for which `f` has a value.
    fn per_gpu(
        &mut self,
        x: &Exporter,
        gpus: &[[Label; 3]],
        desc: Desc,
        f: &dyn Fn(&GpuTotals) -> Option<f64>,
    ) {
        let first = self.series.len();
        for (g, labels) in x.gpus.iter().zip(gpus) {
            if let Some(v) = f(g) {
                self.series(labels, v);
            }
        }
        self.family(desc, first);
    }

    /// The exposition's length, near enough to reserve it at once.
    fn encoded_len(&self) -> usize {
        let labels = |r: &Range<usize>| -> usize {
            self.labels[r.clone()].iter().map(|(k, (a, b))| k.len() + b - a + 4).sum()
        };
        self.families
            .iter()
            .map(|(d, r)| {
                let name = d.name.len() + d.unit.as_ref().map_or(0, |u| u.as_str().len() + 1);
                3 * name
                    + d.help.len()
                    + 40
                    + self.series[r.clone()].iter().map(|s| name + labels(&s.labels) + 40).sum::<usize>()
            })
            .sum::<usize>()
            + 16
    }
}

/// One series' labels, borrowed from the snapshot at encoding time.
struct SeriesLabels<'a> {
    text: &'a str,
    labels: &'a [Label],
}

impl EncodeLabelSet for SeriesLabels<'_> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        for (key, (a, b)) in self.labels {
            (*key, &self.text[*a..*b]).encode(encoder.encode_label())?;
        }
        Ok(())
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (d, range) in &self.families {
            let kind = if d.counter { MetricType::Counter } else { MetricType::Gauge };
            let mut family = encoder.encode_descriptor(d.name, d.help, d.unit.as_ref(), kind)?;
            for s in &self.series[range.clone()] {
                let labels = SeriesLabels { text: &self.text, labels: &self.labels[s.labels.clone()] };
                let series = family.encode_family(&labels)?;
                if d.counter {
                    ConstCounter::new(s.value).encode(series)?;
                } else {
                    ConstGauge::new(s.value).encode(series)?;
                }
            }
        }
        Ok(())
    }
}

fn desc(name: &'static str, help: &'static str, unit: Option<Unit>, counter: bool) -> Desc {
    Desc { name, help, unit, counter }
}

fn watts() -> Option<Unit> {
    Some(Unit::Other("watts".into()))
}

fn hertz() -> Option<Unit> {
    Some(Unit::Other("hertz".into()))
}

/// What the render includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Render {
    /// Per-process series (opt-in: one series per PID and component).
    pub per_pid: bool,
    pub method: Method,
}

/// Renders every total as OpenMetrics text, ending in `# EOF`.
pub fn render(x: &Exporter, how: Render) -> String {
    let mut s = Snapshot::default();
    let first = s.series.len();
    let version = s.value(env!("CARGO_PKG_VERSION"));
    let method = s.value(match how.method {
        Method::Model => "model",
        Method::Ratio => "ratio",
    });
    s.series(&[("version", version), ("attribution", method)], 1.0);
    s.family(desc("gpumodel_build_info", "gpumodel's version and attribution method", None, false), first);

    let gpus: Vec<[Label; 3]> = x
        .gpus
        .iter()
        .map(|g| {
            [
                ("gpu", s.number(g.info.index)),
                ("gpu_uuid", s.value(&g.info.uuid)),
                ("gpu_name", s.value(&g.info.name)),
            ]
        })
        .collect();
    s.per_gpu(
        x,
        &gpus,
        desc("gpumodel_gpu_up", "1 when the GPU's last reading succeeded", None, false),
        &|g| Some(f64::from(u8::from(g.up))),
    );
    s.per_gpu(
        x,
        &gpus,
        desc(
            "gpumodel_gpu_energy",
            "Board energy from the GPU's energy counter since the exporter started",
            Some(Unit::Joules),
            true,
        ),
        &|g| Some(g.energy_j),
    );
    s.per_gpu(
        x,
        &gpus,
        desc("gpumodel_gpu_idle_energy", "Idle (static) part of the board energy", Some(Unit::Joules), true),
        &|g| Some(g.idle_j),
    );
    s.per_gpu(
        x,
        &gpus,
        desc(
            "gpumodel_gpu_unattributed_energy",
            "Dynamic energy no running process could be given",
            Some(Unit::Joules),
            true,
        ),
        &|g| Some(g.unattributed_j),
    );
    s.per_gpu(
        x,
        &gpus,
        desc(
            "gpumodel_gpu_energy_resets",
            "Decreases of the GPU's energy counter (driver reloads)",
            None,
            true,
        ),
        &|g| Some(g.counter_resets as f64),
    );
    s.per_gpu(
        x,
        &gpus,
        desc("gpumodel_gpu_power", "Board power at the last reading", watts(), false),
        &|g| g.power_w,
    );
    s.per_gpu(
        x,
        &gpus,
        desc(
            "gpumodel_gpu_idle_power",
            "Idle power measured at the current SM clock (or the nearest measured)",
            watts(),
            false,
        ),
        &|g| if g.up { g.idle_w(g.sm_mhz) } else { None },
    );
    s.per_gpu(
        x,
        &gpus,
        desc("gpumodel_gpu_sm_clock", "SM clock at the last reading", hertz(), false),
        &|g| g.sm_mhz.map(|m| m * 1e6),
    );
    s.per_gpu(
        x,
        &gpus,
        desc("gpumodel_gpu_memory_clock", "Memory clock at the last reading", hertz(), false),
        &|g| g.mem_mhz.map(|m| m * 1e6),
    );

    let objectives = OBJECTIVES.map(|o| s.value(o));
    let first = s.series.len();
    for (g, [gpu, uuid, name]) in x.gpus.iter().zip(&gpus) {
        if let Some(a) = g.advisor.as_ref().and_then(|a| a.advice()).filter(|_| g.up) {
            for (objective, (_, mhz)) in objectives.iter().zip(a.by_objective()) {
                s.series(&[*gpu, *uuid, *name, ("objective", *objective)], mhz * 1e6);
            }
        }
        for (t, a) in instance_advice(g) {
            let (gi, profile) = (s.number(t.gi), s.value(&t.profile));
            for (objective, (_, mhz)) in objectives.iter().zip(a.by_objective()) {
                let labels = [*gpu, *uuid, *name, ("mig_gi", gi), ("mig_profile", profile)];
                s.series(&[labels.as_slice(), &[("objective", *objective)]].concat(), mhz * 1e6);
            }
        }
    }
    s.family(
        desc(
            "gpumodel_advice_sm_clock",
            "SM clock the GPU's clock model recommends for the last window's activity, per objective",
            hertz(),
            false,
        ),
        first,
    );
    let first = s.series.len();
    for (g, [gpu, uuid, name]) in x.gpus.iter().zip(&gpus) {
        let gpu_advice = g.advisor.as_ref().and_then(|a| a.advice()).filter(|_| g.up);
        if let Some(memory) = gpu_advice.and_then(|a| a.memory_by_objective()) {
            for (objective, (_, mhz)) in objectives.iter().zip(memory) {
                s.series(&[*gpu, *uuid, *name, ("objective", *objective)], mhz * 1e6);
            }
        }
        for (t, a) in instance_advice(g) {
            let Some(memory) = a.memory_by_objective() else { continue };
            let (gi, profile) = (s.number(t.gi), s.value(&t.profile));
            for (objective, (_, mhz)) in objectives.iter().zip(memory) {
                let labels = [*gpu, *uuid, *name, ("mig_gi", gi), ("mig_profile", profile)];
                s.series(&[labels.as_slice(), &[("objective", *objective)]].concat(), mhz * 1e6);
            }
        }
    }
    s.family(
        desc(
            "gpumodel_advice_memory_clock",
            "Memory clock of the clock pair the GPU's clock model recommends, per objective (models over pairs)",
            hertz(),
            false,
        ),
        first,
    );

    let dynamic = s.value("dynamic");
    let idle = s.value("idle");
    if how.per_pid {
        let first = s.series.len();
        for (g, [gpu, uuid, name]) in x.gpus.iter().zip(&gpus) {
            for p in g.processes.values() {
                let pid = s.number(p.pid);
                let comm = s.value(p.comm.as_deref().unwrap_or_default());
                let id = s.value(p.container.as_ref().map_or("", |c| c.id.as_str()));
                let pod = s.value(p.container.as_ref().and_then(|c| c.pod.as_deref()).unwrap_or_default());
                for (component, v) in [(dynamic, p.dynamic_j), (idle, p.idle_j)] {
                    s.series(
                        &[
                            *gpu,
                            *uuid,
                            *name,
                            ("pid", pid),
                            ("comm", comm),
                            ("container_id", id),
                            ("pod", pod),
                            ("component", component),
                        ],
                        v,
                    );
                }
            }
        }
        s.family(
            desc("gpumodel_process_energy", "Energy attributed to a process", Some(Unit::Joules), true),
            first,
        );
    }
    let first = s.series.len();
    for (g, [gpu, uuid, name]) in x.gpus.iter().zip(&gpus) {
        for (id, c) in &g.containers {
            let id = s.value(id);
            let pod = s.value(c.pod.as_deref().unwrap_or_default());
            for (component, v) in [(dynamic, c.dynamic_j), (idle, c.idle_j)] {
                s.series(
                    &[*gpu, *uuid, *name, ("container_id", id), ("pod", pod), ("component", component)],
                    v,
                );
            }
        }
    }
    s.family(
        desc(
            "gpumodel_container_energy",
            "Energy attributed to a container's processes",
            Some(Unit::Joules),
            true,
        ),
        first,
    );
    let first = s.series.len();
    for (g, [gpu, uuid, name]) in x.gpus.iter().zip(&gpus) {
        for t in g.instances.values() {
            let gi = s.number(t.gi);
            let profile = s.value(&t.profile);
            for (component, v) in [(dynamic, t.dynamic_j), (idle, t.idle_j)] {
                s.series(
                    &[*gpu, *uuid, *name, ("mig_gi", gi), ("mig_profile", profile), ("component", component)],
                    v,
                );
            }
        }
    }
    s.family(
        desc(
            "gpumodel_mig_instance_energy",
            "Energy attributed to a MIG GPU instance (idle: the idle energy of its slices)",
            Some(Unit::Joules),
            true,
        ),
        first,
    );
    let first = s.series.len();
    for ((call, code), n) in &x.errors {
        let (call, code) = (s.value(call), s.value(code));
        s.series(&[("call", call), ("code", code)], *n as f64);
    }
    s.family(desc("gpumodel_nvml_errors", "Failed NVML calls, by call and NVML error", None, true), first);

    let mut out = String::with_capacity(s.encoded_len());
    let mut registry = Registry::default();
    registry.register_collector(Box::new(s));
    // Writing to a String cannot fail; an encoder error would be a bug in a label, reported in the text.
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
        out = format!("# gpumodel: the exposition could not be encoded ({e})\n# EOF\n");
    }
    out
}

/// The advice of each MIG instance of an up GPU whose window held activity.
fn instance_advice(g: &GpuTotals) -> Vec<(&InstanceTotals, crate::advice::Advice)> {
    if !g.up {
        return Vec::new();
    }
    g.instances.values().filter_map(|t| Some((t, t.advisor.as_ref()?.advice()?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Options, ProcessInfo};
    use crate::telemetry::scripted::FakeGpu;
    use crate::telemetry::{ProcessSample, Reading, Telemetry};

    struct Info;
    impl ProcessInfo for Info {
        fn comm(&self, _: u32) -> Option<String> {
            Some("trainer".into())
        }
        fn container(&self, _: u32) -> Option<crate::cgroup::Container> {
            Some(crate::cgroup::Container { id: "ab".repeat(32), pod: Some("0f0f-uid".into()) })
        }
    }

    fn exporter() -> Exporter {
        let r = |t: f64, e: f64, run: bool| Reading {
            time_s: t,
            energy_j: Some(e),
            power_w: Some(80.0),
            sm_mhz: Some(1980.0),
            mem_mhz: Some(2619.0),
            processes: if run { vec![ProcessSample { pid: 9, sm: 0.7, mem: 0.2 }] } else { vec![] },
            running: if run { vec![9] } else { vec![] },
            ..Reading::default()
        };
        let mut t = FakeGpu::scripted(vec![r(0.0, 0.0, false), r(1.0, 70.0, false), r(2.0, 270.0, true)]);
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(Info));
        for _ in 0..3 {
            x.tick(&mut t);
        }
        x
    }

    #[test]
    fn the_exposition_has_base_units_totals_and_ends_in_eof() {
        let text = render(&exporter(), Render { per_pid: true, method: Method::Model });
        for want in [
            "# TYPE gpumodel_gpu_energy_joules counter",
            "gpumodel_gpu_energy_joules_total{gpu=\"0\",gpu_uuid=\"GPU-00000000-0000-0000-0000-000000000000\"",
            "gpumodel_gpu_idle_energy_joules_total{",
            "gpumodel_gpu_up{",
            "gpumodel_gpu_sm_clock_hertz{",
            "comm=\"trainer\"",
            "component=\"dynamic\"",
            "gpumodel_container_energy_joules_total{",
            "pod=\"0f0f-uid\"",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        let value = |prefix: &str| -> f64 {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {prefix} in {text}"))
        };
        assert_eq!(value("gpumodel_gpu_energy_joules_total"), 270.0);
        assert_eq!(value("gpumodel_gpu_idle_energy_joules_total"), 140.0);
    }

    /// A process name with a quote, a backslash or a newline must not end its label early: the whole
    /// exposition would be rejected by the scraper.
    #[test]
    fn label_values_are_escaped() {
        struct Odd;
        impl ProcessInfo for Odd {
            fn comm(&self, _: u32) -> Option<String> {
                Some("a\"b\\c\nd".into())
            }
            fn container(&self, _: u32) -> Option<crate::cgroup::Container> {
                None
            }
        }
        let r = |t: f64, e: f64| Reading {
            time_s: t,
            energy_j: Some(e),
            processes: vec![ProcessSample { pid: 9, sm: 0.7, mem: 0.2 }],
            running: vec![9],
            ..Reading::default()
        };
        let mut t = FakeGpu::scripted(vec![r(0.0, 0.0), r(1.0, 100.0)]);
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(Odd));
        x.tick(&mut t);
        x.tick(&mut t);
        let text = render(&x, Render { per_pid: true, method: Method::Model });
        assert!(text.contains(r#"comm="a\"b\\c\nd""#), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("gpumodel_process_energy")).count(), 2, "{text}");
    }

    /// A GPU with a clock model gets one advice series per objective, labelled like its other series, each
    /// value one of the model's levels in Hz; a GPU without one gets none.
    #[test]
    fn advice_series_come_per_objective_for_a_gpu_with_a_clock_model() {
        let plain = render(&exporter(), Render { per_pid: false, method: Method::Model });
        assert!(!plain.contains("gpumodel_advice_sm_clock_hertz{"), "{plain}");

        let model = gpumodel_models::utilization::model::ClockModel::from_json(
            include_str!("../../models/dvfs-trained/v100.json"),
            "v100.json",
        )
        .unwrap();
        let levels: Vec<f64> = model.levels.iter().map(|l| l.core_mhz * 1e6).collect();
        let r = |t: f64, e: f64| Reading {
            time_s: t,
            energy_j: Some(e),
            power_w: Some(200.0),
            sm_mhz: Some(1380.0),
            processes: vec![ProcessSample { pid: 9, sm: 0.7, mem: 0.2 }],
            running: vec![9],
            ..Reading::default()
        };
        let mut t = FakeGpu::scripted(vec![r(0.0, 0.0), r(1.0, 200.0)]);
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(Info));
        x.gpus[0].advisor = Some(crate::advice::Advisor::new(model, x.gpus[0].info.clone(), 60.0));
        x.tick(&mut t);
        x.tick(&mut t);
        let text = render(&x, Render { per_pid: false, method: Method::Model });
        assert!(text.contains("# TYPE gpumodel_advice_sm_clock_hertz gauge"), "{text}");
        let series: Vec<&str> =
            text.lines().filter(|l| l.starts_with("gpumodel_advice_sm_clock_hertz{")).collect();
        assert_eq!(series.len(), 4, "{text}");
        for (line, objective) in series.iter().zip(crate::advice::OBJECTIVES) {
            assert!(line.contains("gpu=\"0\",gpu_uuid=\"GPU-"), "{line}");
            assert!(line.contains(&format!("objective=\"{objective}\"")), "{line}");
            let v: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(levels.contains(&v), "{line}: not one of {levels:?}");
        }
    }

    /// Each MIG instance with activity gets its own advice series, with its `mig_gi` and `mig_profile`
    /// beside the GPU's labels, one per objective, each one of the model's levels.
    #[test]
    fn mig_instances_get_advice_series_of_their_own() {
        let model = gpumodel_models::utilization::model::ClockModel::from_json(
            include_str!("../../models/dvfs-trained/v100.json"),
            "v100.json",
        )
        .unwrap();
        let levels: Vec<f64> = model.levels.iter().map(|l| l.core_mhz * 1e6).collect();
        let inst = |gi: u32, profile: &str, sm: f64| crate::telemetry::InstanceReading {
            gi,
            profile: profile.into(),
            slices: 0,
            sm: Some(sm),
            dram: Some(0.2),
            running: vec![],
        };
        let r = |t: f64| Reading {
            time_s: t,
            energy_j: Some(150.0 * t),
            sm_mhz: Some(1380.0),
            instances: vec![inst(1, "3g.40gb", 0.7), inst(2, "4g.40gb", 0.0)],
            ..Reading::default()
        };
        let mut t = FakeGpu::scripted(vec![r(0.0), r(1.0), r(2.0)]);
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(Info));
        x.gpus[0].advisor = Some(crate::advice::Advisor::new(model, x.gpus[0].info.clone(), 60.0));
        for _ in 0..3 {
            x.tick(&mut t);
        }
        let text = render(&x, Render { per_pid: false, method: Method::Model });
        let advice: Vec<&str> =
            text.lines().filter(|l| l.starts_with("gpumodel_advice_sm_clock_hertz{")).collect();
        // The GPU's four and the busy 3g instance's four; the 4g instance, with no SM activity, has none.
        assert_eq!(advice.len(), 8, "{text}");
        let of_instance: Vec<&&str> = advice.iter().filter(|l| l.contains("mig_gi=")).collect();
        assert_eq!(of_instance.len(), 4, "{text}");
        for (line, objective) in of_instance.iter().zip(crate::advice::OBJECTIVES) {
            assert!(
                line.contains("gpu=\"0\",") && line.contains("mig_gi=\"1\",mig_profile=\"3g.40gb\""),
                "{line}"
            );
            assert!(line.contains(&format!("objective=\"{objective}\"")), "{line}");
            let v: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(levels.contains(&v), "{line}: not one of {levels:?}");
        }
    }

    #[test]
    fn per_process_series_are_opt_in() {
        let text = render(&exporter(), Render { per_pid: false, method: Method::Ratio });
        assert!(!text.contains("gpumodel_process_energy"));
        assert!(text.contains("attribution=\"ratio\""));
        assert!(text.contains("gpumodel_container_energy_joules_total"));
    }
}
