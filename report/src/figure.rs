//! The figure kinds every reader draws with, on plotters' SVG backend.
//!
//! A figure is drawn in layers — frame (axes, grid, legend, title, caption), lines (curves, reference lines),
//! marks (one SVG element per data point or bar), highlights (optima, chosen points) and labels — each into
//! its own `<g class="…">`. The layers share one layout, so they line up; the split lets a test (or a
//! reader of the SVG) count the marks without guessing which `<rect>` is a bar and which the background.

use crate::error::{Error, Result};
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// One figure of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Unique in a report (`validate-time-scatter`, …); also the SVG's `id`.
    pub id: String,
    pub title: String,
    /// One line that says what to look for.
    pub caption: String,
    pub svg: String,
    /// Elements in the marks layer: one per data point or bar.
    pub marks: usize,
}

/// A note shown instead of a figure that the input cannot support (e.g. a field the JSON lacks).
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub source: String,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    Frame,
    Lines,
    Marks,
    Highlights,
    Labels,
}

impl Layer {
    const ALL: [Layer; 5] = [Layer::Frame, Layer::Lines, Layer::Marks, Layer::Highlights, Layer::Labels];
    fn class(self) -> &'static str {
        match self {
            Layer::Frame => "frame",
            Layer::Lines => "lines",
            Layer::Marks => "marks",
            Layer::Highlights => "highlights",
            Layer::Labels => "labels",
        }
    }
}

/// Series colours, chosen so that their lightness differs in greyscale (CIE L* 25, 45, 57, 72, 35), with a
/// marker shape each so that points stay distinguishable without colour.
pub(crate) const PALETTE: [RGBColor; 5] = [
    RGBColor(0x1b, 0x3a, 0x6b), // navy
    RGBColor(0xc0, 0x39, 0x2b), // brick red
    RGBColor(0x2a, 0x9d, 0x3f), // green
    RGBColor(0xf0, 0xa2, 0x02), // amber
    RGBColor(0x6a, 0x3d, 0x9a), // purple
];
pub(crate) const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
pub(crate) const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
pub(crate) const HIGHLIGHT: RGBColor = RGBColor(0x00, 0x00, 0x00);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Circle,
    Triangle,
    Square,
    Diamond,
    /// A bar swatch in the legend.
    Bar,
    /// A line swatch in the legend.
    Line,
}

pub(crate) fn series_shape(i: usize) -> Shape {
    [Shape::Circle, Shape::Triangle, Shape::Square, Shape::Diamond, Shape::Circle][i % 5]
}

pub(crate) fn series_color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A legend entry.
#[derive(Debug, Clone)]
pub(crate) struct Key {
    pub label: String,
    pub color: RGBColor,
    pub shape: Shape,
}

/// The frame shared by every figure: size, title, legend and caption.
pub(crate) struct Canvas {
    pub width: u32,
    pub height: u32,
    pub title: String,
    pub caption: String,
    pub legend: Vec<Key>,
}

const TITLE_H: i32 = 30;
const LEGEND_H: i32 = 24;
const CAPTION_H: i32 = 24;
pub(crate) const FONT: &str = "sans-serif";

/// Mean advance of a sans-serif character, in em: the width estimate of every label (the SVG backend has
/// no font metrics).
const CHAR_EM: f64 = 0.55;

/// Width estimate of text in px ([`CHAR_EM`] per character).
pub(crate) fn text_width(s: &str, size_px: f64) -> i32 {
    (s.chars().count() as f64 * size_px * CHAR_EM).ceil() as i32
}

/// How many characters of `size_px` text fit in `width_px` (the inverse of [`text_width`]); at least 1.
pub(crate) fn fit_chars(width_px: i32, size_px: f64) -> usize {
    ((f64::from(width_px.max(0)) / (size_px * CHAR_EM)).floor() as usize).max(1)
}

/// Category names longer than this are shortened with an ellipsis, so a label column stays a fraction of
/// the figure however long a kernel name is.
const CATEGORY_MAX_CHARS: usize = 40;
/// Gap between a category label and the axis it names, px.
const LABEL_GAP_PX: i32 = 6;
/// Room between the longest category label and the outer edge of its label area, px.
const LABEL_PAD_PX: i32 = 8;

/// The category names beside a chart's vertical axis (bar rows, heat-map rows), drawn right-aligned
/// [`LABEL_GAP_PX`] left of the axis, and the label area that holds the longest of them: the one place
/// where that pixel arithmetic is done, so a long kernel name is neither clipped at the figure's edge nor
/// drawn over the axis description.
pub(crate) struct RowLabels {
    /// The names as drawn (shortened to [`CATEGORY_MAX_CHARS`]).
    pub text: Vec<String>,
    pub size_px: f64,
    /// Width for `ChartBuilder::y_label_area_size`: gap + longest label + pad, plus the rotated axis
    /// description's line (plotters draws it at the area's outer edge) when there is one.
    pub area_px: i32,
}

impl RowLabels {
    /// `desc_font_px`: the font size of the y axis description drawn in the same area, if any.
    pub(crate) fn new(names: &[String], size_px: f64, desc_font_px: Option<u32>) -> RowLabels {
        let text: Vec<String> = names.iter().map(|c| shorten(c, CATEGORY_MAX_CHARS)).collect();
        let longest = text.iter().map(|t| text_width(t, size_px)).max().unwrap_or(0);
        // The description is rotated: its line is one font height wide, plus the same pad.
        let desc_px = desc_font_px.map_or(0, |f| f as i32 + LABEL_PAD_PX);
        RowLabels { text, size_px, area_px: LABEL_GAP_PX + longest + LABEL_PAD_PX + desc_px }
    }

