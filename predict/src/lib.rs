//! # gpumodel-predict — answers from models
//!
//! Owns prediction: from a kernel profile to time, power, energy and bottlenecks (the counter-based
//! pipeline timing model with the trained power model), sweeps over warps and clocks with their
//! E^a·D^b optima, cluster energy versus node count, and the CPU/GPU work split optimizer.

pub mod split;
