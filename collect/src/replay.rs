//! Replay of recorded NVML answers: a JSON-lines trace, one GPU's reading (or failed call) per line.
//!
//! ```text
//! {"format":"gpumodel-nvml-trace/1","gpus":[{"index":0,"uuid":"GPU-…","name":"NVIDIA H100 80GB HBM3"}],
//!  "processes":{"4242":{"comm":"python","cgroup":"0::/kubepods/…"}}}
//! {"gpu":0,"reading":{"time_s":0.0,"energy_j":1234.5,"power_w":70.1,"sm_mhz":1980,
//!   "processes":[{"pid":4242,"sm":0.83,"mem":0.41}],"running":[4242]}}
//! {"gpu":0,"error":{"call":"nvmlDeviceGetTotalEnergyConsumption","code":"gpu_lost"}}
//! {"gpu":0,"reading":{"time_s":2.0,"energy_j":1400.2,"power_w":180.0,"mig_slices":7,
//!   "instances":[{"gi":1,"profile":"3g.40gb","sm":0.6,"dram":0.1,"running":[4242]}]}}
//! ```
//!
//! A GPU in MIG mode answers `instances` (each GPU instance's GPM activity and processes) instead of
//! `processes`.
//!
//! The first line names the GPUs and, optionally, each PID's name and `/proc/PID/cgroup` text (a replay
//! has no `/proc` of its own). Each later line is the next answer of one GPU, with its quirks as recorded:
//! counter resets, missing samples, values above 100 %, stale PIDs.

use crate::cgroup::{Container, ProcessInfo, parse_cgroup};
use crate::telemetry::{GpuInfo, ReadError, Reading, Telemetry};
use serde::Deserialize;
use std::collections::{BTreeMap, VecDeque};

pub const TRACE_FORMAT: &str = "gpumodel-nvml-trace/1";

#[derive(Debug, Deserialize)]
struct Header {
    format: String,
    gpus: Vec<GpuInfo>,
    #[serde(default)]
    processes: BTreeMap<String, ProcessEntry>,
}

#[derive(Debug, Clone, Deserialize)]
struct ProcessEntry {
    #[serde(default)]
    comm: Option<String>,
    #[serde(default)]
    cgroup: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ErrorEntry {
    call: String,
    code: String,
}

#[derive(Debug, Deserialize)]
struct Line {
    gpu: usize,
    #[serde(default)]
    reading: Option<Reading>,
    #[serde(default)]
    error: Option<ErrorEntry>,
}

/// A trace that cannot be read, with the line at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}:{line}: {message}")]
pub struct TraceError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

/// The recorded answers, served in order per GPU.
#[derive(Debug, Clone)]
pub struct ReplayTelemetry {
    gpus: Vec<GpuInfo>,
    answers: Vec<VecDeque<Result<Reading, ReadError>>>,
    /// Each GPU's last answer, repeated once its part of the trace has ended (its state holds).
    last: Vec<Option<Result<Reading, ReadError>>>,
}

/// The PIDs' names and containers recorded in a trace's header.
#[derive(Debug, Clone, Default)]
pub struct ReplayProcesses(BTreeMap<u32, (Option<String>, Option<Container>)>);

impl ProcessInfo for ReplayProcesses {
    fn comm(&self, pid: u32) -> Option<String> {
        self.0.get(&pid).and_then(|p| p.0.clone())
    }
    fn container(&self, pid: u32) -> Option<Container> {
        self.0.get(&pid).and_then(|p| p.1.clone())
    }
}

/// Reads and parses the trace file `path` for the exporter.
pub fn open(path: &std::path::Path) -> crate::Result<(ReplayTelemetry, ReplayProcesses)> {
    read_trace(path, parse)
}

/// Reads the trace file `path` and parses it with `parse`, errors naming the file.
fn read_trace<T>(
    path: &std::path::Path,
    parse: impl FnOnce(&str, &str) -> Result<T, TraceError>,
) -> crate::Result<T> {
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => crate::Error::Invalid(format!(
            "{name}: not a gpumodel NVML trace (not UTF-8 text); give the JSON-lines file a recording wrote"
        )),
        _ => crate::Error::io(path, e),
    })?;
    parse(&text, &name).map_err(|e| crate::Error::Invalid(e.to_string()))
}

