//! Utilization profiles: what DCGM reports for a running job, and what Nsight Compute and the collector
//! can report in the same terms — one type whatever the source.
//!
//! The schema is DCGM's profiling field set (DCGM User Guide, "Feature Overview", profiling metrics; the
//! field ids are those of `dcgm_fields.h`). Every field is a ratio in [0, 1] over the sampled interval:
//!
//! | id | dmon name | DCGM field | what is active |
//! |---|---|---|---|
//! | 1001 | GRACT | `DCGM_FI_PROF_GR_ENGINE_ACTIVE` | the graphics/compute engine (any work on the GPU) |
//! | 1002 | SMACT | `DCGM_FI_PROF_SM_ACTIVE` | SMs with at least one warp resident, averaged over SMs |
//! | 1003 | SMOCC | `DCGM_FI_PROF_SM_OCCUPANCY` | resident warps relative to the SM's maximum |
//! | 1004 | TENSO | `DCGM_FI_PROF_PIPE_TENSOR_ACTIVE` | the tensor (HMMA) pipe |
//! | 1005 | DRAMA | `DCGM_FI_PROF_DRAM_ACTIVE` | the device-memory interface sending or receiving |
//! | 1006 | FP64A | `DCGM_FI_PROF_PIPE_FP64_ACTIVE` | the FP64 pipe |
//! | 1007 | FP32A | `DCGM_FI_PROF_PIPE_FP32_ACTIVE` | the FP32 (FMA) pipe |
//! | 1008 | FP16A | `DCGM_FI_PROF_PIPE_FP16_ACTIVE` | the FP16 pipe |
//!
//! A [`UtilizationProfile`] is one job (or one interval) on one GPU at one clock: the mean of each field,
//! the core and memory clocks, the mean power and the run time where the source has them, and where it
//! came from. [`read`] holds the readers; [`model`] the clock models that take a profile to time and power
//! at every supported clock.

pub mod model;
pub mod read;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One DCGM profiling field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Field {
    Gract,
    Smact,
    Smocc,
    Tenso,
    Drama,
    Fp64a,
    Fp32a,
    Fp16a,
}

impl Field {
    /// Every field, in DCGM id order.
    pub const ALL: [Field; 8] = [
        Field::Gract,
        Field::Smact,
        Field::Smocc,
        Field::Tenso,
        Field::Drama,
        Field::Fp64a,
        Field::Fp32a,
        Field::Fp16a,
    ];

    /// DCGM field id (`dcgm_fields.h`).
    pub fn id(self) -> u16 {
        1001 + Field::ALL.iter().position(|f| *f == self).unwrap_or(0) as u16
    }

