//! The exposition: every total as OpenMetrics text (`prometheus-client`'s encoder), rendered once per tick
//! by the sampling thread, so a scrape only copies a string.
//!
//! Base units and `_total` counters. GPU series carry `gpu`, `gpu_uuid`, `gpu_name`; process series add
//! `pid`, `comm`, `container_id`, `pod` and `component` (`dynamic` or `idle`); container series add
//! `container_id`, `pod` and `component`. The process `idle` component is the process's share of the GPU's
//! idle energy: `gpumodel_gpu_energy_joules_total` = idle + unattributed + Σ process dynamic, exactly.

use crate::attribution::Method;
use crate::state::{Exporter, GpuTotals};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

type Labels = Vec<(&'static str, String)>;

/// One metric family: name (without unit or `_total`), help, unit, type and its series.
#[derive(Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    counter: bool,
    series: Vec<(Labels, f64)>,
}

/// Every family of one render.
#[derive(Debug)]
struct Snapshot(Vec<Family>);

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            let kind = if f.counter { MetricType::Counter } else { MetricType::Gauge };
            let mut family = encoder.encode_descriptor(f.name, f.help, f.unit.as_ref(), kind)?;
            for (labels, v) in &f.series {
                let series = family.encode_family(labels)?;
                if f.counter {
                    ConstCounter::new(*v).encode(series)?;
                } else {
                    ConstGauge::new(*v).encode(series)?;
                }
            }
        }
        Ok(())
    }
}

fn gpu_labels(g: &GpuTotals) -> Labels {
    vec![
        ("gpu", g.info.index.to_string()),
        ("gpu_uuid", g.info.uuid.clone()),
        ("gpu_name", g.info.name.clone()),
    ]
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
    let mut fams: Vec<Family> = Vec::new();
    let mut family = |name, help, unit: Option<Unit>, counter, series| {
        fams.push(Family { name, help, unit, counter, series });
    };
    let version = vec![
        ("version", env!("CARGO_PKG_VERSION").to_string()),
        (
            "attribution",
            match how.method {
                Method::Model => "model",
                Method::Ratio => "ratio",
            }
            .to_string(),
        ),
    ];
    family(
        "gpumodel_build_info",
        "gpumodel's version and attribution method",
        None,
        false,
        vec![(version, 1.0)],
    );
    let per_gpu = |f: &dyn Fn(&GpuTotals) -> Option<f64>| -> Vec<(Labels, f64)> {
        x.gpus.iter().filter_map(|g| f(g).map(|v| (gpu_labels(g), v))).collect()
    };
    family(
        "gpumodel_gpu_up",
        "1 when the GPU's last reading succeeded",
        None,
        false,
        per_gpu(&|g| Some(f64::from(u8::from(g.up)))),
    );
    family(
        "gpumodel_gpu_energy",
        "Board energy from the GPU's energy counter since the exporter started",
        Some(Unit::Joules),
        true,
        per_gpu(&|g| Some(g.energy_j)),
    );
    family(
        "gpumodel_gpu_idle_energy",
        "Idle (static) part of the board energy",
        Some(Unit::Joules),
        true,
        per_gpu(&|g| Some(g.idle_j)),
    );
    family(
        "gpumodel_gpu_unattributed_energy",
        "Dynamic energy no running process could be given",
        Some(Unit::Joules),
        true,
        per_gpu(&|g| Some(g.unattributed_j)),
    );
    family(
        "gpumodel_gpu_energy_resets",
        "Decreases of the GPU's energy counter (driver reloads)",
        None,
        true,
        per_gpu(&|g| Some(g.counter_resets as f64)),
    );
    family(
        "gpumodel_gpu_power",
        "Board power at the last reading",
        Some(Unit::Other("watts".into())),
        false,
        per_gpu(&|g| g.power_w),
    );
    family(
        "gpumodel_gpu_idle_power",
        "Idle power measured at the current SM clock (or the nearest measured)",
        Some(Unit::Other("watts".into())),
        false,
        per_gpu(&|g| if g.up { g.idle_w(g.sm_mhz) } else { None }),
    );
    family(
        "gpumodel_gpu_sm_clock",
        "SM clock at the last reading",
        Some(Unit::Other("hertz".into())),
        false,
        per_gpu(&|g| g.sm_mhz.map(|m| m * 1e6)),
    );
    family(
        "gpumodel_gpu_memory_clock",
        "Memory clock at the last reading",
        Some(Unit::Other("hertz".into())),
        false,
        per_gpu(&|g| g.mem_mhz.map(|m| m * 1e6)),
    );
    if how.per_pid {
        let mut series = Vec::new();
        for g in &x.gpus {
            for p in g.processes.values() {
                for (component, v) in [("dynamic", p.dynamic_j), ("idle", p.idle_j)] {
                    let mut l = gpu_labels(g);
                    l.push(("pid", p.pid.to_string()));
                    l.push(("comm", p.comm.clone().unwrap_or_default()));
                    l.push(("container_id", p.container.as_ref().map(|c| c.id.clone()).unwrap_or_default()));
                    l.push(("pod", p.container.as_ref().and_then(|c| c.pod.clone()).unwrap_or_default()));
                    l.push(("component", component.to_string()));
                    series.push((l, v));
                }
            }
        }
        family("gpumodel_process_energy", "Energy attributed to a process", Some(Unit::Joules), true, series);
    }
    let mut series = Vec::new();
    for g in &x.gpus {
        for (id, c) in &g.containers {
            for (component, v) in [("dynamic", c.dynamic_j), ("idle", c.idle_j)] {
                let mut l = gpu_labels(g);
                l.push(("container_id", id.clone()));
                l.push(("pod", c.pod.clone().unwrap_or_default()));
                l.push(("component", component.to_string()));
                series.push((l, v));
            }
        }
    }
    family(
        "gpumodel_container_energy",
        "Energy attributed to a container's processes",
        Some(Unit::Joules),
        true,
        series,
    );
    let errors = x
        .errors
        .iter()
        .map(|((call, code), n)| (vec![("call", call.clone()), ("code", code.clone())], *n as f64))
        .collect();
    family("gpumodel_nvml_errors", "Failed NVML calls, by call and NVML error", None, true, errors);

    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot(fams)));
    let mut out = String::new();
    // Writing to a String cannot fail; an encoder error would be a bug in a label, reported in the text.
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
        out = format!("# gpumodel: the exposition could not be encoded ({e})\n# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeGpu;
    use crate::state::{Options, ProcessInfo};
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

    #[test]
    fn per_process_series_are_opt_in() {
        let text = render(&exporter(), Render { per_pid: false, method: Method::Ratio });
        assert!(!text.contains("gpumodel_process_energy"));
        assert!(text.contains("attribution=\"ratio\""));
        assert!(text.contains("gpumodel_container_energy_joules_total"));
    }
}