    /// Draws label `i` in `outer` (the chart's whole area, unclipped by the plotting area) beside `axis`,
    /// the backend pixel of the axis point the label names.
    pub(crate) fn draw(&self, outer: &Area, i: usize, axis: (i32, i32)) -> DrawResult {
        let ob = outer.get_base_pixel();
        text(outer, &self.text[i], (axis.0 - ob.0 - LABEL_GAP_PX, axis.1 - ob.1), self.size_px, right())
    }
}

/// Shortens `s` to at most `n` characters, with an ellipsis.
pub(crate) fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Draws a marker of `shape` centred at `c` (backend pixels) as exactly one SVG element.
pub(crate) fn marker(area: &Area, c: (i32, i32), shape: Shape, size: i32, color: RGBColor) -> DrawResult {
    let style = color.filled();
    match shape {
        Shape::Circle => area.draw(&Circle::new(c, size, style))?,
        Shape::Triangle => area.draw(&Polygon::new(
            vec![(c.0, c.1 - size - 1), (c.0 + size + 1, c.1 + size), (c.0 - size - 1, c.1 + size)],
            style,
        ))?,
        Shape::Square => {
            area.draw(&Rectangle::new([(c.0 - size, c.1 - size), (c.0 + size, c.1 + size)], style))?
        }
        Shape::Diamond => area.draw(&Polygon::new(
            vec![(c.0, c.1 - size - 2), (c.0 + size + 2, c.1), (c.0, c.1 + size + 2), (c.0 - size - 2, c.1)],
            style,
        ))?,
        Shape::Bar => area.draw(&Rectangle::new([(c.0 - 7, c.1 - 5), (c.0 + 7, c.1 + 5)], style))?,
        Shape::Line => {
            area.draw(&PathElement::new(vec![(c.0 - 9, c.1), (c.0 + 9, c.1)], color.stroke_width(2)))?
        }
    }
    Ok(())
}

pub(crate) fn text(area: &Area, s: &str, at: (i32, i32), size: f64, pos: Pos) -> DrawResult {
    let style = TextStyle::from((FONT, size).into_font()).color(&INK).pos(pos);
    area.draw(&Text::new(s.to_string(), at, style))?;
    Ok(())
}

pub(crate) fn left() -> Pos {
    Pos::new(HPos::Left, VPos::Center)
}
pub(crate) fn right() -> Pos {
    Pos::new(HPos::Right, VPos::Center)
}
pub(crate) fn center() -> Pos {
    Pos::new(HPos::Center, VPos::Center)
}

/// Data coordinates → pixels of a chart's plotting area (see [`in_pixels`]).
#[derive(Clone, Copy)]
pub(crate) struct Pixels<'c, 'a, X: Ranged, Y: Ranged> {
    chart: &'c ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    base: (i32, i32),
}

impl<X: Ranged, Y: Ranged> Pixels<'_, '_, X, Y> {
    pub(crate) fn at(&self, p: (X::ValueType, Y::ValueType)) -> (i32, i32) {
        let c = self.chart.backend_coord(&p);
        (c.0 - self.base.0, c.1 - self.base.1)
    }
}

/// The chart's plotting area addressed in plain pixels, and the map from data coordinates to those pixels:
/// marks are drawn in pixels so that each one is a single SVG element of a known shape.
fn in_pixels<'c, 'a: 'c, X: Ranged, Y: Ranged>(
    chart: &'c ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
) -> (Area<'a>, Pixels<'c, 'a, X, Y>) {
    let root = chart.plotting_area().strip_coord_spec();
    let base = root.get_base_pixel();
    (root, Pixels { chart, base })
}

/// The numeric x grid every chart kind shares: no minor lines, light major lines, the x description and
/// tick labels through [`tick`]; `font_px` = (axis description, tick label) sizes. Callers add the y side.
fn numeric_mesh<'m, 'a, 'b, X, Y>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'a>>,
    x_desc: &str,
    font_px: (u32, u32),
) -> &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'a>>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    mesh.light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .x_desc(x_desc)
        .axis_desc_style((FONT, font_px.0))
        .label_style((FONT, font_px.1))
        .x_label_formatter(&tick_ref)
}

fn tick_ref(v: &f64) -> String {
    tick(*v)
}

/// Draws the figure layer by layer. `draw` gets the layer and the area below the title and legend and above
/// the caption; the frame layer's title, legend and caption are drawn here.
pub(crate) fn layered(
    id: &str,
    canvas: &Canvas,
    mut draw: impl FnMut(Layer, &Area) -> DrawResult,
) -> Result<Figure> {
    let (w, h) = (canvas.width, canvas.height);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         role=\"img\" font-family=\"{FONT}\"><title>{}</title>\n",
        escape(id),
        escape(&canvas.title)
    );
    let mut marks = 0;
    for layer in Layer::ALL {
        let mut s = String::new();
        {
            let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
            let result: DrawResult = (|| {
                if layer == Layer::Frame {
                    root.fill(&WHITE)?;
                    frame(&root, canvas)?;
                }
                let legend_h = if canvas.legend.is_empty() { 0 } else { LEGEND_H };
                let body = root.margin(TITLE_H + legend_h, CAPTION_H, 0, 0);
                draw(layer, &body)?;
                root.present()?;
                Ok(())
            })();
            result.map_err(|e| Error::Draw(format!("{id}: {e}")))?;
        }
        let inner = strip_svg(&s);
        if layer == Layer::Marks {
            marks = count_elements(inner);
        }
        svg.push_str(&format!("<g class=\"{}\">\n{inner}</g>\n", layer.class()));
    }
    svg.push_str("</svg>\n");
    Ok(Figure {
        id: id.to_string(),
        title: canvas.title.clone(),
        caption: canvas.caption.clone(),
        svg,
        marks,
    })
}

