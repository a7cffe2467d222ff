//! Readers of utilization profiles: the NV-DVFS DCGM profile CSV, `dcgmi dmon` text, dcgm-exporter's
//! Prometheus text, Nsight Compute CSV exports and `gpumodel collect` traces with DCGM-named columns.
//!
//! Each reader returns a [`ProfileSet`] that has passed [`ProfileSet::check`]: a field outside [0, 1], a
//! missing clock or several GPU models in one file is an error of one line, and nothing is returned.

use super::{Field, ProfileSet, Source, UtilizationProfile};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// The formats [`read_file`] knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileFormat {
    /// NV-DVFS-Benchmark's `v100-dvfs-*-profile.csv` (and the PTX-merged files of the same rows).
    NvdvfsCsv,
    /// NV-DVFS-Benchmark's nvprof-metric `*-dvfs-real-Performance-Power.csv` (GTX 1080 Ti, GTX 980), with
    /// DCGM-like fields derived from the metrics ([`nvprof`]).
    NvdvfsNvprof,
    /// `dcgmi dmon -e 1001,…` output.
    Dmon,
    /// dcgm-exporter's `/metrics` text.
    Prometheus,
    /// `ncu --csv --page raw` (one row per launch) or the long `--page details` layout.
    Ncu,
    /// A `gpumodel collect` trace (CSV with a JSON sidecar) with DCGM-named columns.
    Collector,
    /// A profile document (TOML or JSON) as `gpumodel import dcgm --format json` writes one profile.
    Document,
    /// gpumodel's profile table, as `gpumodel import dcgm --out FILE.csv` writes it.
    Table,
}

impl ProfileFormat {
    /// The registry's importer name for NV-DVFS DCGM profile files.
    pub const REGISTRY_IMPORTER: &'static str = "dcgm-profile";

    /// Names accepted on the command line.
    pub const NAMES: &'static str = "dmon, exporter, ncu, collector, nvdvfs, nvdvfs-nvprof, document, table";

    /// The command-line name of the format.
    pub fn name(self) -> &'static str {
        match self {
            ProfileFormat::NvdvfsCsv => "nvdvfs",
            ProfileFormat::NvdvfsNvprof => "nvdvfs-nvprof",
            ProfileFormat::Dmon => "dmon",
            ProfileFormat::Prometheus => "exporter",
            ProfileFormat::Ncu => "ncu",
            ProfileFormat::Collector => "collector",
            ProfileFormat::Document => "document",
            ProfileFormat::Table => "table",
        }
    }

    pub fn from_name(name: &str) -> Result<ProfileFormat> {
        match name {
            "dmon" | "dcgmi" => Ok(ProfileFormat::Dmon),
            "exporter" | "prometheus" => Ok(ProfileFormat::Prometheus),
            "ncu" => Ok(ProfileFormat::Ncu),
            "collector" | "trace" => Ok(ProfileFormat::Collector),
            "nvdvfs" | "dcgm-profile" => Ok(ProfileFormat::NvdvfsCsv),
            "nvdvfs-nvprof" | "nvprof" => Ok(ProfileFormat::NvdvfsNvprof),
            "document" | "toml" | "json" => Ok(ProfileFormat::Document),
            "table" => Ok(ProfileFormat::Table),
            other => Err(Error::Invalid(format!(
                "unknown utilization-profile format '{other}': use one of {}",
                ProfileFormat::NAMES
            ))),
        }
    }

    /// Tells the format from the text, when it is unambiguous.
    pub fn guess(text: &str) -> Option<ProfileFormat> {
        let head: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(40).collect();
        let first = head.first().copied().unwrap_or("").trim_start_matches('\u{feff}');
        if head.iter().any(|l| l.trim_start().starts_with('#') && l.contains("Entity")) {
            Some(ProfileFormat::Dmon)
        } else if head.iter().any(|l| l.starts_with("DCGM_FI_")) {
            Some(ProfileFormat::Prometheus)
        } else if head.iter().any(|l| l.contains("\"Kernel Name\"")) {
            Some(ProfileFormat::Ncu)
        } else if first.contains("SMACT") && first.contains("core_frequency") {
            Some(ProfileFormat::NvdvfsCsv)
        } else if first.contains("appName")
            && first.contains("power/W")
            && first.contains("achieved_occupancy")
        {
            Some(ProfileFormat::NvdvfsNvprof)
        } else if first.starts_with(table::HEAD) {
            Some(ProfileFormat::Table)
        } else if first.starts_with("t_s,") {
            Some(ProfileFormat::Collector)
        } else if first.starts_with('{') || first.contains('=') {
            Some(ProfileFormat::Document)
        } else {
            None
        }
    }
}

