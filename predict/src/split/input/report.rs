//! The one serializable report every model produces ([`Report`]), and its parts.

use crate::split::cg::CgReport;
use crate::split::dvfs::Cell;
use crate::split::from_model::Derived;
use crate::split::pareto::ParetoPoint;
use crate::split::peach::{SplitPoint, StaffordCase, StaffordRange, TwoDevice};
use serde::Serialize;

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
