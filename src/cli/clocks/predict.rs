//! `gpumodel predict --profile`: the clock sweep of one utilization profile.

use super::*;
// ---------------------------------------------------------------------------------------------------------
// predict --profile

/// `predict --profile`'s result.
#[derive(Debug, Serialize)]
pub struct ClockSweep {
    pub profile: UtilizationProfile,
    pub model_gpu: String,
    pub model_dataset: String,
    /// Whether the profile carried its own power (else the own-clock model predicted it).
    pub power_from_profile: bool,
    /// Whether times are seconds (the profile had a run time) or relative to the profiled run.
    pub time_in_seconds: bool,
    pub points: Vec<ClockPoint>,
    pub optima: Optima,
}

impl Export for ClockSweep {
    const COMMAND: &'static str = "predict-profile";
    fn sections(&self) -> Vec<Section> {
        let t = if self.time_in_seconds { "time s" } else { "time (rel.)" };
        let e = if self.time_in_seconds { "energy J" } else { "energy (W·rel.)" };
        let mut s = Section::new(vec![
            Column::new("core_mhz", "core MHz"),
            Column::new("time", t),
            Column::new("power_w", "power W"),
            Column::new("energy", e),
            Column::new("slowdown", "slowdown"),
            Column::new("optimum", "optimum of"),
        ]);
        for (i, p) in self.points.iter().enumerate() {
            let mut marks = Vec::new();
            for (name, j) in [("E", self.optima.energy), ("ED", self.optima.ed), ("ED2", self.optima.ed2)] {
                if i == j {
                    marks.push(name.to_string());
                }
            }
            if let Some((b, j)) = self.optima.within_slowdown
                && i == j
            {
                marks.push(format!("E within {:.0}%", b * 100.0));
            }
            s.push(vec![
                Cell::num(p.core_mhz, 0),
                Cell::num(p.time_s, 4),
                Cell::num(p.power_w, 1),
                Cell::num(p.energy_j, 2),
                Cell::num(p.slowdown, 3),
                Cell::text(marks.join(", ")),
            ]);
        }
        vec![s]
    }
    fn preamble(&self) -> Vec<String> {
        let p = &self.profile;
        let fields: Vec<String> = Field::ALL
            .iter()
            .filter_map(|f| p.fields.get(f).map(|v| format!("{} {v:.2}", f.name())))
            .collect();
        vec![
            format!(
                "profile '{}' ({}{}) at {:.0} MHz: {}",
                p.name,
                p.source.name(),
                p.gpu.as_deref().map(|g| format!(", {g}")).unwrap_or_default(),
                p.core_mhz,
                fields.join(", ")
            ),
            format!("clock model: {} (trained on {})", self.model_gpu, self.model_dataset),
        ]
    }
    fn notes(&self) -> Vec<String> {
        let mut n = Vec::new();
        let at = |i: usize| self.points[i].core_mhz;
        n.push(format!(
            "optima: energy {:.0} MHz, E·D {:.0} MHz, E·D² {:.0} MHz; fastest {:.0} MHz",
            at(self.optima.energy),
            at(self.optima.ed),
            at(self.optima.ed2),
            at(self.optima.fastest)
        ));
        if let Some((b, i)) = self.optima.within_slowdown {
            // Against the highest clock, where a job runs without DVFS.
            let top = &self.points[self.points.len() - 1];
            let q = &self.points[i];
            n.push(format!(
                "within {:.1}% slowdown: {:.0} MHz uses {:.1}% less energy than {:.0} MHz and is {:.1}% slower",
                b * 100.0,
                q.core_mhz,
                100.0 * (1.0 - q.energy_j / top.energy_j),
                top.core_mhz,
                100.0 * (q.time_s / top.time_s - 1.0)
            ));
        }
        if !self.power_from_profile {
            n.push(
                "the profile has no power: its power at its own clock is predicted from its fields".into(),
            );
        }
        if !self.time_in_seconds {
            n.push("the profile has no run time: times are relative to the profiled run".into());
        }
        n
    }
}

fn load_model(spec: Option<&str>) -> anyhow::Result<ClockModel> {
    match spec {
        None => Ok(ClockModel::from_json(V100_MODEL, "the shipped V100 clock model")?),
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading the clock model {path}"))?;
            Ok(ClockModel::from_json(&text, path)?)
        }
    }
}

/// `gpumodel predict --profile FILE`: `model` is `--model` when the user gave one.
pub fn predict(args: &ProfileArgs, model: Option<&str>, format: ExportFormat) -> anyhow::Result<ExitCode> {
    let Some(path) = &args.profile else { bail!("--profile FILE is needed") };
    let (fmt, opts) = args.read.options(false)?;
    let model = load_model(model)?;
    let set = read_file(path, fmt, &opts)?;
    let profile = pick(&set, args.job.as_deref())?;
    if let Some(g) = &profile.gpu
        && !gpu_matches(g, &model.gpu)
    {
        bail!(
            "the profile is of a {g} and the clock model of a {}: give a model of that GPU with --model \
             (train one with `gpumodel train --data <its profiles>`)",
            model.gpu
        );
    }
    model.check_profile(&profile)?;
    let points = model.sweep(&profile);
    let optima = optima(&points, args.max_slowdown);
    let result = ClockSweep {
        power_from_profile: profile.power_w.is_some(),
        time_in_seconds: profile.time_s.is_some(),
        model_gpu: model.gpu.clone(),
        model_dataset: model.provenance.dataset.clone(),
        profile,
        points,
        optima,
    };
    print(&result, format)?;
    Ok(ExitCode::SUCCESS)
}
