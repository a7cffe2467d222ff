//! What `gpumodel predict` prints: one kernel at one configuration ([`KernelReport`]) or a sweep
//! ([`SweepReport`]), as typed results rendered by the one output layer (`gpumodel_models::export`).
//!
//! JSON keeps the field names `gpumodel report` reads: `kernel`, `arch`, `model`, `calibration`
//! (`applied`, `file`, `content`), `prediction` (the [`Prediction`]) or `sweep` (the [`Sweep`]).

use crate::calibration::file::CalibrationFile;
use crate::kernel::Prediction;
use crate::sweep::{Sweep, SweepKind};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::profile::KernelProfile;
use serde::Serialize;

/// The time calibration a prediction used, if any.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationUse {
    /// Whether a calibration file was given and applied (its structure, and its factors if it has any).
    pub applied: bool,
    /// Whether that file's factors scaled the time (false for a file that records the structure alone,
    /// whose factors the keep rule dropped: the prediction's `detail.calibrated` is then false too);
    /// absent when no file was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factors: Option<bool>,
    /// The file as the user named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What the file holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<CalibrationFile>,
}

impl CalibrationUse {
    /// `file` as the user named it and its content; none when no calibration was given.
    pub fn new(used: Option<(String, CalibrationFile)>) -> CalibrationUse {
        match used {
            Some((file, content)) => CalibrationUse {
                applied: true,
                factors: Some(content.calibration().is_some()),
                file: Some(file),
                content: Some(content),
            },
            None => CalibrationUse { applied: false, factors: None, file: None, content: None },
        }
    }
}

/// What the kernel, GPU and model were, for the lines above the numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    /// Where the kernel's counters come from (a paper, a tool, a run); empty when the profile says not.
    pub kernel_source: String,
    /// The architecture the counters were measured on, when the profile says and it differs.
    pub measured_on: Option<String>,
    /// The GPU's marketing name.
    pub gpu: String,
    /// The dataset the power model was trained on, from its artifact.
    pub model_trained_on: Option<String>,
    /// The GPU that dataset was measured on, when the artifact records it (a suite table's GPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_gpu: Option<String>,
    /// Whether `model_gpu` is the GPU predicted on.
    #[serde(skip)]
    pub model_gpu_is_this: bool,
    /// How the GPU predicted on was chosen when `--arch` was not given (the GPU the profile names, or
    /// the default and why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch_note: Option<String>,
    /// The built-in profile the GPU profile's latencies were carried over from (`gpumodel arch new`), when
    /// they were not measured on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latencies_carried_from: Option<String>,
}

impl Provenance {
    pub fn new(kernel: &KernelProfile, arch: &ArchProfile, model: &ModelArtifact) -> Provenance {
        Provenance {
            kernel_source: kernel.source.clone(),
            measured_on: kernel.arch.clone().filter(|a| !arch.names_gpu(a) && !same_capability(a, arch)),
            gpu: arch.display_name.clone(),
            model_trained_on: model
                .training
                .get("dataset")
                .and_then(|d| d.get("name"))
                .and_then(|n| n.as_str())
                .map(str::to_string),
            model_gpu: model
                .training
                .get("dataset")
                .and_then(|d| d.get("gpu"))
                .and_then(|n| n.as_str())
                .map(str::to_string),
            model_gpu_is_this: false,
            arch_note: None,
            latencies_carried_from: crate::kernel::gpu::carried_from(arch),
        }
        .with_model_gpu_checked(arch)
    }

    fn with_model_gpu_checked(mut self, arch: &ArchProfile) -> Provenance {
        self.model_gpu_is_this = self.model_gpu.as_deref().is_some_and(|g| arch.names_gpu(g));
        self
    }
}

