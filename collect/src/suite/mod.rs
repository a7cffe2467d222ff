//! The built-in microbenchmark suite: CUDA C kernels for the execution patterns of paper §5.4-B, each at
//! several intensities, run at each requested clock pair to build a training table for this GPU.
//!
//! The kernels live in `collect/kernels/suite.cu` (embedded), are compiled at run time by NVRTC for the
//! GPU's architecture and launched through the [`SuiteDevice`] trait: [`cuda::CudaSuiteDevice`] on a real
//! GPU, [`FakeSuiteDevice`] in tests. The run loop ([`run_suite`]) writes one table row per kernel × clock
//! pair and flushes it at once, so an interrupted run keeps every finished row and `--resume` continues
//! where it stopped.
//!
//! One job per file: `catalogue` (source, functions, kernels), `ptx` (checks on the emitted PTX), `device`
//! (the [`SuiteDevice`] trait and what it measures), `clocks` (setting and putting back the clocks through
//! NVML), `runner` (the run loop), `table` (the training table written), `profiles` (the utilization
//! profiles written beside a table over clock pairs), `listing` (`--list-kernels`), `report` (what a run
//! prints).

mod catalogue;
pub mod cuda;
mod device;
mod fake;
pub mod listing;
pub mod profiles;
mod ptx;
pub mod report;
mod runner;
mod table;

pub use crate::clock_control::{ClockControl, ClockOutcome, NvmlClocks};
pub use catalogue::{BUFFER_ELEMS, ENTRIES, Entry, SOURCE, SuiteKernel, kernels, select_kernels};
pub use device::{GpuInfo, Measurement, Peaks, SuiteDevice};
pub use fake::{FakeSuiteDevice, Work};
pub use ptx::{LANE_DEPENDENT_BRANCH, ptx_function, ptx_has};
pub use runner::{Plan, Progress, Summary, run_suite};
pub use table::{SuiteMetadata, feature_set_path, feature_set_toml, read_done, suite_header};

#[cfg(test)]
mod tests;
