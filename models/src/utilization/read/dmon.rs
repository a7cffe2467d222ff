//! `dcgmi dmon` logs: one row per entity and tick, headers repeated, profiling cells `N/A` on ticks that
//! brought no new profiling sample.
//!
//! A log carries no timestamps (`dcgmi dmon` has no option to print one), so a run's time is its rows
//! times the interval between rows. With the energy counter (TOTEC, field 156: mJ since the driver
//! loaded) and POWER (155) recorded, the log tells that interval itself: the counter's rise over the rows
//! divided by the summed power of the same rows. A job's energy is then the counter's rise over its rows.

use super::*;

/// Column names of dmon's non-profiling fields the profile uses: SM clock (100; app clock 110), memory
/// clock (101; app clock 111), power (155) and the energy counter (156).
const DMON_CORE: &[&str] = &["SMCLK", "SACLK"];
const DMON_MEM: &[&str] = &["MMCLK", "MACLK"];
const DMON_POWER: &[&str] = &["POWER"];
const DMON_ENERGY: &[&str] = &["TOTEC"];

/// The counter must rise this many times before its rise tells an interval or a job's energy: its last
/// step is partly outside what it measures, so the error is at most one step in this many.
const MIN_COUNTER_STEPS: usize = 10;

/// How far a given interval may be from the one the counter gives before the two are called a
/// disagreement: the counter's own quantization over a short log and the scatter of dmon's tick are a
/// few percent; a wrong `-d` is a factor.
const INTERVAL_TOLERANCE: f64 = 0.10;

/// How far the counter's mean power over a job may be from the POWER readings' mean before it is noted.
const POWER_TOLERANCE: f64 = 0.10;

/// dmon prints ratios to three decimals: a difference of one unit in the last may be rounding alone.
const PRINTED_UNIT: f64 = 0.001;

/// Why a row is left out of the averages. Its time still counts: it goes to the next sample kept, whose
/// profiling values cover the ticks since the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Dropped {
    AllNa,
    SomeNa,
    NotFinite,
    Unreadable,
    OutOfRange,
    Truncated,
    PowerNegative,
    PowerNotFinite,
}

impl Dropped {
    fn reason(self) -> &'static str {
        match self {
            Dropped::AllNa => "every profiling cell N/A",
            Dropped::SomeNa => "some profiling cells N/A",
            Dropped::NotFinite => "a profiling cell NaN or infinite",
            Dropped::Unreadable => "a profiling cell not a number",
            Dropped::OutOfRange => "a ratio outside [0, 1]",
            Dropped::Truncated => "a truncated line",
            Dropped::PowerNegative => "POWER negative (the reading alone left out)",
            Dropped::PowerNotFinite => "POWER NaN or infinite (the reading alone left out)",
        }
    }
}

/// One cell of a row.
#[derive(Clone, Copy)]
enum Cell {
    Num(f64),
    Na,
    NotFinite,
    Unreadable,
}

fn cell(s: &str) -> Cell {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") {
        return Cell::Na;
    }
    match t.replace(',', "").parse::<f64>() {
        Ok(x) if x.is_finite() => Cell::Num(x),
        Ok(_) => Cell::NotFinite,
        Err(_) => Cell::Unreadable,
    }
}

impl Cell {
    fn num(self) -> Option<f64> {
        match self {
            Cell::Num(x) => Some(x),
            _ => None,
        }
    }
}

/// One tick of one device.
struct Row {
    /// The profiling fields, when the row is kept in the averages.
    fields: Option<Vec<(Field, f64)>>,
    core: Option<f64>,
    mem: Option<f64>,
    power: Option<f64>,
    energy_mj: Option<f64>,
}

/// What the energy counter says about a device's rows.
#[derive(Default)]
struct Counter {
    /// Summed rises, mJ, over consecutive rows with both counter readings and the later row's power.
    rise_mj: f64,
    /// The later rows' summed POWER, W.
    power_sum_w: f64,
    /// Consecutive rows with both readings and the later row's power.
    pairs: usize,
    /// Rows over which the counter rose.
    steps: usize,
    /// Rows over which it fell: a reset (driver reload, GPU reset); the step is left out.
    resets: usize,
}