/// What the file does not say, given by the user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadOptions {
    /// The GPU model (dmon and ncu files do not name it; a file that names another is an error).
    pub gpu: Option<String>,
    /// Core clock when the file has none, MHz.
    pub core_mhz: Option<f64>,
    /// dmon's sampling interval (its `-d`), s, as the user recalls it. A log with an energy counter (TOTEC)
    /// tells its own interval, and the two must agree; a log without one uses this, or 1 s (dmon's default)
    /// stated as an assumption.
    pub interval_s: Option<f64>,
    /// Skip malformed rows (each named in [`ProfileSet::skipped`]) instead of failing at the first.
    pub skip_bad_rows: bool,
}

/// Reads a file in `format` (guessed from the text when `None`).
pub fn read_file(path: &Path, format: Option<ProfileFormat>, opts: &ReadOptions) -> Result<ProfileSet> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let origin = path.display().to_string();
    // A log in a legacy encoding reads with its odd bytes replaced; a binary file (NUL bytes) is refused.
    if std::str::from_utf8(&bytes).is_err() && bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(Error::not_text(&origin));
    }
    let text = String::from_utf8_lossy(&bytes);
    let format = match format {
        Some(f) => f,
        None => ProfileFormat::guess(&text).ok_or_else(|| Error::Format {
            file: origin.clone(),
            message: format!(
                "cannot tell the utilization-profile format: name it ({})",
                ProfileFormat::NAMES
            ),
        })?,
    };
    let mut opts = opts.clone();
    if format == ProfileFormat::Collector && opts.gpu.is_none() {
        opts.gpu = sidecar_gpu(path);
    }
    read_text(&text, &origin, format, &opts)
}

/// Reads text in `format`; `origin` names it in errors.
pub fn read_text(text: &str, origin: &str, format: ProfileFormat, opts: &ReadOptions) -> Result<ProfileSet> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut set = match format {
        ProfileFormat::NvdvfsCsv => nvdvfs_csv(text, origin, opts)?,
        ProfileFormat::NvdvfsNvprof => nvprof::nvdvfs_nvprof(text, origin, opts)?,
        ProfileFormat::Dmon => dmon(text, origin, opts)?,
        ProfileFormat::Prometheus => prometheus(text, origin, opts)?,
        ProfileFormat::Ncu => ncu(text, origin, opts)?,
        ProfileFormat::Collector => collector(text, origin, opts)?,
        ProfileFormat::Document => ProfileSet::new(
            origin,
            Source::Document,
            vec![UtilizationProfile::from_document(text, origin)?],
            vec![],
        ),
        ProfileFormat::Table => table::profile_table(text, origin)?,
    };
    for p in &mut set.profiles {
        if let Some(g) = &opts.gpu {
            match &p.gpu {
                Some(have) if !same_gpu(have, g) => {
                    return Err(Error::Invalid(format!(
                        "{origin}: the file names GPU '{have}', not '{g}': drop --gpu or use the right file"
                    )));
                }
                _ => p.gpu = Some(g.clone()),
            }
        }
        if p.core_mhz.is_nan()
            && let Some(c) = opts.core_mhz
        {
            p.core_mhz = c;
        }
    }
    set.check()?;
    Ok(set)
}

fn same_gpu(a: &str, b: &str) -> bool {
    let n = |s: &str| s.to_ascii_lowercase().replace(['-', ' ', '_'], "");
    n(a).contains(&n(b)) || n(b).contains(&n(a))
}

