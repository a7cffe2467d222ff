//! Choosing and running the model a case file describes: the sections present pick it (see the parent
//! module's docs), and each model's numbers are gathered into a [`Report`].

use super::{Best, CaseFile, Front, GlobalBest, Report, Savings};
use crate::split::dvfs::{self, DeviceDvfs};
use crate::split::from_model::{Derived, FromModel};
use crate::split::pareto::{self, DeviceProfile, ParetoPoint, Problem};
use crate::split::peach::{self, TwoDevice};
use crate::split::{Error, Objective, Result};

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

/// A two-device case's devices and the objectives asked for, shared by the fixed-clock and DVFS models.
struct TwoDeviceCase<'a> {
    cpu: &'a super::Cpu,
    gpu: &'a super::Gpu,
    step: Option<f64>,
    objs: Vec<Objective>,
    /// Index of the chosen objective in `objs`.
    k: usize,
}

impl CaseFile {
    /// Runs the model the file describes; `chosen` is the objective the user asked for.
    pub fn run(&self, chosen: Objective) -> Result<Report> {
        self.run_at(chosen, None)
    }

    /// As [`CaseFile::run`], and also evaluates a two-device case at GPU share `gpu_share`
    /// (checked to lie in [0, 1]).
    pub fn run_at(&self, chosen: Objective, gpu_share: Option<f64>) -> Result<Report> {
        self.check_share(gpu_share)?;
        self.check_one_case()?;
        if let Some(cg) = &self.cg {
            let name = chosen.to_string();
            return Ok(Report::Cg { title: self.title.clone(), objective: name, report: cg.solve(chosen)? });
        }
        if let Some(devices) = &self.device {
            return self.run_pareto(devices, chosen);
        }
        let (Some(cpu), Some(gpu)) = (&self.cpu, &self.gpu) else {
            return Err(Error::Case("a two-device case needs both [cpu] and [gpu]".into()));
        };
        let step = self.step()?;
        let (objs, k) = objectives(chosen);
        let case = TwoDeviceCase { cpu, gpu, step, objs, k };
        let (gpu_dvfs, swept) = self.gpu_clock_table(gpu)?;
        match (&cpu.dvfs, &gpu_dvfs) {
            (Some(cd), Some(gd)) => self.run_dvfs(&case, cd, gd, swept),
            (None, None) => self.run_two_device(&case, gpu_share),
            _ => Err(Error::Case(
                "give a clock table ([cpu.dvfs], and [gpu.dvfs] or gpu.from_model.core_mhz_sweep) for both devices \
                 or for neither (a table with one clock is fine)"
                    .into(),
            )),
        }
    }