/// The note of a profile measured on another GPU than the one predicted on, with the way to predict on
/// the GPU it was measured on: its built-in profile's name, or how to write a profile for it.
fn another_gpu_note(measured_on: &str, arch: &str) -> String {
    let builtin = ArchProfile::builtin_names()
        .into_iter()
        .find(|n| ArchProfile::builtin(n).is_ok_and(|a| a.names_gpu(measured_on)));
    let how = match builtin {
        Some(n) => format!("`--arch {n}` predicts on it"),
        None => {
            "no built-in profile for it: `gpumodel arch new` writes one from documents, `gpumodel calibrate` \
                 measures one on it; then `--arch FILE`"
                .to_string()
        }
    };
    format!("note        counters measured on another GPU ({measured_on}), predicted on {arch} ({how})")
}

/// Whether a profile's GPU known only by its compute capability (`sm_80`) is of the architecture's.
fn same_capability(gpu: &str, arch: &ArchProfile) -> bool {
    use gpumodel_models::ncu::metrics::Capability;
    gpu.starts_with("sm_")
        && Capability::parse(gpu).is_some_and(|c| Capability::parse(&arch.compute_capability) == Some(c))
}

/// `gpumodel predict` at one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelReport {
    pub kernel: String,
    pub arch: String,
    /// The power model as the user named it (a file or an embedded model's name).
    pub model: String,
    pub calibration: CalibrationUse,
    pub context: Provenance,
    pub prediction: Prediction,
    /// Where the prediction extrapolates (clocks outside the architecture's table, power-model inputs far
    /// outside the training data): one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extrapolation: Vec<String>,
    /// Figures no run on this GPU can show (power above the board limit, …): errors, one line each
    /// ([`crate::kernel::gpu::beyond_the_hardware`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub out_of_bounds: Vec<String>,
}

/// `gpumodel predict --sweep`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepReport {
    pub kernel: String,
    pub arch: String,
    pub model: String,
    pub calibration: CalibrationUse,
    pub context: Provenance,
    pub sweep: Sweep,
    /// Points no run on this GPU can show (power above the board limit, …): errors, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub out_of_bounds: Vec<String>,
}

fn cal_line(c: &CalibrationUse) -> Option<(&str, &CalibrationFile)> {
    Some((c.file.as_deref()?, c.content.as_ref()?))
}

/// What of a calibration's structure differs from the model a plain `predict` uses ("" if nothing): the
/// "timing model alone" figure beside a calibrated time is that structure's.
fn structure_note(t: gpumodel_models::timing::TimingConfig) -> String {
    use gpumodel_models::timing::SharedOverlap;
    let mut parts = Vec::new();
    if t.shared_overlap == SharedOverlap::ReplaysOverlapIssue {
        parts.push("bank-conflict replays overlapping issue");
    }
    if t.fill_at_default_core_clock() {
        parts.push("the pipeline fill at the default core clock's latency");
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" with the calibration's structure: {}", parts.join(", "))
    }
}

/// A power model describes the GPU it was trained on: a note when the architecture differs.
fn model_note(ctx: &Provenance, arch: &str) -> Option<String> {
    let ds = ctx.model_trained_on.as_deref()?;
    if let Some(gpu) = ctx.model_gpu.as_deref() {
        // The artifact names its GPU: compare GPUs, not dataset and profile names.
        return (!ctx.model_gpu_is_this).then(|| {
            format!("note        the power model was trained on {ds} ({gpu}); its watts describe that GPU, not {arch}")
        });
    }
    (!ds.replace('-', "").contains(arch)).then(|| {
        format!("note        the power model was trained on {ds}; its watts describe that GPU, not {arch}")
    })
}

impl Export for KernelReport {
    const COMMAND: &'static str = "predict";