fn sidecar_gpu(csv: &Path) -> Option<String> {
    let text = std::fs::read_to_string(csv.with_extension("json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("gpu")?.as_str().map(String::from)
}

fn parse_err(origin: &str, line: usize, column: &str, message: String) -> Error {
    Error::Parse { file: origin.to_string(), line: line as u64, column: column.to_string(), message }
}

/// Routes a bad row: an error, or a note when skipping.
fn reject(opts: &ReadOptions, skipped: &mut Vec<String>, e: Error) -> Result<()> {
    if opts.skip_bad_rows {
        skipped.push(e.to_string());
        Ok(())
    } else {
        Err(e)
    }
}

fn number(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") {
        return None;
    }
    t.replace(',', "").parse::<f64>().ok().filter(|x| x.is_finite())
}

/// A flexible CSV reader over `text` and its trimmed header.
fn csv_with_header<'a>(text: &'a str, origin: &str) -> Result<(csv::Reader<&'a [u8]>, Vec<String>)> {
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
    let header = r
        .headers()
        .map_err(|e| crate::table::csv_error(origin, e))?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    Ok((r, header))
}

// ---------------------------------------------------------------------------------------------------------
// NV-DVFS profile CSV

fn nvdvfs_csv(text: &str, origin: &str, opts: &ReadOptions) -> Result<ProfileSet> {
    let (mut r, header) = csv_with_header(text, origin)?;
    let pos = |c: &str| header.iter().position(|h| h == c);
    let need = |c: &str| {
        pos(c).ok_or_else(|| Error::Format {
            file: origin.to_string(),
            message: format!("no '{c}' column: not an NV-DVFS DCGM profile file"),
        })
    };
    let (bench, arg, core, mem) =
        (need("benchmark")?, pos("argNo"), need("core_frequency")?, pos("memory_frequency"));
    let (power, time) = (pos("average_power"), pos("time"));
    // Not in the NV-DVFS files: gpumodel's suite adds the GPU's name.
    let gpu = pos("gpu");
    let fields: Vec<(Field, usize)> = Field::ALL
        .iter()
        .filter_map(|f| header.iter().position(|h| h == f.name()).map(|j| (*f, j)))
        .collect();
    if fields.is_empty() {
        return Err(Error::Format {
            file: origin.to_string(),
            message: "no DCGM field columns (SMACT, DRAMA, …)".into(),
        });
    }
    let mut profiles = Vec::new();
    let mut skipped = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let line = i + 2;
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                reject(opts, &mut skipped, crate::table::csv_error(origin, e))?;
                continue;
            }
        };
        let cell = |j: usize| rec.get(j).unwrap_or("");
        let program = cell(bench).trim().to_string();
        let name = match arg {
            Some(a) => format!("{program}_{}", cell(a).trim()),
            None => program.clone(),
        };
        let mut fv = BTreeMap::new();
        let mut bad = None;
        for &(f, j) in &fields {
            match number(cell(j)) {
                Some(v) => {
                    fv.insert(f, v);
                }
                None => {
                    bad = Some(parse_err(
                        origin,
                        line,
                        f.name(),
                        format!("'{}' is not a number (the row of {name} has no DCGM sample)", cell(j)),
                    ));
                    break;
                }
            }
        }
        let opt = |j: Option<usize>| j.and_then(|j| number(cell(j)));
        let core_mhz = number(cell(core)).unwrap_or(f64::NAN);
        let p = UtilizationProfile {
            name,
            program: Some(program),
            source: Source::NvdvfsCsv,
            gpu: gpu.map(|j| cell(j).trim().to_string()).filter(|g| !g.is_empty()),
            device: None,
            fields: fv,
            core_mhz,
            mem_mhz: opt(mem),
            power_w: opt(power),
            time_s: opt(time),
            samples: 1,
        };
        let bad = bad.map(Err).unwrap_or_else(|| p.check(&format!("{origin}:{line}")));
        match bad {
            Ok(()) => profiles.push(p),
            Err(e) => reject(opts, &mut skipped, e)?,
        }
    }
    Ok(ProfileSet::new(origin, Source::NvdvfsCsv, profiles, skipped))
}

