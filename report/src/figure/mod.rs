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

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
pub(crate) type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

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

/// Line height of a wrapped title and of a wrapped caption, px.
const TITLE_LINE_H: i32 = 22;
const CAPTION_LINE_H: i32 = 17;
const TITLE_PX: f64 = 18.0;
const CAPTION_PX: f64 = 13.0;
const LEGEND_PX: f64 = 13.0;
/// Room kept free at each side of the figure for title, legend and caption, px.
const EDGE_PX: i32 = 8;

/// The frame's text laid out for the figure's width: title and caption wrapped at spaces and legend entries
/// packed into rows, so that nothing runs past the figure's edge. A [`Canvas`]'s height is that of one
/// title line, one legend row (when there is a legend) and one caption line; each further line or row
/// makes the figure taller by its height, and the chart keeps its size.
struct Layout {
    title: Vec<String>,
    /// Legend rows: (entry, x of its swatch's left edge).
    legend: Vec<Vec<(usize, i32)>>,
    /// Each legend entry's label as drawn (shortened only if it alone is wider than the figure).
    labels: Vec<String>,
    caption: Vec<String>,
    /// Above the chart: title and legend.
    top: i32,
    /// Below the chart: the caption.
    bottom: i32,
    height: u32,
}

impl Layout {
    fn new(c: &Canvas) -> Layout {
        let w = c.width as i32;
        let room = w - 2 * EDGE_PX;
        let title = wrap(&c.title, fit_chars(room, TITLE_PX));
        let caption = wrap(&c.caption, fit_chars(room, CAPTION_PX));
        // A legend entry: swatch (24 px), label, gap to the next entry (18 px).
        let labels: Vec<String> =
            c.legend.iter().map(|k| shorten(&k.label, fit_chars(room - 24 - 18, LEGEND_PX))).collect();
        let widths: Vec<i32> = labels.iter().map(|l| 24 + text_width(l, LEGEND_PX) + 18).collect();
        let mut rows: Vec<Vec<usize>> = Vec::new();
        let mut used = 0;
        for (i, width) in widths.iter().enumerate() {
            match rows.last_mut() {
                Some(row) if used + width <= room => row.push(i),
                _ => {
                    rows.push(vec![i]);
                    used = 0;
                }
            }
            used += width;
        }
        let legend = rows
            .into_iter()
            .map(|row| {
                let total: i32 = row.iter().map(|&i| widths[i]).sum();
                let mut x = ((w - total) / 2).max(EDGE_PX);
                row.into_iter()
                    .map(|i| {
                        let at = (i, x);
                        x += widths[i];
                        at
                    })
                    .collect()
            })
            .collect::<Vec<Vec<(usize, i32)>>>();
        let lines = |n: usize| n.saturating_sub(1) as i32;
        let top = TITLE_H + lines(title.len()) * TITLE_LINE_H + legend.len() as i32 * LEGEND_H;
        let bottom = CAPTION_H + lines(caption.len()) * CAPTION_LINE_H;
        let designed = TITLE_H + if c.legend.is_empty() { 0 } else { LEGEND_H } + CAPTION_H;
        let height = (c.height as i32 + top + bottom - designed).max(1) as u32;
        Layout { title, legend, labels, caption, top, bottom, height }
    }
}

