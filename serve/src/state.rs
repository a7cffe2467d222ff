//! The exporter's running totals, advanced once per tick from every GPU's reading.
//!
//! Per GPU, each tick:
//! 1. `ΔE` from the energy counter. A decrease is a counter reset (driver reload): that tick's energy is
//!    taken from power × Δt instead, and the reset is counted. A GPU without the counter (before Volta)
//!    integrates power (trapezoid).
//! 2. Each process's activity: the mean of its NVML samples in the tick. A process still running without a
//!    new sample keeps its last activity for up to three ticks (the driver's samples come with gaps).
//! 3. Idle power: measured in ticks where no process runs, per SM clock (an exponential mean); at a clock
//!    never seen idle, the measurement at the nearest clock. Unknown until the GPU has been idle once: the
//!    whole increment is then dynamic, and `gpumodel_gpu_idle_power_watts` is absent.
//! 4. The split ([`crate::attribution`]), added to the GPU's, each process's and each container's totals.
//! 5. With a clock model: the tick's activity (step 2) added to the GPU's advice window ([`crate::advice`]).
//!
//! A GPU in MIG mode has no per-process utilization; its reading carries each GPU instance's GPM activity
//! instead ([`crate::telemetry::InstanceReading`], ratios of the instance's own SMs and bandwidth). Each
//! instance's activity over the whole GPU is its GPM activity times its slices over the GPU's, and the
//! instances take the place of processes in steps 2–5: the dynamic energy is split among them by the same
//! model (`gpumodel_gpu_energy_joules_total` = idle + unattributed + Σ instance dynamic, exactly), and each
//! instance is given the idle energy of its slices. Inside an instance with one process, that process (and
//! its container) gets the instance's parts; with several, NVML cannot tell them apart and only the
//! instance's series carry them.
//!
//! A GPU whose reading fails is down (`gpumodel_gpu_up 0`) and keeps its totals; the next good reading
//! accounts for the energy since the last one. A process that has exited keeps its final totals for
//! `keep_exited_s`, then its series go away; a container's totals stay while any of its processes do.

use crate::advice::{Advisor, Tick};
use crate::attribution::{Activity, Attributor, Params};
use crate::cgroup::Container;
use crate::telemetry::{GpuInfo, InstanceReading, Reading, Telemetry};
use std::collections::BTreeMap;

pub use gpumodel_collect::cgroup::{ProcFs, ProcessInfo};

/// Settings of the totals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub params: Params,
    /// How long an exited process's series stay, s.
    pub keep_exited_s: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options { params: Params::default(), keep_exited_s: 60.0 }
    }
}

/// One process's totals on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessTotals {
    pub pid: u32,
    pub comm: Option<String>,
    pub container: Option<Container>,
    pub dynamic_j: f64,
    pub idle_j: f64,
    /// Last activity and when it was sampled (reader time).
    activity: Activity,
    sampled_s: f64,
    /// When the process was last running or sampled.
    pub seen_s: f64,
}

impl ProcessTotals {
    /// A process first seen at `now` (never sampled yet).
    fn new(pid: u32, info: &dyn ProcessInfo, now: f64) -> ProcessTotals {
        ProcessTotals {
            pid,
            comm: info.comm(pid),
            container: info.container(pid),
            dynamic_j: 0.0,
            idle_j: 0.0,
            activity: Activity::default(),
            sampled_s: f64::NEG_INFINITY,
            seen_s: now,
        }
    }
}

/// One container's totals on one GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContainerTotals {
    pub pod: Option<String>,
    pub dynamic_j: f64,
    pub idle_j: f64,
    pub seen_s: f64,
}

/// One MIG GPU instance's totals on one GPU.
#[derive(Debug, Clone)]
pub struct InstanceTotals {
    pub gi: u32,
    pub profile: String,
    pub slices: u32,
    pub dynamic_j: f64,
    pub idle_j: f64,
    /// When the instance was last in a reading.
    pub seen_s: f64,
    /// Last activity over the whole GPU and when GPM gave it.
    activity: Activity,
    sampled_s: f64,
    /// The instance's own clock advice, where the GPU has a clock model ([`Advisor::for_instance`]).
    pub advisor: Option<Advisor>,
}

/// One GPU's totals.
#[derive(Debug, Clone)]
pub struct GpuTotals {
    pub info: GpuInfo,
    pub up: bool,
    pub energy_j: f64,
    pub idle_j: f64,
    pub unattributed_j: f64,
    pub counter_resets: u64,
    pub power_w: Option<f64>,
    pub sm_mhz: Option<f64>,
    pub mem_mhz: Option<f64>,
    /// Idle power measured per SM clock (MHz, rounded), W.
    pub idle_by_clock: BTreeMap<u32, f64>,
    pub processes: BTreeMap<u32, ProcessTotals>,
    pub containers: BTreeMap<String, ContainerTotals>,
    /// MIG GPU instances, by GPU instance id (empty outside MIG mode).
    pub instances: BTreeMap<u32, InstanceTotals>,
    /// The clock advice of a GPU with a clock model ([`crate::advice`]).
    pub advisor: Option<Advisor>,
    last: Option<Last>,
    attributor: Attributor,
    /// The split among MIG instances (keyed by GPU instance id).
    instance_attributor: Attributor,
}