// ---------------------------------------------------------------------------------------------------------
// Sample accumulation shared by the time-series readers (dmon, exporter, collector)

/// Running sums of one device's samples.
#[derive(Default)]
struct Acc {
    n_all: usize,
    n: usize,
    weight: f64,
    sums: BTreeMap<Field, f64>,
    core: (f64, f64),
    mem: (f64, f64),
    power: (f64, f64),
    all_core: (f64, f64),
}

impl Acc {
    /// Adds one sample with weight `w`. A sample is *active* when GRACT or SMACT is above zero: idle
    /// stretches before and after a job are left out of its profile and its time. Either one is enough:
    /// real H100 logs show SMACT above zero with GRACT at 0.
    fn add(
        &mut self,
        fields: &[(Field, f64)],
        core: Option<f64>,
        mem: Option<f64>,
        power: Option<f64>,
        w: f64,
    ) {
        self.n_all += 1;
        if let Some(c) = core {
            self.all_core.0 += c * w;
            self.all_core.1 += w;
        }
        let active = fields.iter().any(|(f, v)| matches!(f, Field::Gract | Field::Smact) && *v > 0.0);
        if !active {
            return;
        }
        self.n += 1;
        self.weight += w;
        for &(f, v) in fields {
            *self.sums.entry(f).or_default() += v * w;
        }
        for (slot, v) in [(&mut self.core, core), (&mut self.mem, mem), (&mut self.power, power)] {
            if let Some(v) = v {
                slot.0 += v * w;
                slot.1 += w;
            }
        }
    }

    fn profile(
        &self,
        name: String,
        source: Source,
        gpu: Option<String>,
        time_s: Option<f64>,
    ) -> UtilizationProfile {
        let mean = |s: (f64, f64)| (s.1 > 0.0).then(|| s.0 / s.1);
        let core = mean(self.core).or(mean(self.all_core)).unwrap_or(f64::NAN);
        UtilizationProfile {
            device: Some(name.clone()),
            name,
            program: None,
            source,
            gpu,
            fields: self.sums.iter().map(|(f, s)| (*f, s / self.weight)).collect(),
            core_mhz: core,
            mem_mhz: mean(self.mem),
            power_w: mean(self.power),
            time_s,
            samples: self.n,
        }
    }
}

fn no_active(origin: &str, device: &str, n: usize) -> Error {
    Error::Invalid(format!(
        "{origin}: {device} has {n} sample(s) but none with the engine active (GRACT or SMACT above 0): \
         nothing ran while it was sampled"
    ))
}

// ---------------------------------------------------------------------------------------------------------
// dcgmi dmon

mod dmon;
use dmon::dmon;
pub mod nvprof;
mod table;

// ---------------------------------------------------------------------------------------------------------
// dcgm-exporter (Prometheus text exposition format)

fn labels(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = s;
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().trim_start_matches(',').trim().to_string();
        let after = &rest[eq + 1..];
        let Some(after) = after.strip_prefix('"') else { break };
        let mut end = None;
        let mut escaped = false;
        for (k, c) in after.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(k);
                    break;
                }
                _ => escaped = false,
            }
        }
        let Some(end) = end else { break };
        out.insert(key, after[..end].replace("\\\"", "\""));
        rest = &after[end + 1..];
    }
    out
}

