//! The split case file (TOML): devices, workload, and which model to run, and the one serializable
//! report every model produces.
//!
//! The sections present choose the model:
//! - `[cpu]` and `[gpu]` with `rate` and `dynamic_power_w`: PEACH's two-device model (with the Stafford
//!   range test);
//! - `[cpu.dvfs]` and `[gpu.dvfs]` (clock lists with rate and power laws or tables): PEACH's coupled DVFS
//!   search;
//! - `[[device]]` tables (sizes, time_s, dynamic_energy_j): the exact Pareto front;
//! - `[cg]` with `[cg.cpu]` and `[cg.gpu]` (Table 2 of the paper): Lang & Rünger's CG split.
//!
//! See `datasets/examples/split/*.toml` for one file per paper.

use super::cg::{CgCase, CgReport};
use super::dvfs::{self, Cell, DeviceDvfs, LineFit};
use super::from_model::{Derived, FromModel};
use super::pareto::{self, DeviceProfile, ParetoPoint, Problem};
use super::peach::{self, SplitPoint, StaffordCase, StaffordRange, TwoDevice};
use super::{Objective, Result, SplitError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// What the case is.
    #[serde(default)]
    pub title: Option<String>,
    /// Where its numbers come from.
    #[serde(default)]
    pub source: Option<String>,
    /// Static power of the whole node (P0 in PEACH, P^S in Stafford, P_static in HEPOPTA), W.
    #[serde(default)]
    pub static_power_w: Option<f64>,
    /// The work to split.
    #[serde(default)]
    pub workload: Workload,
    /// The host CPU (two-device models).
    #[serde(default)]
    pub cpu: Option<Cpu>,
    /// The GPU (two-device models).
    #[serde(default)]
    pub gpu: Option<Gpu>,
    /// Measured per-device profiles (Pareto front).
    #[serde(default)]
    pub device: Option<Vec<DeviceProfile>>,
    /// A CG-solver case.
    #[serde(default)]
    pub cg: Option<CgCase>,
    /// The DVFS configuration to compare the best one against (default: highest clocks, best-time split).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Folder that relative paths in the file are taken from (the file's own folder).
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// The workload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// W, in the unit of the rates × seconds (default 1, so results are per unit of work).
    #[serde(default = "one")]
    pub work: f64,
    /// Name of the unit of work (e.g. "GFLOP"), for labels.
    #[serde(default = "default_unit")]
    pub unit: String,
    /// Search the GPU share on a grid of this step (PEACH used 0.02) instead of continuously.
    #[serde(default)]
    pub share_step: Option<f64>,
    /// n, units to distribute over `[[device]]` profiles.
    #[serde(default)]
    pub units: Option<u64>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload { work: 1.0, unit: default_unit(), share_step: None, units: None }
    }
}

fn one() -> f64 {
    1.0
}

fn default_unit() -> String {
    "unit".into()
}

/// The CPU of a two-device case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// R_C, work per second.
    #[serde(default)]
    pub rate: Option<f64>,
    /// The CPU's own static power, W (Stafford's P^S_C); added to the top-level `static_power_w`.
    #[serde(default)]
    pub static_power_w: Option<f64>,
    /// Pd_C, W.
    #[serde(default)]
    pub dynamic_power_w: Option<f64>,
    /// Clock table, instead of rate and power.
    #[serde(default)]
    pub dvfs: Option<DeviceDvfs>,
}

/// The GPU of a two-device case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// R_G, work per second.
    #[serde(default)]
    pub rate: Option<f64>,
    /// The GPU's own static power, W (Stafford's P^S_G); added to the top-level `static_power_w`.
    #[serde(default)]
    pub static_power_w: Option<f64>,
    /// Pd_G, W.
    #[serde(default)]
    pub dynamic_power_w: Option<f64>,
    /// P_OH: power of the CPU core hosting the GPU, W.
    #[serde(default)]
    pub hosting_power_w: f64,
    /// T_OH: offload overhead, s.
    #[serde(default)]
    pub offload_overhead_s: f64,
    /// Clock table, instead of rate and power.
    #[serde(default)]
    pub dvfs: Option<DeviceDvfs>,
    /// Rate and dynamic power predicted from a kernel profile by the timing and power models.
    #[serde(default)]
    pub from_model: Option<FromModel>,
}

