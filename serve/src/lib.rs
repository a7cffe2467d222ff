//! # gpumodel-serve — live GPU energy per GPU, process and container, for Prometheus
//!
//! One sampling thread reads every GPU through [`telemetry::Telemetry`] (NVML on a node, a recorded trace in
//! replay, a scripted GPU in tests; the collector's device layer, `gpumodel_collect::device`, opens it),
//! splits each tick's energy-counter increment into idle, per-process and unattributed parts
//! ([`attribution`]), and keeps running totals ([`state`]). The HTTP server ([`http`])
//! only renders those totals ([`metrics`]): a scrape never calls NVML. A GPU with a clock model also gets
//! the SM clock that model recommends for its recent activity ([`advice`]). Read-only on the GPU.

pub mod advice;
pub mod attribution;
pub use gpumodel_collect::cgroup;
pub mod http;
pub mod metrics;
pub use gpumodel_collect::replay;
pub mod state;
pub mod synthetic;
pub mod synthetic_mig;
pub use gpumodel_collect::telemetry;