fn prometheus(text: &str, origin: &str, opts: &ReadOptions) -> Result<ProfileSet> {
    // One scrape gives one value per metric and GPU; concatenated scrapes give several: a device's sample
    // closes when a metric it already has comes again.
    struct Dev {
        gpu: Option<String>,
        acc: Acc,
        cur: BTreeMap<String, f64>,
    }
    fn flush(d: &mut Dev) {
        if d.cur.is_empty() {
            return;
        }
        let fv: Vec<(Field, f64)> =
            Field::ALL.iter().filter_map(|f| d.cur.get(f.dcgm_name()).map(|v| (*f, *v))).collect();
        let g = |k: &str| d.cur.get(k).copied();
        d.acc.add(
            &fv,
            g("DCGM_FI_DEV_SM_CLOCK"),
            g("DCGM_FI_DEV_MEM_CLOCK"),
            g("DCGM_FI_DEV_POWER_USAGE"),
            1.0,
        );
        d.cur.clear();
    }
    let mut devs: BTreeMap<String, Dev> = BTreeMap::new();
    let mut skipped = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || !t.starts_with("DCGM_FI_") {
            continue;
        }
        let (name, lab, rest) = match t.find('{') {
            Some(b) => match t[b..].find('}') {
                Some(e) => (&t[..b], labels(&t[b + 1..b + e]), &t[b + e + 1..]),
                None => {
                    reject(opts, &mut skipped, parse_err(origin, i + 1, "labels", "unclosed '{'".into()))?;
                    continue;
                }
            },
            None => {
                let mut it = t.splitn(2, char::is_whitespace);
                (it.next().unwrap_or(""), BTreeMap::new(), it.next().unwrap_or(""))
            }
        };
        let Some(value) = rest.split_whitespace().next().and_then(number) else {
            reject(
                opts,
                &mut skipped,
                parse_err(origin, i + 1, name, format!("'{}' is not a number", rest.trim())),
            )?;
            continue;
        };
        if let Some(f) = Field::parse(name)
            && !(0.0..=1.0).contains(&value)
        {
            let e = parse_err(origin, i + 1, f.dcgm_name(), format!("{value} is outside [0, 1]"));
            reject(opts, &mut skipped, e)?;
            continue;
        }
        let host = lab.get("Hostname").cloned().unwrap_or_default();
        let gpu = lab.get("gpu").cloned().unwrap_or_else(|| "0".into());
        let key = if host.is_empty() { format!("GPU {gpu}") } else { format!("{host} GPU {gpu}") };
        let model = lab.get("modelName").cloned();
        let d = devs.entry(key).or_insert_with(|| Dev {
            gpu: model.clone(),
            acc: Acc::default(),
            cur: BTreeMap::new(),
        });
        if d.gpu.is_none() {
            d.gpu = model;
        }
        if d.cur.contains_key(name) {
            flush(d);
        }
        d.cur.insert(name.to_string(), value);
    }
    let mut profiles = Vec::new();
    for (key, d) in devs.iter_mut() {
        flush(d);
        if d.acc.n == 0 {
            return Err(no_active(origin, key, d.acc.n_all));
        }
        profiles.push(d.acc.profile(key.clone(), Source::DcgmExporter, d.gpu.clone(), None));
    }
    Ok(ProfileSet::new(origin, Source::DcgmExporter, profiles, skipped))
}

// ---------------------------------------------------------------------------------------------------------
// Nsight Compute

/// One launch's metrics: name → (unit, value).
type Launch = BTreeMap<String, (String, f64)>;