fn frame(root: &Area, canvas: &Canvas) -> DrawResult {
    let w = canvas.width as i32;
    let title_style = TextStyle::from((FONT, 18.0).into_font().style(FontStyle::Bold))
        .color(&INK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    // The SVG has no font metrics: shorten what would not fit rather than let it run off the edge.
    let fit = |size: f64| fit_chars(w - 16, size);
    root.draw(&Text::new(shorten(&canvas.title, fit(18.0)), (w / 2, TITLE_H / 2 + 2), title_style))?;
    if !canvas.legend.is_empty() {
        // Legend in one centred row between title and plot, so it never covers data.
        let items: Vec<i32> = canvas.legend.iter().map(|k| 24 + text_width(&k.label, 13.0) + 18).collect();
        let total: i32 = items.iter().sum();
        let mut x = ((w - total) / 2).max(4);
        let y = TITLE_H + LEGEND_H / 2;
        for (k, width) in canvas.legend.iter().zip(&items) {
            marker(root, (x + 9, y), k.shape, 5, k.color)?;
            text(root, &k.label, (x + 22, y), 13.0, left())?;
            x += width;
        }
    }
    text(
        root,
        &shorten(&canvas.caption, fit(13.0)),
        (w / 2, canvas.height as i32 - CAPTION_H / 2),
        13.0,
        center(),
    )?;
    Ok(())
}

fn strip_svg(s: &str) -> &str {
    let start = s.find("<svg").and_then(|i| s[i..].find('>').map(|j| i + j + 1)).unwrap_or(0);
    let end = s.rfind("</svg>").unwrap_or(s.len());
    s[start..end].trim_start_matches('\n')
}

/// Counts the top-level elements of an SVG fragment that plotters wrote one per line.
fn count_elements(fragment: &str) -> usize {
    fragment.lines().filter(|l| l.starts_with('<') && !l.starts_with("</")).count()
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A number for a tick label: short, no trailing zeros.
pub(crate) fn tick(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        // Three significant digits, so that neighbouring ticks of a narrow range stay distinct.
        let s = format!("{v:.2e}");
        match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            None => s,
        }
    } else {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

/// A finite range that contains `values`, padded by `pad` of its span (a degenerate range is widened).
pub(crate) fn span(values: impl IntoIterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo <= 1e-9 * hi.abs().max(lo.abs()).max(1e-300) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - d, hi + d);
    }
    let d = (hi - lo) * pad;
    (lo - d, hi + d)
}

/// A log range (positive values only) padded by a factor.
pub(crate) fn log_span(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    // Whole decades: a log axis inside one decade would get no tick labels at all.
    let (lo, hi) = span(values.into_iter().filter(|v| *v > 0.0).map(f64::log10), 0.02);
    (10f64.powf(lo.floor()), 10f64.powf(hi.ceil().max(lo.floor() + 1.0)))
}

// ---------------------------------------------------------------------------------------------------------
// Scatter: points per series, optional y = x, optional front line and highlighted points.

pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

pub(crate) struct Highlight {
    pub label: String,
    pub at: (f64, f64),
}

pub(crate) struct Scatter {
    pub x_label: String,
    pub y_label: String,
    pub log: bool,
    pub identity: bool,
    pub series: Vec<Series>,
    /// A polyline through these points (e.g. the Pareto front), drawn under the marks.
    pub line: Vec<(f64, f64)>,
    pub highlights: Vec<Highlight>,
}

pub(crate) fn scatter(id: &str, title: &str, caption: &str, s: &Scatter) -> Result<Figure> {
    scatter_line_named(id, title, caption, s, "Pareto front")
}

/// [`scatter`] whose `line` is named `line_label` in the legend (a fitted law, not a front).
pub(crate) fn scatter_line_named(
    id: &str,
    title: &str,
    caption: &str,
    s: &Scatter,
    line_label: &str,
) -> Result<Figure> {
    let mut legend: Vec<Key> = s
        .series
        .iter()
        .enumerate()
        .map(|(i, se)| Key { label: se.label.clone(), color: series_color(i), shape: series_shape(i) })
        .collect();
    if s.identity {
        legend.push(Key { label: "y = x".into(), color: RGBColor(0x77, 0x77, 0x77), shape: Shape::Line });
    }
    if !s.line.is_empty() {
        legend.push(Key { label: line_label.into(), color: INK, shape: Shape::Line });
    }
    if !s.highlights.is_empty() {
        legend.push(Key { label: "optimum".into(), color: HIGHLIGHT, shape: Shape::Diamond });
    }
    let canvas = Canvas { width: 760, height: 560, title: title.into(), caption: caption.into(), legend };
    let all = || {
        s.series
            .iter()
            .flat_map(|se| se.points.iter().copied())
            .chain(s.line.iter().copied())
            .chain(s.highlights.iter().map(|h| h.at))
    };
    if s.log {
        let (mut lo, mut hi) = log_span(all().flat_map(|(x, y)| [x, y]));
        if !s.identity {
            (lo, hi) = log_span(all().map(|p| p.0));
        }
        let (ylo, yhi) = if s.identity { (lo, hi) } else { log_span(all().map(|p| p.1)) };
        layered(id, &canvas, |layer, area| {
            let x: LogCoord<f64> = (lo..hi).log_scale().into();
            let y: LogCoord<f64> = (ylo..yhi).log_scale().into();
            scatter_layer(layer, area, s, x, y, (lo, hi))
        })
    } else {
        let (xlo, xhi) = span(all().map(|p| p.0), 0.06);
        let (ylo, yhi) = span(all().map(|p| p.1), 0.08);
        let (lo, hi) = (xlo.min(ylo), xhi.max(yhi));
        let (xlo, xhi, ylo, yhi) = if s.identity { (lo, hi, lo, hi) } else { (xlo, xhi, ylo, yhi) };
        let x: RangedCoordf64 = (xlo..xhi).into();
        let y: RangedCoordf64 = (ylo..yhi).into();
        layered(id, &canvas, |layer, area| scatter_layer(layer, area, s, x.clone(), y.clone(), (lo, hi)))
    }
}

