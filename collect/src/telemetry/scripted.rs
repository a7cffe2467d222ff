//! Scripted GPUs: exact readings in order (tests), and a node of many GPUs with many processes whose power
//! follows a known law (the exporter's benchmark and `GPUMODEL_FAKE_GPU=1`), with its own process table
//! ([`FakeProcesses`]: its PIDs are not this host's).

use super::{GpuInfo, ProcessSample, ReadError, Reading, Telemetry};
use crate::cgroup::Container;
use crate::cgroup::ProcessInfo;

/// GPUs that answer a script.
#[derive(Debug, Clone)]
pub struct FakeGpu {
    gpus: Vec<GpuInfo>,
    /// Per GPU, the answers in order; the last one repeats once the script runs out (time advancing).
    script: Vec<Vec<Result<Reading, ReadError>>>,
    next: Vec<usize>,
}

fn info(index: u32) -> GpuInfo {
    GpuInfo {
        index,
        uuid: format!("GPU-00000000-0000-0000-0000-{index:012}"),
        name: crate::device::SCRIPTED_GPU.into(),
    }
}

impl FakeGpu {
    /// One GPU answering `readings` in order.
    pub fn scripted(readings: Vec<Reading>) -> FakeGpu {
        FakeGpu { gpus: vec![info(0)], script: vec![readings.into_iter().map(Ok).collect()], next: vec![0] }
    }

    /// Several GPUs, each with its own script.
    pub fn scripted_many(scripts: Vec<Vec<Result<Reading, ReadError>>>) -> FakeGpu {
        let n = scripts.len();
        FakeGpu { gpus: (0..n as u32).map(info).collect(), script: scripts, next: vec![0; n] }
    }

    /// Two GPUs: the first answers, the second falls off the bus after its first reading.
    pub fn two_with_failure() -> FakeGpu {
        let ok = |t: f64| {
            Ok(Reading { time_s: t, energy_j: Some(100.0 * t), power_w: Some(100.0), ..Reading::default() })
        };
        let lost =
            Err(ReadError { call: "nvmlDeviceGetTotalEnergyConsumption".into(), code: "gpu_lost".into() });
        FakeGpu::scripted_many(vec![vec![ok(0.0), ok(1.0), ok(2.0)], vec![ok(0.0), lost.clone(), ok(2.0)]])
    }
}

impl Telemetry for FakeGpu {
    fn gpus(&self) -> Vec<GpuInfo> {
        self.gpus.clone()
    }

    fn read(&mut self, gpu: usize) -> Result<Reading, ReadError> {
        let script = self
            .script
            .get(gpu)
            .ok_or_else(|| ReadError { call: "read".into(), code: "no_such_gpu".into() })?;
        let i = self.next[gpu];
        self.next[gpu] += 1;
        match script.get(i) {
            Some(r) => r.clone(),
            None => match script.last() {
                // Past the script: the GPU idles at its last power, time moving on by one second a read.
                Some(Ok(last)) => {
                    let extra = (i + 1 - script.len()) as f64;
                    let p = last.power_w.unwrap_or(0.0);
                    Ok(Reading {
                        time_s: last.time_s + extra,
                        energy_j: last.energy_j.map(|e| e + p * extra),
                        processes: vec![],
                        running: vec![],
                        ..last.clone()
                    })
                }
                Some(Err(e)) => Err(e.clone()),
                None => Err(ReadError { call: "read".into(), code: "no_script".into() }),
            },
        }
    }
}

/// A node of `gpus` GPUs with `processes` processes each, whose board power is
/// `idle + Σ (sm_w · sm + mem_w · mem)` over the processes' activity, with the time of the reader's clock.
#[derive(Debug, Clone)]
pub struct FakeNode {
    gpus: usize,
    processes: usize,
    start: std::time::Instant,
    energy: Vec<f64>,
    last_s: Vec<f64>,
    tick: Vec<u64>,
}