/// Reads a trace. `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<(ReplayTelemetry, ReplayProcesses), TraceError> {
    let err = |line: usize, message: String| TraceError { origin: origin.to_string(), line, message };
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((n0, first)) = lines.next() else {
        return Err(err(
            1,
            "empty trace: the first line must name the GPUs (see `gpumodel serve --help`)".into(),
        ));
    };
    let header: Header = serde_json::from_str(first)
        .map_err(|e| err(n0 + 1, format!("not a gpumodel NVML trace header ({e})")))?;
    if header.format != TRACE_FORMAT {
        return Err(err(n0 + 1, format!("trace format `{}`, expected `{TRACE_FORMAT}`", header.format)));
    }
    if header.gpus.is_empty() {
        return Err(err(n0 + 1, "the header names no GPU".into()));
    }
    let mut procs = BTreeMap::new();
    for (pid, p) in header.processes {
        let pid: u32 = pid.parse().map_err(|_| err(n0 + 1, format!("process `{pid}` is not a PID")))?;
        procs.insert(pid, (p.comm, p.cgroup.as_deref().and_then(parse_cgroup)));
    }
    let mut answers = vec![VecDeque::new(); header.gpus.len()];
    for (n, text) in lines {
        let line: Line =
            serde_json::from_str(text).map_err(|e| err(n + 1, format!("not a trace line ({e})")))?;
        let slot = answers.get_mut(line.gpu).ok_or_else(|| {
            err(n + 1, format!("GPU {} is not in the header's {} GPU(s)", line.gpu, header.gpus.len()))
        })?;
        match (line.reading, line.error) {
            (Some(r), None) => {
                if !r.time_s.is_finite() {
                    return Err(err(n + 1, "time_s is not a finite number".into()));
                }
                slot.push_back(Ok(r))
            }
            (None, Some(e)) => slot.push_back(Err(ReadError { call: e.call, code: e.code })),
            _ => return Err(err(n + 1, "a line holds either a `reading` or an `error`".into())),
        }
    }
    let last = vec![None; header.gpus.len()];
    Ok((ReplayTelemetry { gpus: header.gpus, answers, last }, ReplayProcesses(procs)))
}

impl Telemetry for ReplayTelemetry {
    fn gpus(&self) -> Vec<GpuInfo> {
        self.gpus.clone()
    }

    fn read(&mut self, gpu: usize) -> Result<Reading, ReadError> {
        let missing = || Err(ReadError { call: "replay".into(), code: "no_such_gpu".into() });
        let Some(queue) = self.answers.get_mut(gpu) else { return missing() };
        match queue.pop_front() {
            Some(answer) => {
                self.last[gpu] = Some(answer.clone());
                answer
            }
            None => self.last[gpu].clone().unwrap_or_else(missing),
        }
    }

    fn ended(&self, gpu: usize) -> bool {
        self.answers.get(gpu).is_none_or(VecDeque::is_empty)
    }
}

/// A recorded GPU's power, clocks and energy counter, replayed in real time from a trace of NVML answers
/// (the format above, which `gpumodel serve --replay` reads too): `collect`'s power source under
/// `GPUMODEL_REPLAY=FILE`, so that a run is measured against recorded answers, quirks included, without a
/// GPU. The trace's first GPU is replayed; answer `k` is served once the source has run for its `time_s`
/// less the first reading's (an error takes the time of the reading before it). A recorded error is the
/// error of the first read that reaches it; past the trace's end its last reading holds.
#[derive(Debug)]
pub struct ReplayPower {
    clock: crate::sampler::Clock,
    gpu: String,
    answers: Vec<(f64, Result<Reading, ReadError>)>,
    /// Answers served so far.
    served: usize,
    current: Option<Reading>,
    /// The reading before `current`, for a power derived from the energy counter.
    previous: Option<Reading>,
    energy_counter: bool,
}