    fn preamble(&self) -> Vec<String> {
        let (p, ctx) = (&self.prediction, &self.context);
        let d = &p.detail;
        let source = if ctx.kernel_source.is_empty() { "no source given" } else { &ctx.kernel_source };
        let mut out = vec![format!("kernel      {} ({source})", self.kernel)];
        out.extend(self.out_of_bounds.iter().map(|x| format!("ERROR       {x}")));
        out.extend(ctx.arch_note.as_deref().map(|n| format!("gpu from    {n}")));
        // The line on how the GPU was chosen already says the counters' GPU is not the one predicted on.
        if ctx.arch_note.is_none() {
            out.extend(ctx.measured_on.as_deref().map(|m| another_gpu_note(m, &self.arch)));
        }
        out.extend(model_note(ctx, &self.arch));
        out.extend(self.extrapolation.iter().map(|x| format!("extrapol.   {x}")));
        out.push(format!(
            "gpu         {} at {} / {} MHz (core / memory)",
            ctx.gpu, d.clocks.core_mhz, d.clocks.mem_mhz
        ));
        out.extend(
            ctx.latencies_carried_from
                .as_deref()
                .map(|l| format!("expected    {}", crate::kernel::gpu::carried_note(l))),
        );
        let o = &d.occupancy;
        out.push(format!(
            "occupancy   {} warps/SM ({} blocks of {} warps, limited by {}), {} rounds on {} SMs",
            o.active_warps_per_sm,
            o.active_blocks_per_sm,
            o.warps_per_block,
            o.limiter,
            o.rounds,
            o.active_sms
        ));
        out.push(match cal_line(&self.calibration) {
            Some((file, c)) if c.calibration().is_none() => format!(
                "time        {:.4} ms, the timing model{} from {file} (the structure alone: its factors were \
                 dropped by the keep rule; chosen on {}, {:.1}% MAPE there, nothing fitted)",
                p.time_s * 1e3,
                structure_note(c.timing()),
                c.dataset.name,
                c.fit.out_of_fold_mape_pct
            ),
            Some((file, c)) => format!(
                "time        {:.4} ms, calibrated by {file} ({:.4} ms from the timing model alone{}; fitted on {}, \
                 {:.1}% out-of-fold MAPE there)",
                p.time_s * 1e3,
                d.timing.time_s * 1e3,
                structure_note(c.timing()),
                c.dataset.name,
                c.fit.out_of_fold_mape_pct
            ),
            None if d.measured => format!(
                "time        {:.4} ms, measured on this GPU at these clocks (the pipeline timing model: {:.4} ms; \
                 the breakdown below is its)",
                p.time_s * 1e3,
                d.timing.time_s * 1e3
            ),
            None => format!("time        {:.4} ms (the pipeline timing model)", p.time_s * 1e3),
        });
        out.push(match &p.power_fallback {
            None => format!(
                "power       {:.1} W ({} model; inputs = counter rates at the {} time)",
                p.power_w,
                self.model,
                if d.measured { "measured" } else { "predicted" }
            ),
            Some(f) => {
                format!("power       {:.1} W ({} model's data: {})", p.power_w, self.model, f.describe())
            }
        });
        out.extend(p.power_fallback.as_ref().map(|f| f.lacks_line()));
        out.push(format!("energy      {:.4} J", p.energy_j));
        out.push(format!(
            "bottleneck  {} ({:.0}% of the component total)",
            d.bottleneck,
            100.0 * d.bottleneck_share
        ));
        out
    }

    /// The component breakdown; CSV carries the one-row summary instead (see [`Export::csv_section`]).
    fn sections(&self) -> Vec<Section> {
        let mut s = Section::new(vec![
            Column::new("component", "component"),
            Column::new("time_ms", "time ms"),
            Column::new("share_pct", "share %"),
            Column::new("access_ratio", "access ratio"),
        ]);
        for c in &self.prediction.detail.components {
            s.push(vec![
                Cell::text(c.name),
                Cell::num(c.time_s * 1e3, 4),
                Cell::num(100.0 * c.share, 1),
                Cell::opt(c.access_ratio, 4),
            ]);
        }
        if let Some(c) = cal_line(&self.calibration).and_then(|(_, c)| c.calibration()) {
            s.then(format!(
                "L2 time {:.4} ms (the DRAM traffic through L2 at this core clock; not a component: the \
                 calibration weighs it by a_l2 = {:.4})",
                self.prediction.detail.timing.l2_s * 1e3,
                c.a[3]
            ));
        }
        vec![s]
    }