    /// The short name `dcgmi dmon` prints as a column header.
    pub fn name(self) -> &'static str {
        match self {
            Field::Gract => "GRACT",
            Field::Smact => "SMACT",
            Field::Smocc => "SMOCC",
            Field::Tenso => "TENSO",
            Field::Drama => "DRAMA",
            Field::Fp64a => "FP64A",
            Field::Fp32a => "FP32A",
            Field::Fp16a => "FP16A",
        }
    }

    /// The DCGM field name (dcgm-exporter's Prometheus metric name).
    pub fn dcgm_name(self) -> &'static str {
        match self {
            Field::Gract => "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            Field::Smact => "DCGM_FI_PROF_SM_ACTIVE",
            Field::Smocc => "DCGM_FI_PROF_SM_OCCUPANCY",
            Field::Tenso => "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            Field::Drama => "DCGM_FI_PROF_DRAM_ACTIVE",
            Field::Fp64a => "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
            Field::Fp32a => "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
            Field::Fp16a => "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
        }
    }

    /// What the ratio measures (unit: fraction of elapsed time or cycles, in [0, 1]).
    pub fn description(self) -> &'static str {
        match self {
            Field::Gract => "fraction of time the graphics/compute engine was active",
            Field::Smact => "fraction of cycles an SM had at least one warp resident (mean over SMs)",
            Field::Smocc => {
                "resident warps per SM relative to the maximum, per elapsed cycle (mean over SMs)"
            }
            Field::Tenso => "fraction of cycles the tensor pipe was active",
            Field::Drama => "fraction of cycles the device-memory interface was sending or receiving",
            Field::Fp64a => "fraction of cycles the FP64 pipe was active",
            Field::Fp32a => "fraction of cycles the FP32 (FMA) pipe was active",
            Field::Fp16a => "fraction of cycles the FP16 pipe was active",
        }
    }

    /// The Nsight Compute metric(s) whose ratio is this field for one kernel: numerator and denominator,
    /// or a `…pct_of_peak_sustained_elapsed` percentage (denominator `None`, divided by 100). The graphics
    /// engine is active for the whole of a profiled kernel (numerator `None`: 1 for every launch).
    pub fn ncu_metric(self) -> (Option<&'static str>, Option<&'static str>) {
        match self {
            Field::Gract => (None, None),
            Field::Smact => (Some("sm__cycles_active.avg"), Some("sm__cycles_elapsed.avg")),
            Field::Smocc => (Some("sm__warps_active.avg.pct_of_peak_sustained_elapsed"), None),
            Field::Tenso => (Some("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"), None),
            Field::Drama => (Some("dram__cycles_active.avg.pct_of_peak_sustained_elapsed"), None),
            Field::Fp64a => (Some("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"), None),
            Field::Fp32a => (Some("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"), None),
            Field::Fp16a => (Some("sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_elapsed"), None),
        }
    }

    /// A field from its dmon name, DCGM name, or numeric id (case-insensitive).
    pub fn parse(s: &str) -> Option<Field> {
        let t = s.trim();
        Field::ALL.into_iter().find(|f| {
            t.eq_ignore_ascii_case(f.name())
                || t.eq_ignore_ascii_case(f.dcgm_name())
                || t == f.id().to_string()
        })
    }
}

/// Where a profile came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// NV-DVFS-Benchmark's DCGM profile CSV (one row per application and clock).
    NvdvfsCsv,
    /// NV-DVFS-Benchmark's nvprof-metric CSV, DCGM-like fields derived from the metrics.
    NvdvfsNvprof,
    /// `dcgmi dmon -e …` text output.
    DcgmiDmon,
    /// dcgm-exporter's Prometheus text.
    DcgmExporter,
    /// An Nsight Compute CSV export (`ncu --csv --page raw`).
    Ncu,
    /// A `gpumodel collect` trace with DCGM-named columns.
    Collector,
    /// A profile document written by gpumodel (TOML or JSON).
    Document,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::NvdvfsCsv => "nvdvfs-dcgm-csv",
            Source::NvdvfsNvprof => "nvdvfs-nvprof-csv",
            Source::DcgmiDmon => "dcgmi-dmon",
            Source::DcgmExporter => "dcgm-exporter",
            Source::Ncu => "ncu",
            Source::Collector => "collector",
            Source::Document => "document",
        }
    }
}

/// One job's utilization on one GPU at one clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UtilizationProfile {
    /// The job (application and input, kernel, or the device's run).
    pub name: String,
    /// The benchmark program it belongs to (the group for grouped validation); the name when unknown.
    #[serde(default)]
    pub program: Option<String>,
    pub source: Source,
    /// The GPU model, when the source or the user names it.
    #[serde(default)]
    pub gpu: Option<String>,
    /// The device (e.g. `GPU 0`), when the source has several.
    #[serde(default)]
    pub device: Option<String>,
    /// Mean of each field over the interval; a field the source lacks is absent.
    pub fields: BTreeMap<Field, f64>,
    /// Core (SM) clock, MHz.
    pub core_mhz: f64,
    /// Memory clock, MHz, when known.
    #[serde(default)]
    pub mem_mhz: Option<f64>,
    /// Mean board power, W, when known.
    #[serde(default)]
    pub power_w: Option<f64>,
    /// Run time of the job (or the active interval), s, when known.
    #[serde(default)]
    pub time_s: Option<f64>,
    /// How many samples were averaged.
    #[serde(default = "one")]
    pub samples: usize,
}

fn one() -> usize {
    1
}

impl UtilizationProfile {
    /// One field's value (0 when the source lacks it: DCGM reports an idle pipe as 0).
    pub fn get(&self, f: Field) -> f64 {
        self.fields.get(&f).copied().unwrap_or(0.0)
    }

