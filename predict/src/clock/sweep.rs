//! A utilization profile's clock sweep: time, power and energy at every supported core clock, the E, ED
//! and ED² optima, and the clock to run at (`gpumodel predict --profile`).

use super::choose::{Choice, choose};
use crate::kernel::gpu::beyond_the_hardware;
use crate::{Error, Result};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::timing::Clocks;
use gpumodel_models::utilization::model::{ClockPoint, ObjectivePolicy, Optima, optima};
use gpumodel_models::utilization::{Field, ProfileSet, UtilizationProfile};
use serde::Serialize;
use std::path::PathBuf;

/// `predict --profile`'s result.
#[derive(Debug, Serialize)]
pub struct ClockSweep {
    pub profile: UtilizationProfile,
    /// What reading the profile assumed for want of it in the file: the answer leads with it.
    pub assumptions: Vec<String>,
    /// Which model answers, in words (the shipped one, `--model`, or an estimate carried over).
    pub basis: String,
    /// What the answer assumes or lacks.
    pub caveats: Vec<String>,
    /// What reading the profile found: where its time and energy came from, rows left out, contradictions.
    pub reading: Vec<String>,
    /// The GPU of the model used; `None` when no sweep was possible (the measured clock only).
    pub model_gpu: Option<String>,
    /// Whether the profile carried its own power (else the own-clock model predicted it).
    pub power_from_profile: bool,
    /// Whether times are seconds (the profile had a run time) or relative to the profiled run.
    pub time_in_seconds: bool,
    pub points: Vec<ClockPoint>,
    pub optima: Optima,
    /// The model's recommendation per objective, decided on its training data (a fixed clock or its pick).
    pub policy: Vec<ObjectivePolicy>,
    /// Points no run on this GPU can show (power above the board limit or below its measured idle, by its
    /// built-in architecture profile): errors, one line each, `at <clocks>: …`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub out_of_bounds: Vec<String>,
}

