//! Horizontal bars: grouped bars (one row per category, one bar per series), and one stacked bar of
//! components with their total marked.

use super::*;

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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

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
}
