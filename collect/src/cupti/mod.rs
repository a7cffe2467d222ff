//! CUPTI through `cudarc`'s dynamically loaded bindings: finding the libraries, the Profiler Host API
//! (metric names → config images, pass counts; works without a GPU), and PM sampling on a real GPU.

pub mod check;
pub mod dcgm;
pub mod host;
pub mod loader;
pub mod pm;
pub mod pm_timing;
pub mod range;
