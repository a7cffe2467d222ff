//! `gpumodel import dcgm`: read utilization profiles, check them, write them.

use super::*;
// ---------------------------------------------------------------------------------------------------------
// import dcgm

/// What `import dcgm` wrote.
#[derive(Debug, Serialize)]
struct ImportSummary {
    file: String,
    source: &'static str,
    out: Option<String>,
    profiles: Vec<UtilizationProfile>,
    skipped: Vec<String>,
    /// What reading assumed, then what it found.
    notes: Vec<String>,
}

impl Export for ImportSummary {
    const COMMAND: &'static str = "import-dcgm";
    fn sections(&self) -> Vec<Section> {
        profiles_section(&self.profiles)
    }
    fn notes(&self) -> Vec<String> {
        let mut n = vec![format!("{} profile(s) from {} ({})", self.profiles.len(), self.file, self.source)];
        if let Some(o) = &self.out {
            n.push(format!("written to {o}"));
        }
        n.extend(self.skipped.iter().map(|s| format!("skipped: {s}")));
        n.extend(self.notes.iter().cloned());
        n
    }
}

fn profiles_section(ps: &[UtilizationProfile]) -> Vec<Section> {
    let mut cols = vec![Column::new("name", "profile"), Column::new("gpu", "gpu")];
    cols.extend(Field::ALL.iter().map(|f| Column::new(f.name(), f.name())));
    cols.extend([
        Column::new("core_mhz", "core MHz"),
        Column::new("power_w", "power W"),
        Column::new("time_s", "time s"),
        Column::new("samples", "samples"),
    ]);
    let mut s = Section::new(cols);
    for p in ps {
        let mut row = vec![Cell::text(&p.name), Cell::text(p.gpu.as_deref().unwrap_or("-"))];
        row.extend(Field::ALL.iter().map(|f| Cell::opt(p.fields.get(f).copied(), 3)));
        row.extend([
            Cell::num(p.core_mhz, 0),
            Cell::opt(p.power_w, 1),
            Cell::opt(p.time_s, 3),
            Cell::int(p.samples as i64),
        ]);
        s.push(row);
    }
    vec![s]
}

/// `gpumodel import dcgm FILE [--out FILE.csv|.json|.toml]`: reads the profile(s), checks them, and
/// writes them only when all is well.
pub fn import(args: &crate::cli::import::Args) -> anyhow::Result<ExitCode> {
    let (file, out, format) = (args.file.as_path(), args.out.as_deref(), args.format);
    let (fmt, opts) = args.dcgm.read.options(args.skip_bad_rows, &shipped_gpus())?;
    let set = read_file(file, fmt, &opts)?;
    let summary = ImportSummary {
        file: file.display().to_string(),
        source: set.source.name(),
        out: out.map(|o| o.display().to_string()),
        profiles: set.profiles.clone(),
        skipped: set.skipped.clone(),
        notes: [set.assumptions.clone(), set.notes.clone()].concat(),
    };
    match out {
        None => {
            summary.notes.iter().for_each(|n| eprintln!("gpumodel: {n}"));
            crate::cli::output::emit(&set.to_csv())?
        }
        Some(o) => {
            let ext = o.extension().and_then(|e| e.to_str()).unwrap_or("");
            let text = match ext {
                "json" if set.profiles.len() == 1 => serde_json::to_string_pretty(&set.profiles[0])?,
                "json" => serde_json::to_string_pretty(&set.profiles)?,
                "toml" if set.profiles.len() == 1 => toml_of(&set.profiles[0])?,
                "toml" => bail!(
                    "{}: {} profiles do not fit one TOML profile: write .csv or .json, or pick one with --job",
                    o.display(),
                    set.profiles.len()
                ),
                _ => set.to_csv(),
            };
            gpumodel_models::atomic::write_atomic(o, text.as_bytes())?;
            print(&summary, format)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn toml_of(p: &UtilizationProfile) -> anyhow::Result<String> {
    Ok(p.to_toml()?)
}
