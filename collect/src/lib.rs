//! # gpumodel-collect — measuring on real hardware
//!
//! Owns everything that touches a GPU: NVML power sampling on a drift-free thread, CUPTI PM sampling and
//! range profiling (through `cudarc`'s dynamically loaded bindings), the process runner that spawns the
//! measured program, the merging of samples into traces, and the microbenchmark suite compiled with
//! NVRTC. The hardware sits behind the `PowerSource` and `CounterSource` traits with scripted fakes beside
//! the real implementations, so everything above it is tested on machines without a GPU.
//!
//! ```
//! use gpumodel_collect::{fake::FakePower, sampler::{spawn_power, Clock, Event}};
//! let clock = Clock::new();
//! let (tx, rx) = std::sync::mpsc::channel();
//! let running = spawn_power(FakePower::constant(clock, 42.0), 60.0, clock, tx)?;
//! std::thread::sleep(std::time::Duration::from_millis(50));
//! let (_source, stats) = running.stop()?;
//! assert!(stats.samples >= 1);
//! assert!(rx.try_iter().any(|e| matches!(e, Event::Power(p) if p.reading.power.get() == 42.0)));
//! # Ok::<(), gpumodel_collect::Error>(())
//! ```

pub mod calibrate;
pub mod cgroup;
pub mod clock_control;
pub mod clocks;
pub mod counters;
pub mod cuda_gpu;
pub mod cupti;
pub mod device;
pub mod doctor;
pub mod error;
pub mod fake;
pub mod kernels;
pub mod nvml;
pub mod nvrtc;
pub mod pci;
pub mod power;
pub mod replay;
pub mod run;
pub mod sampler;
pub mod suite;
pub mod telemetry;

pub use counters::{CounterInterval, CounterSource};
pub use error::{Error, Result};
pub use power::{PowerField, PowerInfo, PowerReading, PowerSource};
