//! `gpumodel train --data <utilization profiles>`: the clock model beside its baselines.

use super::*;

/// `train`'s result on utilization-profile data.
#[derive(Debug, Serialize)]
pub struct ClockTraining {
    pub data: String,
    pub test: Option<String>,
    pub gpu: String,
    pub training_jobs: usize,
    pub training_programs: usize,
    pub selection: Vec<String>,
    pub cv_time_mape: f64,
    pub cv_power_mape: f64,
    pub cv_own_clock_mape: f64,
    pub evaluation: Option<ClockEvaluation>,
    pub artifact: Option<String>,
    pub notes: Vec<String>,
}

impl Export for ClockTraining {
    const COMMAND: &'static str = "train-clock-model";
    fn sections(&self) -> Vec<Section> {
        let Some(ev) = &self.evaluation else {
            return vec![Section::prose(vec!["no held-out test set: see the selection figures".into()])];
        };
        let mut s = Section::titled(
            format!(
                "{} held-out jobs, clocks {} MHz; regrets median / mean over jobs (%)",
                ev.test_jobs,
                ev.clocks_mhz.iter().map(|c| format!("{c:.0}")).collect::<Vec<_>>().join(", ")
            ),
            vec![
                Column::new("method", "method"),
                Column::new("time_mape", "time MAPE %"),
                Column::new("time_mape_off_ref", "(off ref)"),
                Column::new("power_mape", "power MAPE %"),
                Column::new("power_mape_off_ref", "(off ref)"),
                Column::new("energy_regret", "E regret"),
                Column::new("ed_regret", "ED regret"),
                Column::new("ed2_regret", "ED² regret"),
                Column::new("saving", format!("E saved ≤{:.0}% slower", ev.max_slowdown * 100.0)),
                Column::new("violations", "slower than bound"),
            ],
        );
        let pair = |p: (f64, f64)| Cell::shown(p.1, format!("{:.2} / {:.2}", p.0, p.1));
        for m in &ev.methods {
            s.push(vec![
                Cell::text(&m.method),
                Cell::opt(m.time_mape, 2),
                Cell::opt(m.time_mape_off_ref, 2),
                Cell::opt(m.power_mape, 2),
                Cell::opt(m.power_mape_off_ref, 2),
                pair(m.energy_regret),
                pair(m.ed_regret),
                pair(m.ed2_regret),
                Cell::num(m.saving_within_bound, 2),
                Cell::int(m.bound_violations as i64),
            ]);
        }
        s.then(format!(
            "measured optimum within {:.0}% slowdown: {:.2}% energy saved on average against the highest clock",
            ev.max_slowdown * 100.0,
            ev.oracle_saving_within_bound
        ));
        s.then(format!(
            "power at each run's own clock from its profile alone: MAPE {:.2}% (mean over jobs), median {:.2}%, worst {} {:.1}%",
            ev.own_clock_power_mape, ev.own_clock_power_median, ev.own_clock_worst.0, ev.own_clock_worst.1
        ));
        for n in &ev.notes {
            s.then(n.clone());
        }
        vec![s]
    }
    fn preamble(&self) -> Vec<String> {
        let mut v = vec![format!(
            "clock model for {}: {} training jobs of {} programs ({}); choices by leave-one-program-out CV:",
            self.gpu, self.training_jobs, self.training_programs, self.data
        )];
        v.extend(self.selection.iter().map(|s| format!("  {s}")));
        v
    }
    fn notes(&self) -> Vec<String> {
        let mut n = self.notes.clone();
        if let Some(a) = &self.artifact {
            n.push(format!("wrote {a}"));
        }
        n
    }
}

