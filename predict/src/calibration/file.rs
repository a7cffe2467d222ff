//! The time calibration as a file: `gpumodel validate --save-calibration FILE` writes it,
//! `gpumodel predict --calibration FILE` applies it.
//!
//! The file is small, versioned TOML: the calibration form, the architecture it was fitted for, the
//! dataset it was fitted on (name, path, sha256), the coefficients (fitted on *all* kernels of that
//! dataset), and the nested leave-one-kernel-out MAPE of the procedure that fits them there — the honest
//! figure for a kernel the calibration has not seen (for a file that records the structure alone, whose
//! factors were dropped, that structure's own error: nothing is fitted). Reading checks the version, the form, every field and every
//! coefficient, so a hand-edited or foreign file is a one-line error, never a silent misprediction.

use super::{EXPONENTS, TimeCalibration};
use crate::error::{Error, Result};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::timing::{SharedOverlap, TimingConfig};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The format version this build writes. Version 6 is version 5 plus a second form,
/// [`FORM_STRUCTURE_ALONE`]: the structure without factors, written when the factors fitted on all
/// kernels do not beat that structure out of fold (the folds' keep rule); such a file has no
/// `[coefficients]`. Both record the timing model's structure the factors were fitted to:
/// `shared_overlap` (`additive`, or `replays-overlap-issue`: bank-conflict replays overlap issue), and
/// what it implies, `fill` (how the pipeline fill follows the core clock: [`fill_label`]) and `stores`
/// (`per-l2-write`). Earlier versions were fitted to earlier timing models: their factors mean
/// something else now, so they are refused with the command that writes a new one.
pub const FORMAT_VERSION: u32 = 6;

/// The versions this build reads.
const READS: [u32; 2] = [5, FORMAT_VERSION];

/// What a file's `stores` says: one DRAM departure per L2 write transaction (the L2 is write-back).
const STORES: &str = "per-l2-write";

/// What a file's `fill` says for the structure `s`: the pipeline fill in core cycles at the clocks
/// (`core-clock`) or at the default core clock's latency (`default-core-clock`, the structural
/// alternative).
pub fn fill_label(s: SharedOverlap) -> &'static str {
    if TimingConfig::structural(s).fill_at_default_core_clock() { "default-core-clock" } else { "core-clock" }
}

/// The calibration form, written into every file; a file with another form is refused.
pub const FORM: &str = "T = ((a_memory*M)^p + (a_compute*C + a_shared*S)^p + (a_l2*L)^p)^(1/p) + sync";

/// The form of a file that records the timing model's structure alone (version 6): its factors were
/// dropped by the keep rule, and `predict` uses the structure as is.
pub const FORM_STRUCTURE_ALONE: &str = "T = the timing model with the structure below, no factors";

/// What `kind` says, so a calibration is never mistaken for another TOML document.
const KIND: &str = "gpumodel-time-calibration";

/// The dataset a calibration was fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetInfo {
    /// The registered name (`nvdvfs-gtx1080ti`), or the path the user gave.
    pub name: String,
    /// The file that was read.
    pub path: String,
    /// sha256 of that file (lower-case hex).
    pub sha256: String,
    pub rows: usize,
    pub kernels: usize,
}

/// The coefficients of [`FORM`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coefficients {
    /// Factor on the timing model's memory time `M` (global load + store + texture).
    pub a_memory: f64,
    /// Factor on its compute time `C`.
    pub a_compute: f64,
    /// Factor on its shared-memory time `S` (incl. bank conflicts).
    pub a_shared: f64,
    /// Factor on `L`, the time its DRAM traffic needs through L2 at the core clock (absent from
    /// version-1 files).
    #[serde(default)]
    pub a_l2: f64,
    /// The power-mean exponent `p` (≥ 1).
    pub p: f64,
}