/// The baseline of a DVFS comparison.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    /// CPU clock of the baseline.
    pub cpu_clock: f64,
    /// GPU clock of the baseline.
    pub gpu_clock: f64,
    /// The objective the baseline's split was chosen for (default "time").
    #[serde(default)]
    pub objective: Option<String>,
}

/// One objective's best split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Best {
    /// The objective, as named on the command line.
    pub objective: String,
    /// Its value E^a·D^b at the optimum.
    pub value: f64,
    /// The optimum.
    pub point: SplitPoint,
}

/// The best cell of a DVFS search for one objective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GlobalBest {
    /// The objective.
    pub objective: String,
    /// CPU clock.
    pub cpu_clock: f64,
    /// GPU clock.
    pub gpu_clock: f64,
    /// The best split there.
    pub point: SplitPoint,
}

/// How much the best-efficiency configuration gains over the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Savings {
    /// The baseline.
    pub baseline: GlobalBest,
    /// The global best-energy configuration.
    pub best: GlobalBest,
    /// η_best / η_base − 1: efficiency (work per joule) gain. PEACH reports this as "saves x% energy".
    pub efficiency_gain: f64,
    /// 1 − E_best / E_base: the fall in energy per unit of work — the energy actually saved.
    pub energy_saved: f64,
}

/// One `[[device]]` front with its optima.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Front {
    /// "dynamic" or "total" energy.
    pub energy: String,
    /// The Pareto-optimal distributions, by increasing time.
    pub points: Vec<ParetoPoint>,
    /// The point minimizing each objective.
    pub best: Vec<(String, ParetoPoint)>,
}

/// What `gpumodel split` prints: one variant per model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Report {
    /// PEACH two-device model at fixed clocks.
    TwoDevice {
        title: Option<String>,
        unit: String,
        system: TwoDevice,
        share_step: Option<f64>,
        balance_share: f64,
        /// CPU-only, balanced, GPU-only.
        candidates: Vec<SplitPoint>,
        best: Vec<Best>,
        chosen: String,
        stafford: StaffordRange,
        /// GPU-only, balanced and CPU-only in Stafford et al.'s terms, with the energy and EDP winners.
        stafford_case: StaffordCase,
        /// The model at the share asked for with `--gpu-share`, if any.
        at: Option<SplitPoint>,
        /// Where the GPU's rate and dynamic power came from, when predicted by our models.
        gpu_from_model: Option<Derived>,
    },
    /// PEACH coupled DVFS search.
    Dvfs {
        title: Option<String>,
        unit: String,
        share_step: Option<f64>,
        objectives: Vec<String>,
        cells: Vec<Cell>,
        global: Vec<GlobalBest>,
        chosen: String,
        savings: Option<Savings>,
        /// The GPU's per-clock predictions, when the clock table came from our models.
        gpu_from_model: Vec<Derived>,
    },
    /// Exact Pareto fronts over measured profiles.
    Pareto {
        title: Option<String>,
        devices: Vec<String>,
        units: u64,
        static_power_w: f64,
        dynamic: Front,
        total: Front,
        chosen: String,
    },
    /// Lang & Rünger CG split.
    Cg { title: Option<String>, objective: String, report: CgReport },
}

/// Reads and parses a case file.
pub fn load(path: &Path) -> Result<CaseFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| SplitError::Io { path: path.display().to_string(), source })?;
    let mut case = parse(&text, &path.display().to_string())?;
    case.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(case)
}

