//! Shared loading for the benches: the Titan X training and test sets (GPUMODEL_DATA_DIR, else
//! ../shared/datasets), with the default feature set.

use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{Locator, open};
use gpumodel_models::{Dataset, features};
use std::path::PathBuf;

pub fn titanx(name: &str) -> Dataset {
    let mut loc = Locator::from_env();
    if loc.data_dir.is_none() {
        loc.data_dir = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets"));
    }
    let table = open(name, None, BadRows::Fail, &loc).expect("set GPUMODEL_DATA_DIR").imported.table;
    let fs = features::guerreiro_default(&table).unwrap();
    Dataset::from_table(&table, &fs).unwrap()
}
