//! Heat map over two categorical axes, with the value printed in each cell and a colour bar.

use super::*;

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
    /// The values at the colour ramp's ends: fixed, so that maps of the same quantity share one scale;
    /// `None` spans the cells' own values.
    pub range: Option<(f64, f64)>,
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
    let (vlo, vhi) = h.range.unwrap_or_else(|| span(h.cells.iter().map(|c| c.2), 0.0));
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
    use super::super::testing::*;
    use super::*;

    #[test]
    fn ramp_lightness_grows() {
        // Greyscale order must follow value order (Rec. 709 luma).
        let luma = |c: RGBColor| 0.2126 * c.0 as f64 + 0.7152 * c.1 as f64 + 0.0722 * c.2 as f64;
        let l: Vec<f64> = (0..=10).map(|i| luma(ramp(i as f64 / 10.0))).collect();
        assert!(l.windows(2).all(|w| w[1] > w[0]), "{l:?}");
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
            range: None,
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