impl ReplayPower {
    /// The first GPU of a trace's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<ReplayPower, TraceError> {
        let (mut t, _) = parse(text, origin)?;
        let gpu = t.gpus[0].name.clone();
        let mut answers = Vec::new();
        let mut t0 = None;
        let mut at = 0.0;
        while let Some(a) = t.answers[0].pop_front() {
            if let Ok(r) = &a {
                let start = *t0.get_or_insert(r.time_s);
                at = r.time_s - start;
            }
            answers.push((at, a));
        }
        if !answers.iter().any(|(_, a)| a.as_ref().is_ok_and(|r| r.power_w.is_some() || r.energy_j.is_some()))
        {
            return Err(TraceError {
                origin: origin.to_string(),
                line: 1,
                message: "GPU 0 has no reading with power_w or energy_j: nothing to replay as power".into(),
            });
        }
        let energy_counter = answers.iter().any(|(_, a)| a.as_ref().is_ok_and(|r| r.energy_j.is_some()));
        Ok(ReplayPower {
            clock: crate::sampler::Clock::new(),
            gpu,
            answers,
            served: 0,
            current: None,
            previous: None,
            energy_counter,
        })
    }

    /// Reads and parses the trace file `path`.
    pub fn open(path: &std::path::Path) -> crate::Result<ReplayPower> {
        read_trace(path, ReplayPower::parse)
    }

    /// Serves the answers due by `now` (seconds since the source was opened); the first recorded error
    /// among them, if any.
    fn advance(&mut self, now: f64) -> Option<ReadError> {
        let mut error = None;
        while let Some((at, answer)) = self.answers.get(self.served) {
            if *at > now && self.current.is_some() {
                break;
            }
            match answer {
                Ok(r) => {
                    self.previous = self.current.replace(r.clone());
                }
                Err(e) => {
                    error.get_or_insert_with(|| e.clone());
                }
            }
            self.served += 1;
        }
        error
    }
}

impl crate::power::PowerSource for ReplayPower {
    fn info(&self) -> crate::power::PowerInfo {
        crate::power::PowerInfo {
            gpu: self.gpu.clone(),
            driver: None,
            compute_capability: None,
            field: crate::power::PowerField::Replayed,
            energy_counter: self.energy_counter,
            pci_bus_id: None,
        }
    }

    fn read(&mut self) -> crate::Result<crate::power::PowerReading> {
        let now = self.clock.now_s();
        self.read_at(now)
    }

    fn energy(&mut self) -> crate::Result<Option<gpumodel_models::Joules>> {
        let now = self.clock.now_s();
        self.energy_at(now)
    }
}

impl ReplayPower {
    /// [`PowerSource::read`](crate::power::PowerSource::read) at `now` seconds since the source opened.
    pub fn read_at(&mut self, now: f64) -> crate::Result<crate::power::PowerReading> {
        if let Some(e) = self.advance(now) {
            return Err(recorded(&e));
        }
        let r =
            self.current.as_ref().ok_or_else(|| crate::Error::Invalid("the trace has no reading".into()))?;
        // Power as recorded, else from the energy counter between this reading and the one before.
        let derived = self.previous.as_ref().and_then(|p| match (p.energy_j, r.energy_j) {
            (Some(a), Some(b)) if r.time_s > p.time_s && b >= a => Some((b - a) / (r.time_s - p.time_s)),
            _ => None,
        });
        let watts = r.power_w.or(derived).ok_or_else(|| {
            crate::Error::Invalid(format!(
                "the recorded reading at {} s has no power_w, and none follows from energy_j",
                r.time_s
            ))
        })?;
        Ok(crate::power::PowerReading {
            power: gpumodel_models::Watts(watts),
            core: r.sm_mhz.map(gpumodel_models::Mhz),
            mem: r.mem_mhz.map(gpumodel_models::Mhz),
        })
    }

    /// [`PowerSource::energy`](crate::power::PowerSource::energy) at `now` seconds since the source opened.
    pub fn energy_at(&mut self, now: f64) -> crate::Result<Option<gpumodel_models::Joules>> {
        if let Some(e) = self.advance(now) {
            return Err(recorded(&e));
        }
        Ok(self.current.as_ref().and_then(|r| r.energy_j).map(gpumodel_models::Joules))
    }
}