/// How well the form did on the dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitInfo {
    /// With factors: kernel-time MAPE of the whole fitting procedure (exponent and factors) run
    /// leave-one-kernel-out: each kernel predicted by coefficients fitted on the others, with `p` chosen
    /// by an inner leave-one-kernel-out over those others (nested). Percent: what to expect on a kernel
    /// outside the dataset. It scores the procedure, whose candidate set is larger than this file's one
    /// form: a fold may have kept another form (the compute floor, the other structure) or none.
    /// For a [`FORM_STRUCTURE_ALONE`] file (version 6 on): that structure's own error on the dataset,
    /// as `uncalibrated_mape_pct` — nothing is fitted, and the structure is what the file applies.
    pub out_of_fold_mape_pct: f64,
    /// Kernel-time MAPE of these coefficients on the rows they were fitted on, percent (optimistic).
    pub in_sample_mape_pct: f64,
    /// Kernel-time MAPE of the timing model without calibration, percent.
    pub uncalibrated_mape_pct: f64,
}

/// A time calibration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationFile {
    pub format_version: u32,
    pub kind: String,
    pub form: String,
    /// The architecture profile's name the coefficients were fitted for.
    pub arch: String,
    /// How bank-conflict replays share the SM with issue in the model the coefficients were fitted to.
    pub shared_overlap: SharedOverlap,
    /// How that model's pipeline fill follows the core clock: [`fill_label`] of `shared_overlap`.
    pub fill: String,
    /// How many stores go to DRAM in that model: `per-l2-write`.
    pub stores: String,
    pub dataset: DatasetInfo,
    /// The factors; `None` for (and only for) a [`FORM_STRUCTURE_ALONE`] file, which has no
    /// `[coefficients]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coefficients: Option<Coefficients>,
    pub fit: FitInfo,
}

impl CalibrationFile {
    /// A file for `calibration` (`None`: the structure alone, its factors dropped by the keep rule),
    /// fitted for architecture `arch` on `dataset`, with how it did there.
    pub fn new(
        arch: &str,
        dataset: DatasetInfo,
        c: Option<TimeCalibration>,
        timing: TimingConfig,
        fit: FitInfo,
    ) -> CalibrationFile {
        CalibrationFile {
            format_version: FORMAT_VERSION,
            kind: KIND.into(),
            form: if c.is_some() { FORM } else { FORM_STRUCTURE_ALONE }.into(),
            arch: arch.to_string(),
            shared_overlap: timing.shared_overlap,
            fill: fill_label(timing.shared_overlap).into(),
            stores: STORES.into(),
            dataset,
            coefficients: c.map(|c| Coefficients {
                a_memory: c.a[0],
                a_compute: c.a[1],
                a_shared: c.a[2],
                a_l2: c.a[3],
                p: c.p,
            }),
            fit,
        }
    }

    /// The calibration to apply; `None` for a file that records the structure alone.
    pub fn calibration(&self) -> Option<TimeCalibration> {
        self.coefficients
            .map(|c| TimeCalibration { a: [c.a_memory, c.a_compute, c.a_shared, c.a_l2], p: c.p })
    }

    /// The timing model's structure the coefficients were fitted to, to predict with.
    pub fn timing(&self) -> TimingConfig {
        TimingConfig::structural(self.shared_overlap)
    }

