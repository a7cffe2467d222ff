//! gpumodel-report owns the pictures: it reads the JSON that `gpumodel predict | validate | split | train
//! --format json` print (and the collector's trace sidecar), draws each result's figures as SVG with
//! plotters, and assembles them into one self-contained HTML page (inline SVG and CSS, no script, no
//! network fetch).
//!
//! Each command's reader lives in its own small module with serde "view" structs of only the fields it
//! plots, so a renamed field is a one-line change. A result that carries the output layer's envelope
//! (`"command"`, `"format_version"`) is dispatched on it; a result without it (the layouts printed before
//! the envelope) is recognised by its shape.
//!
//! ```
//! let json = r#"{"command": "predict", "format_version": 1, "kernel": "k", "arch": "a",
//!   "prediction": {"time_s": 2e-3, "power_w": 100.0, "energy_j": 0.2,
//!     "detail": {"bottleneck": "compute", "time_s": 2e-3,
//!       "components": [{"name": "global load", "time_s": 5e-4}, {"name": "compute", "time_s": 1.5e-3}]}}}"#;
//! let svg = gpumodel_report::figure_for(json).unwrap();
//! assert!(svg.starts_with("<svg") && svg.contains("class=\"marks\""));
//! ```

mod collect;
mod error;
pub mod figure;
mod html;
mod predict;
pub mod record;
mod split;
mod train;
mod validate;

pub use error::{Error, Result};
pub use figure::{Figure, Note};

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The commands whose results the report reads, with the JSON `format_version` each reader understands.
pub const SUPPORTED: &[(&str, u64)] =
    &[("predict", 1), ("validate", 2), ("split", 1), ("split-fit", 1), ("train", 1), ("collect", 1)];

/// Which command produced a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Predict,
    Validate,
    Split,
    Train,
    Collect,
    /// Any other command's result: nothing to plot, its fields as tables ([`record`]).
    Other,
}

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Command::Predict => "predict",
            Command::Validate => "validate",
            Command::Split => "split",
            Command::Train => "train",
            Command::Collect => "collect",
            Command::Other => "result",
        }
    }
}

/// One input of a report: a command's result.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file name people see (never the full path: a report may be mailed).
    pub name: String,
    pub command: Command,
    pub json: Value,
    /// The trace's CSV, for a collector sidecar.
    pub trace_csv: Option<PathBuf>,
}

/// Everything drawn from one source.
#[derive(Debug, Clone)]
pub struct Section {
    pub source: String,
    pub command: Command,
    /// A one-line description (kernel, dataset, case title …).
    pub subtitle: String,
    pub figures: Vec<Figure>,
    pub notes: Vec<Note>,
    /// The result's fields, for a command with nothing to plot.
    pub tables: Vec<record::FieldTable>,
}

fn expected() -> String {
    "the JSON a gpumodel command prints with `--format json`, or a collector trace's \
     .json sidecar"
        .into()
}

/// Which command wrote `v`: from the envelope when present, else from the layout.
pub fn identify(file: &str, v: &Value) -> Result<Command> {
    let Some(obj) = v.as_object() else {
        return Err(Error::input(file, format!("not a JSON object; expected {}", expected())));
    };
    if let Some(cmd) = obj.get("command").and_then(Value::as_str) {
        // `collect` prints a summary of its run; the figures are drawn from the trace it names.
        if let (true, Some(trace)) = (cmd == "collect", obj.get("trace").and_then(Value::as_str)) {
            return Err(Error::input(
                file,
                format!(
                    "this is the run summary `gpumodel collect` prints, not its trace: pass the trace {trace} \
                     (or its .json sidecar) to `gpumodel report`"
                ),
            ));
        }
        let Some(&(_, want)) = SUPPORTED.iter().find(|(c, _)| *c == cmd) else {
            return Ok(Command::Other);
        };
        let got = obj.get("format_version").and_then(Value::as_u64);
        if got != Some(want) {
            let got = got.map_or_else(|| "no format_version".to_string(), |g| format!("format_version {g}"));
            return Err(Error::input(
                file,
                format!(
                    "`{cmd}` result with {got}; this gpumodel reads format_version {want}: re-run `gpumodel {cmd} \
                     --format json` with this version"
                ),
            ));
        }
        return Ok(match cmd {
            "predict" => Command::Predict,
            "validate" => Command::Validate,
            "split" | "split-fit" => Command::Split,
            "train" => Command::Train,
            _ => Command::Collect,
        });
    }
    if let Some(f) = obj.get("format").and_then(Value::as_str).filter(|f| f.starts_with("gpumodel-trace/")) {
        if f != gpumodel_models::trace::TRACE_FORMAT {
            return Err(Error::input(
                file,
                format!("trace format {f}; this gpumodel reads {}", gpumodel_models::trace::TRACE_FORMAT),
            ));
        }
        return Ok(Command::Collect);
    }
    // Layouts printed before the envelope existed.
    let has = |k: &str| obj.contains_key(k);
    if has("kernel") && has("arch") && (has("prediction") || has("sweep")) {
        Ok(Command::Predict)
    } else if has("per_kernel") && has("objectives") && has("kernels") {
        Ok(Command::Validate)
    } else if has("models") && has("feature_set") && has("data") {
        Ok(Command::Train)
    } else if has("title") && obj.get("model").and_then(Value::as_str).is_some() {
        Ok(Command::Split)
    } else {
        Err(Error::input(
            file,
            format!("no \"command\" field and not a layout the report knows; expected {}", expected()),
        ))
    }
}

