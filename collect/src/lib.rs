//! # gpumodel-collect — measuring on real hardware
//!
//! Owns everything that touches a GPU: NVML power sampling on a drift-free thread, CUPTI PM sampling and
//! range profiling (through `cudarc`'s dynamically loaded bindings), the process runner that spawns the
//! measured program, the merging of samples into traces, and the microbenchmark suite compiled with
//! NVRTC. The hardware sits behind the `PowerSource` and `CounterSource` traits with scripted fakes beside
//! the real implementations, so everything above it is tested on machines without a GPU.

pub mod calibrate;
pub mod nvrtc;
pub mod suite;