    /// The file's text: comment lines saying what it is, then the TOML.
    pub fn to_toml(&self) -> Result<String> {
        let body = toml::to_string(self)
            .map_err(|e| Error::Invalid(format!("cannot write the calibration as TOML: {e}")))?;
        let Some(c) = self.coefficients else {
            return Ok(format!(
                "# gpumodel time calibration: the timing model's structure alone (shared_overlap, fill and stores\n\
                 # below, shared_overlap and fill chosen together over the dataset's kernels), no factors: the\n\
                 # factors fitted on those kernels did not beat it out of fold by more than one standard error\n\
                 # (the keep rule validate's folds apply), so they were dropped. Written by\n\
                 # `gpumodel validate --save-calibration`; apply it with `gpumodel predict --arch {} --calibration FILE`.\n\
                 # fit.out_of_fold_mape_pct, fit.in_sample_mape_pct and fit.uncalibrated_mape_pct are all that\n\
                 # structure's error on those kernels: nothing is fitted, and it is what predict applies.\n{body}",
                self.arch
            ));
        };
        Ok(format!(
            "# gpumodel time calibration: predicted kernel time T = ((a_memory*M)^p + (a_compute*C +\n\
             # a_shared*S)^p + (a_l2*L)^p)^(1/p) + sync, where M (global load + store + texture), C (compute),\n\
             # S (shared incl. bank conflicts), L (DRAM traffic through L2 at the core clock) and sync (barriers\n\
             # and pipeline fill) are the timing model's times of the kernel. Written by\n\
             # `gpumodel validate --save-calibration`, fitted on every kernel of the dataset below; apply it with\n\
             # `gpumodel predict --arch {} --calibration FILE`.\n\
             # shared_overlap, fill and stores are the timing model's structure the factors were fitted to\n\
             # (shared_overlap and fill chosen together over those kernels); predict applies the same\n\
             # structure. p = {} was chosen among {} by leave-one-kernel-out error over those kernels with\n\
             # that structure; fit.uncalibrated_mape_pct is that structure's error without the factors; the\n\
             # factors beat it out of fold by more than one standard error (the folds' keep rule).\n\
             # fit.out_of_fold_mape_pct is what to expect on unseen kernels: the leave-one-kernel-out error of\n\
             # the whole nested procedure (p chosen inside each fold), whose folds choose among more candidates\n\
             # than this file's one form (the compute floor, the other structure, none).\n{body}",
            self.arch,
            c.p,
            EXPONENTS.map(|p| p.to_string()).join(", ")
        ))
    }

