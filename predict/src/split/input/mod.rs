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
//!
//! One job per file: `schema` (the file's sections and reading them), `dispatch` (which model runs and
//! how), `report` (what every model returns), `fit` (`gpumodel split fit`).

mod dispatch;
mod fit;
mod report;
mod schema;
#[cfg(test)]
mod tests;

pub use fit::{FitRow, fit_laws};
pub use report::{Best, Front, GlobalBest, Report, Savings};
pub use schema::{CaseFile, Compare, Cpu, Gpu, Workload, load, parse};