    /// Checks the ranges: every field in [0, 1], a positive core clock, positive power and time when given.
    pub fn check(&self, origin: &str) -> Result<()> {
        for (f, v) in &self.fields {
            if !(v.is_finite() && (0.0..=1.0).contains(v)) {
                return Err(Error::Invalid(format!(
                    "{origin}: {} ({}) of '{}' is {v}, outside [0, 1]: DCGM profiling fields are ratios; \
                     check that the file holds ratios, not percentages",
                    f.name(),
                    f.id(),
                    self.name
                )));
            }
        }
        if !(self.core_mhz.is_finite() && self.core_mhz > 0.0) {
            return Err(Error::Invalid(format!(
                "{origin}: '{}' has no core clock: record SMCLK (dcgmi dmon -e 100) or give --core-mhz",
                self.name
            )));
        }
        for (what, v) in [("power", self.power_w), ("time", self.time_s), ("memory clock", self.mem_mhz)] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                return Err(Error::Invalid(format!(
                    "{origin}: '{}' has {what} {v}: it must be positive",
                    self.name
                )));
            }
        }
        Ok(())
    }

    /// The profile as a TOML document (what [`UtilizationProfile::from_document`] reads).
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self)
            .map_err(|e| Error::Invalid(format!("cannot render '{}' as TOML: {e}", self.name)))
    }

    /// Reads a profile document (JSON, or TOML when the text is not JSON).
    pub fn from_document(text: &str, origin: &str) -> Result<UtilizationProfile> {
        let p: UtilizationProfile = if text.trim_start().starts_with('{') {
            serde_json::from_str(text)
                .map_err(|e| Error::Document { file: origin.to_string(), message: e.to_string() })?
        } else {
            toml::from_str(text)
                .map_err(|e| Error::Document { file: origin.to_string(), message: e.message().to_string() })?
        };
        p.check(origin)?;
        Ok(p)
    }
}

/// Profiles read from one file, all of one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileSet {
    pub origin: String,
    pub source: Source,
    pub profiles: Vec<UtilizationProfile>,
    /// Rows or samples left out, with why (only where the caller asked to skip bad rows).
    pub skipped: Vec<String>,
    /// Rows left out of the averages, by reason, with how many (readers of time series count every one).
    pub dropped: BTreeMap<String, usize>,
    /// What the reader found and the answer should say: where a run's time and energy came from, counter
    /// resets, fields that contradict each other.
    pub notes: Vec<String>,
    /// What the reader had to assume for want of it in the file (a default sample interval): an answer
    /// built on the set leads with these.
    pub assumptions: Vec<String>,
}

