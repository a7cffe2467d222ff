//! A scripted GPU for calibration: it answers each launch with the cycle counts a GPU with known
//! constants would give, plus a fixed timing overhead and deterministic noise, so the estimators can be
//! checked against constants the test chose.

use super::{CalLaunch, CalibrationDevice, DeviceFacts};
use crate::Error;
use gpumodel_models::arch::ArchProfile;

/// The constants the fake GPU has (core cycles; the L2 bandwidth in GB/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrueConstants {
    pub cyc_load: f64,
    pub cyc_store: f64,
    pub cyc_s: f64,
    pub cyc_t: f64,
    pub cyc_r: f64,
    pub alu_latency: f64,
    pub in_warp_delay: f64,
    pub out_warp_delay: f64,
    pub l2_bandwidth_gbs: f64,
}

impl TrueConstants {
    /// Ampere-like orders of magnitude (chosen by hand, not measured): what `GPUMODEL_FAKE_GPU=1` and the
    /// tests give the fake GPU.
    pub const AMPERE_LIKE: TrueConstants = TrueConstants {
        cyc_load: 480.0,
        cyc_store: 260.0,
        cyc_s: 29.0,
        cyc_t: 34.0,
        cyc_r: 1.0,
        alu_latency: 4.0,
        in_warp_delay: 3.2,
        out_warp_delay: 1.5,
        l2_bandwidth_gbs: 4800.0,
    };
}

/// The scripted GPU: facts from the built-in `a100` profile, timings from [`TrueConstants`].
pub struct FakeCalibrationDevice {
    pub truth: TrueConstants,
    /// Relative noise amplitude (0.02 = ±2 %), deterministic.
    pub noise: f64,
    /// Launches made.
    pub launches: usize,
    /// Every launch's kernel and buffer, in order.
    pub log: Vec<(&'static str, super::Chain)>,
    rng: u64,
}

impl FakeCalibrationDevice {
    pub fn new(truth: TrueConstants) -> FakeCalibrationDevice {
        FakeCalibrationDevice { truth, noise: 0.02, launches: 0, log: Vec::new(), rng: 0x2545_f491_4f6c_dd1d }
    }

    fn jitter(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let u = (self.rng >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        1.0 + self.noise * (2.0 * u - 1.0)
    }
}

/// Cycles the timer itself costs (two clock64 reads), included in every fake timing.
const TIMER_OVERHEAD: f64 = 40.0;

impl CalibrationDevice for FakeCalibrationDevice {
    fn facts(&self) -> DeviceFacts {
        let a100 = ArchProfile::builtin("a100").expect("the built-in a100 profile parses (tested in models)");
        // A100's L2: 40 MB (NVIDIA A100 Tensor Core GPU Architecture whitepaper).
        let mut f = DeviceFacts::from_profile(&a100, super::MEASURED, 40 << 20);
        f.display_name = "NVIDIA A100-SXM4-40GB (fake)".into();
        f
    }

    fn run(&mut self, l: &CalLaunch) -> Result<Vec<u64>, Error> {
        self.launches += 1;
        self.log.push((l.entry, l.chain));
        let t = self.truth;
        let steps = f64::from(l.steps);
        let per_step = match l.entry {
            "chase_global" => t.cyc_load,
            "store_cost" => t.cyc_store,
            "chase_shared" => t.cyc_s,
            "chase_texture" => t.cyc_t,
            "register_issue" => 16.0 * t.cyc_r,
            "register_chain" => 2.0 * t.alu_latency,
            // Paper eq. 5.3: CYC_load + (transactions of the warp - 1) x in_warp_delay; 32 lines per load.
            "in_warp_loads" => t.cyc_load + f64::from(32 * l.knob - 1) * t.in_warp_delay,
            "out_warp_loads" => {
                let warps = l.threads.div_ceil(32);
                let mut out = Vec::with_capacity(2 * warps as usize);
                for w in 0..warps {
                    let c = steps * (t.cyc_load + f64::from(w) * t.out_warp_delay) * self.jitter()
                        + TIMER_OVERHEAD;
                    out.extend([c.round() as u64, 7]);
                }
                return Ok(out);
            }
            other => {
                return Err(Error::Invalid(format!("fake GPU: unknown calibration kernel {other}")));
            }
        };
        let c = steps * per_step * self.jitter() + TIMER_OVERHEAD;
        Ok(vec![c.round() as u64, 7])
    }

    fn run_timed(&mut self, l: &CalLaunch, blocks: u32) -> Result<f64, Error> {
        self.launches += 1;
        self.log.push((l.entry, l.chain));
        if l.entry != "l2_stream" || blocks == 0 || l.threads == 0 {
            return Err(Error::Invalid(format!(
                "fake GPU: no timed kernel {} over {blocks} blocks",
                l.entry
            )));
        }
        // The first pass fills the L2 from DRAM; every later pass streams from L2. Plus launch overhead.
        let bytes = 4.0 * f64::from(l.chain.elems);
        let dram_gbs = 1555.0;
        let t = bytes / (dram_gbs * 1e9)
            + bytes * f64::from(l.steps - 1) / (self.truth.l2_bandwidth_gbs * 1e9) * self.jitter()
            + LAUNCH_OVERHEAD_S;
        Ok(t)
    }
}

/// Seconds a kernel launch costs on top of its work, included in every fake timed launch.
const LAUNCH_OVERHEAD_S: f64 = 6e-6;