    /// One row: the prediction at this configuration (the columns of earlier versions, now quoted).
    fn csv_section(&self) -> Option<Section> {
        let (p, d) = (&self.prediction, &self.prediction.detail);
        let names = [
            "kernel",
            "arch",
            "measured_on",
            "core_mhz",
            "mem_mhz",
            "warps_per_sm",
            "time_s",
            "power_w",
            "energy_j",
            "bottleneck",
            "bottleneck_share",
            "calibration",
            "extrapolation",
            "out_of_bounds",
        ];
        let mut s = Section::new(names.iter().map(|n| Column::new(*n, *n)).collect());
        s.push(vec![
            Cell::text(&self.kernel),
            Cell::text(&self.arch),
            Cell::text(self.context.measured_on.clone().unwrap_or_default()),
            Cell::num(d.clocks.core_mhz, 0),
            Cell::num(d.clocks.mem_mhz, 0),
            Cell::int(d.occupancy.active_warps_per_sm),
            Cell::num(p.time_s, 6),
            Cell::num(p.power_w, 1),
            Cell::num(p.energy_j, 6),
            Cell::text(d.bottleneck),
            Cell::num(d.bottleneck_share, 3),
            Cell::text(self.calibration.file.clone().unwrap_or_default()),
            Cell::text(self.extrapolation.join("; ")),
            Cell::text(self.out_of_bounds.join("; ")),
        ]);
        Some(s)
    }
}

impl Export for SweepReport {
    const COMMAND: &'static str = "predict";

    fn preamble(&self) -> Vec<String> {
        let mut out = vec![format!("kernel {} on {}", self.kernel, self.context.gpu)];
        out.extend(self.out_of_bounds.iter().map(|x| format!("ERROR {x}")));
        out.extend(self.context.arch_note.iter().cloned());
        out.extend(self.context.latencies_carried_from.as_deref().map(crate::kernel::gpu::carried_note));
        out.extend(model_note(&self.context, &self.arch));
        if let Some(file) = &self.calibration.file {
            out.push(format!("times calibrated by {file}"));
        }
        out
    }

    fn sections(&self) -> Vec<Section> {
        let (x_name, x_label) = match self.sweep.kind {
            SweepKind::Warps => ("warps_per_sm", "warps/SM"),
            SweepKind::CoreClock => ("core_mhz", "core MHz"),
        };
        let mut s = Section::new(vec![
            Column::new(x_name, x_label),
            Column::new("time_ms", "time ms"),
            Column::new("power_w", "power W"),
            Column::new("energy_j", "energy J"),
            Column::new("bottleneck", "bottleneck"),
        ]);
        for p in &self.sweep.points {
            s.push(vec![
                Cell::num(p.x, 0),
                Cell::num(p.time_s * 1e3, 4),
                Cell::num(p.power_w, 1),
                Cell::num(p.energy_j, 4),
                Cell::text(p.bottleneck),
            ]);
        }
        vec![s]
    }

    fn csv_section(&self) -> Option<Section> {
        let mut s = self.sections().into_iter().next()?;
        s.columns[1] = Column::new("time_s", "time s");
        for (row, p) in s.rows.iter_mut().zip(&self.sweep.points) {
            row[1] = Cell::num(p.time_s, 6);
        }
        Some(s)
    }

    fn notes(&self) -> Vec<String> {
        let x = match self.sweep.kind {
            SweepKind::Warps => "warps/SM",
            SweepKind::CoreClock => "core MHz",
        };
        self.sweep
            .optima
            .iter()
            .map(|o| format!("optimum {:>8}: {x} = {} ({} = {:.6e})", o.objective, o.x, o.objective, o.value))
            .collect()
    }
}

/// `gpumodel predict` with the roofline fallback (a profile the pipeline timing model cannot read).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflineReport {
    pub kernel: String,
    pub arch: String,
    /// Always `roofline`: which model predicted.
    pub model: &'static str,
    pub context: Provenance,
    pub roofline: crate::kernel::fallback::Roofline,
    /// Figures no run on this GPU can show (power above the board limit, …): errors, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub out_of_bounds: Vec<String>,
    /// Power at the roofline's time, when the power model can answer from what the profile gives.
    pub power: crate::power::RooflinePower,
    /// The power model as the user named it.
    pub power_model: String,
    /// Where the prediction extrapolates: one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extrapolation: Vec<String>,
}