/// What the next tick needs of the last good reading.
#[derive(Debug, Clone, Copy)]
struct Last {
    time_s: f64,
    energy_j: Option<f64>,
    power_w: Option<f64>,
}

impl GpuTotals {
    fn new(info: GpuInfo, params: Params) -> GpuTotals {
        GpuTotals {
            info,
            up: false,
            energy_j: 0.0,
            idle_j: 0.0,
            unattributed_j: 0.0,
            counter_resets: 0,
            power_w: None,
            sm_mhz: None,
            mem_mhz: None,
            idle_by_clock: BTreeMap::new(),
            processes: BTreeMap::new(),
            containers: BTreeMap::new(),
            instances: BTreeMap::new(),
            advisor: None,
            last: None,
            attributor: Attributor::new(params),
            instance_attributor: Attributor::new(params),
        }
    }

    /// Each active process's activity this tick: the mean of its samples, else (still running, sampled
    /// within [`CARRY_TICKS`]) its last one.
    fn process_activity(&mut self, r: &Reading, dt: f64, info: &dyn ProcessInfo) -> Vec<(u32, Activity)> {
        // Activity: the mean of the tick's samples per PID (sorted by PID, each PID's samples in the order
        // read), else the last one for a process still running.
        let mut sampled: Vec<(u32, Activity, f64)> =
            r.processes.iter().map(|s| (s.pid, Activity { sm: s.sm, mem: s.mem }, 1.0)).collect();
        sampled.sort_by_key(|s| s.0);
        sampled.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1.sm += later.1.sm;
                kept.1.mem += later.1.mem;
                kept.2 += 1.0;
            }
            same
        });
        for (_, a, n) in sampled.iter_mut() {
            a.sm /= *n;
            a.mem /= *n;
        }
        let was_sampled = |pid: u32| sampled.binary_search_by_key(&pid, |s| s.0).is_ok();
        let mut active: Vec<(u32, Activity)> = sampled.iter().map(|(pid, a, _)| (*pid, *a)).collect();
        for pid in &r.running {
            let p = self.processes.entry(*pid).or_insert_with(|| ProcessTotals::new(*pid, info, r.time_s));
            p.seen_s = r.time_s;
            if !was_sampled(*pid) && r.time_s - p.sampled_s <= CARRY_TICKS * dt {
                active.push((*pid, p.activity));
            }
        }
        active.sort_by_key(|a| a.0);
        active.dedup_by_key(|a| a.0);
        for (pid, a) in &active {
            let p = self.processes.entry(*pid).or_insert_with(|| ProcessTotals::new(*pid, info, r.time_s));
            p.seen_s = r.time_s;
            if was_sampled(*pid) {
                p.activity = *a;
                p.sampled_s = r.time_s;
            }
        }
        active.into_iter().filter(|(_, a)| a.sm > 0.0 || a.mem > 0.0).collect()
    }

    /// Each MIG instance's activity over the whole GPU this tick (GPM activity × its share of the slices),
    /// else (no GPM this tick, sampled within [`CARRY_TICKS`]) its last one; the instances' processes are
    /// seen.
    fn instance_activity(&mut self, r: &Reading, dt: f64, info: &dyn ProcessInfo) -> Vec<(u32, Activity)> {
        let total = total_slices(r);
        let mut active = Vec::new();
        for inst in &r.instances {
            let t = self.instances.entry(inst.gi).or_insert_with(|| InstanceTotals {
                gi: inst.gi,
                profile: inst.profile.clone(),
                slices: inst.slices(),
                dynamic_j: 0.0,
                idle_j: 0.0,
                seen_s: r.time_s,
                activity: Activity::default(),
                sampled_s: f64::NEG_INFINITY,
                advisor: self.advisor.as_ref().map(|a| Advisor::for_instance(a, inst.gi, &inst.profile)),
            });
            if t.profile != inst.profile {
                t.profile.clone_from(&inst.profile);
            }
            t.slices = inst.slices();
            t.seen_s = r.time_s;
            let share = f64::from(t.slices) / total;
            // GPM ratios are finite and non-negative here ([`sanitize`] dropped the others).
            let known = match (inst.sm, inst.dram) {
                (None, None) if r.time_s - t.sampled_s <= CARRY_TICKS * dt => Some(t.activity),
                (None, None) => None,
                (sm, dram) => {
                    t.activity = Activity { sm: sm.unwrap_or(0.0) * share, mem: dram.unwrap_or(0.0) * share };
                    t.sampled_s = r.time_s;
                    Some(t.activity)
                }
            };
            // The instance's advice reads its activity as GPM gives it, of its own SMs and bandwidth; a
            // tick without GPM activity adds nothing to its window.
            if let (Some(k), Some(advisor)) = (known, &mut t.advisor) {
                advisor.record(Tick {
                    time_s: r.time_s,
                    dt_s: dt,
                    sm: k.sm / share,
                    dram: k.mem / share,
                    power_w: None,
                    sm_mhz: r.sm_mhz,
                    mem_mhz: r.mem_mhz,
                });
            }
            let a = known.unwrap_or_default();
            if a.sm > 0.0 || a.mem > 0.0 {
                active.push((inst.gi, a));
            }
        }
        for pid in r.instances.iter().flat_map(|i| &i.running).chain(&r.running) {
            let p = self.processes.entry(*pid).or_insert_with(|| ProcessTotals::new(*pid, info, r.time_s));
            p.seen_s = r.time_s;
        }
        active
    }

    /// The idle power at `sm_mhz`: measured there, else at the nearest measured clock.
    pub fn idle_w(&self, sm_mhz: Option<f64>) -> Option<f64> {
        let key = sm_mhz.map(|m| m.round() as i64).unwrap_or(0);
        self.idle_by_clock.iter().min_by_key(|(k, _)| (i64::from(**k) - key).abs()).map(|(_, w)| *w)
    }
}