impl Counter {
    fn of(rows: &[Row]) -> Counter {
        let mut c = Counter::default();
        for w in rows.windows(2) {
            let (Some(a), Some(b), Some(p)) = (w[0].energy_mj, w[1].energy_mj, w[1].power) else { continue };
            if b < a {
                c.resets += 1;
                continue;
            }
            c.rise_mj += b - a;
            c.power_sum_w += p;
            c.pairs += 1;
            c.steps += usize::from(b > a);
        }
        c
    }

    /// Seconds per row: energy over the rows ÷ the power summed over the same rows.
    fn interval_s(&self) -> Option<f64> {
        (self.steps >= MIN_COUNTER_STEPS && self.power_sum_w > 0.0)
            .then(|| self.rise_mj / 1000.0 / self.power_sum_w)
    }
}

/// The interval between a device's rows, s, and what to say about where it came from.
enum Interval {
    FromCounter { s: f64, given: Option<f64> },
    Given(f64),
    Assumed { why: &'static str },
}

impl Interval {
    fn seconds(&self) -> f64 {
        match self {
            Interval::FromCounter { s, .. } => *s,
            Interval::Given(s) => *s,
            Interval::Assumed { .. } => 1.0,
        }
    }
}

fn interval(origin: &str, device: &str, counter: &Counter, given: Option<f64>) -> Result<Interval> {
    match (counter.interval_s(), given) {
        // Two measurements of one thing that disagree: one of them is wrong, and the run's time and
        // energy would be off by their ratio. A careful user wants to know which before any answer is
        // built on it, so this is an error, not a warning scrolled past.
        (Some(s), Some(g)) if (s / g - 1.0).abs() > INTERVAL_TOLERANCE => Err(Error::Invalid(format!(
            "{origin}: {device}: the log's energy counter (TOTEC) and POWER give {:.1} ms between rows, but \
             --dmon-interval-ms says {:.1} ms: drop --dmon-interval-ms to use the log's own interval, or check \
             that this is the log recorded with -d {:.0}",
            s * 1e3,
            g * 1e3,
            g * 1e3
        ))),
        (Some(s), given) => Ok(Interval::FromCounter { s, given }),
        (None, Some(g)) => Ok(Interval::Given(g)),
        (None, None) if counter.steps > 0 => Ok(Interval::Assumed {
            why: "its energy counter (TOTEC) rises too few times to tell the interval",
        }),
        (None, None) => {
            Ok(Interval::Assumed { why: "it has no energy counter (TOTEC) to tell the interval" })
        }
    }
}

/// A device's rows as read, before they become a profile.
#[derive(Default)]
struct Device {
    rows: Vec<Row>,
}

/// Column positions of the current header.
#[derive(Default)]
struct Header {
    columns: Vec<String>,
    fields: Vec<Option<Field>>,
    core: Option<usize>,
    mem: Option<usize>,
    power: Option<usize>,
    energy: Option<usize>,
}

impl Header {
    /// "# Entity  GRACT …" (older dcgmi) or "#Entity   GRACT …" (newer): the names after "Entity".
    fn parse(t: &str) -> Header {
        let toks: Vec<&str> = t.split_whitespace().collect();
        let start = toks.iter().position(|x| x.ends_with("Entity")).map_or(1, |p| p + 1);
        let columns: Vec<String> = toks[start..].iter().map(|s| s.to_string()).collect();
        let find = |names: &[&str]| names.iter().find_map(|n| columns.iter().position(|c| c == n));
        Header {
            fields: columns.iter().map(|c| Field::parse(c)).collect(),
            core: find(DMON_CORE),
            mem: find(DMON_MEM),
            power: find(DMON_POWER),
            energy: find(DMON_ENERGY),
            columns,
        }
    }
}

pub(super) fn dmon(text: &str, origin: &str, opts: &ReadOptions) -> Result<ProfileSet> {
    let mut header = Header::default();
    let mut devices: BTreeMap<String, Device> = BTreeMap::new();
    let mut skipped = Vec::new();
    let mut dropped: BTreeMap<Dropped, usize> = BTreeMap::new();
    let mut cells: Vec<Cell> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with('#') {
            if t.contains("Entity") {
                header = Header::parse(t);
            }
            continue;
        }
        let mut toks = t.split_whitespace();
        let (Some(kind), Some(id)) = (toks.next(), toks.next()) else { continue };
        // The units line under the header ("Id … W mJ") has no entity id.
        if kind.eq_ignore_ascii_case("id") || id.parse::<u32>().is_err() {
            continue;
        }
        if header.columns.is_empty() {
            return Err(parse_err(
                origin,
                i + 1,
                "Entity",
                "a sample before any '# Entity' header line".into(),
            ));
        }
        let device = devices.entry(format!("{kind} {id}")).or_default();
        cells.clear();
        cells.extend(toks.map(cell));
        if cells.len() != header.columns.len() {
            let e = parse_err(
                origin,
                i + 1,
                "*",
                format!(
                    "{} values under a header of {} columns: a truncated line?",
                    cells.len(),
                    header.columns.len()
                ),
            );
            reject(opts, &mut skipped, e)?;
            *dropped.entry(Dropped::Truncated).or_default() += 1;
            // A tick all the same: its time goes to the next row kept.
            device.rows.push(Row { fields: None, core: None, mem: None, power: None, energy_mj: None });
            continue;
        }
        let get = |j: Option<usize>| j.and_then(|j| cells[j].num());
        let mut power = get(header.power);
        match header.power.map(|j| cells[j]) {
            Some(Cell::Num(p)) if p < 0.0 => {
                power = None;
                *dropped.entry(Dropped::PowerNegative).or_default() += 1;
            }
            Some(Cell::NotFinite) => *dropped.entry(Dropped::PowerNotFinite).or_default() += 1,
            _ => {}
        }
        let mut row = Row {
            fields: None,
            core: get(header.core),
            mem: get(header.mem),
            power,
            energy_mj: get(header.energy),
        };
        let profiling: Vec<(Field, Cell)> =
            header.fields.iter().zip(&cells).filter_map(|(f, c)| f.map(|f| (f, *c))).collect();
        let na = profiling.iter().filter(|(_, c)| matches!(c, Cell::Na)).count();
        let why = if profiling.iter().any(|(_, c)| matches!(c, Cell::NotFinite)) {
            Some(Dropped::NotFinite)
        } else if profiling.iter().any(|(_, c)| matches!(c, Cell::Unreadable)) {
            Some(Dropped::Unreadable)
        } else if na > 0 && na == profiling.len() {
            Some(Dropped::AllNa)
        } else if na > 0 {
            Some(Dropped::SomeNa)
        } else {
            None
        };
        if let Some(why) = why {
            *dropped.entry(why).or_default() += 1;
        } else if !profiling.is_empty() {
            let fv: Vec<(Field, f64)> =
                profiling.iter().filter_map(|(f, c)| c.num().map(|v| (*f, v))).collect();
            if let Some(&(f, v)) = fv.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
                let e = parse_err(
                    origin,
                    i + 1,
                    f.name(),
                    format!("{v} is outside [0, 1]: DCGM fields are ratios"),
                );
                reject(opts, &mut skipped, e)?;
                *dropped.entry(Dropped::OutOfRange).or_default() += 1;
            } else {
                row.fields = Some(fv);
            }
        }
        device.rows.push(row);
    }

    let mut set = ProfileSet::new(origin, Source::DcgmiDmon, Vec::new(), skipped);
    let mut resets = 0;
    for (name, device) in &devices {
        let counter = Counter::of(&device.rows);
        resets += counter.resets;
        let interval = interval(origin, name, &counter, opts.interval_s)?;
        let job = Job::of(&device.rows, interval.seconds());
        if job.acc.n == 0 {
            return Err(no_active(origin, name, job.acc.n_all));
        }
        let time_s = job.time_s(interval.seconds());
        let mut p = job.acc.profile(name.clone(), Source::DcgmiDmon, None, Some(time_s));
        if p.core_mhz.is_nan() && opts.core_mhz.is_none() {
            return Err(Error::Invalid(format!(
                "{origin}: no core clock column (SMCLK or SACLK): record it with `dcgmi dmon -e …,100` or give \
                 --core-mhz"
            )));
        }
        match &interval {
            Interval::FromCounter { s, given } => set.notes.push(format!(
                "{name}: {:.1} ms between rows, from the log's energy counter: TOTEC rose {:.1} J over {} rows \
                 at {:.1} W mean POWER{}",
                s * 1e3,
                counter.rise_mj / 1e3,
                device.rows.len(),
                counter.power_sum_w / counter.pairs as f64,
                given.map(|g| format!(" (--dmon-interval-ms {:.1} agrees)", g * 1e3)).unwrap_or_default()
            )),
            Interval::Given(g) => set.notes.push(format!(
                "{name}: {:.1} ms between rows, as given (--dmon-interval-ms); the log has no energy counter \
                 (TOTEC) to check it against",
                g * 1e3
            )),
            Interval::Assumed { why } => set.assumptions.push(format!(
                "{name}: the run time assumes 1 s between rows (dcgmi dmon's default -d 1000), as {why}: \
                 give --dmon-interval-ms, or record the counter with `dcgmi dmon -e …,155,156`"
            )),
        }
        // The counter's rise is the job's energy when it rose often enough over the job's rows; else the
        // POWER readings' mean stands (a short job sees a partial counter step as a large error).
        let sensor_w = p.power_w;
        if job.counter_steps >= MIN_COUNTER_STEPS && job.counter_time_s > 0.0 {
            let w = job.counter_mj / 1e3 / job.counter_time_s;
            p.power_w = Some(w);
            set.notes.push(format!(
                "{name}: the job's energy {:.1} J is the energy counter's rise over its rows ({:.3} s at {:.1} W)",
                w * time_s,
                time_s,
                w
            ));
            if let Some(s) = sensor_w
                && (w / s - 1.0).abs() > POWER_TOLERANCE
            {
                set.notes.push(format!(
                    "{name}: over the job the energy counter gives {w:.1} W but the POWER readings average \
                     {s:.1} W: the readings sample a power that changes faster than the rows"
                ));
            }
        } else if device.rows.iter().any(|r| r.energy_mj.is_some()) {
            set.notes.push(format!(
                "{name}: the energy counter rose only {} times over the job: its energy is the mean POWER \
                 reading times its time",
                job.counter_steps
            ));
        }
        if let Some(note) = job.contradictions(name) {
            set.notes.push(note);
        }
        p.name = name.clone();
        set.profiles.push(p);
    }
    if resets > 0 {
        set.notes.push(format!(
            "the energy counter (TOTEC) fell {resets} time(s) (a reset: driver reload or GPU reset): those steps \
             are left out of the interval and the energy"
        ));
    }
    if !dropped.is_empty() {
        let total: usize = dropped.iter().filter(|(d, _)| !is_power(**d)).map(|(_, n)| n).sum();
        let rows: usize = devices.values().map(|d| d.rows.len()).sum();
        let parts: Vec<String> = dropped.iter().map(|(d, n)| format!("{n} with {}", d.reason())).collect();
        set.notes.push(format!(
            "{total} of {rows} rows left out of the averages ({}); their time counts toward the next row kept",
            parts.join(", ")
        ));
    }
    set.dropped = dropped.into_iter().map(|(d, n)| (d.reason().to_string(), n)).collect();
    Ok(set)
}