impl Export for ClockSweep {
    const COMMAND: &'static str = "predict";
    fn sections(&self) -> Vec<Section> {
        let t = if self.time_in_seconds { "time s" } else { "time (rel.)" };
        let e = if self.time_in_seconds { "energy J" } else { "energy (W·rel.)" };
        let pairs = self.points.iter().any(|p| p.mem_mhz.is_some());
        let mut cols = vec![Column::new("core_mhz", "core MHz")];
        if pairs {
            cols.push(Column::new("mem_mhz", "memory MHz"));
        }
        let mut s = Section::new(
            cols.into_iter()
                .chain([
                    Column::new("time", t),
                    Column::new("power_w", "power W"),
                    Column::new("energy", e),
                    Column::new("slowdown", "slowdown"),
                    Column::new("optimum", "optimum of"),
                ])
                .chain((!self.out_of_bounds.is_empty()).then(|| Column::new("out_of_bounds", "error")))
                .collect(),
        );
        for (i, p) in self.points.iter().enumerate() {
            let mut marks = Vec::new();
            // A single measured clock is no choice: no optimum is marked.
            let marks_on = self.model_gpu.is_some();
            for (name, j) in [("E", self.optima.energy), ("ED", self.optima.ed), ("ED2", self.optima.ed2)] {
                if marks_on && i == j {
                    marks.push(name.to_string());
                }
            }
            if let Some((b, j)) = self.optima.within_slowdown
                && marks_on
                && i == j
            {
                marks.push(format!("E within {:.0}%", b * 100.0));
            }
            let mut row = vec![Cell::num(p.core_mhz, 0)];
            if pairs {
                row.push(Cell::num(p.mem_mhz.unwrap_or(f64::NAN), 0));
            }
            row.extend([
                Cell::num(p.time_s, 4),
                Cell::num(p.power_w, 1),
                Cell::num(p.energy_j, 2),
                Cell::num(p.slowdown, 3),
                Cell::text(marks.join(", ")),
            ]);
            if !self.out_of_bounds.is_empty() {
                let at = format!("at {}: ", clocks(p));
                let own: Vec<&str> = self.out_of_bounds.iter().filter_map(|e| e.strip_prefix(&at)).collect();
                row.push(Cell::text(own.join("; ")));
            }
            s.push(row);
        }
        vec![s]
    }
    fn preamble(&self) -> Vec<String> {
        let p = &self.profile;
        let fields: Vec<String> = Field::ALL
            .iter()
            .filter_map(|f| p.fields.get(f).map(|v| format!("{} {v:.2}", f.name())))
            .collect();
        let mut lines = self.assumptions.clone();
        lines.extend([
            format!(
                "profile '{}' ({}{}) at {:.0} MHz: {}",
                p.name,
                p.source.name(),
                p.gpu.as_deref().map(|g| format!(", {g}")).unwrap_or_default(),
                p.core_mhz,
                fields.join(", ")
            ),
            format!("model: {}", self.basis),
        ]);
        lines.extend(self.out_of_bounds.iter().map(|x| format!("ERROR {x}")));
        lines
    }
    fn notes(&self) -> Vec<String> {
        let mut n = self.caveats.clone();
        n.extend(self.reading.iter().cloned());
        if self.model_gpu.is_none() {
            return n;
        }
        let at = |i: usize| clocks(&self.points[i]);
        n.push(format!(
            "model optima: energy {}, E·D {}, E·D² {}; fastest {}",
            at(self.optima.energy),
            at(self.optima.ed),
            at(self.optima.ed2),
            at(self.optima.fastest)
        ));
        // Where a fixed clock beat the model's pick on held-out training programs, that clock is the advice,
        // and the line names the model's pick it replaces.
        for o in self.policy.iter().filter(|o| o.fixed_mhz.is_some()) {
            let (name, pick) = match o.objective.as_str() {
                "E" => ("energy", self.optima.energy),
                "ED" => ("E·D", self.optima.ed),
                _ => ("E·D²", self.optima.ed2),
            };
            let fixed = match o.fixed_mem_mhz {
                Some(m) => format!("{:.0} MHz core / {m:.0} MHz memory", o.fixed_mhz.unwrap_or_default()),
                None => format!("{:.0} MHz", o.fixed_mhz.unwrap_or_default()),
            };
            let (model, regrets) = (at(pick), (o.fixed_regret_pct, o.model_regret_pct));
            // The fixed clock and this profile's pick may be the same clock: then the two agree, said once.
            n.push(if fixed == model {
                format!(
                    "advice for least {name}: run at {fixed}, the model's pick for this profile and the fixed clock \
                     that beat the model's picks on held-out training programs (mean regret {:.2}% against {:.2}%)",
                    regrets.0, regrets.1
                )
            } else {
                format!(
                    "advice for least {name}: run at {fixed}, not the model's {model}: on held-out training programs \
                     that fixed clock beat the model's pick (mean regret {:.2}% against {:.2}%)",
                    regrets.0, regrets.1
                )
            });
        }
        if let Some((b, i)) = self.optima.within_slowdown {
            // Against the highest clock, where a job runs without DVFS.
            let top = &self.points[self.points.len() - 1];
            let q = &self.points[i];
            if i + 1 == self.points.len() {
                n.push(format!(
                    "within {:.1}% slowdown: {}, the highest clock (no lower one saves energy within that bound)",
                    b * 100.0,
                    clocks(top)
                ));
            } else {
                n.push(format!(
                    "within {:.1}% slowdown: {} uses {:.1}% less energy than {} and is {:.1}% slower",
                    b * 100.0,
                    clocks(q),
                    100.0 * (1.0 - q.energy_j / top.energy_j),
                    clocks(top),
                    100.0 * (q.time_s / top.time_s - 1.0)
                ));
            }
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

/// The points of a sweep no run on `arch` can show (see [`beyond_the_hardware`]), each `at <clocks>: …`;
/// a point without a memory clock is at `mem_mhz` (the profile's), else at the board's default.
fn beyond_the_board(arch: &ArchProfile, points: &[ClockPoint], mem_mhz: Option<f64>) -> Vec<String> {
    points
        .iter()
        .filter(|p| p.power_w.is_finite())
        .flat_map(|p| {
            let at =
                Clocks { core_mhz: p.core_mhz, mem_mhz: p.mem_mhz.or(mem_mhz).unwrap_or(arch.mem_mhz.value) };
            beyond_the_hardware(arch, at, p.time_s, p.power_w)
                .into_iter()
                .map(move |e| format!("at {}: {e}", clocks(p)))
        })
        .collect()
}

/// A point's clocks in words: `1500 MHz`, or `1500 MHz core / 5500 MHz memory` for a pair.
fn clocks(p: &ClockPoint) -> String {
    match p.mem_mhz {
        Some(m) => format!("{:.0} MHz core / {m:.0} MHz memory", p.core_mhz),
        None => format!("{:.0} MHz", p.core_mhz),
    }
}

/// What `predict --profile` was asked.
#[derive(Debug, Clone, Default)]
pub struct SweepRequest {
    /// `--model`: a clock model file the user gave.
    pub model: Option<PathBuf>,
    /// Folders of the user's clock models (`--models-dir`, `GPUMODEL_MODELS`), searched by GPU name before
    /// the shipped models.
    pub model_dirs: Vec<PathBuf>,
    /// `--core-clocks`: the GPU's supported core clocks, for a GPU without a clock model.
    pub core_clocks: Vec<f64>,
    /// `--max-slowdown`: the bound of the lowest-energy clock within a slowdown.
    pub max_slowdown: Option<f64>,
}

/// The clock sweep of the profile `job` of `set` (or its only one), with what reading the set assumed
/// and found.
pub fn sweep_profile(set: &ProfileSet, job: Option<&str>, req: &SweepRequest) -> Result<ClockSweep> {
    let profile = set.pick(job)?;
    if let Some(c) = req.core_clocks.iter().find(|c| !(c.is_finite() && **c > 0.0)) {
        return Err(Error::Invalid(format!("--core-clocks {c}: a clock must be a positive number of MHz")));
    }
    let choice: Choice = choose(req, &profile)?;
    let points = match &choice.model {
        Some(m) => {
            m.check_profile(&profile)?;
            m.sweep(&profile)
        }
        // The measured clock alone: its time (or 1, relative) and power (a carried-over answer needs it).
        None => {
            let (t, w) = (profile.time_s.unwrap_or(1.0), profile.power_w.unwrap_or(f64::NAN));
            vec![ClockPoint {
                core_mhz: profile.core_mhz,
                mem_mhz: None,
                time_s: t,
                power_w: w,
                energy_j: t * w,
                slowdown: 1.0,
            }]
        }
    };
    let optima = optima(&points, req.max_slowdown);
    // The board the job ran on: the profile's GPU, else the model's.
    let board = profile.gpu.as_deref().or(choice.model.as_ref().map(|m| m.gpu.as_str()));
    let out_of_bounds = board
        .and_then(ArchProfile::builtin_for_gpu)
        .map_or_else(Vec::new, |arch| beyond_the_board(&arch, &points, profile.mem_mhz));
    Ok(ClockSweep {
        out_of_bounds,
        power_from_profile: profile.power_w.is_some(),
        time_in_seconds: profile.time_s.is_some(),
        model_gpu: choice.model.as_ref().map(|m| m.gpu.clone()),
        policy: choice.model.as_ref().map(|m| m.policy.clone()).unwrap_or_default(),
        basis: choice.basis,
        caveats: choice.caveats,
        reading: set.notes.clone(),
        assumptions: set.assumptions.clone(),
        profile,
        points,
        optima,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumodel_models::utilization::Source;

    fn point(core_mhz: f64, time_s: f64, energy_j: f64) -> ClockPoint {
        ClockPoint {
            core_mhz,
            mem_mhz: None,
            time_s,
            power_w: energy_j / time_s,
            energy_j,
            slowdown: time_s / 10.0,
        }
    }

    /// Three clocks; energy least at `least` (an index); a fixed 800 MHz policy for E.
    fn sweep(energy: [f64; 3], bound: f64) -> ClockSweep {
        let points = vec![
            point(800.0, 12.0, energy[0]),
            point(1000.0, 10.4, energy[1]),
            point(1200.0, 10.0, energy[2]),
        ];
        let optima = optima(&points, Some(bound));
        ClockSweep {
            profile: UtilizationProfile {
                name: "j".into(),
                program: None,
                source: Source::Document,
                gpu: None,
                device: None,
                fields: Default::default(),
                core_mhz: 1200.0,
                mem_mhz: None,
                power_w: Some(200.0),
                time_s: Some(10.0),
                samples: 1,
            },
            assumptions: vec![],
            basis: "test".into(),
            caveats: vec![],
            reading: vec![],
            model_gpu: Some("GPU".into()),
            power_from_profile: true,
            time_in_seconds: true,
            points,
            optima,
            policy: vec![ObjectivePolicy {
                objective: "E".into(),
                fixed_mhz: Some(800.0),
                fixed_mem_mhz: None,
                model_regret_pct: 3.0,
                fixed_regret_pct: 1.0,
                held_out_jobs: 5,
            }],
            out_of_bounds: vec![],
        }
    }

    /// A sweep point above the board limit is an error at that point, in the table's preamble and in the
    /// point's own CSV cell; the points within the limit carry none.
    #[test]
    fn points_above_the_board_limit_are_errors_at_their_clocks() {
        let mut v100 = ArchProfile::builtin("v100").unwrap();
        // The V100 sweep of the README's DCGM example draws 21.8–52.7 W: a 40 W limit cuts through it.
        v100.tdp_w.value = 40.0;
        let points = vec![point(945.0, 9.52, 272.7), point(1237.0, 7.30, 308.2), point(1380.0, 6.55, 345.4)];
        let errors = beyond_the_board(&v100, &points, None);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("at 1237 MHz: power 42.2 W is above the v100 board limit of 40 W"),
            "{errors:?}"
        );
        assert!(errors[1].starts_with("at 1380 MHz: power 52.7 W"), "{errors:?}");
        // The fixture's points draw 125, 134.6 and 160 W: a 130 W limit flags the last two.
        v100.tdp_w.value = 130.0;
        let mut s = sweep([1500.0, 1400.0, 1600.0], 0.05);
        s.out_of_bounds = beyond_the_board(&v100, &s.points, None);
        assert_eq!(s.out_of_bounds.len(), 2, "{:?}", s.out_of_bounds);
        assert!(s.preamble().iter().any(|l| l.starts_with("ERROR at 1000 MHz: power")), "{:?}", s.preamble());
        let rows = &s.sections()[0];
        let last = |i: usize| format!("{:?}", rows.rows[i].last().unwrap());
        assert!(last(1).contains("board limit of 130 W") && !last(0).contains("board limit"), "{}", last(0));
        // The Titan X's measured idle bounds a sweep from below at the profile's memory clock.
        let titanx = ArchProfile::builtin("titanx").unwrap();
        let low = [point(975.0, 1.0, 50.0)];
        assert!(
            beyond_the_board(&titanx, &low, Some(3505.0))[0]
                .contains("below the titanx idle power of 75.5 W")
        );
        assert!(beyond_the_board(&titanx, &low, Some(810.0)).is_empty());
    }

    fn advice(s: &ClockSweep) -> String {
        s.notes().into_iter().find(|n| n.starts_with("advice for least energy")).expect("an advice line")
    }

    #[test]
    fn fixed_clock_advice_names_the_model_pick_it_replaces_or_says_they_agree() {
        // The model's least energy is 1000 MHz: the fixed 800 MHz replaces it.
        let s = sweep([1500.0, 1400.0, 1600.0], 0.05);
        assert!(
            advice(&s).starts_with("advice for least energy: run at 800 MHz, not the model's 1000 MHz"),
            "{}",
            advice(&s)
        );
        // The model's least energy is 800 MHz itself: one clock, said once.
        let s = sweep([1300.0, 1400.0, 1600.0], 0.05);
        let a = advice(&s);
        assert!(a.starts_with("advice for least energy: run at 800 MHz, the model's pick"), "{a}");
        assert!(!a.contains("not the model's"), "{a}");
    }

    #[test]
    fn a_slowdown_bound_met_only_by_the_highest_clock_does_not_compare_it_with_itself() {
        let within =
            |s: &ClockSweep| s.notes().into_iter().find(|n| n.starts_with("within")).expect("a within line");
        // 1000 MHz is 4% slower and saves energy: compared with 1200 MHz.
        let s = sweep([1500.0, 1400.0, 1600.0], 0.05);
        assert_eq!(
            within(&s),
            "within 5.0% slowdown: 1000 MHz uses 12.5% less energy than 1200 MHz and is 4.0% slower"
        );
        // With a 1% bound only 1200 MHz qualifies.
        let s = sweep([1500.0, 1400.0, 1600.0], 0.01);
        let w = within(&s);
        assert!(w.starts_with("within 1.0% slowdown: 1200 MHz, the highest clock"), "{w}");
        assert!(!w.contains("than 1200 MHz"), "{w}");
    }
}
