//! A GPU device profile from counters alone: the kernel profile (counter totals of one launch) goes
//! through this crate's timing model and the trained power model ([`crate::predict_kernel`]); the
//! predicted time gives the GPU's rate, the predicted power minus the GPU's idle power its dynamic power.
//!
//! R_G = work_per_launch / T_pred;  Pd_G = P_pred − P_idle,GPU  (P_idle,GPU belongs in `static_power_w`).

use super::{Error, Result, non_negative, positive};
use crate::kernel::{Config, predict_kernel};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::Clocks;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `[gpu.from_model]` in a case file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromModel {
    /// Kernel profile (TOML or JSON), relative to the case file.
    pub kernel: PathBuf,
    /// Trained power model artifact (JSON), relative to the case file.
    pub model: PathBuf,
    /// Architecture: a built-in name or a TOML path (relative to the case file); default: the
    /// kernel profile's `arch`.
    #[serde(default)]
    pub arch: Option<String>,
    /// Units of work one launch of the kernel does (e.g. 2·n³ / 1e9 GFLOP for an n×n matrix product).
    pub work_per_launch: f64,
    /// The GPU's idle power, W: subtracted from the predicted power (and counted in `static_power_w`).
    pub idle_power_w: f64,
    /// Core clock, MHz (default: the architecture's).
    #[serde(default)]
    pub core_mhz: Option<f64>,
    /// Memory clock, MHz (default: the architecture's).
    #[serde(default)]
    pub mem_mhz: Option<f64>,
    /// Predict at each of these core clocks (MHz) instead, giving the GPU a clock table for the
    /// coupled DVFS search (then the CPU needs a `[cpu.dvfs]` table too).
    #[serde(default)]
    pub core_mhz_sweep: Option<Vec<f64>>,
}

/// What the models predicted, and the device parameters derived from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Derived {
    /// Kernel name.
    pub kernel: String,
    /// Architecture profile name.
    pub arch: String,
    /// Model artifact path.
    pub model: String,
    /// Clocks predicted at.
    pub core_mhz: f64,
    /// Memory clock predicted at.
    pub mem_mhz: f64,
    /// Predicted kernel time, s.
    pub time_s: f64,
    /// Predicted average power, W.
    pub power_w: f64,
    /// R_G = work_per_launch / time_s.
    pub rate: f64,
    /// Pd_G = power_w − idle_power_w.
    pub dynamic_power_w: f64,
    /// The timing model's bottleneck.
    pub bottleneck: String,
}

fn rel(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { base.join(p) }
}

/// Runs the timing and power models; paths are taken relative to `base_dir`.
pub fn derive(fm: &FromModel, base_dir: &Path) -> Result<Derived> {
    let work = positive("gpu.from_model work_per_launch", fm.work_per_launch)?;
    let idle = non_negative("gpu.from_model idle_power_w", fm.idle_power_w)?;
    let model_err = |e: &dyn std::fmt::Display| Error::Case(format!("gpu.from_model: {e}"));
    let kpath = rel(base_dir, &fm.kernel);
    let kernel = KernelProfile::from_file(&kpath).map_err(|e| model_err(&e))?;
    let spec = fm.arch.clone().or_else(|| kernel.arch.clone()).ok_or_else(|| {
        Error::Case(format!(
            "gpu.from_model: {} names no architecture: set `arch` (e.g. \"titanx\")",
            kpath.display()
        ))
    })?;
    let spec_path = rel(base_dir, Path::new(&spec));
    let arch = if spec.ends_with(".toml") {
        ArchProfile::from_file(&spec_path)
    } else {
        ArchProfile::resolve(&spec)
    }
    .map_err(|e| model_err(&e))?;
    let mpath = rel(base_dir, &fm.model);
    let model = ModelArtifact::from_json_file(&mpath).map_err(|e| model_err(&e))?;
    let default = Clocks::default_for(&arch);
    let clocks = Clocks {
        core_mhz: fm.core_mhz.unwrap_or(default.core_mhz),
        mem_mhz: fm.mem_mhz.unwrap_or(default.mem_mhz),
    };
    let cfg = Config { clocks: Some(clocks), warps: None, ..Config::default() };
    let p = predict_kernel(&kernel, &arch, &model, &cfg).map_err(|e| model_err(&e))?;
    let dynamic = p.power_w - idle;
    if !dynamic.is_finite() || dynamic < 0.0 {
        return Err(Error::BadValue {
            what: format!(
                "gpu.from_model: predicted power {:.1} W minus idle_power_w {idle} W (the GPU's dynamic power)",
                p.power_w
            ),
            must: "a finite number >= 0 — lower idle_power_w",
            value: dynamic,
        });
    }
    Ok(Derived {
        kernel: kernel.name.clone(),
        arch: arch.name.clone(),
        model: mpath.display().to_string(),
        core_mhz: clocks.core_mhz,
        mem_mhz: clocks.mem_mhz,
        time_s: p.time_s,
        power_w: p.power_w,
        rate: work / positive("predicted kernel time", p.time_s)?,
        dynamic_power_w: dynamic,
        bottleneck: p.detail.bottleneck.to_string(),
    })
}