fn scatter_layer<X, Y>(layer: Layer, area: &Area, s: &Scatter, x: X, y: Y, diag: (f64, f64)) -> DrawResult
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(30)
        .x_label_area_size(46)
        .y_label_area_size(78)
        .build_cartesian_2d(x, y)?;
    match layer {
        Layer::Frame => {
            numeric_mesh(&mut chart.configure_mesh(), &s.x_label, (15, 13))
                .y_desc(s.y_label.as_str())
                .y_label_formatter(&tick_ref)
                .draw()?;
        }
        Layer::Lines => {
            if s.identity {
                let d = vec![(diag.0, diag.0), (diag.1, diag.1)];
                chart.draw_series(std::iter::once(PathElement::new(
                    d,
                    RGBColor(0x77, 0x77, 0x77).stroke_width(1),
                )))?;
            }
            if !s.line.is_empty() {
                chart.draw_series(std::iter::once(PathElement::new(s.line.clone(), INK.stroke_width(2))))?;
            }
        }
        Layer::Marks => {
            let (root, px) = in_pixels(&chart);
            for (i, se) in s.series.iter().enumerate() {
                for p in &se.points {
                    marker(&root, px.at(*p), series_shape(i), 3, series_color(i))?;
                }
            }
        }
        Layer::Highlights => {
            let (root, px) = in_pixels(&chart);
            for h in &s.highlights {
                marker(&root, px.at(h.at), Shape::Diamond, 5, HIGHLIGHT)?;
            }
        }
        Layer::Labels => {
            let (root, px) = in_pixels(&chart);
            let (w, _) = root.dim_in_pixel();
            for (i, h) in s.highlights.iter().enumerate() {
                let (cx, cy) = px.at(h.at);
                // Alternate label sides so that neighbouring optima do not print over each other.
                let tw = text_width(&h.label, 12.0);
                let right_side = cx + 12 + tw < w as i32 && i % 2 == 0 || cx - 12 - tw < 0;
                let dy = if i % 2 == 0 { -10 } else { 12 };
                if right_side {
                    text(&root, &h.label, (cx + 10, cy + dy), 12.0, left())?;
                } else {
                    text(&root, &h.label, (cx - 10, cy + dy), 12.0, right())?;
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Horizontal grouped bars: one row per category, one bar per series.

pub(crate) struct Bars {
    pub x_label: String,
    pub categories: Vec<String>,
    /// (series label, one value per category; None = no bar).
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// Draw the value at the end of each bar.
    pub values: bool,
    /// Per series (in `series` order; missing or empty = none), per category: an interval (lo, hi) drawn
    /// as a whisker over the bar.
    pub intervals: Vec<Vec<Option<(f64, f64)>>>,
}

pub(crate) fn hbars(id: &str, title: &str, caption: &str, b: &Bars) -> Result<Figure> {
    let legend = b
        .series
        .iter()
        .enumerate()
        .map(|(i, (l, _))| Key { label: l.clone(), color: series_color(i), shape: Shape::Bar })
        .collect();
    let ns = b.series.len().max(1);
    let bar_px = match ns {
        1 => 14,
        2 | 3 => 8,
        _ => 6,
    };
    let row_px = (ns as i32 * bar_px + 8).max(18);
    let rows = RowLabels::new(&b.categories, 12.0, None);
    let height =
        (row_px * b.categories.len() as i32 + 24 + 46 + TITLE_H + LEGEND_H + CAPTION_H).max(240) as u32;
    let canvas = Canvas { width: 860, height, title: title.into(), caption: caption.into(), legend };
    let interval = |j: usize, i: usize| {
        b.intervals
            .get(j)
            .and_then(|v| v.get(i).copied().flatten())
            .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
    };
    let max = b
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().copied())
        .chain(b.intervals.iter().flatten().flatten().map(|(_, hi)| *hi))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let xmax = if max > 0.0 { max * if b.values { 1.15 } else { 1.04 } } else { 1.0 };
    let n = b.categories.len() as f64;
    layered(id, &canvas, |layer, area| {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .margin_right(30)
            .x_label_area_size(46)
            .y_label_area_size(rows.area_px)
            .build_cartesian_2d(0.0..xmax, 0.0..n.max(1.0))?;
        let (root, px) = in_pixels(&chart);
        // Category i occupies y in [n-i-1, n-i): first category at the top.
        let row_top = |i: usize| n - i as f64;
        match layer {
            Layer::Frame => {
                numeric_mesh(&mut chart.configure_mesh(), &b.x_label, (15, 13))
                    .disable_y_mesh()
                    .y_labels(0)
                    .draw()?;
                let outer = area.strip_coord_spec();
                for i in 0..b.categories.len() {
                    rows.draw(&outer, i, chart.backend_coord(&(0.0, row_top(i) - 0.5)))?;
                }
            }
            Layer::Marks | Layer::Labels => {
                for (i, _) in b.categories.iter().enumerate() {
                    let top = px.at((0.0, row_top(i))).1 + 4;
                    for (j, (_, vals)) in b.series.iter().enumerate() {
                        let Some(v) = vals.get(i).copied().flatten().filter(|v| v.is_finite()) else {
                            continue;
                        };
                        let y0 = top + j as i32 * bar_px;
                        let x0 = px.at((0.0, 0.0)).0;
                        let x1 = px.at((v.max(0.0), 0.0)).0.max(x0 + 1);
                        let whisker_end =
                            interval(j, i).map_or(x1, |(_, hi)| px.at((hi.max(0.0), 0.0)).0.max(x1));
                        if layer == Layer::Marks {
                            root.draw(&Rectangle::new(
                                [(x0, y0), (x1, y0 + bar_px - 1)],
                                series_color(j).filled(),
                            ))?;
                        } else if b.values {
                            let at = (whisker_end + 3, y0 + bar_px / 2);
                            text(&root, &tick_value(v), at, if ns == 1 { 11.0 } else { 9.0 }, left())?;
                        }
                    }
                }
            }
            Layer::Highlights => {
                // Whiskers over the bars: one line from lo to hi through the bar's middle, with end caps.
                for i in 0..b.categories.len() {
                    let top = px.at((0.0, row_top(i))).1 + 4;
                    for j in 0..b.series.len() {
                        let Some((lo, hi)) = interval(j, i) else { continue };
                        let (y0, y1) = (top + j as i32 * bar_px, top + (j as i32 + 1) * bar_px - 1);
                        let ym = (y0 + y1) / 2;
                        let (xl, xh) = (px.at((lo.max(0.0), 0.0)).0, px.at((hi.max(0.0), 0.0)).0);
                        let ink = INK.stroke_width(1);
                        root.draw(&PathElement::new(vec![(xl, ym), (xh, ym)], ink))?;
                        root.draw(&PathElement::new(vec![(xl, y0), (xl, y1)], ink))?;
                        root.draw(&PathElement::new(vec![(xh, y0), (xh, y1)], ink))?;
                    }
                }
            }
            Layer::Lines => {}
        }
        Ok(())
    })
}

fn tick_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

// ---------------------------------------------------------------------------------------------------------
// One stacked horizontal bar (components of a total) with the total marked.

pub(crate) fn stacked_bar(
    id: &str,
    title: &str,
    caption: &str,
    x_label: &str,
    components: &[(String, f64)],
    total: Option<(String, f64)>,
) -> Result<Figure> {
    let legend: Vec<Key> = components
        .iter()
        .enumerate()
        .map(|(i, (l, _))| Key { label: l.clone(), color: series_color(i), shape: Shape::Bar })
        .chain(total.iter().map(|(l, _)| Key { label: l.clone(), color: HIGHLIGHT, shape: Shape::Line }))
        .collect();
    let canvas = Canvas { width: 860, height: 260, title: title.into(), caption: caption.into(), legend };
    let sum: f64 = components.iter().map(|c| c.1).sum();
    let xmax = sum.max(total.as_ref().map_or(0.0, |t| t.1)).max(f64::MIN_POSITIVE) * 1.05;
    layered(id, &canvas, |layer, area| {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .margin_right(40)
            .x_label_area_size(46)
            .y_label_area_size(20)
            .build_cartesian_2d(0.0..xmax, 0.0..1.0)?;
        let (root, px) = in_pixels(&chart);
        match layer {
            Layer::Frame => {
                numeric_mesh(&mut chart.configure_mesh(), x_label, (15, 13))
                    .disable_y_mesh()
                    .y_labels(0)
                    .draw()?;
            }
            Layer::Marks | Layer::Labels => {
                let mut at = 0.0;
                for (i, (name, v)) in components.iter().enumerate() {
                    let (x0, y0) = px.at((at, 0.8));
                    let (x1, y1) = px.at((at + v, 0.2));
                    if layer == Layer::Marks {
                        root.draw(&Rectangle::new(
                            [(x0, y0), (x1.max(x0 + 1), y1)],
                            series_color(i).filled(),
                        ))?;
                    } else if x1 - x0 > text_width(name, 12.0) + 6 {
                        // Name inside the segment only where it fits; the legend names every colour.
                        let color = if i == 3 { INK } else { WHITE };
                        let style = TextStyle::from((FONT, 12.0).into_font()).color(&color).pos(center());
                        root.draw(&Text::new(name.clone(), ((x0 + x1) / 2, (y0 + y1) / 2), style))?;
                    }
                    at += v;
                }
            }
            Layer::Highlights => {
                if let Some((_, t)) = &total {
                    let (x, y0) = px.at((*t, 0.92));
                    let (_, y1) = px.at((*t, 0.08));
                    root.draw(&PathElement::new(vec![(x, y0), (x, y1)], HIGHLIGHT.stroke_width(3)))?;
                }
            }
            Layer::Lines => {}
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------------------
// Small multiples: one curve per panel over a shared x, with optional optimum and vertical spans.

pub(crate) struct Panel {
    pub y_label: String,
    pub points: Vec<(f64, f64)>,
    /// (label, x, y) of the optimum marked in this panel.
    pub optimum: Option<(String, f64, f64)>,
}

pub(crate) struct Panels {
    pub x_label: String,
    pub cols: usize,
    pub panels: Vec<Panel>,
    /// Marks every point of each curve (false for long time series).
    pub point_marks: bool,
    /// Shaded x intervals (e.g. kernel launches), drawn as highlights in every panel.
    pub spans: Vec<(f64, f64)>,
}

pub(crate) fn panels(id: &str, title: &str, caption: &str, p: &Panels, legend: Vec<Key>) -> Result<Figure> {
    let cols = p.cols.max(1);
    let rows = p.panels.len().div_ceil(cols).max(1);
    let height = (rows as i32 * 250 + TITLE_H + LEGEND_H + CAPTION_H) as u32;
    let canvas = Canvas { width: 960, height, title: title.into(), caption: caption.into(), legend };
    let (xlo, xhi) = span(p.panels.iter().flat_map(|q| q.points.iter().map(|pt| pt.0)), 0.04);
    layered(id, &canvas, |layer, area| {
        let cells = area.split_evenly((rows, cols));
        for (panel, cell) in p.panels.iter().zip(cells.iter()) {
            let (ylo, yhi) = span(panel.points.iter().map(|pt| pt.1), 0.08);
            let mut chart = ChartBuilder::on(cell)
                .margin(10)
                .margin_right(18)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(xlo..xhi, ylo..yhi)?;
            let (root, px) = in_pixels(&chart);
            match layer {
                Layer::Frame => {
                    numeric_mesh(&mut chart.configure_mesh(), &p.x_label, (14, 12))
                        .x_labels(6)
                        .y_labels(5)
                        .y_desc(panel.y_label.as_str())
                        .y_label_formatter(&tick_ref)
                        .draw()?;
                }
                Layer::Lines => {
                    for (a, b) in &p.spans {
                        let (x0, y0) = px.at((a.max(xlo), yhi));
                        let (x1, y1) = px.at((b.min(xhi), ylo));
                        root.draw(&Rectangle::new(
                            [(x0, y0), (x1.max(x0 + 1), y1)],
                            RGBColor(0xe8, 0xe8, 0xe8).filled(),
                        ))?;
                    }
                    chart.draw_series(std::iter::once(PathElement::new(
                        panel.points.clone(),
                        PALETTE[0].stroke_width(2),
                    )))?;
                }
                Layer::Marks => {
                    if p.point_marks {
                        for q in &panel.points {
                            marker(&root, px.at(*q), Shape::Circle, 2, PALETTE[0])?;
                        }
                    }
                }
                Layer::Highlights => {
                    if let Some((_, x, y)) = &panel.optimum {
                        marker(&root, px.at((*x, *y)), Shape::Diamond, 5, PALETTE[1])?;
                    }
                }
                Layer::Labels => {
                    if let Some((label, x, y)) = &panel.optimum {
                        let (cx, cy) = px.at((*x, *y));
                        let (w, _) = root.dim_in_pixel();
                        let tw = text_width(label, 12.0);
                        let (at, pos) = if cx + 10 + tw < w as i32 {
                            ((cx + 9, cy - 18), left())
                        } else {
                            ((cx - 9, cy - 18), right())
                        };
                        text(&root, label, at, 12.0, pos)?;
                    }
                }
            }
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------------------
// Heat map over two categorical axes, with the value printed in each cell and a colour bar.

pub(crate) struct Heat {
    pub x_label: String,
    pub y_label: String,
    pub x_cats: Vec<String>,
    pub y_cats: Vec<String>,
    /// (x index, y index, value).
    pub cells: Vec<(usize, usize, f64)>,
    pub value_label: String,
    /// Decimals of the value printed in a cell.
    pub decimals: usize,
}

/// A perceptually ordered colour ramp (viridis end points and middle), monotone in lightness so that the
/// order survives greyscale printing.
pub(crate) fn ramp(t: f64) -> RGBColor {
    const STOPS: [(f64, (f64, f64, f64)); 5] = [
        (0.0, (68.0, 1.0, 84.0)),
        (0.25, (59.0, 82.0, 139.0)),
        (0.5, (33.0, 145.0, 140.0)),
        (0.75, (94.0, 201.0, 98.0)),
        (1.0, (253.0, 231.0, 37.0)),
    ];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let k = STOPS.iter().position(|s| s.0 >= t).unwrap_or(4).max(1);
    let (t0, a) = STOPS[k - 1];
    let (t1, b) = STOPS[k];
    let f = (t - t0) / (t1 - t0);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

pub(crate) fn heatmap(id: &str, title: &str, caption: &str, h: &Heat, width: u32) -> Result<Figure> {
    let canvas = Canvas {
        width,
        height: 120 + 30 * h.y_cats.len().max(4) as u32 + 100,
        title: title.into(),
        caption: caption.into(),
        legend: vec![],
    };
    let (vlo, vhi) = span(h.cells.iter().map(|c| c.2), 0.0);
    let (nx, ny) = (h.x_cats.len().max(1) as f64, h.y_cats.len().max(1) as f64);
    let norm = |v: f64| if vhi > vlo { (v - vlo) / (vhi - vlo) } else { 0.5 };
    const DESC_FONT_PX: u32 = 15;
    let rows = RowLabels::new(&h.y_cats, 12.0, Some(DESC_FONT_PX));
    layered(id, &canvas, |layer, area| {
        let (main, bar) = area.split_horizontally(area.dim_in_pixel().0 as i32 - 90);
        let mut chart = ChartBuilder::on(&main)
            .margin(12)
            .x_label_area_size(46)
            .y_label_area_size(rows.area_px)
            .build_cartesian_2d(0.0..nx, 0.0..ny)?;
        let (root, px) = in_pixels(&chart);
        match layer {
            Layer::Frame => {
                chart
                    .configure_mesh()
                    .disable_mesh()
                    .x_labels(0)
                    .y_labels(0)
                    .x_desc(h.x_label.as_str())
                    .y_desc(h.y_label.as_str())
                    .axis_desc_style((FONT, DESC_FONT_PX))
                    .draw()?;
                let outer = main.strip_coord_spec();
                let ob = outer.get_base_pixel();
                // Column names are centred under their cells: each is shortened to its cell's width so that
                // neighbours never run into each other.
                let cell_px = chart.backend_coord(&(1.0, 0.0)).0 - chart.backend_coord(&(0.0, 0.0)).0;
                let fit = fit_chars(cell_px - LABEL_GAP_PX, 12.0);
                for (i, c) in h.x_cats.iter().enumerate() {
                    let p = chart.backend_coord(&(i as f64 + 0.5, 0.0));
                    text(&outer, &shorten(c, fit), (p.0 - ob.0, p.1 - ob.1 + 12), 12.0, center())?;
                }
                for j in 0..h.y_cats.len() {
                    rows.draw(&outer, j, chart.backend_coord(&(0.0, j as f64 + 0.5)))?;
                }
                // Colour bar with its extremes.
                let (_, bh) = bar.dim_in_pixel();
                let (top, bottom) = (20, bh as i32 - 60);
                let steps = 40;
                for s in 0..steps {
                    let y0 = bottom - (bottom - top) * (s + 1) / steps;
                    let y1 = bottom - (bottom - top) * s / steps;
                    bar.draw(&Rectangle::new(
                        [(20, y0), (40, y1)],
                        ramp(s as f64 / (steps - 1) as f64).filled(),
                    ))?;
                }
                text(&bar, &tick(vhi), (44, top), 11.0, left())?;
                text(&bar, &tick(vlo), (44, bottom), 11.0, left())?;
                text(&bar, &h.value_label, (30, bottom + 22), 11.0, center())?;
            }
            Layer::Marks | Layer::Labels => {
                for &(i, j, v) in &h.cells {
                    let (x0, y0) = px.at((i as f64, j as f64 + 1.0));
                    let (x1, y1) = px.at((i as f64 + 1.0, j as f64));
                    if layer == Layer::Marks {
                        root.draw(&Rectangle::new(
                            [(x0 + 1, y0 + 1), (x1 - 1, y1 - 1)],
                            ramp(norm(v)).filled(),
                        ))?;
                    } else {
                        // Dark text on the light end of the ramp, white on the dark end.
                        let color = if norm(v) > 0.6 { INK } else { WHITE };
                        let style = TextStyle::from((FONT, 11.0).into_font()).color(&color).pos(center());
                        let s = format!("{v:.prec$}", prec = h.decimals);
                        root.draw(&Text::new(s, ((x0 + x1) / 2, (y0 + y1) / 2), style))?;
                    }
                }
            }
            Layer::Lines | Layer::Highlights => {}
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(120.0), "120");
        assert_eq!(tick(0.0002), "2e-4");
    }

    #[test]
    fn ramp_lightness_grows() {
        // Greyscale order must follow value order (Rec. 709 luma).
        let luma = |c: RGBColor| 0.2126 * c.0 as f64 + 0.7152 * c.1 as f64 + 0.0722 * c.2 as f64;
        let l: Vec<f64> = (0..=10).map(|i| luma(ramp(i as f64 / 10.0))).collect();
        assert!(l.windows(2).all(|w| w[1] > w[0]), "{l:?}");
    }

    #[test]
    fn one_mark_per_point() {
        let s = Scatter {
            x_label: "x".into(),
            y_label: "y".into(),
            log: true,
            identity: true,
            series: vec![Series { label: "a".into(), points: vec![(1.0, 2.0), (3.0, 3.5), (10.0, 9.0)] }],
            line: vec![],
            highlights: vec![],
        };
        let f = scatter("t", "T", "c", &s).unwrap();
        assert_eq!(f.marks, 3);
        assert!(f.svg.starts_with("<svg"));
    }

    /// Every `<text>` of an SVG: (x, text-anchor, content with entities undone).
    fn texts(svg: &str) -> Vec<(f64, String, String)> {
        let attr = |tag: &str, name: &str| {
            let k = format!(" {name}=\"");
            tag.find(&k).map(|i| tag[i + k.len()..].split('"').next().unwrap_or("").to_string())
        };
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let (tag, rest) = t.split_once('>').unwrap();
                let content = rest.split("</text>").next().unwrap().trim();
                let content = content
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&amp;", "&");
                let x = attr(tag, "x").and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
                (x, attr(tag, "text-anchor").unwrap_or_default(), content)
            })
            .collect()
    }

    /// Well-formed as XML elements go: every opened tag is closed in order, text holds no raw `<` or `&`.
    fn assert_well_formed(svg: &str) {
        let mut open: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            let text = &rest[..i];
            assert!(!text.contains('>'), "stray '>' in text {text:?}");
            for (j, _) in text.match_indices('&') {
                let entity = &text[j..];
                assert!(
                    ["&lt;", "&gt;", "&amp;", "&quot;", "&#"].iter().any(|e| entity.starts_with(e)),
                    "raw '&' in text {text:?}"
                );
            }
            let end = rest[i..].find('>').expect("unclosed tag") + i;
            let tag = &rest[i + 1..end];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name.trim()), "closing tag out of order");
            } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
                open.push(tag.split_whitespace().next().unwrap().to_string());
            }
            rest = &rest[end + 1..];
        }
        assert!(open.is_empty(), "unclosed: {open:?}");
    }

    const LONG_KERNEL: &str = "void sgemm_128x64_nn_splitK<float, 4>(float const*, float*)";

    /// A long kernel name gets a label area that holds it (once shortened), and room for the axis
    /// description beside it when there is one.
    #[test]
    fn a_long_kernel_name_gets_a_label_area_that_fits_it() {
        let names = vec!["idle".to_string(), LONG_KERNEL.to_string()];
        let l = RowLabels::new(&names, 12.0, None);
        assert_eq!(l.text[0], "idle");
        assert_eq!(l.text[1].chars().count(), CATEGORY_MAX_CHARS);
        assert!(l.text[1].ends_with('…'));
        let longest = text_width(&l.text[1], 12.0);
        assert!(l.area_px >= LABEL_GAP_PX + longest, "{} < {}", l.area_px, LABEL_GAP_PX + longest);
        let d = RowLabels::new(&names, 12.0, Some(15));
        assert!(d.area_px - LABEL_GAP_PX - longest >= 15, "no room for the axis description");
        // A short name needs less room than a long one.
        assert!(RowLabels::new(&names[..1], 12.0, None).area_px < l.area_px);
    }

    #[test]
    fn fit_chars_inverts_text_width() {
        for n in [1, 7, 40] {
            let w = text_width(&"x".repeat(n), 12.0);
            assert_eq!(fit_chars(w, 12.0), n, "{n}");
        }
        assert_eq!(fit_chars(-5, 12.0), 1);
    }

    /// Bars named by a long (templated) kernel name: the SVG is well-formed and the right-aligned name
    /// starts inside the figure.
    #[test]
    fn hbars_with_a_long_kernel_name_keep_the_label_inside_the_figure() {
        let b = Bars {
            x_label: "power MAPE (%)".into(),
            categories: vec!["idle".into(), LONG_KERNEL.into()],
            series: vec![("mlr".into(), vec![Some(3.0), Some(12.0)])],
            values: true,
            intervals: Vec::new(),
        };
        let f = hbars("b", "T", "c", &b).unwrap();
        assert_well_formed(&f.svg);
        let shown = shorten(LONG_KERNEL, CATEGORY_MAX_CHARS);
        let (x, anchor, _) =
            texts(&f.svg).into_iter().find(|t| t.2 == shown).expect("the long name is drawn");
        assert_eq!(anchor, "end");
        assert!(x - f64::from(text_width(&shown, 12.0)) >= 0.0, "clipped: right edge at {x}");
        assert_eq!(f.marks, 2);
    }

    /// Heat-map rows named by long names: well-formed SVG, each row name starts right of the rotated y
    /// axis description, and column names are shortened to their cells.
    #[test]
    fn heatmap_row_names_clear_the_axis_description_and_column_names_fit_their_cells() {
        let x_cats: Vec<String> = (0..6).map(|i| format!("{LONG_KERNEL} {i}")).collect();
        let h = Heat {
            x_label: "kernel".into(),
            y_label: "memory clock (MHz)".into(),
            x_cats: x_cats.clone(),
            y_cats: vec!["405".into(), LONG_KERNEL.into()],
            cells: (0..6).flat_map(|i| [(i, 0, i as f64), (i, 1, 2.0 * i as f64)]).collect(),
            value_label: "MAPE %".into(),
            decimals: 1,
        };
        let f = heatmap("h", "T", "c", &h, 860).unwrap();
        assert_well_formed(&f.svg);
        let t = texts(&f.svg);
        let (desc_x, _, _) = t.iter().find(|t| t.2 == "memory clock (MHz)").expect("the y description");
        let shown = shorten(LONG_KERNEL, CATEGORY_MAX_CHARS);
        let (x, anchor, _) = t.iter().find(|t| t.2 == shown).expect("the long row name is drawn");
        assert_eq!(anchor, "end");
        let left = x - f64::from(text_width(&shown, 12.0));
        assert!(left >= desc_x + 15.0, "row name from {left} runs into the axis description at {desc_x}");
        // Column names: centred, no wider than the distance between neighbouring centres.
        let cols: Vec<&(f64, String, String)> =
            t.iter().filter(|t| t.1 == "middle" && t.2.starts_with("void sgem")).collect();
        assert_eq!(cols.len(), 6, "{t:?}");
        let pitch = cols[1].0 - cols[0].0;
        for c in &cols {
            assert!(f64::from(text_width(&c.2, 12.0)) < pitch, "{:?} wider than its cell ({pitch} px)", c.2);
        }
        assert_eq!(f.marks, 12);
    }
}
