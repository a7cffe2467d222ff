//! Clock pairs as the collector sets them: one type, one parser and one flag (`--clocks`) for `collect
//! --suite` and `calibrate`, and the supported clocks a plan is checked against. Clocks are NVML's integer
//! MHz (the memory clock as `nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)` reports it); setting and restoring
//! them is [`crate::nvml::set_clock_pair`] and [`crate::nvml::restore_clock_pair`].

use crate::Error;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// A core (graphics/SM) clock and a memory clock, MHz, as NVML numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ClockPair {
    pub core_mhz: u32,
    pub mem_mhz: u32,
}

impl ClockPair {
    /// The label of the suite table's `clocks` column (`1410/1215`).
    pub fn label(&self) -> String {
        format!("{}/{}", self.core_mhz, self.mem_mhz)
    }

    /// The pair as the models' clocks.
    pub fn clocks(&self) -> gpumodel_models::timing::Clocks {
        gpumodel_models::timing::Clocks {
            core_mhz: f64::from(self.core_mhz),
            mem_mhz: f64::from(self.mem_mhz),
        }
    }
}

impl fmt::Display for ClockPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.core_mhz, self.mem_mhz)
    }
}

/// Which clock pairs to run at (`--clocks` of `collect --suite` and `calibrate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockPlan {
    /// Up to [`AUTO_MEM`] memory clocks × [`AUTO_CORE`] core clocks spread over what the GPU supports.
    Auto,
    /// Only the clocks the GPU runs at now (no clock is set; no root needed; the DRAM fits are rejected).
    Current,
    /// These pairs (`CORE:MEM`, MHz), each checked against the GPU's supported clocks.
    List(Vec<ClockPair>),
}

impl FromStr for ClockPlan {
    type Err = String;
    fn from_str(s: &str) -> Result<ClockPlan, String> {
        match s.trim() {
            "auto" => return Ok(ClockPlan::Auto),
            "current" => return Ok(ClockPlan::Current),
            _ => {}
        }
        let mut pairs = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let parsed = item.split_once(':').and_then(|(c, m)| {
                Some(ClockPair { core_mhz: c.trim().parse().ok()?, mem_mhz: m.trim().parse().ok()? })
            });
            match parsed {
                Some(p) if p.core_mhz > 0 && p.mem_mhz > 0 => {
                    if !pairs.contains(&p) {
                        pairs.push(p);
                    }
                }
                _ => {
                    return Err(format!(
                        "--clocks '{s}': '{item}' is not CORE:MEM in MHz; use auto, current or a list such \
                         as 1410:1215,1110:1215"
                    ));
                }
            }
        }
        if pairs.is_empty() {
            return Err(format!(
                "--clocks '{s}' names no clock pair; use auto, current or a list such as 1410:1215,1110:1215"
            ));
        }
        Ok(ClockPlan::List(pairs))
    }
}

/// Memory clocks and core clocks per memory clock that `auto` takes.
pub const AUTO_MEM: usize = 4;
pub const AUTO_CORE: usize = 3;

/// Supported clocks: (memory MHz, the graphics clocks NVML allows with it).
pub type SupportedClocks = Vec<(u32, Vec<u32>)>;

/// `n` entries spread evenly over `v` (sorted descending, duplicates removed), ends included.
fn spread(v: &[u32], n: usize) -> Vec<u32> {
    let mut s: Vec<u32> = v.to_vec();
    s.sort_unstable_by(|a, b| b.cmp(a));
    s.dedup();
    if s.len() <= n {
        return s;
    }
    let mut out: Vec<u32> = (0..n)
        .map(|i| s[(i as f64 * (s.len() - 1) as f64 / (n - 1).max(1) as f64).round() as usize])
        .collect();
    out.dedup();
    out
}

/// The pairs of a plan on a GPU with `supported` clocks; an unsupported pair is an error naming the
/// clocks that are supported. `Current` gives no pair (nothing to set).
pub fn resolve_pairs(plan: &ClockPlan, supported: &SupportedClocks) -> Result<Vec<ClockPair>, Error> {
    match plan {
        ClockPlan::Current => Ok(Vec::new()),
        ClockPlan::Auto => {
            let mems: Vec<u32> = supported.iter().filter(|(_, g)| !g.is_empty()).map(|(m, _)| *m).collect();
            let mut pairs = Vec::new();
            for m in spread(&mems, AUTO_MEM) {
                let Some((_, gs)) = supported.iter().find(|(mm, _)| *mm == m) else { continue };
                for c in spread(gs, AUTO_CORE) {
                    pairs.push(ClockPair { core_mhz: c, mem_mhz: m });
                }
            }
            if pairs.is_empty() {
                return Err(Error::ClocksUnsupported { detail: "NVML lists no supported clock pair".into() });
            }
            Ok(pairs)
        }
        ClockPlan::List(pairs) => {
            for p in pairs {
                match supported.iter().find(|(m, _)| *m == p.mem_mhz) {
                    None => {
                        let mems: Vec<String> = supported.iter().map(|(m, _)| m.to_string()).collect();
                        return Err(Error::Invalid(format!(
                            "--clocks {p}: this GPU does not support a memory clock of {} MHz (supported: {}); \
                             pick pairs from `nvidia-smi -q -d SUPPORTED_CLOCKS`",
                            p.mem_mhz,
                            mems.join(", ")
                        )));
                    }
                    Some((_, gs)) if !gs.contains(&p.core_mhz) => {
                        let near = spread(gs, 6).iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
                        return Err(Error::Invalid(format!(
                            "--clocks {p}: this GPU does not support a core clock of {} MHz with memory at {} MHz \
                             (supported there include {near}); pick pairs from `nvidia-smi -q -d SUPPORTED_CLOCKS`",
                            p.core_mhz, p.mem_mhz
                        )));
                    }
                    Some(_) => {}
                }
            }
            Ok(pairs.clone())
        }
    }
}