fn is_power(d: Dropped) -> bool {
    matches!(d, Dropped::PowerNegative | Dropped::PowerNotFinite)
}

/// A device's job: its active rows, each covering the ticks since the row kept before it.
struct Job {
    acc: Acc,
    /// Rows the active samples cover.
    rows: usize,
    /// The counter's rise over the covered rows, mJ, where both readings of a step are there and it rose
    /// or stayed; the time those steps cover, s; and how many of them rose.
    counter_mj: f64,
    counter_time_s: f64,
    counter_steps: usize,
    /// Active samples with GRACT 0 and SMACT above 0; with SMACT 0 and occupancy or a pipe above 0.
    gract_zero: usize,
    smact_zero: usize,
}

impl Job {
    fn of(rows: &[Row], dt: f64) -> Job {
        let mut job = Job {
            acc: Acc::default(),
            rows: 0,
            counter_mj: 0.0,
            counter_time_s: 0.0,
            counter_steps: 0,
            gract_zero: 0,
            smact_zero: 0,
        };
        let mut prev: Option<usize> = None;
        for (k, row) in rows.iter().enumerate() {
            let Some(fields) = &row.fields else { continue };
            // dmon prints N/A where no profiling sample came since the last tick; the next sample's values
            // cover those ticks, so a kept row stands for the rows since the one kept before it.
            let start = prev.map_or(0, |j| j + 1);
            prev = Some(k);
            let before = job.acc.n;
            let w = (k + 1 - start) as f64;
            job.acc.add(fields, row.core, row.mem, row.power, w);
            if job.acc.n == before {
                continue;
            }
            job.rows += k + 1 - start;
            for r in start.max(1)..=k {
                if let (Some(a), Some(b)) = (rows[r - 1].energy_mj, rows[r].energy_mj)
                    && b >= a
                {
                    job.counter_mj += b - a;
                    job.counter_time_s += dt;
                    job.counter_steps += usize::from(b > a);
                }
            }
            let get = |f: Field| fields.iter().find(|(g, _)| *g == f).map(|(_, v)| *v);
            // Above dmon's last printed digit: 0.000 beside 0.001 may be rounding alone.
            let above = |f: Field| get(f).is_some_and(|v| v > PRINTED_UNIT);
            if get(Field::Gract) == Some(0.0) && above(Field::Smact) {
                job.gract_zero += 1;
            }
            let on_sm = [Field::Smocc, Field::Tenso, Field::Fp64a, Field::Fp32a, Field::Fp16a];
            if get(Field::Smact) == Some(0.0) && on_sm.iter().any(|f| above(*f)) {
                job.smact_zero += 1;
            }
        }
        job
    }

    fn time_s(&self, dt: f64) -> f64 {
        self.rows as f64 * dt
    }

    /// Fields that cannot both hold, by DCGM's definitions: an SM with a warp resident means a context on
    /// the graphics engine, which is then active (GRACT > 0 when SMACT > 0); occupancy and pipe activity
    /// need a resident warp (SMACT > 0). SMOCC above SMACT is not among them: occupancy counts warps
    /// against the SM's maximum, activity counts cycles with any warp.
    fn contradictions(&self, name: &str) -> Option<String> {
        let n = self.acc.n;
        let mut parts = Vec::new();
        if self.gract_zero > 0 {
            parts.push(format!(
                "{} of {n} active samples read GRACT 0 with SMACT above 0.001 (SM activity means the graphics \
                 engine was active: GRACT is not to be trusted in this log)",
                self.gract_zero
            ));
        }
        if self.smact_zero > 0 {
            parts.push(format!(
                "{} of {n} active samples read SMACT 0 with occupancy or a pipe above 0.001 (those need a resident \
                 warp: SMACT is not to be trusted in this log)",
                self.smact_zero
            ));
        }
        (!parts.is_empty()).then(|| format!("{name}: contradictory fields: {}", parts.join("; ")))
    }
}