    /// A GPU share, when given, lies in [0, 1] and goes with a two-device case at fixed clocks.
    fn check_share(&self, gpu_share: Option<f64>) -> Result<()> {
        if let Some(a) = gpu_share {
            crate::split::share("GPU share", a)?;
            let fixed = self.cpu.as_ref().is_some_and(|c| c.dvfs.is_none())
                && self.gpu.as_ref().is_some_and(|g| g.dvfs.is_none());
            if !fixed {
                return Err(Error::Case(
                    "a given GPU share applies only to a two-device case at fixed clocks ([cpu] and [gpu] \
                     with rate and dynamic_power_w)"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// The file describes exactly one case.
    fn check_one_case(&self) -> Result<()> {
        let kinds = [self.cg.is_some(), self.device.is_some(), self.cpu.is_some() || self.gpu.is_some()];
        match kinds.iter().filter(|k| **k).count() {
            0 => Err(Error::Case(
                "the file describes no case: give [cpu] and [gpu], [[device]] tables, or [cg]".into(),
            )),
            1 => Ok(()),
            _ => Err(Error::Case(
                "the file mixes cases: give only one of [cpu]+[gpu], [[device]] tables, or [cg]".into(),
            )),
        }
    }

    /// The GPU's clock table: given, or predicted by our models at each core clock of a sweep (the
    /// predictions are handed back too, for the report).
    fn gpu_clock_table(&self, gpu: &super::Gpu) -> Result<(Option<DeviceDvfs>, Vec<Derived>)> {
        let mut swept: Vec<Derived> = Vec::new();
        let sweep = gpu.from_model.as_ref().and_then(|f| f.core_mhz_sweep.as_ref().map(|c| (f, c)));
        let gpu_dvfs = match (&gpu.dvfs, sweep) {
            (Some(_), Some(_)) => {
                return Err(Error::Case(
                    "give either [gpu.dvfs] or gpu.from_model.core_mhz_sweep, not both".into(),
                ));
            }
            (Some(d), None) => Some(d.clone()),
            (None, Some((fm, clocks))) => {
                if clocks.is_empty() {
                    return Err(Error::EmptyTable { what: "gpu.from_model.core_mhz_sweep".into() });
                }
                for &c in clocks {
                    let one = FromModel { core_mhz: Some(c), core_mhz_sweep: None, ..fm.clone() };
                    swept.push(crate::split::from_model::derive(&one, &self.base_dir)?);
                }
                Some(DeviceDvfs {
                    clocks: clocks.clone(),
                    rate: dvfs::Curve::Table(swept.iter().map(|d| d.rate).collect()),
                    dynamic_power_w: dvfs::Curve::Table(swept.iter().map(|d| d.dynamic_power_w).collect()),
                })
            }
            (None, None) => None,
        };
        Ok((gpu_dvfs, swept))
    }

    /// PEACH's coupled DVFS search over the CPU's clock table `cd` and the GPU's `gd` (`swept`: the GPU's
    /// per-clock predictions when `gd` came from our models).
    fn run_dvfs(
        &self,
        case: &TwoDeviceCase,
        cd: &DeviceDvfs,
        gd: &DeviceDvfs,
        swept: Vec<Derived>,
    ) -> Result<Report> {
        let (objs, step) = (&case.objs, case.step);
        if case.gpu.from_model.is_some() && swept.is_empty() {
            return Err(Error::Case(
                "[gpu.from_model] gives one clock pair: drop [gpu.dvfs], or set core_mhz / mem_mhz in from_model"
                    .into(),
            ));
        }
        let base = self.two_device_base(1.0, 0.0, 1.0, 0.0)?;
        let cells = dvfs::search(&base, cd, gd, objs, step)?;
        let global: Vec<GlobalBest> = (0..objs.len())
            .filter_map(|i| {
                dvfs::global_best(&cells, objs, i).map(|c| GlobalBest {
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
            chosen: objs[case.k].to_string(),
            savings,
            gpu_from_model: swept,
        })
    }

    /// PEACH's two-device model at fixed clocks (the GPU's rate and power given, or predicted by our
    /// models), with the Stafford range test, and evaluated at `gpu_share` when given.
    fn run_two_device(&self, case: &TwoDeviceCase, gpu_share: Option<f64>) -> Result<Report> {
        let (cpu, gpu, objs, step) = (case.cpu, case.gpu, &case.objs, case.step);
        let need = |v: Option<f64>, k: &str| {
            v.ok_or_else(|| {
                Error::Case(format!(
                    "{k} is missing (or give a clock table in .dvfs, or [gpu.from_model] for the GPU)"
                ))
            })
        };
        let derived = match &gpu.from_model {
            Some(fm) => {
                if gpu.rate.is_some() || gpu.dynamic_power_w.is_some() {
                    return Err(Error::Case(
                        "[gpu] gives both rate/dynamic_power_w and from_model: keep one".into(),
                    ));
                }
                Some(crate::split::from_model::derive(fm, &self.base_dir)?)
            }
            None => None,
        };
        let (gpu_rate, gpu_pd) = match &derived {
            Some(d) => (d.rate, d.dynamic_power_w),
            None => (need(gpu.rate, "[gpu] rate")?, need(gpu.dynamic_power_w, "[gpu] dynamic_power_w")?),
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
            chosen: objs[case.k].to_string(),
            stafford: peach::stafford_range(&sys),
            stafford_case: peach::stafford_case(&sys),
            at: gpu_share.map(|a| sys.evaluate(a)).transpose()?,
            gpu_from_model: derived,
        })
    }

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
                p0 = Some(p0.unwrap_or(0.0) + crate::split::non_negative(key, v)?);
            }
        }
        let sys = TwoDevice {
            static_power_w: p0.ok_or_else(|| {
                Error::Case(
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
                    .map_err(|e| Error::BadObjective(e.to_string()))?;
                (c.cpu_clock, c.gpu_clock, o)
            }
            None => (max(&cd.clocks), max(&gd.clocks), Objective::TIME),
        };
        let one_c = DeviceDvfs { clocks: vec![fc], ..cd.clone() };
        let one_g = DeviceDvfs { clocks: vec![fg], ..gd.clone() };
        // A table curve needs the value at that clock: look the clock up.
        let pick = |d: &DeviceDvfs, f: f64, one: DeviceDvfs, dev: &str| -> Result<DeviceDvfs> {
            let i = d.clocks.iter().position(|&c| (c - f).abs() < 1e-9).ok_or_else(|| {
                Error::Case(format!("[compare] {dev} clock {f} is not in the {dev} clock list"))
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
            Error::Case("[[device]] profiles need `units` in [workload]: the work to distribute".into())
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