fn ncu_launches(text: &str, origin: &str) -> Result<Vec<(String, Launch)>> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("==")).collect();
    let start = lines.iter().position(|l| l.contains("\"Kernel Name\"")).ok_or_else(|| Error::Format {
        file: origin.to_string(),
        message: "no \"Kernel Name\" header: export with `ncu --csv --page raw` (or --page details)".into(),
    })?;
    let body = lines[start..].join("\n");
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(body.as_bytes());
    let header: Vec<String> =
        r.headers().map_err(|e| crate::table::csv_error(origin, e))?.iter().map(String::from).collect();
    let pos = |c: &str| header.iter().position(|h| h == c);
    let recs: Vec<csv::StringRecord> = r.records().filter_map(|x| x.ok()).collect();
    let kname = pos("Kernel Name").unwrap_or(0);
    let mut out: Vec<(String, Launch)> = Vec::new();
    if let (Some(mn), Some(mv)) = (pos("Metric Name"), pos("Metric Value")) {
        // Long layout: one row per launch and metric, launches by ID.
        let mu = pos("Metric Unit");
        let id = pos("ID");
        let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
        for rec in &recs {
            let key = id.and_then(|j| rec.get(j)).unwrap_or("0").to_string();
            let k = *by_id.entry(key).or_insert_with(|| {
                out.push((rec.get(kname).unwrap_or("").to_string(), Launch::new()));
                out.len() - 1
            });
            if let Some(v) = rec.get(mv).and_then(number) {
                let unit = mu.and_then(|j| rec.get(j)).unwrap_or("").to_string();
                out[k].1.insert(rec.get(mn).unwrap_or("").to_string(), (unit, v));
            }
        }
    } else {
        // Raw layout: one column per metric; the first row under the header holds the units.
        let mut units: Vec<String> = vec![String::new(); header.len()];
        let mut iter = recs.iter().peekable();
        if let Some(first) = iter.peek()
            && first.get(kname).is_some_and(|s| s.trim().is_empty())
        {
            units = first.iter().map(String::from).collect();
            iter.next();
        }
        for rec in iter {
            let mut l = Launch::new();
            for (j, h) in header.iter().enumerate() {
                if let Some(v) = rec.get(j).and_then(number) {
                    l.insert(h.clone(), (units.get(j).cloned().unwrap_or_default(), v));
                }
            }
            out.push((rec.get(kname).unwrap_or("").to_string(), l));
        }
    }
    Ok(out)
}

/// A duration in seconds from ncu's unit.
fn seconds(unit: &str, v: f64) -> f64 {
    match unit.trim() {
        "nsecond" | "ns" => v * 1e-9,
        "usecond" | "us" => v * 1e-6,
        "msecond" | "ms" => v * 1e-3,
        _ => v,
    }
}

/// A clock in MHz from ncu's rate unit (`cycle/nsecond` = GHz, `cycle/usecond` = MHz, `cycle/second`).
fn mhz(unit: &str, v: f64) -> f64 {
    let u = unit.trim();
    if u.ends_with("nsecond") || u.eq_ignore_ascii_case("ghz") {
        v * 1e3
    } else if u.ends_with("usecond") || u.eq_ignore_ascii_case("mhz") {
        v
    } else if u.ends_with("msecond") {
        v * 1e-3
    } else {
        v * 1e-6
    }
}

fn ncu(text: &str, origin: &str, opts: &ReadOptions) -> Result<ProfileSet> {
    let launches = ncu_launches(text, origin)?;
    let mut sums: BTreeMap<Field, (f64, f64)> = BTreeMap::new();
    let (mut core, mut mem, mut total) = ((0.0, 0.0), (0.0, 0.0), 0.0);
    let mut skipped = Vec::new();
    for (name, l) in &launches {
        // Launches are weighted by their duration, as a sampler over the run would weight them.
        let w = l.get("gpu__time_duration.sum").map(|(u, v)| seconds(u, *v));
        let w_or_one = w.unwrap_or(1.0);
        for f in Field::ALL {
            let v = match f.ncu_metric() {
                (None, _) => Some(1.0),
                (Some(num), Some(den)) => match (l.get(num), l.get(den)) {
                    (Some(a), Some(b)) if b.1 > 0.0 => Some(a.1 / b.1),
                    _ => None,
                },
                (Some(pct), None) => l.get(pct).map(|x| x.1 / 100.0),
            };
            if let Some(v) = v {
                if !(0.0..=1.0 + 1e-9).contains(&v) {
                    let e = Error::Invalid(format!(
                        "{origin}: kernel '{name}': {} is {v}, outside [0, 1]",
                        f.name()
                    ));
                    reject(opts, &mut skipped, e)?;
                    continue;
                }
                let s = sums.entry(f).or_default();
                s.0 += v.min(1.0) * w_or_one;
                s.1 += w_or_one;
            }
        }
        if let Some((u, v)) =
            l.get("sm__cycles_elapsed.avg.per_second").or(l.get("smsp__cycles_elapsed.avg.per_second"))
        {
            core.0 += mhz(u, *v) * w_or_one;
            core.1 += w_or_one;
        }
        if let Some((u, v)) = l.get("dram__cycles_elapsed.avg.per_second") {
            mem.0 += mhz(u, *v) * w_or_one;
            mem.1 += w_or_one;
        }
        total += w.unwrap_or(0.0);
    }
    if sums.keys().all(|f| *f == Field::Gract) {
        return Err(Error::Format {
            file: origin.to_string(),
            message: "no launch has the metrics behind the DCGM fields: profile with `ncu --csv --page raw \
                      --metrics sm__cycles_active.avg,sm__cycles_elapsed.avg,sm__warps_active.avg.pct_of_peak_sustained_elapsed,dram__cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum`"
                .into(),
        });
    }
    let core_mhz = if core.1 > 0.0 { core.0 / core.1 } else { opts.core_mhz.unwrap_or(f64::NAN) };
    if core_mhz.is_nan() {
        return Err(Error::Invalid(format!(
            "{origin}: no core clock: add the metric sm__cycles_elapsed.avg.per_second to the ncu run or give --core-mhz"
        )));
    }
    let stem = Path::new(origin).file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let p = UtilizationProfile {
        name: stem,
        program: None,
        source: Source::Ncu,
        gpu: None,
        device: None,
        fields: sums.iter().map(|(f, (s, w))| (*f, s / w)).collect(),
        core_mhz,
        mem_mhz: (mem.1 > 0.0).then(|| mem.0 / mem.1),
        power_w: None,
        time_s: (total > 0.0).then_some(total),
        samples: launches.len(),
    };
    Ok(ProfileSet::new(origin, Source::Ncu, vec![p], skipped))
}

