//! Clock advice from a utilization profile (`gpumodel predict --profile`): which clock model answers and
//! the sweep over its core clocks. The clock models themselves live in
//! [`gpumodel_models::utilization::model`]; `gpumodel-train` fits them.

pub mod choose;
pub mod sweep;

pub use choose::{Choice, choose, gpu_matches, known_gpus, same_gpu_model, shipped};
pub use sweep::{ClockSweep, SweepRequest, sweep_profile};
