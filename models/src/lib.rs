//! # gpumodel-models — the shared vocabulary
//!
//! Everything the other crates agree on, in pure Rust (no CUDA, no burn): physical units; the training
//! table, feature sets and the `Dataset` with its folds; the readers of every file format (Guerreiro,
//! NV-DVFS, our own tables) and the registry of public datasets; model artifacts and their inference;
//! GPU architecture profiles, the counter-based pipeline timing model, and energy and E^a·D^b.
//!
//! ```
//! use gpumodel_models::import::{import_bytes, BadRows, Format};
//! let csv = "2\n975,3505\n1,1\nSP,DRAM\nk,120.5,975,3505,0.4,0.1\n";
//! let table = import_bytes(csv.as_bytes(), "example", Format::Guerreiro, BadRows::Fail)?.table;
//! assert_eq!(table.column("power_w").unwrap()[0], 120.5);
//! # Ok::<(), gpumodel_models::Error>(())
//! ```

pub mod arch;
pub mod artifact;
pub mod atomic;
pub mod capability;
pub mod catalogue;
pub mod cluster;
pub mod counters;
pub mod dataset;
pub mod energy;
pub mod error;
pub mod export;
pub mod features;
pub mod featureset;
pub mod gpu_name;
pub mod import;
pub mod ncu;
pub mod power_inputs;
pub mod profile;
pub mod registry;
pub mod stats;
pub mod table;
pub mod timing;
pub mod trace;
pub mod uncertainty;
pub mod units;
pub mod utilization;

pub use dataset::{Dataset, Fold};
pub use error::{Error, Result};
pub use featureset::FeatureSet;
pub use table::Table;
pub use units::{Joules, Mhz, Seconds, Watts};