/// Every GPU's totals, and the NVML errors seen.
pub struct Exporter {
    pub gpus: Vec<GpuTotals>,
    /// NVML errors by (call, code).
    pub errors: BTreeMap<(String, String), u64>,
    pub ticks: u64,
    opts: Options,
    info: Box<dyn ProcessInfo>,
}

/// Ticks a running process keeps its last activity without a new sample.
const CARRY_TICKS: f64 = 3.0;
/// Compute slices of a MIG GPU when the reading does not say (A100, H100, H200).
const MIG_SLICES: u32 = 7;
/// Weight of a new idle measurement in the per-clock mean.
const IDLE_EWMA: f64 = 0.2;
/// The most power a reading may show, W: above any GPU board (the largest draw about 1.2 kW), so a larger
/// value, or an energy increment implying one, is a damaged reading.
pub const MAX_BOARD_W: f64 = 10_000.0;
/// The highest clock a reading may show, MHz.
const MAX_CLOCK_MHZ: f64 = 100_000.0;
/// The largest utilization ratio kept (NVML reports values above 100 %; 1000 % is none a GPU gives).
const MAX_UTILIZATION: f64 = 10.0;
/// A gap between two good readings longer than this, s (a GPU that did not answer for an hour), is not
/// split by the activity of the tick that ends it: its counter energy is unattributed.
pub const MAX_GAP_S: f64 = 3600.0;

/// A reading with its implausible values taken out (a damaged trace, a driver glitch): a power, energy or
/// clock that is not a finite number in its range is dropped, a utilization is clamped into
/// [0, [`MAX_UTILIZATION`]]. Returns the reading, or `None` when its time is not a finite number, and the
/// fields dropped or clamped, each once.
fn sanitize(mut r: Reading) -> (Option<Reading>, Vec<&'static str>) {
    let mut bad = Vec::new();
    if !r.time_s.is_finite() {
        return (None, vec!["time"]);
    }
    let mut keep = |v: &mut Option<f64>, max: f64, what: &'static str| {
        if v.is_some_and(|x| !(x.is_finite() && (0.0..=max).contains(&x))) {
            *v = None;
            if !bad.contains(&what) {
                bad.push(what);
            }
        }
    };
    keep(&mut r.power_w, MAX_BOARD_W, "power");
    keep(&mut r.energy_j, f64::MAX, "energy");
    keep(&mut r.sm_mhz, MAX_CLOCK_MHZ, "clocks");
    keep(&mut r.mem_mhz, MAX_CLOCK_MHZ, "clocks");
    for inst in &mut r.instances {
        keep(&mut inst.sm, MAX_UTILIZATION, "gpm");
        keep(&mut inst.dram, MAX_UTILIZATION, "gpm");
    }
    // One entry per GPU instance (the live reader merges an instance's compute instances; a trace might
    // not): a repeated id adds its processes, and its metrics where the first had none.
    let mut merged: Vec<InstanceReading> = Vec::with_capacity(r.instances.len());
    for inst in std::mem::take(&mut r.instances) {
        match merged.iter_mut().find(|m| m.gi == inst.gi) {
            Some(m) => {
                m.sm = m.sm.or(inst.sm);
                m.dram = m.dram.or(inst.dram);
                for pid in inst.running {
                    if !m.running.contains(&pid) {
                        m.running.push(pid);
                    }
                }
                if !bad.contains(&"instances") {
                    bad.push("instances");
                }
            }
            None => merged.push(inst),
        }
    }
    r.instances = merged;
    let clamp = |v: &mut f64, bad: &mut Vec<&'static str>| {
        if !(v.is_finite() && (0.0..=MAX_UTILIZATION).contains(v)) {
            *v = if v.is_nan() { 0.0 } else { v.clamp(0.0, MAX_UTILIZATION) };
            if !bad.contains(&"process_utilization") {
                bad.push("process_utilization");
            }
        }
    };
    for p in &mut r.processes {
        clamp(&mut p.sm, &mut bad);
        clamp(&mut p.mem, &mut bad);
    }
    (Some(r), bad)
}

