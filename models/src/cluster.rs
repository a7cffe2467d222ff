//! Cluster energy and E^a·D^b versus node count (paper eq. 5.15/5.16, Fig. 5.17): the reader of the
//! measured node points, the evaluation over node counts, and the command's result.

use crate::energy::{ClusterModel, NodePoint, Objective};
use crate::export::{Cell, Column, Export, Section};
use crate::{Error, Result};
use serde::Serialize;

/// Columns a node-point file must have; `gpu_time_s` is optional (default: the run time).
pub const REQUIRED_COLUMNS: [&str; 4] = ["nodes", "time_s", "gpu_power_w", "idle_power_w"];

/// Reads `nodes,time_s,gpu_power_w,idle_power_w[,gpu_time_s]` (any column order; `#` lines are comments;
/// quoted cells allowed). Errors name the file, the line and the column.
pub fn read_node_points(text: &str, source: &str) -> Result<Vec<NodePoint>> {
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| Error::Format { file: source.into(), message: format!("unreadable header: {e}") })?
        .iter()
        .map(str::to_string)
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(Error::Format {
            file: source.into(),
            message: format!("empty file: expected a header {}[,gpu_time_s]", REQUIRED_COLUMNS.join(",")),
        });
    }
    let col = |n: &str| header.iter().position(|h| h == n);
    let missing: Vec<&str> = REQUIRED_COLUMNS.iter().copied().filter(|n| col(n).is_none()).collect();
    if !missing.is_empty() {
        return Err(Error::Format {
            file: source.into(),
            message: format!(
                "the header lacks column(s) {} (expected {}[,gpu_time_s])",
                missing.join(", "),
                REQUIRED_COLUMNS.join(",")
            ),
        });
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record
            .map_err(|e| Error::Format { file: source.into(), message: format!("unreadable row: {e}") })?;
        let line = record.position().map_or(0, csv::Position::line);
        let get = |n: &str| -> Result<Option<f64>> {
            let Some(j) = col(n) else { return Ok(None) };
            let parse_err =
                |message: String| Error::Parse { file: source.into(), line, column: n.into(), message };
            let cell = record.get(j).ok_or_else(|| parse_err("the cell is missing".into()))?;
            let v = cell.parse::<f64>().ok().filter(|v| v.is_finite());
            v.map(Some).ok_or_else(|| parse_err(format!("'{cell}' is not a finite number")))
        };
        let time_s = get("time_s")?.unwrap_or(0.0);
        out.push(NodePoint {
            nodes: get("nodes")?.unwrap_or(0.0),
            time_s,
            gpu_time_s: get("gpu_time_s")?.unwrap_or(time_s),
            gpu_power_w: get("gpu_power_w")?.unwrap_or(0.0),
            idle_power_w: get("idle_power_w")?.unwrap_or(0.0),
        });
    }
    Ok(out)
}

/// One node count of the evaluated curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterPoint {
    pub nodes: f64,
    pub time_s: f64,
    pub energy_j: f64,
    pub gpu_power_w: f64,
    pub idle_power_w: f64,
    /// E^a·D^b for each objective of the report, in its order.
    pub objective_values: Vec<f64>,
}

/// The node count minimizing one objective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterOptimum {
    pub objective: String,
    pub nodes: f64,
    pub value: f64,
}

/// The result of `gpumodel cluster`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    /// Where the measured points came from (a file name as given, or the built-in example).
    pub input: String,
    pub measured_points: usize,
    pub model: ClusterModel,
    pub objectives: Vec<String>,
    pub points: Vec<ClusterPoint>,
    pub optima: Vec<ClusterOptimum>,
}