/// Parses case-file text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<CaseFile> {
    toml::from_str(text).map_err(|e| SplitError::Parse {
        path: origin.to_string(),
        message: e.message().to_string()
            + &e.span().map(|s| format!(" (at byte {})", s.start)).unwrap_or_default(),
    })
}

/// Objective list: time, energy, ED, ED², plus `chosen` if it is none of those; and the index of `chosen`.
fn objectives(chosen: Objective) -> (Vec<Objective>, usize) {
    let mut v = Objective::standard().to_vec();
    let k = match v.iter().position(|o| *o == chosen) {
        Some(k) => k,
        None => {
            v.push(chosen);
            v.len() - 1
        }
    };
    (v, k)
}

impl CaseFile {
    fn two_device_base(&self, cpu_rate: f64, cpu_pd: f64, gpu_rate: f64, gpu_pd: f64) -> Result<TwoDevice> {
        let gpu = self.gpu.as_ref();
        // P0 is the node's static power plus the devices' own, in whichever places the file gives them.
        let parts = [
            ("static_power_w", self.static_power_w),
            ("[cpu] static_power_w", self.cpu.as_ref().and_then(|c| c.static_power_w)),
            ("[gpu] static_power_w", gpu.and_then(|g| g.static_power_w)),
        ];
        let mut p0 = None;
        for (key, v) in parts {
            if let Some(v) = v {
                p0 = Some(p0.unwrap_or(0.0) + super::non_negative(key, v)?);
            }
        }
        let sys = TwoDevice {
            static_power_w: p0.ok_or_else(|| {
                SplitError::Case(
                    "the two-device model needs `static_power_w` (P0) at the top level, or in [cpu] and [gpu]"
                        .into(),
                )
            })?,
            cpu_rate,
            cpu_dynamic_w: cpu_pd,
            gpu_rate,
            gpu_dynamic_w: gpu_pd,
            hosting_power_w: gpu.map_or(0.0, |g| g.hosting_power_w),
            offload_overhead_s: gpu.map_or(0.0, |g| g.offload_overhead_s),
            work: self.workload.work,
        };
        Ok(sys)
    }

    fn step(&self) -> Result<Option<f64>> {
        self.workload.share_step.map(peach::check_step).transpose()
    }

    /// Runs the model the file describes; `chosen` is the objective the user asked for.
    pub fn run(&self, chosen: Objective) -> Result<Report> {
        self.run_at(chosen, None)
    }