impl FakeNode {
    pub const IDLE_W: f64 = 60.0;
    pub const SM_W: f64 = 150.0;
    pub const MEM_W: f64 = 90.0;
    /// Process `j`'s PID is `FIRST_PID + j` (on every GPU).
    pub const FIRST_PID: u32 = 1000;

    pub fn new(gpus: usize, processes: usize) -> FakeNode {
        FakeNode {
            gpus,
            processes,
            start: std::time::Instant::now(),
            energy: vec![1.0e6; gpus],
            last_s: vec![0.0; gpus],
            tick: vec![0; gpus],
        }
    }

    /// Process `j`'s activity on GPU `g` at tick `k` (deterministic, varying): compute-heavy for even
    /// `j`, memory-heavy for odd, each holding a share of the GPU that changes from tick to tick.
    pub fn activity(&self, g: usize, j: usize, k: u64) -> (f64, f64) {
        let n = self.processes.max(1) as f64;
        let phase = ((k as usize + 3 * j + g) % 7) as f64 / 7.0;
        let share = (0.5 + 0.5 * phase) / n;
        if j.is_multiple_of(2) { (share * 0.95, share * 0.15) } else { (share * 0.45, share * 0.9) }
    }

    /// The node's process table, for the exporter to name its processes by (instead of this host's
    /// `/proc`, where the scripted PIDs are other processes or none).
    pub fn process_info(&self) -> FakeProcesses {
        FakeProcesses { processes: self.processes }
    }
}

/// The scripted node's processes: `fake-compute-<j>` for even `j`, `fake-memory-<j>` for odd (what they
/// run, see [`FakeNode::activity`]), none in a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeProcesses {
    processes: usize,
}

impl ProcessInfo for FakeProcesses {
    fn comm(&self, pid: u32) -> Option<String> {
        let j = pid.checked_sub(FakeNode::FIRST_PID)? as usize;
        (j < self.processes).then(|| {
            if j.is_multiple_of(2) { format!("fake-compute-{j}") } else { format!("fake-memory-{j}") }
        })
    }

    fn container(&self, _pid: u32) -> Option<Container> {
        None
    }
}

impl Telemetry for FakeNode {
    fn gpus(&self) -> Vec<GpuInfo> {
        (0..self.gpus as u32).map(info).collect()
    }

    fn read(&mut self, g: usize) -> Result<Reading, ReadError> {
        if g >= self.gpus {
            return Err(ReadError { call: "read".into(), code: "no_such_gpu".into() });
        }
        let now = self.start.elapsed().as_secs_f64();
        let k = self.tick[g];
        self.tick[g] += 1;
        let procs: Vec<ProcessSample> = (0..self.processes)
            .map(|j| {
                let (sm, mem) = self.activity(g, j, k);
                ProcessSample { pid: FakeNode::FIRST_PID + j as u32, sm, mem }
            })
            .collect();
        let power = FakeNode::IDLE_W
            + procs.iter().map(|p| FakeNode::SM_W * p.sm + FakeNode::MEM_W * p.mem).sum::<f64>();
        self.energy[g] += power * (now - self.last_s[g]).max(0.0);
        self.last_s[g] = now;
        Ok(Reading {
            time_s: now,
            energy_j: Some(self.energy[g]),
            power_w: Some(power),
            sm_mhz: Some(1410.0),
            mem_mhz: Some(1215.0),
            running: procs.iter().map(|p| p.pid).collect(),
            processes: procs,
            ..Reading::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripted_node_names_its_own_processes_and_no_others() {
        let node = FakeNode::new(2, 3);
        let info = node.process_info();
        assert_eq!(info.comm(FakeNode::FIRST_PID).as_deref(), Some("fake-compute-0"));
        assert_eq!(info.comm(FakeNode::FIRST_PID + 1).as_deref(), Some("fake-memory-1"));
        assert_eq!(info.comm(FakeNode::FIRST_PID + 3), None);
        assert_eq!(info.comm(1), None);
        assert_eq!(info.container(FakeNode::FIRST_PID), None);
    }
}