/// A recorded failed call, as the error of the read that reaches it.
fn recorded(e: &ReadError) -> crate::Error {
    crate::Error::Invalid(format!("the recorded {} answered `{}` (replayed)", e.call, e.code))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"{"format":"gpumodel-nvml-trace/1","gpus":[{"index":0,"uuid":"GPU-a","name":"X"}],"processes":{"42":{"comm":"python","cgroup":"0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope"}}}
{"gpu":0,"reading":{"time_s":0.0,"energy_j":10.0,"power_w":50.0}}
{"gpu":0,"error":{"call":"nvmlDeviceGetTotalEnergyConsumption","code":"gpu_lost"}}
{"gpu":0,"reading":{"time_s":2.0,"energy_j":110.0,"processes":[{"pid":42,"sm":1.2,"mem":0.3}],"running":[42]}}
"#;

    #[test]
    fn a_trace_replays_its_answers_in_order_with_its_processes() {
        let (mut t, p) = parse(TRACE, "t.jsonl").unwrap();
        assert_eq!(t.gpus()[0].uuid, "GPU-a");
        assert_eq!(t.read(0).unwrap().energy_j, Some(10.0));
        assert_eq!(t.read(0).unwrap_err().code, "gpu_lost");
        assert_eq!(t.read(0).unwrap().processes[0].sm, 1.2);
        assert!(t.exhausted());
        // Past its end a GPU repeats its last answer: same time, so nothing more is counted.
        assert_eq!(t.read(0).unwrap().time_s, 2.0);
        assert_eq!(p.comm(42).as_deref(), Some("python"));
        assert!(p.container(42).is_some());
        assert_eq!(p.comm(7), None);
    }

    #[test]
    fn bad_traces_are_refused_with_the_line() {
        for (text, want) in [
            ("", ":1: empty trace"),
            ("{}", ":1: not a gpumodel NVML trace header"),
            (r#"{"format":"other/1","gpus":[]}"#, "expected `gpumodel-nvml-trace/1`"),
            (r#"{"format":"gpumodel-nvml-trace/1","gpus":[]}"#, "names no GPU"),
            (&TRACE.replace(r#""gpu":0,"error""#, r#""gpu":3,"error""#), ":3: GPU 3 is not in the header"),
            (&format!("{}\n{{\"gpu\":0}}", TRACE.lines().next().unwrap()), ":2: a line holds either"),
            (&format!("{}\nnot json", TRACE.lines().next().unwrap()), ":2: not a trace line"),
        ] {
            let e = parse(text, "t.jsonl").unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
    }

    /// Answers are served by the time since the source opened (trace times re-based on the first
    /// reading), a recorded error fails the one read that reaches it, a reading without power gets it
    /// from the energy counter, and past the end the last reading holds.
    #[test]
    fn a_replayed_gpu_serves_its_recorded_power_by_time() {
        let trace = r#"{"format":"gpumodel-nvml-trace/1","gpus":[{"index":0,"uuid":"GPU-a","name":"Recorded"}]}
{"gpu":0,"reading":{"time_s":50.0,"energy_j":1000.0,"power_w":100.0,"sm_mhz":1980}}
{"gpu":0,"reading":{"time_s":51.0,"energy_j":1200.0,"power_w":200.0}}
{"gpu":0,"error":{"call":"nvmlDeviceGetPowerUsage","code":"unknown"}}
{"gpu":0,"reading":{"time_s":53.0,"energy_j":1800.0}}
"#;
        let mut r = ReplayPower::parse(trace, "t.jsonl").unwrap();
        let w = |r: &mut ReplayPower, t| r.read_at(t).map(|x| x.power.0);
        assert_eq!(r.read_at(0.0).unwrap().core.map(|m| m.0), Some(1980.0));
        assert_eq!(w(&mut r, 0.9).unwrap(), 100.0);
        // The 51 s reading and the error recorded after it are both due at 1 s: that read fails, once.
        assert!(
            w(&mut r, 1.0).unwrap_err().to_string().contains("nvmlDeviceGetPowerUsage answered `unknown`")
        );
        assert_eq!(w(&mut r, 1.2).unwrap(), 200.0);
        assert_eq!(r.energy_at(1.5).unwrap().map(|j| j.0), Some(1200.0));
        // No power at 53 s: (1800 − 1200) J over 2 s.
        assert_eq!(w(&mut r, 3.0).unwrap(), 300.0);
        assert_eq!(w(&mut r, 99.0).unwrap(), 300.0);
        assert_eq!(r.energy_at(99.0).unwrap().map(|j| j.0), Some(1800.0));
        use crate::power::PowerSource;
        assert_eq!(r.info().gpu, "Recorded");
        assert!(r.info().energy_counter);
        let none = trace.lines().next().unwrap().to_string() + "\n{\"gpu\":0,\"reading\":{\"time_s\":0.0}}\n";
        assert!(ReplayPower::parse(&none, "n.jsonl").unwrap_err().to_string().contains("nothing to replay"));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_lines_never_panic(body in "\\PC{0,200}") {
            let text = format!("{}\n{body}\n", TRACE.lines().next().unwrap());
            let _ = parse(&text, "t.jsonl");
        }
    }
}