/// Splits `s` at spaces into lines of at most `max_chars` characters; a word longer than a line is
/// shortened with an ellipsis. An empty text is one empty line.
pub(crate) fn wrap(s: &str, max_chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in s.split_whitespace() {
        let word = shorten(word, max_chars);
        let n = line.chars().count();
        if n > 0 && n + 1 + word.chars().count() > max_chars {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Draws the figure layer by layer. `draw` gets the layer and the area below the title and legend and above
/// the caption; the frame layer's title, legend and caption are drawn here.
pub(crate) fn layered(
    id: &str,
    canvas: &Canvas,
    mut draw: impl FnMut(Layer, &Area) -> DrawResult,
) -> Result<Figure> {
    let layout = Layout::new(canvas);
    let (w, h) = (canvas.width, layout.height);
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
                    frame(&root, canvas, &layout)?;
                }
                let body = root.margin(layout.top, layout.bottom, 0, 0);
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

fn frame(root: &Area, canvas: &Canvas, layout: &Layout) -> DrawResult {
    let w = canvas.width as i32;
    let title_style = TextStyle::from((FONT, TITLE_PX).into_font().style(FontStyle::Bold))
        .color(&INK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    for (i, line) in layout.title.iter().enumerate() {
        let y = TITLE_H / 2 + 2 + i as i32 * TITLE_LINE_H;
        root.draw(&Text::new(line.clone(), (w / 2, y), title_style.clone()))?;
    }
    // The legend sits between title and chart, so it never covers data.
    let legend_top = layout.top - layout.legend.len() as i32 * LEGEND_H;
    for (r, row) in layout.legend.iter().enumerate() {
        let y = legend_top + r as i32 * LEGEND_H + LEGEND_H / 2;
        for &(i, x) in row {
            let k = &canvas.legend[i];
            marker(root, (x + 9, y), k.shape, 5, k.color)?;
            text(root, &layout.labels[i], (x + 22, y), LEGEND_PX, left())?;
        }
    }
    let caption_top = layout.height as i32 - layout.bottom;
    for (i, line) in layout.caption.iter().enumerate() {
        let y = caption_top + CAPTION_H / 2 + i as i32 * CAPTION_LINE_H;
        text(root, line, (w / 2, y), CAPTION_PX, center())?;
    }
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
        // Three decimals, and below 1 three significant digits (0.00105, not 0.001).
        let decimals = if a < 1.0 { (2 - a.log10().floor() as i32).max(3) as usize } else { 3 };
        let s = format!("{v:.decimals$}");
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

mod bars;
mod heat;
mod panels;
mod scatter;

pub(crate) use bars::{Bars, hbars, stacked_bar};
pub(crate) use heat::{Heat, heatmap};
pub(crate) use panels::{Panel, Panels, curve_color, curve_shape, panels};
pub(crate) use scatter::{Highlight, Scatter, Series, scatter, scatter_line_named};

#[cfg(test)]
pub(crate) mod testing {
    pub(crate) const LONG_KERNEL: &str = "void sgemm_128x64_nn_splitK<float, 4>(float const*, float*)";

    /// Every `<text>` of an SVG: (x, text-anchor, content with entities undone).
    pub(crate) fn texts(svg: &str) -> Vec<(f64, String, String)> {
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
    pub(crate) fn assert_well_formed(svg: &str) {
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
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    /// A caption longer than the figure is wide is wrapped onto more lines with every word kept, a legend
    /// wider than the figure is wrapped into rows with every label whole and inside the figure, and the
    /// figure grows by those lines while the chart keeps its height.
    #[test]
    fn long_captions_and_legends_wrap_instead_of_being_cut() {
        let caption = format!("{} end.", "word ".repeat(60).trim());
        let legend: Vec<Key> = (0..8)
            .map(|i| Key {
                label: format!("a rather long series label {i}"),
                color: series_color(i),
                shape: Shape::Bar,
            })
            .collect();
        let canvas = |caption: &str, legend: Vec<Key>| Canvas {
            width: 400,
            height: 300,
            title: "T".into(),
            caption: caption.into(),
            legend,
        };
        let mut body_h = Vec::new();
        let mut draw = |layer: Layer, area: &Area| {
            if layer == Layer::Frame {
                body_h.push(area.dim_in_pixel().1);
            }
            Ok(())
        };
        let short = layered("s", &canvas("c", legend[..1].to_vec()), &mut draw).unwrap();
        let long = layered("l", &canvas(&caption, legend.clone()), &mut draw).unwrap();
        assert_eq!(body_h[0], body_h[1], "the chart keeps its height");
        let t = texts(&long.svg);
        let lines: Vec<&str> =
            t.iter().filter(|x| x.1 == "middle" && x.2 != "T").map(|x| x.2.as_str()).collect();
        assert!(lines.len() > 1, "wrapped onto several lines: {lines:?}");
        assert_eq!(lines.join(" "), caption, "every word of the caption, none cut");
        for k in &legend {
            let (x, _, _) = t.iter().find(|x| x.2 == k.label).expect("every legend label whole");
            assert!(
                x + f64::from(text_width(&k.label, LEGEND_PX)) <= 400.0,
                "{} runs past the edge",
                k.label
            );
        }
        let height = |svg: &str| -> u32 {
            svg.split(" height=\"").nth(1).and_then(|h| h.split('"').next()).unwrap().parse().unwrap()
        };
        assert!(height(&long.svg) > height(&short.svg) + 3 * CAPTION_LINE_H as u32);
    }

    #[test]
    fn wrap_keeps_every_word_and_shortens_only_a_word_longer_than_a_line() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(wrap("abcdefgh x", 4), ["abc…", "x"]);
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(120.0), "120");
        assert_eq!(tick(0.0002), "2e-4");
        // Neighbouring ticks of a narrow range below 1 stay distinct.
        assert_eq!([tick(0.001), tick(0.00105), tick(0.0011)], ["0.001", "0.00105", "0.0011"]);
        assert_eq!(tick(0.0123), "0.0123");
        assert_eq!(tick(1234.5), "1234.5");
    }

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
}