impl Exporter {
    pub fn new(gpus: Vec<GpuInfo>, opts: Options, info: Box<dyn ProcessInfo>) -> Exporter {
        Exporter {
            gpus: gpus.into_iter().map(|g| GpuTotals::new(g, opts.params)).collect(),
            errors: BTreeMap::new(),
            ticks: 0,
            opts,
            info,
        }
    }

    /// Reads every GPU once and advances the totals.
    pub fn tick(&mut self, telemetry: &mut dyn Telemetry) {
        self.ticks += 1;
        for i in 0..self.gpus.len() {
            if telemetry.ended(i) {
                continue;
            }
            match telemetry.read(i).map(sanitize) {
                Ok((r, bad)) => {
                    for what in bad {
                        *self.errors.entry((what.into(), "implausible_value".into())).or_insert(0) += 1;
                    }
                    match r {
                        Some(r) => self.advance(i, r),
                        None => self.gpus[i].up = false,
                    }
                }
                Err(e) => {
                    self.gpus[i].up = false;
                    *self.errors.entry((e.call, e.code)).or_insert(0) += 1;
                }
            }
        }
        for e in telemetry.take_soft_errors() {
            *self.errors.entry((e.call, e.code)).or_insert(0) += 1;
        }
    }

    fn advance(&mut self, i: usize, r: Reading) {
        let keep = self.opts.keep_exited_s;
        let info = &self.info;
        let g = &mut self.gpus[i];
        g.up = true;
        g.power_w = r.power_w;
        g.sm_mhz = r.sm_mhz;
        g.mem_mhz = r.mem_mhz;
        let Some(last) = g.last.replace(Last { time_s: r.time_s, energy_j: r.energy_j, power_w: r.power_w })
        else {
            return;
        };
        let dt = r.time_s - last.time_s;
        if !(dt > 0.0 && dt.is_finite()) {
            return;
        }
        // Over a gap longer than MAX_GAP_S only the counter's energy is known (power × time is a guess).
        let gap = dt > MAX_GAP_S;
        let energy = match (last.energy_j, r.energy_j) {
            (Some(a), Some(b)) if b >= a && b - a <= MAX_BOARD_W * dt => b - a,
            (Some(a), Some(b)) => {
                if b < a {
                    g.counter_resets += 1;
                } else {
                    // A jump no board can draw: a glitch of the counter, bridged like a reset.
                    *self.errors.entry(("energy".into(), "implausible_value".into())).or_insert(0) += 1;
                }
                if gap { 0.0 } else { r.power_w.unwrap_or(0.0) * dt }
            }
            _ if gap => 0.0,
            _ => match (last.power_w, r.power_w) {
                (Some(a), Some(b)) => 0.5 * (a + b) * dt,
                (_, Some(b)) => b * dt,
                _ => 0.0,
            },
        };
        let energy = if energy.is_finite() { energy.max(0.0) } else { 0.0 };
        if gap {
            g.energy_j += energy;
            g.unattributed_j += energy;
            return;
        }

        let mig = !r.instances.is_empty();
        let procs = if mig {
            g.instance_activity(&r, dt, info.as_ref())
        } else {
            g.process_activity(&r, dt, info.as_ref())
        };
        if let Some(advisor) = &mut g.advisor {
            let (sm, dram) = procs.iter().fold((0.0, 0.0), |(s, m), (_, a)| (s + a.sm, m + a.mem));
            advisor.record(Tick {
                time_s: r.time_s,
                dt_s: dt,
                sm,
                dram,
                power_w: r.power_w,
                sm_mhz: r.sm_mhz,
                mem_mhz: r.mem_mhz,
            });
        }

        // Idle: measured when nothing runs.
        let nothing_runs =
            r.running.is_empty() && procs.is_empty() && r.instances.iter().all(|i| i.running.is_empty());
        if nothing_runs && energy > 0.0 {
            let key = r.sm_mhz.map_or(0, |m| m.round().max(0.0) as u32);
            let w = energy / dt;
            let e = g.idle_by_clock.entry(key).or_insert(w);
            *e += IDLE_EWMA * (w - *e);
        }
        let idle_w = if nothing_runs { Some(energy / dt) } else { g.idle_w(r.sm_mhz) };
        let attributor = if mig { &mut g.instance_attributor } else { &mut g.attributor };
        let split = attributor.split(energy, dt, idle_w, &procs);
        g.energy_j += split.energy_j;
        g.idle_j += split.idle_j;
        g.unattributed_j += split.unattributed_j;
        if mig {
            // Each instance present is given the idle energy of its slices; its dynamic share from the split.
            let total = total_slices(&r);
            for inst in &r.instances {
                let dynamic_j = split.shares.iter().find(|s| s.pid == inst.gi).map_or(0.0, |s| s.dynamic_j);
                let idle_j = split.idle_j * f64::from(inst.slices()) / total;
                if let Some(t) = g.instances.get_mut(&inst.gi) {
                    t.dynamic_j += dynamic_j;
                    t.idle_j += idle_j;
                }
                if let [pid] = inst.running.as_slice() {
                    credit(&mut g.processes, &mut g.containers, *pid, dynamic_j, idle_j);
                }
            }
        } else {
            for s in &split.shares {
                credit(&mut g.processes, &mut g.containers, s.pid, s.dynamic_j, s.idle_j);
            }
        }
        // Forget processes gone for longer than the keep window; their containers stay while any
        // process of theirs does (and for the same window after).
        let now = r.time_s;
        let gone: Vec<u32> =
            g.processes.values().filter(|p| now - p.seen_s > keep.max(dt)).map(|p| p.pid).collect();
        for pid in gone {
            g.processes.remove(&pid);
            g.attributor.forget(pid);
        }
        let gone: Vec<u32> =
            g.instances.values().filter(|i| now - i.seen_s > keep.max(dt)).map(|i| i.gi).collect();
        for gi in gone {
            g.instances.remove(&gi);
            g.instance_attributor.forget(gi);
        }
        for p in g.processes.values() {
            if let Some(c) = &p.container
                && let Some(t) = g.containers.get_mut(&c.id)
            {
                t.seen_s = t.seen_s.max(p.seen_s);
            }
        }
        g.containers.retain(|_, t| now - t.seen_s <= keep.max(dt));
    }
}