    /// Writes the file; an existing file is kept unless `force` (then it is replaced atomically, so a
    /// failed write never leaves half a file).
    pub fn write(&self, path: &Path, force: bool) -> Result<()> {
        let text = self.to_toml()?;
        let io = |e: std::io::Error| Error::Invalid(format!("cannot write {}: {e}", path.display()));
        if !force {
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::Invalid(format!(
                        "{} already exists: pass --force to overwrite it, or choose another file",
                        path.display()
                    ))
                } else {
                    io(e)
                }
            })?;
            return f.write_all(text.as_bytes()).map_err(io);
        }
        Ok(gpumodel_models::atomic::write_atomic(path, text.as_bytes())?)
    }

    /// Parses and checks a calibration; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<CalibrationFile> {
        let bad = |what: String| {
            Error::Invalid(format!(
                "{source}: not a usable gpumodel time calibration ({what}): write one with \
                 `gpumodel validate --data D --arch A --save-calibration FILE`"
            ))
        };
        let value: toml::Table = toml::from_str(text).map_err(|e| bad(one_line(e.message())))?;
        let version = match value.get("format_version") {
            Some(toml::Value::Integer(v)) if READS.iter().any(|r| i64::from(*r) == *v) => *v as u32,
            Some(toml::Value::Integer(v @ 1..=4)) => {
                return Err(Error::Invalid(format!(
                    "{source}: calibration format version {v} was fitted to an earlier timing model: write it \
                     again with `gpumodel validate --data D --arch A --save-calibration FILE`"
                )));
            }
            Some(toml::Value::Integer(v)) => {
                return Err(Error::Invalid(format!(
                    "{source}: calibration format version {v} is not one this gpumodel reads \
                     (5 to {FORMAT_VERSION}): write it again with `gpumodel validate --save-calibration`"
                )));
            }
            _ => return Err(bad("no integer format_version".into())),
        };
        // The structure: every field present, and `fill` and `stores` the ones `shared_overlap` implies
        // (read otherwise, the file would predict with a structure it was not fitted to).
        for key in ["shared_overlap", "fill", "stores"] {
            if !value.contains_key(key) {
                return Err(bad(format!("{key} is missing (format version {version} records it)")));
            }
        }
        // The form first: what else the file must have depends on it. The structure alone (version 6 on)
        // has no factors; every other file has all four.
        let alone = version >= 6 && value.get("form").and_then(|f| f.as_str()) == Some(FORM_STRUCTURE_ALONE);
        let form = if alone { FORM_STRUCTURE_ALONE } else { FORM };
        match value.get("form") {
            Some(toml::Value::String(f)) if f == form => {}
            Some(toml::Value::String(f)) => {
                return Err(bad(format!("form '{f}' is not format version {version}'s '{form}'")));
            }
            Some(_) => return Err(bad("form is not a string".into())),
            None => return Err(bad("form is missing".into())),
        }
        match (alone, value.get("coefficients")) {
            (true, Some(_)) => {
                return Err(bad(format!("[coefficients] given, but the form is '{FORM_STRUCTURE_ALONE}'")));
            }
            (true, None) => {}
            (false, c) => {
                if !c.and_then(|c| c.as_table()).is_some_and(|c| c.contains_key("a_l2")) {
                    return Err(bad(format!(
                        "coefficients.a_l2 is missing (format version {version} has it)"
                    )));
                }
            }
        }
        let file: CalibrationFile =
            toml::Value::Table(value).try_into().map_err(|e: toml::de::Error| bad(one_line(e.message())))?;
        if file.kind != KIND {
            return Err(bad(format!("kind is '{}', expected '{KIND}'", file.kind)));
        }
        let fill = fill_label(file.shared_overlap);
        if file.fill != fill || file.stores != STORES {
            return Err(bad(format!(
                "fill '{}' and stores '{}' are not the {} structure's ('{fill}', '{STORES}')",
                file.fill,
                file.stores,
                file.shared_overlap.label()
            )));
        }
        // Checked above: factors exactly where the form has them.
        let Some(c) = file.coefficients else {
            return Ok(file);
        };
        for (name, v) in
            [("a_memory", c.a_memory), ("a_compute", c.a_compute), ("a_shared", c.a_shared), ("a_l2", c.a_l2)]
        {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(format!("coefficients.{name} = {v}; it must be a finite number ≥ 0")));
            }
        }
        if c.a_memory == 0.0 || c.a_compute == 0.0 || c.a_shared == 0.0 {
            return Err(bad("an a_* coefficient is 0, which would predict zero time".into()));
        }
        if !(c.p.is_finite() && c.p >= 1.0) {
            return Err(bad(format!("coefficients.p = {}; it must be a finite number ≥ 1", c.p)));
        }
        Ok(file)
    }

    /// Reads and checks a calibration file.
    pub fn read(path: &Path) -> Result<CalibrationFile> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Invalid(format!(
                "cannot read calibration {}: {e} (write one with `gpumodel validate --save-calibration FILE`)",
                path.display()
            ))
        })?;
        CalibrationFile::parse(&text, &path.display().to_string())
    }

    /// Refuses to apply the calibration to another architecture: its factors describe how far one GPU
    /// runs from one profile's constants.
    pub fn check_arch(&self, arch: &ArchProfile, source: &str) -> Result<()> {
        if self.arch == arch.name {
            return Ok(());
        }
        Err(Error::Mismatch(format!(
            "{source} was fitted for architecture '{}', not '{}': pass --arch {} or write a calibration for {} \
             with `gpumodel validate --arch {} --save-calibration FILE`",
            self.arch, arch.name, self.arch, arch.name, arch.name
        )))
    }
}

