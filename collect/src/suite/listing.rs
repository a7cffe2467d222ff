//! What `gpumodel collect --suite --list-kernels` prints: the suite's kernels, the knob each sets, the
//! share of the GPU's grid it launches, the counters it drives and its execution pattern.

use super::{SuiteKernel, kernels};
use gpumodel_models::export::{Cell, Column, Export, Section};
use serde::Serialize;

/// One suite kernel with its catalogue entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListedKernel {
    #[serde(flatten)]
    pub kernel: SuiteKernel,
    pub drives: Vec<String>,
    pub pattern: String,
}

/// The suite's kernels, in run order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelList {
    pub kernels: Vec<ListedKernel>,
}

impl KernelList {
    /// Every kernel of the built-in suite.
    pub fn builtin() -> KernelList {
        let kernels = kernels()
            .into_iter()
            .map(|k| {
                let e = k.entry();
                ListedKernel {
                    drives: e.map(|e| e.drives.iter().map(|d| d.to_string()).collect()).unwrap_or_default(),
                    pattern: e.map(|e| e.pattern.to_string()).unwrap_or_default(),
                    kernel: k,
                }
            })
            .collect();
        KernelList { kernels }
    }
}

impl Export for KernelList {
    const COMMAND: &'static str = "collect-suite-kernels";

    fn sections(&self) -> Vec<Section> {
        let mut s = Section::new(vec![
            Column::new("kernel", "kernel"),
            Column::new("knob", "knob"),
            Column::new("grid_fraction", "grid"),
            Column::new("drives", "drives"),
            Column::new("pattern", "pattern"),
        ]);
        for k in &self.kernels {
            s.push(vec![
                Cell::text(&k.kernel.name),
                Cell::int(k.kernel.knob),
                Cell::shown(k.kernel.grid_fraction, k.kernel.grid_fraction.to_string()),
                Cell::Text(k.drives.join(" ")),
                Cell::text(&k.pattern),
            ]);
        }
        vec![s]
    }
}