impl ClusterReport {
    /// Fits the cluster model to the measured points and evaluates node counts 1..=`max_nodes`.
    pub fn evaluate(
        input: &str,
        measured: &[NodePoint],
        max_nodes: u32,
        objectives: &[Objective],
    ) -> Result<ClusterReport> {
        if max_nodes == 0 {
            return Err(Error::Invalid("--max-nodes must be at least 1".into()));
        }
        let model = ClusterModel::fit(measured)?;
        let curve: Vec<NodePoint> = (1..=max_nodes).map(|n| model.at(f64::from(n))).collect();
        let ed: Vec<(f64, f64)> = curve.iter().map(|p| (p.energy_j(), p.time_s)).collect();
        let points = curve
            .iter()
            .zip(&ed)
            .map(|(p, &(e, d))| ClusterPoint {
                nodes: p.nodes,
                time_s: p.time_s,
                energy_j: e,
                gpu_power_w: p.gpu_power_w,
                idle_power_w: p.idle_power_w,
                objective_values: objectives.iter().map(|o| o.value(e, d)).collect(),
            })
            .collect();
        let optima = objectives
            .iter()
            .filter_map(|o| {
                let i = o.argmin(&ed)?;
                Some(ClusterOptimum {
                    objective: o.label(),
                    nodes: curve[i].nodes,
                    value: o.value(ed[i].0, ed[i].1),
                })
            })
            .collect();
        Ok(ClusterReport {
            input: input.to_string(),
            measured_points: measured.len(),
            model,
            objectives: objectives.iter().map(|o| o.label()).collect(),
            points,
            optima,
        })
    }
}

impl Export for ClusterReport {
    const COMMAND: &'static str = "cluster";

    fn preamble(&self) -> Vec<String> {
        let m = &self.model;
        vec![format!(
            "fitted on {} point(s) of {}: T(n) = {:.4} + {:.4}/n s, GPU busy {:.4} + {:.4}/n s",
            self.measured_points, self.input, m.serial_s, m.parallel_s, m.gpu_serial_s, m.gpu_parallel_s
        )]
    }

    fn sections(&self) -> Vec<Section> {
        let mut columns = vec![
            Column::new("nodes", "nodes"),
            Column::new("time_s", "time s"),
            Column::new("energy_j", "energy J"),
            Column::new("gpu_power_w", "GPU W"),
            Column::new("idle_power_w", "idle W"),
        ];
        columns.extend(self.objectives.iter().map(|o| Column::new(o.to_ascii_lowercase(), o.clone())));
        let mut s = Section::new(columns);
        for p in &self.points {
            let mut row = vec![
                Cell::num(p.nodes, 0),
                Cell::num(p.time_s, 3),
                Cell::num(p.energy_j, 1),
                Cell::num(p.gpu_power_w, 1),
                Cell::num(p.idle_power_w, 1),
            ];
            row.extend(p.objective_values.iter().map(|v| Cell::sci(*v, 4)));
            s.push(row);
        }
        vec![s]
    }

    fn notes(&self) -> Vec<String> {
        self.optima
            .iter()
            .map(|o| {
                format!("optimum {:>6}: {} node(s) ({} = {:.4e})", o.objective, o.nodes, o.objective, o.value)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_takes_any_column_order_comments_and_quotes() {
        let text = "# measured\n\"idle_power_w\",nodes,time_s,gpu_power_w\n100,1,90,200\n100 , 2 ,50,200\n";
        let p = read_node_points(text, "c.csv").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!((p[1].nodes, p[1].time_s, p[1].gpu_time_s, p[1].idle_power_w), (2.0, 50.0, 50.0, 100.0));
    }

    #[test]
    fn reader_names_file_line_and_column() {
        let e =
            read_node_points("nodes,time_s,gpu_power_w,idle_power_w\n1,90,200,100\n2,NaN,200,100\n", "c.csv")
                .unwrap_err()
                .to_string();
        assert_eq!(e, "c.csv:3: column time_s: 'NaN' is not a finite number");
        let e = read_node_points("nodes,time_s\n1,2\n", "c.csv").unwrap_err().to_string();
        assert!(e.contains("lacks column(s) gpu_power_w, idle_power_w"), "{e}");
        let e = read_node_points("", "c.csv").unwrap_err().to_string();
        assert!(e.contains("empty file"), "{e}");
    }
}