    /// As [`CaseFile::run`], and also evaluates a two-device case at GPU share `gpu_share`
    /// (checked to lie in [0, 1]).
    pub fn run_at(&self, chosen: Objective, gpu_share: Option<f64>) -> Result<Report> {
        if let Some(a) = gpu_share {
            super::share("GPU share", a)?;
            let fixed = self.cpu.as_ref().is_some_and(|c| c.dvfs.is_none())
                && self.gpu.as_ref().is_some_and(|g| g.dvfs.is_none());
            if !fixed {
                return Err(SplitError::Case(
                    "a given GPU share applies only to a two-device case at fixed clocks ([cpu] and [gpu] \
                     with rate and dynamic_power_w)"
                        .into(),
                ));
            }
        }
        let kinds = [self.cg.is_some(), self.device.is_some(), self.cpu.is_some() || self.gpu.is_some()];
        match kinds.iter().filter(|k| **k).count() {
            0 => {
                return Err(SplitError::Case(
                    "the file describes no case: give [cpu] and [gpu], [[device]] tables, or [cg]".into(),
                ));
            }
            1 => {}
            _ => {
                return Err(SplitError::Case(
                    "the file mixes cases: give only one of [cpu]+[gpu], [[device]] tables, or [cg]".into(),
                ));
            }
        }
        let name = chosen.to_string();
        if let Some(cg) = &self.cg {
            return Ok(Report::Cg { title: self.title.clone(), objective: name, report: cg.solve(chosen)? });
        }
        if let Some(devices) = &self.device {
            return self.run_pareto(devices, chosen);
        }
        let (Some(cpu), Some(gpu)) = (&self.cpu, &self.gpu) else {
            return Err(SplitError::Case("a two-device case needs both [cpu] and [gpu]".into()));
        };
        let step = self.step()?;
        let (objs, k) = objectives(chosen);
        // The GPU's clock table: given, or predicted by our models at each core clock of a sweep.
        let mut swept: Vec<Derived> = Vec::new();
        let sweep = gpu.from_model.as_ref().and_then(|f| f.core_mhz_sweep.as_ref().map(|c| (f, c)));
        let gpu_dvfs = match (&gpu.dvfs, sweep) {
            (Some(_), Some(_)) => {
                return Err(SplitError::Case(
                    "give either [gpu.dvfs] or gpu.from_model.core_mhz_sweep, not both".into(),
                ));
            }
            (Some(d), None) => Some(d.clone()),
            (None, Some((fm, clocks))) => {
                if clocks.is_empty() {
                    return Err(SplitError::EmptyTable { what: "gpu.from_model.core_mhz_sweep".into() });
                }
                for &c in clocks {
                    let one = FromModel { core_mhz: Some(c), core_mhz_sweep: None, ..fm.clone() };
                    swept.push(super::from_model::derive(&one, &self.base_dir)?);
                }
                Some(DeviceDvfs {
                    clocks: clocks.clone(),
                    rate: dvfs::Curve::Table(swept.iter().map(|d| d.rate).collect()),
                    dynamic_power_w: dvfs::Curve::Table(swept.iter().map(|d| d.dynamic_power_w).collect()),
                })
            }
            (None, None) => None,
        };
        match (&cpu.dvfs, &gpu_dvfs) {
            (Some(cd), Some(gd)) => {
                if gpu.from_model.is_some() && swept.is_empty() {
                    return Err(SplitError::Case(
                        "[gpu.from_model] gives one clock pair: drop [gpu.dvfs], or set core_mhz / mem_mhz in from_model"
                            .into(),
                    ));
                }
                let base = self.two_device_base(1.0, 0.0, 1.0, 0.0)?;
                let cells = dvfs::search(&base, cd, gd, &objs, step)?;
                let global: Vec<GlobalBest> = (0..objs.len())
                    .filter_map(|i| {
                        dvfs::global_best(&cells, &objs, i).map(|c| GlobalBest {
                            objective: objs[i].to_string(),
                            cpu_clock: c.cpu_clock,
                            gpu_clock: c.gpu_clock,
                            point: c.best[i],
                        })
                    })
                    .collect();
                let savings = self.savings(&base, cd, gd, &global, step)?;
                Ok(Report::Dvfs {
                    title: self.title.clone(),
                    unit: self.workload.unit.clone(),
                    share_step: step,
                    objectives: objs.iter().map(|o| o.to_string()).collect(),
                    cells,
                    global,
                    chosen: objs[k].to_string(),
                    savings,
                    gpu_from_model: swept,
                })
            }
            (None, None) => {
                let need = |v: Option<f64>, k: &str| {
                    v.ok_or_else(|| {
                        SplitError::Case(format!(
                            "{k} is missing (or give a clock table in .dvfs, or [gpu.from_model] for the GPU)"
                        ))
                    })
                };
                let derived = match &gpu.from_model {
                    Some(fm) => {
                        if gpu.rate.is_some() || gpu.dynamic_power_w.is_some() {
                            return Err(SplitError::Case(
                                "[gpu] gives both rate/dynamic_power_w and from_model: keep one".into(),
                            ));
                        }
                        Some(super::from_model::derive(fm, &self.base_dir)?)
                    }
                    None => None,
                };
                let (gpu_rate, gpu_pd) = match &derived {
                    Some(d) => (d.rate, d.dynamic_power_w),
                    None => {
                        (need(gpu.rate, "[gpu] rate")?, need(gpu.dynamic_power_w, "[gpu] dynamic_power_w")?)
                    }
                };
                let sys = self.two_device_base(
                    need(cpu.rate, "[cpu] rate")?,
                    need(cpu.dynamic_power_w, "[cpu] dynamic_power_w")?,
                    gpu_rate,
                    gpu_pd,
                )?;
                sys.check()?;
                let best = objs
                    .iter()
                    .map(|&o| {
                        let point = sys.optimum(o, step);
                        Best { objective: o.to_string(), value: o.value(point.energy_j, point.time_s), point }
                    })
                    .collect();
                let bal = sys.balance_share();
                let candidates = [0.0, bal, 1.0].iter().map(|&a| sys.evaluate(a)).collect::<Result<_>>()?;
                Ok(Report::TwoDevice {
                    title: self.title.clone(),
                    unit: self.workload.unit.clone(),
                    system: sys,
                    share_step: step,
                    balance_share: bal,
                    candidates,
                    best,
                    chosen: objs[k].to_string(),
                    stafford: peach::stafford_range(&sys),
                    stafford_case: peach::stafford_case(&sys),
                    at: gpu_share.map(|a| sys.evaluate(a)).transpose()?,
                    gpu_from_model: derived,
                })
            }
            _ => Err(SplitError::Case(
                "give a clock table ([cpu.dvfs], and [gpu.dvfs] or gpu.from_model.core_mhz_sweep) for both devices \
                 or for neither (a table with one clock is fine)"
                    .into(),
            )),
        }
    }