/// TOML messages can span lines; errors here are one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CalibrationFile {
        CalibrationFile {
            format_version: FORMAT_VERSION,
            kind: KIND.into(),
            form: FORM.into(),
            arch: "gtx1080ti".into(),
            shared_overlap: SharedOverlap::ReplaysOverlapIssue,
            fill: "default-core-clock".into(),
            stores: STORES.into(),
            dataset: DatasetInfo {
                name: "nvdvfs-gtx1080ti".into(),
                path: "x.csv".into(),
                sha256: "ab".into(),
                rows: 600,
                kernels: 30,
            },
            coefficients: Some(Coefficients {
                a_memory: 1.1,
                a_compute: 1.7,
                a_shared: 0.9,
                a_l2: 0.4,
                p: 6.0,
            }),
            fit: FitInfo {
                out_of_fold_mape_pct: 18.3,
                in_sample_mape_pct: 15.0,
                uncalibrated_mape_pct: 27.0,
            },
        }
    }

    #[test]
    fn round_trips_through_toml_with_a_comment_header() {
        let f = sample();
        let text = f.to_toml().unwrap();
        assert!(text.starts_with("# gpumodel time calibration"), "{text}");
        assert_eq!(CalibrationFile::parse(&text, "f").unwrap(), f);
        assert_eq!(f.calibration(), Some(TimeCalibration { a: [1.1, 1.7, 0.9, 0.4], p: 6.0 }));
    }

    /// The structure lines (the fields version 5 introduced), as [`sample`] writes them.
    const STRUCTURE_5: &str = "shared_overlap = \"replays-overlap-issue\"\nfill = \"default-core-clock\"\nstores = \"per-l2-write\"\n";

    /// A file this build writes (version 6) records the whole structure it was fitted to (the fields
    /// version 5 introduced) and reads back as it.
    #[test]
    fn written_files_record_the_structure_they_were_fitted_to() {
        let written = sample().to_toml().unwrap();
        assert!(written.contains("format_version = 6\n") && written.contains(STRUCTURE_5), "{written}");
        let f = CalibrationFile::parse(&written, "written.toml").unwrap();
        assert_eq!(f.timing(), TimingConfig::structural(SharedOverlap::ReplaysOverlapIssue));
        // Each field is part of versions 5 and 6: a file without one is refused in one line that says
        // what to do.
        for key in ["shared_overlap", "fill", "stores"] {
            let without: String =
                written.lines().filter(|l| !l.starts_with(key)).map(|l| format!("{l}\n")).collect();
            let e = CalibrationFile::parse(&without, "f.toml").unwrap_err().to_string();
            assert!(e.contains(&format!("{key} is missing")) && e.contains("--save-calibration"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = CalibrationFile::parse(&written.replace("default-core-clock", "sometimes"), "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sometimes") && !e.contains('\n'), "{e}");
    }

    /// `fill` and `stores` are what `shared_overlap` implies: another combination is refused in one
    /// line (it would predict with a structure the factors were not fitted to).
    #[test]
    fn a_structure_the_model_does_not_have_is_refused() {
        let written = sample().to_toml().unwrap();
        for t in [
            written.replace("fill = \"default-core-clock\"", "fill = \"core-clock\""),
            written.replace("per-l2-write", "per-dram-write"),
            written.replace("replays-overlap-issue", "additive"),
        ] {
            let e = CalibrationFile::parse(&t, "f").unwrap_err().to_string();
            assert!(
                e.contains("are not the") && e.contains("--save-calibration") && !e.contains('\n'),
                "{e}"
            );
        }
        let additive =
            written.replace("replays-overlap-issue", "additive").replace("default-core-clock", "core-clock");
        assert_eq!(CalibrationFile::parse(&additive, "f").unwrap().timing(), TimingConfig::default());
    }

    /// A version-5 file (factors always) still reads as it was written.
    #[test]
    fn version_5_files_still_read() {
        let v5 = sample().to_toml().unwrap().replace("format_version = 6", "format_version = 5");
        let f = CalibrationFile::parse(&v5, "v5.toml").unwrap();
        assert_eq!(
            (f.format_version, f.calibration(), f.timing()),
            (5, sample().calibration(), sample().timing())
        );
    }

    /// A file whose factors the keep rule dropped records the structure alone: no `[coefficients]`, no
    /// calibration to apply, the structure to predict with; it reads back as written. Factors beside that
    /// form, or that form in a version before 6, are refused.
    #[test]
    fn the_structure_alone_has_no_factors() {
        let mut f = sample();
        f.form = FORM_STRUCTURE_ALONE.into();
        f.coefficients = None;
        let alone = CalibrationFile::new(&f.arch, f.dataset.clone(), None, f.timing(), f.fit.clone());
        assert_eq!(alone, f);
        let text = alone.to_toml().unwrap();
        assert!(!text.contains("[coefficients]") && !text.contains("a_memory"), "{text}");
        assert!(text.contains("no factors") && text.contains(FORM_STRUCTURE_ALONE), "{text}");
        let back = CalibrationFile::parse(&text, "alone.toml").unwrap();
        assert_eq!(back.calibration(), None);
        assert_eq!(back.timing(), TimingConfig::structural(SharedOverlap::ReplaysOverlapIssue));
        assert_eq!(back, alone);
        let with = sample().to_toml().unwrap();
        let coefficients = &with[with.find("[coefficients]").unwrap()..with.find("[fit]").unwrap()];
        let both = text.replace("[fit]", &format!("{coefficients}[fit]"));
        let e = CalibrationFile::parse(&both, "f").unwrap_err().to_string();
        assert!(e.contains("[coefficients] given") && !e.contains('\n'), "{e}");
        let e = CalibrationFile::parse(&text.replace("format_version = 6", "format_version = 5"), "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not format version 5's"), "{e}");
    }

    #[test]
    fn earlier_versions_are_refused_with_the_fix() {
        let v3 = sample().to_toml().unwrap();
        for v in [1, 2, 3, 4] {
            let old = v3.replace("format_version = 6", &format!("format_version = {v}"));
            let e = CalibrationFile::parse(&old, "old.toml").unwrap_err().to_string();
            assert!(e.contains(&format!("version {v}")) && e.contains("--save-calibration"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = CalibrationFile::parse(&v3.replace("a_l2 = 0.4\n", ""), "f").unwrap_err().to_string();
        assert!(e.contains("a_l2 is missing"), "{e}");
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        let text = sample().to_toml().unwrap();
        let err = |t: &str| CalibrationFile::parse(t, "f.toml").unwrap_err().to_string();
        for (t, needle) in [
            (text.replace("format_version = 6", "format_version = 7"), "version 7"),
            (text.replace("format_version = 6\n", ""), "no integer format_version"),
            (text.replace("a_l2 = 0.4", "a_l2 = -0.4"), "coefficients.a_l2 = -0.4"),
            (text.replace("a_compute = 1.7", "a_compute = -1.7"), "coefficients.a_compute = -1.7"),
            (text.replace("a_shared = 0.9", "a_shared = nan"), "a_shared = NaN"),
            (text.replace("a_memory = 1.1\n", ""), "a_memory"),
            (text.replace("p = 6.0", "p = 0.5"), "coefficients.p = 0.5"),
            (text.replace("kind = ", "kinds = "), "kinds"),
            ("[[[".to_string(), "not a usable"),
        ] {
            let e = err(&t);
            assert!(e.contains(needle) && !e.contains('\n'), "{needle}: {e}");
        }
    }

    /// The form is checked before what depends on it: an unknown form without `[coefficients]` is named
    /// as the problem, not the missing factors it would have needed.
    #[test]
    fn an_unknown_form_is_named_before_the_factors() {
        let s = sample();
        let alone = CalibrationFile::new(&s.arch, s.dataset.clone(), None, s.timing(), s.fit.clone());
        let text = alone.to_toml().unwrap();
        for t in [
            text.replace(FORM_STRUCTURE_ALONE, "T = something else"),
            sample().to_toml().unwrap().replace(FORM, "T = x"),
        ] {
            let e = CalibrationFile::parse(&t, "f").unwrap_err().to_string();
            assert!(e.contains("form 'T = ") && !e.contains("is missing") && !e.contains('\n'), "{e}");
        }
        let without: String =
            text.lines().filter(|l| !l.starts_with("form ")).map(|l| format!("{l}\n")).collect();
        let e = CalibrationFile::parse(&without, "f").unwrap_err().to_string();
        assert!(e.contains("form is missing"), "{e}");
    }

    #[test]
    fn refuses_to_overwrite_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "keep me").unwrap();
        let e = sample().write(&p, false).unwrap_err().to_string();
        assert!(e.contains("already exists") && e.contains("--force"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep me");
        sample().write(&p, true).unwrap();
        assert_eq!(CalibrationFile::read(&p).unwrap(), sample());
    }
}
