//! gpumodel's own profile table: the CSV `gpumodel import dcgm --out` writes
//! ([`ProfileSet::to_csv`]), read back so that every file gpumodel writes, it reads.

use super::*;

/// The first columns of the table, in order.
pub(super) const HEAD: &str = "name,program,source,gpu,device";

/// The source a table row names (by [`Source::name`]).
fn source(name: &str) -> Option<Source> {
    [
        Source::NvdvfsCsv,
        Source::NvdvfsNvprof,
        Source::DcgmiDmon,
        Source::DcgmExporter,
        Source::Ncu,
        Source::Collector,
        Source::Document,
    ]
    .into_iter()
    .find(|s| s.name() == name)
}

/// Reads a profile table: one profile per row, each with the source its row names.
pub(super) fn profile_table(text: &str, origin: &str) -> Result<ProfileSet> {
    let (mut r, header) = csv_with_header(text, origin)?;
    let pos = |c: &str| header.iter().position(|h| h == c);
    let need = |c: &str| {
        pos(c).ok_or_else(|| Error::Format {
            file: origin.to_string(),
            message: format!("a gpumodel profile table without its '{c}' column: write it again with `gpumodel import dcgm --out`"),
        })
    };
    let (name, src, core) = (need("name")?, need("source")?, need("core_mhz")?);
    let fields: Vec<(Field, usize)> =
        Field::ALL.iter().filter_map(|f| pos(f.name()).map(|j| (*f, j))).collect();
    let mut profiles = Vec::new();
    let mut first_source = None;
    for rec in r.records() {
        let rec = rec.map_err(|e| crate::table::csv_error(origin, e))?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        let cell = |j: Option<usize>| j.and_then(|j| rec.get(j)).map(str::trim).filter(|t| !t.is_empty());
        let text = |j: Option<usize>| cell(j).map(str::to_string);
        let num = |c: &str| cell(pos(c)).and_then(number);
        let s = cell(Some(src)).unwrap_or("");
        let source = source(s).ok_or_else(|| {
            parse_err(origin, line, "source", format!("'{s}' is not a source gpumodel writes"))
        })?;
        first_source.get_or_insert(source);
        let core_mhz = cell(Some(core))
            .and_then(number)
            .ok_or_else(|| parse_err(origin, line, "core_mhz", "no core clock".into()))?;
        profiles.push(UtilizationProfile {
            name: text(Some(name)).unwrap_or_default(),
            program: text(pos("program")),
            source,
            gpu: text(pos("gpu")),
            device: text(pos("device")),
            fields: fields.iter().filter_map(|&(f, j)| rec.get(j).and_then(number).map(|v| (f, v))).collect(),
            core_mhz,
            mem_mhz: num("mem_mhz"),
            power_w: num("power_w"),
            time_s: num("time_s"),
            samples: num("samples").map_or(1, |n| n.max(1.0) as usize),
        });
    }
    if profiles.is_empty() {
        return Err(Error::Format {
            file: origin.to_string(),
            message: "a gpumodel profile table without rows".into(),
        });
    }
    Ok(ProfileSet::new(origin, first_source.unwrap_or(Source::Document), profiles, Vec::new()))
}