/// Reads one result file (JSON; for a trace, its sidecar or its CSV).
pub fn read_source(path: &Path) -> Result<Source> {
    let name =
        path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
    let (json_path, csv) = if path.extension().is_some_and(|e| e == "csv") {
        (path.with_extension("json"), Some(path.to_path_buf()))
    } else {
        (path.to_path_buf(), None)
    };
    let text = std::fs::read_to_string(&json_path).map_err(|e| Error::io(&json_path, e))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| Error::input(&name, format!("not JSON ({e}); expected {}", expected())))?;
    let command = identify(&name, &json)?;
    let trace_csv = match command {
        Command::Collect => Some(csv.unwrap_or_else(|| json_path.with_extension("csv"))),
        _ => None,
    };
    Ok(Source { name, command, json, trace_csv })
}

/// Reads a source from JSON text (no trace CSV).
pub fn source_from_str(name: &str, json: &str) -> Result<Source> {
    let json: Value = serde_json::from_str(json)
        .map_err(|e| Error::input(name, format!("not JSON ({e}); expected {}", expected())))?;
    let command = identify(name, &json)?;
    Ok(Source { name: name.to_string(), command, json, trace_csv: None })
}

/// Draws every figure one source supports, and notes for those it cannot.
pub fn section(source: &Source) -> Result<Section> {
    let file = source.name.as_str();
    let v = &source.json;
    let (subtitle, figures, notes) = match source.command {
        Command::Predict => predict::figures(file, v)?,
        Command::Validate => validate::figures(file, v)?,
        Command::Split => split::figures(file, v)?,
        Command::Train => train::figures(file, v)?,
        Command::Collect => collect::figures(file, v, source.trace_csv.as_deref())?,
        Command::Other => {
            let cmd = v.get("command").and_then(Value::as_str).unwrap_or("?");
            let tables = record::tables(v);
            let subtitle =
                format!("`gpumodel {cmd}`: nothing to plot; its fields, as the command printed them");
            return Ok(Section {
                source: source.name.clone(),
                command: source.command,
                subtitle,
                figures: vec![],
                notes: vec![],
                tables,
            });
        }
    };
    Ok(Section {
        source: source.name.clone(),
        command: source.command,
        subtitle,
        figures,
        notes,
        tables: vec![],
    })
}

/// The first figure of one result's JSON, as an SVG document (the `--plot` of a single command).
pub fn figure_for(json: &str) -> Result<String> {
    let source = source_from_str("input", json)?;
    let s = section(&source)?;
    s.figures.into_iter().next().map(|f| f.svg).ok_or_else(|| {
        Error::input("input", s.notes.first().map_or("nothing to plot".to_string(), |n| n.text.clone()))
    })
}

/// The HTML page of the given sections.
pub fn render_html(sections: &[Section]) -> String {
    html::page(sections)
}

/// Writes `text` to `path` atomically (the workspace's one atomic write,
/// `gpumodel_models::atomic::write_atomic`), creating the directory; an existing file is kept unless `force`.
pub fn write_output(path: &Path, text: &str, force: bool) -> Result<()> {
    if path.exists() && !force {
        return Err(Error::Exists(path.display().to_string()));
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    Ok(gpumodel_models::atomic::write_atomic(path, text.as_bytes())?)
}

/// Deserializes a reader's view of `v`, naming the file and the command on failure.
pub(crate) fn view<T: serde::de::DeserializeOwned>(file: &str, cmd: &str, v: &Value) -> Result<T> {
    T::deserialize(v)
        .map_err(|e| Error::input(file, format!("not a `gpumodel {cmd}` result this version reads: {e}")))
}