/// The compute slices of a MIG GPU: as its reading says, else [`MIG_SLICES`], and never fewer than its
/// instances hold.
fn total_slices(r: &Reading) -> f64 {
    let held: u32 = r.instances.iter().map(InstanceReading::slices).sum();
    f64::from(r.mig_slices.filter(|s| *s > 0).unwrap_or(MIG_SLICES).max(held))
}

/// Adds a process's part of a tick to its totals and its container's.
fn credit(
    processes: &mut BTreeMap<u32, ProcessTotals>,
    containers: &mut BTreeMap<String, ContainerTotals>,
    pid: u32,
    dynamic_j: f64,
    idle_j: f64,
) {
    let Some(p) = processes.get_mut(&pid) else { return };
    p.dynamic_j += dynamic_j;
    p.idle_j += idle_j;
    let Some(c) = &p.container else { return };
    // The container's key and pod are copied when it is first seen (or its pod changes), not every tick.
    match containers.get_mut(&c.id) {
        Some(t) => {
            if t.pod != c.pod {
                t.pod.clone_from(&c.pod);
            }
            t.dynamic_j += dynamic_j;
            t.idle_j += idle_j;
        }
        None => {
            let t = ContainerTotals { pod: c.pod.clone(), dynamic_j, idle_j, ..ContainerTotals::default() };
            containers.insert(c.id.clone(), t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::ProcessSample;
    use crate::telemetry::scripted::{FakeGpu, FakeNode};

    struct NoInfo;
    impl ProcessInfo for NoInfo {
        fn comm(&self, pid: u32) -> Option<String> {
            Some(format!("job{pid}"))
        }
        fn container(&self, pid: u32) -> Option<Container> {
            (pid >= 100).then(|| Container { id: format!("{pid:064x}"), pod: Some("pod-a".into()) })
        }
    }

    fn reading(t: f64, e: f64, procs: &[(u32, f64, f64)]) -> Reading {
        Reading {
            time_s: t,
            energy_j: Some(e),
            power_w: Some(100.0),
            sm_mhz: Some(1380.0),
            processes: procs.iter().map(|&(pid, sm, mem)| ProcessSample { pid, sm, mem }).collect(),
            running: procs.iter().map(|p| p.0).collect(),
            ..Reading::default()
        }
    }

    fn conserved(g: &GpuTotals) -> bool {
        let parts = g.idle_j + g.unattributed_j + g.processes.values().map(|p| p.dynamic_j).sum::<f64>();
        (parts - g.energy_j).abs() <= 1e-9 * g.energy_j.max(1.0)
    }

    #[test]
    fn idle_is_measured_when_nothing_runs_and_used_when_work_starts() {
        let gpu = FakeGpu::scripted(vec![
            reading(0.0, 1000.0, &[]),
            reading(1.0, 1050.0, &[]),
            reading(2.0, 1250.0, &[(7, 0.8, 0.2)]),
        ]);
        let mut t = gpu;
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(NoInfo));
        for _ in 0..3 {
            x.tick(&mut t);
        }
        let g = &x.gpus[0];
        assert_eq!(g.energy_j, 250.0);
        assert_eq!(g.idle_j, 100.0);
        assert!((g.processes[&7].dynamic_j - 150.0).abs() < 1e-9);
        assert!(conserved(g));
    }

    #[test]
    fn a_counter_reset_uses_power_and_is_counted() {
        let mut t = FakeGpu::scripted(vec![
            reading(0.0, 5000.0, &[]),
            reading(1.0, 5100.0, &[]),
            reading(2.0, 3.0, &[]),
        ]);
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(NoInfo));
        for _ in 0..3 {
            x.tick(&mut t);
        }
        assert_eq!(x.gpus[0].counter_resets, 1);
        assert_eq!(x.gpus[0].energy_j, 200.0);
    }

    #[test]
    fn exited_processes_go_after_the_keep_window_and_containers_keep_their_totals_meanwhile() {
        let mut rs = vec![reading(0.0, 0.0, &[]), reading(1.0, 50.0, &[])];
        rs.push(reading(2.0, 250.0, &[(100, 0.5, 0.5)]));
        for k in 3..8 {
            rs.push(reading(k as f64, 250.0 + 50.0 * (k - 2) as f64, &[]));
        }
        let mut t = FakeGpu::scripted(rs);
        let opts = Options { keep_exited_s: 2.0, ..Options::default() };
        let mut x = Exporter::new(t.gpus(), opts, Box::new(NoInfo));
        for _ in 0..4 {
            x.tick(&mut t);
        }
        let g = &x.gpus[0];
        assert!(g.processes.contains_key(&100));
        let c = g.containers.values().next().unwrap();
        assert_eq!(c.pod.as_deref(), Some("pod-a"));
        assert!((c.dynamic_j - 150.0).abs() < 1e-9, "{c:?}");
        for _ in 4..8 {
            x.tick(&mut t);
        }
        let g = &x.gpus[0];
        assert!(!g.processes.contains_key(&100));
        assert!(g.containers.is_empty());
        assert!(g.energy_j > 0.0);
    }

    #[test]
    fn a_failed_reading_marks_only_that_gpu_down_and_counts_the_error() {
        let mut t = FakeGpu::two_with_failure();
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(NoInfo));
        for _ in 0..2 {
            x.tick(&mut t);
        }
        assert!(x.gpus[0].up);
        assert!(!x.gpus[1].up);
        assert_eq!(x.errors.values().sum::<u64>(), 1);
        // Back on the bus: the energy since its last good reading is accounted, none lost.
        x.tick(&mut t);
        assert!(x.gpus[1].up);
        assert_eq!(x.gpus[1].energy_j, 200.0);
    }
    /// Values no GPU gives are taken out and counted, never split: a power of 1e300 W is dropped, an
    /// energy jump no board can draw is bridged with power × time like a reset, a non-finite utilization
    /// is read as 0, a non-finite time marks the GPU down; and the energy of an hour-long gap between two
    /// readings is unattributed rather than split by the activity of the tick that ends it.
    #[test]
    fn implausible_values_are_dropped_and_counted_and_a_long_gap_is_unattributed() {
        let implausible = |x: &Exporter, what: &str| {
            x.errors.get(&(what.to_string(), "implausible_value".to_string())).copied().unwrap_or(0)
        };
        let mut rs = vec![reading(0.0, 0.0, &[(1, 0.5, 0.1)]), reading(1.0, 100.0, &[(1, f64::NAN, 0.1)])];
        rs[1].power_w = Some(1e300);
        rs.push(reading(2.0, 1e12, &[(1, 0.5, 0.1)]));
        rs.push(Reading { time_s: f64::NAN, ..reading(3.0, 1e12, &[]) });
        rs.push(reading(2.0 + 7200.0, 1e12 + 720_000.0, &[(1, 0.5, 0.1)]));
        let mut t = FakeGpu::scripted(rs);
        let mut x = Exporter::new(t.gpus(), Options::default(), Box::new(NoInfo));
        for _ in 0..2 {
            x.tick(&mut t);
        }
        assert_eq!((implausible(&x, "power"), implausible(&x, "process_utilization")), (1, 1));
        assert_eq!((x.gpus[0].power_w, x.gpus[0].energy_j), (None, 100.0));
        // The jump of 1e12 J in a second: bridged with the reading's 100 W.
        x.tick(&mut t);
        assert_eq!((implausible(&x, "energy"), x.gpus[0].energy_j), (1, 200.0));
        x.tick(&mut t);
        assert!(!x.gpus[0].up && implausible(&x, "time") == 1);
        let before = (x.gpus[0].unattributed_j, x.gpus[0].processes[&1].dynamic_j);
        x.tick(&mut t);
        let g = &x.gpus[0];
        assert!(g.up && g.energy_j == 200.0 + 720_000.0, "{}", g.energy_j);
        assert_eq!((g.unattributed_j - before.0, g.processes[&1].dynamic_j), (720_000.0, before.1));
        assert!(conserved(g));
    }

    fn mig_reading(t: f64, e: f64, instances: &[(u32, &str, f64, f64, &[u32])]) -> Reading {
        Reading {
            time_s: t,
            energy_j: Some(e),
            power_w: Some(100.0),
            sm_mhz: Some(1980.0),
            instances: instances
                .iter()
                .map(|&(gi, profile, sm, dram, running)| InstanceReading {
                    gi,
                    profile: profile.into(),
                    slices: 0,
                    sm: Some(sm),
                    dram: Some(dram),
                    running: running.to_vec(),
                })
                .collect(),
            ..Reading::default()
        }
    }

    /// The activity model alone (no energy-counter correction), for splits known in closed form.
    fn uncorrected() -> Options {
        Options { params: Params { prior_weight: f64::INFINITY, ..Params::default() }, ..Options::default() }
    }

    fn mig_conserved(g: &GpuTotals) -> bool {
        let parts = g.idle_j + g.unattributed_j + g.instances.values().map(|i| i.dynamic_j).sum::<f64>();
        (parts - g.energy_j).abs() <= 1e-9 * g.energy_j.max(1.0)
    }

    /// Two instances, 3g and 4g, equally busy by their own GPM: without the energy-counter correction the
    /// dynamic energy goes 3 : 4 (each one's activity over the whole GPU), each is given the idle energy of its slices, the parts add up to the
    /// counter exactly, and the one process of the 4g instance gets that instance's parts.
    #[test]
    fn mig_instances_split_the_dynamic_energy_by_their_activity_over_the_whole_gpu() {
        let idle = [(1, "3g.40gb", 0.0, 0.0, &[][..]), (2, "4g.40gb", 0.0, 0.0, &[][..])];
        let busy = [(1, "3g.40gb", 0.6, 0.3, &[7, 8][..]), (2, "4g.40gb", 0.6, 0.3, &[100][..])];
        let mut t = FakeGpu::scripted(vec![
            mig_reading(0.0, 0.0, &idle),
            mig_reading(1.0, 70.0, &idle),
            mig_reading(2.0, 210.0, &busy),
            mig_reading(3.0, 350.0, &busy),
        ]);
        let mut x = Exporter::new(t.gpus(), uncorrected(), Box::new(NoInfo));
        for _ in 0..4 {
            x.tick(&mut t);
        }
        let g = &x.gpus[0];
        assert_eq!(g.energy_j, 350.0);
        assert!((g.idle_j - 210.0).abs() < 1e-9, "{}", g.idle_j);
        let (a, b) = (&g.instances[&1], &g.instances[&2]);
        assert!((a.dynamic_j - 60.0).abs() < 1e-6 && (b.dynamic_j - 80.0).abs() < 1e-6, "{a:?} {b:?}");
        assert!((a.idle_j - 90.0).abs() < 1e-9 && (b.idle_j - 120.0).abs() < 1e-9, "{a:?} {b:?}");
        assert!(mig_conserved(g));
        // One process in the 4g instance: its parts (and its container's) are the instance's busy ticks'.
        let p = &g.processes[&100];
        assert!((p.dynamic_j - 80.0).abs() < 1e-6 && (p.idle_j - 80.0).abs() < 1e-9, "{p:?}");
        assert!((g.containers.values().next().unwrap().dynamic_j - 80.0).abs() < 1e-6);
        // Two in the 3g instance: NVML cannot tell them apart, so neither is given a part.
        assert_eq!((g.processes[&7].dynamic_j, g.processes[&8].dynamic_j), (0.0, 0.0));
    }

    /// An instance with no GPM answer this tick keeps its last activity for a few ticks; one that is gone
    /// leaves after the keep window.
    #[test]
    fn a_mig_instance_without_gpm_this_tick_keeps_its_activity_and_a_destroyed_one_goes() {
        let both = |sm: Option<f64>| {
            let mut r =
                mig_reading(0.0, 0.0, &[(1, "3g.40gb", 0.5, 0.1, &[]), (2, "4g.40gb", 0.5, 0.1, &[])]);
            r.instances[0].sm = sm;
            r.instances[0].dram = sm.map(|_| 0.1);
            r
        };
        let mut rs = vec![both(Some(0.5)), both(Some(0.5)), both(None)];
        for (k, r) in rs.iter_mut().enumerate() {
            r.time_s = k as f64;
            r.energy_j = Some(200.0 * k as f64);
            r.running = vec![];
        }
        for k in 3..8 {
            let mut r = mig_reading(k as f64, 200.0 * k as f64, &[(2, "4g.40gb", 0.5, 0.1, &[])]);
            r.mig_slices = Some(7);
            rs.push(r);
        }
        let mut t = FakeGpu::scripted(rs);
        let opts = Options { keep_exited_s: 2.0, ..uncorrected() };
        let mut x = Exporter::new(t.gpus(), opts, Box::new(NoInfo));
        for _ in 0..3 {
            x.tick(&mut t);
        }
        let g = &x.gpus[0];
        let (a, b) = (g.instances[&1].dynamic_j, g.instances[&2].dynamic_j);
        assert!(a > 0.0 && (a / b - 0.75).abs() < 1e-6, "{a} {b}");
        for _ in 3..8 {
            x.tick(&mut t);
        }
        let g = &x.gpus[0];
        assert!(!g.instances.contains_key(&1) && g.instances.contains_key(&2));
        assert_eq!(g.energy_j, 1400.0);
    }

    /// A MIG instance's own advice is the advice the GPU's model gives the same activity on a whole GPU:
    /// its GPM ratios (of its own SMs and bandwidth), not its share of the GPU, and no board power (the
    /// instance has none). Checked for a compute-heavy 3g and a memory-heavy 4g instance against GPUs
    /// outside MIG mode whose one process shows that activity; a GPU without a model advises nothing.
    #[test]
    fn each_mig_instance_is_advised_the_clock_its_own_activity_gets_on_a_whole_gpu() {
        let model = gpumodel_models::utilization::model::ClockModel::from_json(
            include_str!("../../models/dvfs-trained/v100.json"),
            "v100.json",
        )
        .unwrap();
        let activity = [(1, "3g.40gb", 0.8, 0.1), (2, "4g.40gb", 0.15, 0.7)];
        let instances: Vec<_> =
            activity.iter().map(|&(gi, p, sm, dram)| (gi, p, sm, dram, &[][..])).collect();
        let mut mig =
            FakeGpu::scripted((0..5).map(|k| mig_reading(k as f64, 150.0 * k as f64, &instances)).collect());
        let mut unmodelled = mig.clone();
        let mut x = Exporter::new(mig.gpus(), Options::default(), Box::new(NoInfo));
        x.gpus[0].advisor = Some(Advisor::new(model.clone(), x.gpus[0].info.clone(), 60.0));
        for _ in 0..5 {
            x.tick(&mut mig);
        }
        assert!(x.gpus[0].advisor.as_ref().unwrap().advice().is_some());
        for &(gi, _, sm, dram) in &activity {
            let whole = |k: usize| Reading {
                power_w: None,
                sm_mhz: Some(1980.0),
                ..reading(k as f64, 150.0 * k as f64, &[(9, sm, dram)])
            };
            let mut gpu = FakeGpu::scripted((0..5).map(whole).collect());
            let mut y = Exporter::new(gpu.gpus(), Options::default(), Box::new(NoInfo));
            y.gpus[0].advisor = Some(Advisor::new(model.clone(), y.gpus[0].info.clone(), 60.0));
            for _ in 0..5 {
                y.tick(&mut gpu);
            }
            let want = y.gpus[0].advisor.as_ref().unwrap().advice().expect("the whole GPU is advised");
            let got = x.gpus[0].instances[&gi].advisor.as_ref().and_then(Advisor::advice);
            assert_eq!(got, Some(want), "instance {gi}");
        }
        let mut bare = Exporter::new(unmodelled.gpus(), Options::default(), Box::new(NoInfo));
        for _ in 0..5 {
            bare.tick(&mut unmodelled);
        }
        assert_eq!(bare.gpus[0].instances.len(), 2);
        assert!(bare.gpus[0].instances.values().all(|t| t.advisor.is_none()));
    }

    #[test]
    fn the_exporter_on_the_scripted_node_labels_every_process_with_its_scripted_name() {
        let mut node = FakeNode::new(2, 3);
        let mut x = Exporter::new(node.gpus(), Options::default(), Box::new(node.process_info()));
        x.tick(&mut node);
        // The node's clock is the host's: the second reading must come measurably later.
        std::thread::sleep(std::time::Duration::from_millis(2));
        x.tick(&mut node);
        for g in &x.gpus {
            let names: Vec<Option<&str>> = g.processes.values().map(|p| p.comm.as_deref()).collect();
            assert_eq!(names, [Some("fake-compute-0"), Some("fake-memory-1"), Some("fake-compute-2")]);
            assert!(g.processes.values().all(|p| p.container.is_none()));
        }
    }
}