    fn savings(
        &self,
        base: &TwoDevice,
        cd: &DeviceDvfs,
        gd: &DeviceDvfs,
        global: &[GlobalBest],
        step: Option<f64>,
    ) -> Result<Option<Savings>> {
        let Some(best) = global.iter().find(|g| g.objective == "energy").cloned() else {
            return Ok(None);
        };
        let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (fc, fg, obj) = match &self.compare {
            Some(c) => {
                let o = Objective::parse(c.objective.as_deref().unwrap_or("time"))
                    .map_err(|e| SplitError::BadObjective(e.to_string()))?;
                (c.cpu_clock, c.gpu_clock, o)
            }
            None => (max(&cd.clocks), max(&gd.clocks), Objective::TIME),
        };
        let one_c = DeviceDvfs { clocks: vec![fc], ..cd.clone() };
        let one_g = DeviceDvfs { clocks: vec![fg], ..gd.clone() };
        // A table curve needs the value at that clock: look the clock up.
        let pick = |d: &DeviceDvfs, f: f64, one: DeviceDvfs, dev: &str| -> Result<DeviceDvfs> {
            let i = d.clocks.iter().position(|&c| (c - f).abs() < 1e-9).ok_or_else(|| {
                SplitError::Case(format!("[compare] {dev} clock {f} is not in the {dev} clock list"))
            })?;
            let sel = |c: &dvfs::Curve| match c {
                dvfs::Curve::Table(v) => dvfs::Curve::Table(vec![v[i]]),
                law => law.clone(),
            };
            Ok(DeviceDvfs { rate: sel(&d.rate), dynamic_power_w: sel(&d.dynamic_power_w), ..one })
        };
        let c1 = pick(cd, fc, one_c, "cpu")?;
        let g1 = pick(gd, fg, one_g, "gpu")?;
        let cell = dvfs::search(base, &c1, &g1, &[obj], step)?;
        let point = cell[0].best[0];
        let baseline = GlobalBest { objective: obj.to_string(), cpu_clock: fc, gpu_clock: fg, point };
        Ok(Some(Savings {
            efficiency_gain: best.point.efficiency / point.efficiency - 1.0,
            energy_saved: 1.0 - best.point.energy_j / point.energy_j,
            baseline,
            best,
        }))
    }