impl ProfileSet {
    /// The profile to answer for: `job` (a profile name or a device such as "GPU 1"), or the only one.
    pub fn pick(&self, job: Option<&str>) -> Result<UtilizationProfile> {
        let names = || {
            let mut v: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).take(8).collect();
            if self.profiles.len() > 8 {
                v.push("…");
            }
            v.join(", ")
        };
        match job {
            Some(j) => self
                .profiles
                .iter()
                .find(|p| p.name == j || p.device.as_deref() == Some(j))
                .cloned()
                .ok_or_else(|| {
                    Error::Invalid(format!("--job {j}: not in {}; it holds {}", self.origin, names()))
                }),
            None if self.profiles.len() == 1 => Ok(self.profiles[0].clone()),
            None => Err(Error::Invalid(format!(
                "{} holds {} profiles ({}): choose one with --job",
                self.origin,
                self.profiles.len(),
                names()
            ))),
        }
    }

    /// A set with nothing dropped, noted or assumed yet.
    pub fn new(
        origin: &str,
        source: Source,
        profiles: Vec<UtilizationProfile>,
        skipped: Vec<String>,
    ) -> Self {
        ProfileSet {
            origin: origin.to_string(),
            source,
            profiles,
            skipped,
            dropped: BTreeMap::new(),
            notes: vec![],
            assumptions: vec![],
        }
    }

    /// Checks every profile and that the file holds one GPU model only.
    pub fn check(&self) -> Result<()> {
        if self.profiles.is_empty() {
            return Err(match self.skipped.first() {
                // Every row was left out: the first reason is the one to fix.
                Some(first) => Error::Invalid(format!("every row was left out; the first: {first}")),
                None => Error::Format {
                    file: self.origin.clone(),
                    message: "no utilization samples found: is this the right file and format?".into(),
                },
            });
        }
        let mut gpus: Vec<&str> = self.profiles.iter().filter_map(|p| p.gpu.as_deref()).collect();
        gpus.sort_unstable();
        gpus.dedup();
        if gpus.len() > 1 {
            return Err(Error::Invalid(format!(
                "{}: profiles of different GPU models in one file ({}): a clock model is per GPU model; \
                 split the file by GPU",
                self.origin,
                gpus.join(", ")
            )));
        }
        for p in &self.profiles {
            p.check(&self.origin)?;
        }
        Ok(())
    }

    /// The profiles as CSV: name, program, source, gpu, device, the eight fields, clocks, power, time, samples.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("name,program,source,gpu,device");
        for f in Field::ALL {
            s.push(',');
            s.push_str(f.name());
        }
        s.push_str(",core_mhz,mem_mhz,power_w,time_s,samples\n");
        let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        for p in &self.profiles {
            let q = |t: &str| {
                if t.contains([',', '"', '\n']) {
                    format!("\"{}\"", t.replace('"', "\"\""))
                } else {
                    t.to_string()
                }
            };
            s.push_str(&format!(
                "{},{},{},{},{}",
                q(&p.name),
                q(p.program.as_deref().unwrap_or("")),
                p.source.name(),
                q(p.gpu.as_deref().unwrap_or("")),
                q(p.device.as_deref().unwrap_or(""))
            ));
            for f in Field::ALL {
                s.push(',');
                s.push_str(&p.fields.get(&f).map(|x| x.to_string()).unwrap_or_default());
            }
            s.push_str(&format!(
                ",{},{},{},{},{}\n",
                p.core_mhz,
                opt(p.mem_mhz),
                opt(p.power_w),
                opt(p.time_s),
                p.samples
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_ids_and_names_follow_dcgm() {
        let ids: Vec<u16> = Field::ALL.iter().map(|f| f.id()).collect();
        assert_eq!(ids, (1001..=1008).collect::<Vec<_>>());
        assert_eq!(Field::parse("smact"), Some(Field::Smact));
        assert_eq!(Field::parse("DCGM_FI_PROF_DRAM_ACTIVE"), Some(Field::Drama));
        assert_eq!(Field::parse("1008"), Some(Field::Fp16a));
        assert_eq!(Field::parse("POWER"), None);
    }

    fn profile() -> UtilizationProfile {
        UtilizationProfile {
            name: "job".into(),
            program: None,
            source: Source::Document,
            gpu: Some("V100".into()),
            device: None,
            fields: [(Field::Smact, 0.5)].into_iter().collect(),
            core_mhz: 1380.0,
            mem_mhz: Some(877.0),
            power_w: Some(150.0),
            time_s: Some(2.0),
            samples: 1,
        }
    }

    #[test]
    fn a_field_outside_zero_one_is_one_line_naming_it() {
        let mut p = profile();
        p.fields.insert(Field::Drama, 45.0);
        let msg = p.check("f.csv").unwrap_err().to_string();
        assert!(
            msg.contains("DRAMA (1005)") && msg.contains("outside [0, 1]") && !msg.contains('\n'),
            "{msg}"
        );
    }

    #[test]
    fn a_missing_clock_says_how_to_record_it() {
        let mut p = profile();
        p.core_mhz = f64::NAN;
        let msg = p.check("f").unwrap_err().to_string();
        assert!(msg.contains("SMCLK"), "{msg}");
    }

    #[test]
    fn mixed_gpus_in_one_set_are_refused() {
        let mut q = profile();
        q.gpu = Some("H100".into());
        let set = ProfileSet::new("f", Source::Document, vec![profile(), q], vec![]);
        let msg = set.check().unwrap_err().to_string();
        assert!(msg.contains("H100") && msg.contains("V100"), "{msg}");
    }

    #[test]
    fn documents_round_trip_through_json_and_toml() {
        let p = profile();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(UtilizationProfile::from_document(&json, "j").unwrap(), p);
        let toml = toml::to_string(&p).unwrap();
        assert_eq!(UtilizationProfile::from_document(&toml, "t").unwrap(), p);
    }
}