// ---------------------------------------------------------------------------------------------------------
// gpumodel collect traces

fn collector(text: &str, origin: &str, opts: &ReadOptions) -> Result<ProfileSet> {
    let (mut r, header) = csv_with_header(text, origin)?;
    let pos = |c: &str| header.iter().position(|h| h == c);
    let fields: Vec<(Field, usize)> = Field::ALL
        .iter()
        .filter_map(|f| header.iter().position(|h| h == f.name()).map(|j| (*f, j)))
        .collect();
    if fields.is_empty() {
        return Err(Error::Format {
            file: origin.to_string(),
            message:
                "the trace has no DCGM-named columns (GRACT, SMACT, …): collect it with `gpumodel collect \
                      --pm-passes all` (`gpumodel counters --chip CHIP` lists the fields a chip gives)"
                    .into(),
        });
    }
    let (dt, pw, cc, mc) = (pos("dt_s"), pos("power_w"), pos("core_mhz"), pos("mem_mhz"));
    let mut acc = Acc::default();
    let mut skipped = Vec::new();
    let mut fv = Vec::with_capacity(8);
    // The run time is the whole trace's, rows whose fields are unknown (a pass that ended sooner) included.
    let mut run_s = 0.0;
    for (i, rec) in r.records().enumerate() {
        let Ok(rec) = rec else { break };
        let get = |j: Option<usize>| j.and_then(|j| rec.get(j)).and_then(number);
        run_s += get(dt).filter(|w| *w > 0.0).unwrap_or(0.0);
        fv.clear();
        let mut missing = false;
        for &(f, j) in &fields {
            match rec.get(j).and_then(number) {
                Some(v) => fv.push((f, v)),
                None => missing = true,
            }
        }
        if missing {
            continue;
        }
        if let Some(&(f, v)) = fv.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
            let e = parse_err(origin, i + 2, f.name(), format!("{v} is outside [0, 1]"));
            reject(opts, &mut skipped, e)?;
            continue;
        }
        let w = get(dt).filter(|w| *w > 0.0).unwrap_or(1.0);
        acc.add(&fv, get(cc), get(mc), get(pw), w);
    }
    if acc.n == 0 {
        return Err(no_active(origin, "the trace", acc.n_all));
    }
    let stem = Path::new(origin).file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let mut p =
        acc.profile(stem, Source::Collector, None, Some(if dt.is_some() { run_s } else { acc.weight }));
    p.device = None;
    Ok(ProfileSet::new(origin, Source::Collector, vec![p], skipped))
}

#[cfg(test)]
mod tests;