    fn run_pareto(&self, devices: &[DeviceProfile], chosen: Objective) -> Result<Report> {
        let units = self.workload.units.ok_or_else(|| {
            SplitError::Case("[[device]] profiles need `units` in [workload]: the work to distribute".into())
        })?;
        let pr =
            Problem { devices: devices.to_vec(), units, static_power_w: self.static_power_w.unwrap_or(0.0) };
        let (objs, k) = objectives(chosen);
        let front = |points: Vec<ParetoPoint>, energy: &str| Front {
            best: objs
                .iter()
                .filter_map(|&o| pareto::best_on_front(&points, o).map(|p| (o.to_string(), p.clone())))
                .collect(),
            points,
            energy: energy.to_string(),
        };
        Ok(Report::Pareto {
            title: self.title.clone(),
            devices: devices.iter().map(|d| d.name.clone()).collect(),
            units,
            static_power_w: pr.static_power_w,
            dynamic: front(pr.front_dynamic()?, "dynamic"),
            total: front(pr.front_total()?, "total"),
            chosen: objs[k].to_string(),
        })
    }
}

/// A fitted linear law for one table of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitRow {
    /// "cpu" or "gpu".
    pub device: String,
    /// "rate" or "dynamic_power_w".
    pub quantity: String,
    /// The fit (None when the file already gives a law).
    pub fit: Option<LineFit>,
    /// The law the file gives, when it gives one: (slope, intercept).
    pub given_law: Option<(f64, f64)>,
}

/// `gpumodel split fit`: a least-squares line for every clock table in `[cpu.dvfs]` / `[gpu.dvfs]`.
pub fn fit_laws(file: &CaseFile) -> Result<Vec<FitRow>> {
    let mut rows = Vec::new();
    let devs = [
        ("cpu", file.cpu.as_ref().and_then(|c| c.dvfs.as_ref())),
        ("gpu", file.gpu.as_ref().and_then(|g| g.dvfs.as_ref())),
    ];
    for (name, d) in devs {
        let Some(d) = d else { continue };
        if d.clocks.is_empty() {
            return Err(SplitError::EmptyTable { what: format!("{name} clock list") });
        }
        for (q, c) in [("rate", &d.rate), ("dynamic_power_w", &d.dynamic_power_w)] {
            let row = match c {
                dvfs::Curve::Table(v) => FitRow {
                    device: name.into(),
                    quantity: q.into(),
                    fit: Some(dvfs::fit_line(&format!("{name} {q}"), &d.clocks, v)?),
                    given_law: None,
                },
                dvfs::Curve::Law { slope, intercept } => FitRow {
                    device: name.into(),
                    quantity: q.into(),
                    fit: None,
                    given_law: Some((*slope, *intercept)),
                },
            };
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return Err(SplitError::Case(
            "nothing to fit: give clock tables in [cpu.dvfs] / [gpu.dvfs] (clocks, rate, dynamic_power_w)"
                .into(),
        ));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_with_two_cases_or_none_is_refused() {
        let f = parse("[cg]\nthreads = 1\n[cpu]\nrate = 1\n", "t").unwrap();
        assert!(matches!(f.run(Objective::TIME), Err(SplitError::Case(_))));
        let f = parse("title = \"x\"\n", "t").unwrap();
        assert!(matches!(f.run(Objective::TIME), Err(SplitError::Case(_))));
        assert!(matches!(parse("[cpu]\nrat = 1\n", "t"), Err(SplitError::Parse { .. })));
    }

    #[test]
    fn a_share_step_that_does_not_divide_one_is_refused() {
        let f = parse(
            "static_power_w = 1\n[workload]\nshare_step = 0.3\n[cpu]\nrate = 1\ndynamic_power_w = 1\n[gpu]\nrate = 1\ndynamic_power_w = 1\n",
            "t",
        )
        .unwrap();
        assert!(matches!(f.run(Objective::TIME), Err(SplitError::BadValue { .. })));
    }
}