/// `gpumodel train --data <profiles>`: fits the clock model, scores it beside DSO's form, the published
/// DSO parameters (with --peer-params) and fixed clocks on the test set, and writes the artifact.
pub fn train(all: &crate::cli::train::Args) -> anyhow::Result<ExitCode> {
    let (data, test, no_test, out_dir) =
        (all.data.as_str(), all.test.as_deref(), all.no_test, all.out_dir.as_deref());
    let (prefix, args, format) = (all.prefix.as_deref(), &all.clocks, all.format);
    if let Some(m) = args.min_core_mhz
        && !(m.is_finite() && m >= 0.0)
    {
        bail!("--min-core-mhz {m}: give a clock in MHz");
    }
    let published = match &args.peer_params {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Some(read_published(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?)
        }
        None => None,
    };
    let (set, name, sha, registry_test) = open(data)?;
    let mut notes: Vec<String> = Vec::new();
    if !set.skipped.is_empty() {
        notes.push(format!("{} training row(s) skipped; first: {}", set.skipped.len(), set.skipped[0]));
    }
    let gpu = set.profiles.iter().find_map(|p| p.gpu.clone()).unwrap_or_else(|| name.clone());
    let train_jobs: Vec<Job> = jobs(&set, args.min_core_mhz);
    let command = format!(
        "gpumodel train --data {name}{}{}",
        args.min_core_mhz.map(|m| format!(" --min-core-mhz {m}")).unwrap_or_default(),
        prefix.map(|p| format!(" --prefix {p}")).unwrap_or_default()
    );
    let params = ClockFitParams {
        gpu: gpu.clone(),
        dataset: name.clone(),
        dataset_sha256: sha,
        command,
        ..Default::default()
    };
    let mut fit = fit_clock_model(&train_jobs, &params)?;
    fit.model.policy = gpumodel_train::utilization::policy::choose(&train_jobs, &params, &fit.model)?;
    for o in &fit.model.policy {
        let pick = o.fixed_mhz.map_or("the model's pick".to_string(), |c| format!("a fixed {c:.0} MHz"));
        fit.model.provenance.selection.push(format!(
            "clock for least {}: {pick} — leave-one-program-out regret: model {:.2}%, fixed clock {:.2}% ({} held-out jobs)",
            o.objective, o.model_regret_pct, o.fixed_regret_pct, o.held_out_jobs
        ));
    }
    for l in &fit.left_out {
        notes.push(format!("training job {l} has no run at the highest clock: left out"));
    }
    let mhz: Vec<f64> = fit.model.levels.iter().map(|l| l.core_mhz).collect();
    let dso = fit_dso(&fit.curves, &mhz, &params.ridge);
    let test_spec = if no_test { None } else { test.map(String::from).or(registry_test) };
    let evaluation = match &test_spec {
        Some(t) => {
            let (tset, _, _, _) = open(t)?;
            if !tset.skipped.is_empty() {
                notes.push(format!("{} test row(s) skipped; first: {}", tset.skipped.len(), tset.skipped[0]));
            }
            let test_jobs = jobs(&tset, args.min_core_mhz);
            Some(evaluate(
                &fit.model,
                &dso,
                &train_jobs,
                &test_jobs,
                published.as_ref(),
                args.score_max_slowdown,
            ))
        }
        None => None,
    };
    let mut selection = fit.model.provenance.selection.clone();
    selection.extend(dso.selection.iter().cloned());
    let artifact = if let Some(out_dir) = out_dir {
        let stem = prefix.map(String::from).unwrap_or_else(|| format!("{name}-clock"));
        std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
        let path = out_dir.join(format!("{stem}.json"));
        let text = serde_json::to_string_pretty(&fit.model)? + "\n";
        gpumodel_models::atomic::write_atomic(&path, text.as_bytes())?;
        Some(path.display().to_string())
    } else {
        None
    };
    let result = ClockTraining {
        data: name,
        test: test_spec,
        gpu,
        training_jobs: fit.model.provenance.training_jobs,
        training_programs: fit.model.provenance.training_programs,
        selection,
        cv_time_mape: fit.cv_time_mape,
        cv_power_mape: fit.cv_power_mape,
        cv_own_clock_mape: fit.cv_own_clock_mape,
        evaluation,
        artifact,
        notes,
    };
    print(&result, format)?;
    Ok(ExitCode::SUCCESS)
}
