//! The experiment behind `gpumodel train`: the candidate models ([`candidates`]), the settings checked
//! against each other and then against the data ([`params`]), one run of every candidate under every
//! evaluation protocol with the default chosen by grouped cross-validation on the training data only
//! ([`run`]), and the one typed result every output format renders ([`report`]).
//!
//! ```no_run
//! use gpumodel_train::experiment::TrainParams;
//! let prepared = TrainParams { models: vec!["physical".into(), "mlr".into()], ..TrainParams::default() }
//!     .check()?
//!     .prepare()?;
//! let folds = prepared.run.fold_sets(&prepared.train)?;
//! let (report, fitted) = prepared.run.run(&prepared.train, prepared.test.as_ref(), &folds, &mut |_| {})?;
//! println!("default: {:?}, {} artifacts", report.selection.map(|s| s.chosen), fitted.len());
//! # Ok::<(), gpumodel_train::Error>(())
//! ```

pub mod candidates;
pub mod data;
pub mod params;
pub mod report;
pub mod run;

pub use candidates::{CANDIDATE_HELP, CandidateName, CandidateSpec, DEFAULT_CANDIDATES};
pub use data::{DataInfo, default_prefix, open_dataset, physical_roles};
pub use params::{CheckedParams, DEFAULT_SELECTION_SEEDS, Prepared, TrainParams};
pub use report::{Candidate, Fitted, ModelReport, Selection, TrainReport, select_default};
pub use run::{FoldSets, RunParams};