impl Export for RooflineReport {
    const COMMAND: &'static str = "predict";

    fn preamble(&self) -> Vec<String> {
        let (r, ctx) = (&self.roofline, &self.context);
        let source = if ctx.kernel_source.is_empty() { "no source given" } else { &ctx.kernel_source };
        let mut out = vec![format!("kernel      {} ({source})", self.kernel)];
        out.extend(ctx.arch_note.as_deref().map(|n| format!("gpu from    {n}")));
        // The line on how the GPU was chosen already says the counters' GPU is not the one predicted on.
        if ctx.arch_note.is_none() {
            out.extend(ctx.measured_on.as_deref().map(|m| another_gpu_note(m, &self.arch)));
        }
        out.push(format!(
            "model       roofline fallback: the pipeline timing model needs {}",
            r.lacked.join(", ")
        ));
        out.extend(self.out_of_bounds.iter().map(|x| format!("ERROR       {x}")));
        out.extend(self.extrapolation.iter().map(|x| format!("extrapol.   {x}")));
        out.push(format!(
            "gpu         {} at {} / {} MHz (core / memory)",
            ctx.gpu, r.clocks.core_mhz, r.clocks.mem_mhz
        ));
        let anchor = match r.anchor {
            Some((t, c)) => format!(
                "anchored on the measured {:.4} ms at {} / {} MHz",
                t * 1e3,
                c.core_mhz.round(),
                c.mem_mhz.round()
            ),
            None => "no measured time on this GPU: the plain roofline".into(),
        };
        if r.gpu_assumed {
            out.push(format!(
                "note        the export does not name its GPU: its measured time is taken as measured on {}",
                self.arch
            ));
        }
        out.push(format!("time        {:.4} ms ({anchor})", r.time_s * 1e3));
        if let Some(e) = r.expected_error_pct {
            out.push(format!(
                "expected    ±{e:.1}% (MAPE of this kind of prediction on the NV-DVFS kernels with the same counters withheld)"
            ));
        }
        out.push(format!("bound       {}", r.bound));
        out.extend(self.power.line(&self.power_model).lines().map(str::to_string));
        if let Some(e) = self.power.energy_j {
            out.push(format!("energy      {e:.4e} J"));
        }
        out
    }

    fn sections(&self) -> Vec<Section> {
        let mut s = Section::new(vec![Column::new("term", "term"), Column::new("time_ms", "time ms")]);
        for t in &self.roofline.terms {
            s.push(vec![Cell::text(t.name), Cell::num(t.time_s * 1e3, 6)]);
        }
        s.push(vec![Cell::text("fill (DRAM latency)"), Cell::num(self.roofline.fill_s * 1e3, 6)]);
        if self.roofline.anchor.is_some() {
            s.then("terms scaled as the time is, by the measured time over the roofline's at the measured clocks");
        }
        vec![s]
    }

    fn csv_section(&self) -> Option<Section> {
        let r = &self.roofline;
        let names = [
            "kernel",
            "arch",
            "measured_on",
            "model",
            "core_mhz",
            "mem_mhz",
            "time_s",
            "power_w",
            "energy_j",
            "bound",
            "expected_error_pct",
            "lacked",
            "out_of_bounds",
            "extrapolation",
        ];
        let mut s = Section::new(names.iter().map(|n| Column::new(*n, *n)).collect());
        s.push(vec![
            Cell::text(&self.kernel),
            Cell::text(&self.arch),
            Cell::text(self.context.measured_on.clone().unwrap_or_default()),
            Cell::text(self.model),
            Cell::num(r.clocks.core_mhz, 0),
            Cell::num(r.clocks.mem_mhz, 0),
            Cell::num(r.time_s, 9),
            Cell::opt(self.power.power_w, 1),
            Cell::opt(self.power.energy_j, 9),
            Cell::text(r.bound),
            Cell::opt(r.expected_error_pct, 1),
            Cell::text(r.lacked.join("; ")),
            Cell::text(self.out_of_bounds.join("; ")),
            Cell::text(self.extrapolation.join("; ")),
        ]);
        Some(s)
    }
}
