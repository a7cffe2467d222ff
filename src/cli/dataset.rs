//! `gpumodel dataset list|show|fetch` — the registry of public datasets.

use super::output::{OutputFormat, render_table};
use anyhow::Context;
use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{self, Found, Locator, Registry};
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// List the registered datasets and whether each is on this machine.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: OutputFormat,
    },
    /// Rows, columns, kernels, clocks, power range, license and citation of a dataset (name or path).
    Show {
        /// A registered name (see `gpumodel dataset list`) or the path of a file.
        name: String,
        /// Format of a file given by path: guerreiro, nvdvfs or table (guessed when omitted).
        #[arg(long = "import", value_name = "FORMAT")]
        import: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        format: OutputFormat,
    },
    /// Download a dataset from its origin into the cache and verify its sha256.
    Fetch {
        /// Registered names; `all` fetches every one.
        #[arg(required = true)]
        names: Vec<String>,
    },
}

#[derive(Debug, Serialize)]
struct ListRow<'a> {
    name: &'a str,
    gpu: &'a str,
    importer: &'a str,
    location: Option<String>,
    found: Option<Found>,
    description: &'a str,
}

#[derive(Debug, Serialize)]
struct Show {
    name: String,
    path: String,
    found: Found,
    format: &'static str,
    sha256: String,
    rows: usize,
    kernels: usize,
    numeric_columns: Vec<String>,
    text_columns: Vec<String>,
    core_mhz: Vec<f64>,
    mem_mhz: Vec<f64>,
    power_w: Option<(f64, f64)>,
    time_s: Option<(f64, f64)>,
    gpu: Option<String>,
    license: Option<String>,
    citation: Option<String>,
    origin: Option<registry::Origin>,
    test_set: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loc = Locator::from_env();
    let reg = Registry::builtin();
    match args.action {
        Action::List { format } => {
            let rows: Vec<ListRow> = reg
                .datasets
                .iter()
                .map(|e| {
                    let found = loc.resolve(e).ok();
                    ListRow {
                        name: &e.name,
                        gpu: &e.gpu,
                        importer: &e.importer,
                        location: found.as_ref().map(|(p, _)| p.display().to_string()),
                        found: found.map(|(_, f)| f),
                        description: &e.description,
                    }
                })
                .collect();
            match format {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
                _ => {
                    let body: Vec<Vec<String>> = rows
                        .iter()
                        .map(|r| {
                            vec![
                                r.name.to_string(),
                                r.gpu.to_string(),
                                r.importer.to_string(),
                                r.location
                                    .clone()
                                    .unwrap_or_else(|| "missing (gpumodel dataset fetch)".into()),
                            ]
                        })
                        .collect();
                    print!("{}", render_table(&["name", "gpu", "importer", "location"], &body));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Action::Show { name, import, format } => {
            let fmt = import.as_deref().map(gpumodel_models::import::Format::from_name).transpose()?;
            let opened = registry::open(&name, fmt, BadRows::Fail, &loc)?;
            let bytes = std::fs::read(&opened.path).with_context(|| opened.path.display().to_string())?;
            let t = &opened.imported.table;
            let e = opened.entry.as_ref();
            let show = Show {
                name: name.clone(),
                path: opened.path.display().to_string(),
                found: opened.found,
                format: opened.format.name(),
                sha256: registry::sha256_hex(&bytes),
                rows: t.n_rows(),
                kernels: t.distinct_groups().len(),
                numeric_columns: t.columns.clone(),
                text_columns: std::iter::once(t.group_column.clone())
                    .chain(t.text.iter().map(|c| c.name.clone()))
                    .collect(),
                core_mhz: t.distinct_values("core_mhz"),
                mem_mhz: t.distinct_values("mem_mhz"),
                power_w: t.range("power_w"),
                time_s: t.range("time_s"),
                gpu: e.map(|e| e.gpu.clone()),
                license: e.map(|e| e.license.clone()),
                citation: e.map(|e| e.citation.clone()),
                origin: e.map(|e| e.origin.clone()),
                test_set: e.and_then(|e| e.test_set.clone()),
            };
            match format {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&show)?),
                _ => print!("{}", render_show(&show)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Action::Fetch { names } => {
            let names: Vec<String> = if names.iter().any(|n| n == "all") {
                reg.names().into_iter().map(String::from).collect()
            } else {
                names
            };
            for n in &names {
                let entry = reg.get(n)?;
                let (path, found) = loc.fetch(entry)?;
                let how = match found {
                    Found::Downloaded => "downloaded, sha256 verified",
                    _ => "already present, sha256 verified",
                };
                println!("{n}: {} ({how})", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values.iter().map(|v| format!("{v}")).collect::<Vec<_>>().join(", ")
}

fn render_show(s: &Show) -> String {
    let mut o = String::new();
    let mut kv = |k: &str, v: String| o.push_str(&format!("{k:<16}{v}\n"));
    kv("dataset", s.name.clone());
    kv("file", format!("{} ({:?})", s.path, s.found));
    kv("format", s.format.to_string());
    kv("sha256", s.sha256.clone());
    if let Some(g) = &s.gpu {
        kv("gpu", g.clone());
    }
    kv("rows", s.rows.to_string());
    kv("kernels", s.kernels.to_string());
    kv("columns", format!("{} numeric: {}", s.numeric_columns.len(), s.numeric_columns.join(", ")));
    kv("text columns", s.text_columns.join(", "));
    kv("core clocks", format!("{} MHz ({} values)", list(&s.core_mhz), s.core_mhz.len()));
    kv("memory clocks", format!("{} MHz ({} values)", list(&s.mem_mhz), s.mem_mhz.len()));
    if let Some((lo, hi)) = s.power_w {
        kv("power", format!("{lo:.2} – {hi:.2} W"));
    }
    if let Some((lo, hi)) = s.time_s {
        kv("kernel time", format!("{:.4} – {:.4} ms", lo * 1e3, hi * 1e3));
    }
    if let Some(t) = &s.test_set {
        kv("test set", t.clone());
    }
    if let Some(l) = &s.license {
        kv("license", l.clone());
    }
    if let Some(c) = &s.citation {
        kv("cite", c.clone());
    }
    if let Some(og) = &s.origin {
        kv("origin", format!("{} @ {} {}", og.repository, og.commit, og.path));
    }
    o
}
