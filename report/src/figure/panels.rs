//! Small multiples: one or more curves per panel over a shared x (curve i in the colour of legend key i), with
//! optional optimum and vertical spans.

use super::*;

pub(crate) struct Panel {
    pub y_label: String,
    /// The curves: most panels have one; several share the panel's axes (one per legend key, in order).
    pub curves: Vec<Vec<(f64, f64)>>,
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
    let (xlo, xhi) = span(p.panels.iter().flat_map(|q| q.curves.iter().flatten().map(|pt| pt.0)), 0.04);
    layered(id, &canvas, |layer, area| {
        let cells = area.split_evenly((rows, cols));
        for (panel, cell) in p.panels.iter().zip(cells.iter()) {
            let (ylo, yhi) = span(panel.curves.iter().flatten().map(|pt| pt.1), 0.08);
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
                    for (i, curve) in panel.curves.iter().enumerate() {
                        chart.draw_series(std::iter::once(PathElement::new(
                            curve.clone(),
                            curve_color(i).stroke_width(2),
                        )))?;
                    }
                }
                Layer::Marks => {
                    if p.point_marks {
                        for (i, curve) in panel.curves.iter().enumerate() {
                            for q in curve {
                                marker(&root, px.at(*q), curve_shape(i), 2, curve_color(i))?;
                            }
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

/// Colour of a panel's curve `i`: the palette without its second colour, which marks optima.
pub(crate) fn curve_color(i: usize) -> RGBColor {
    let others: Vec<RGBColor> =
        PALETTE.iter().enumerate().filter(|(j, _)| *j != 1).map(|(_, c)| *c).collect();
    others[i % others.len()]
}

/// Marker of a panel's curve `i`: the series shapes without the diamond, which marks optima.
pub(crate) fn curve_shape(i: usize) -> Shape {
    [Shape::Circle, Shape::Triangle, Shape::Square][i % 3]
}
