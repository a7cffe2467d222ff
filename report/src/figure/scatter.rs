//! Scatter: points per series, optional y = x, optional front line and highlighted points.

use super::*;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
