//! An SVG of simulated pools: provers over time (top) and queued partitions (bottom), one
//! line per policy.

use std::path::Path;

use plotters::prelude::*;

use super::Outcome;

const COLORS: [RGBColor; 6] = [
    RGBColor(66, 133, 244),
    RGBColor(219, 68, 55),
    RGBColor(15, 157, 88),
    RGBColor(244, 160, 0),
    RGBColor(171, 71, 188),
    RGBColor(0, 172, 193),
];

/// Draws `outcomes` into `path`.
pub fn draw(path: &Path, outcomes: &[Outcome]) -> Result<(), Box<dyn std::error::Error>> {
    let hours = |seconds: f64| seconds / 3600.0;
    let end = outcomes
        .iter()
        .flat_map(|o| o.samples.last())
        .map(|s| hours(s.seconds))
        .fold(0.0f64, f64::max)
        .max(1.0 / 60.0);
    let most_provers = outcomes
        .iter()
        .map(|o| o.most_provers)
        .max()
        .unwrap_or(1)
        .max(1);
    let most_queued = outcomes
        .iter()
        .flat_map(|o| o.samples.iter().map(|s| s.queued_partitions))
        .max()
        .unwrap_or(1)
        .max(1);

    let root = SVGBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled("proofpipe-simulate", ("sans-serif", 20))?;
    let (top, bottom) = root.split_vertically(340);

    let mut provers = ChartBuilder::on(&top)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .caption("provers", ("sans-serif", 15))
        .build_cartesian_2d(0.0..end, 0.0..f64::from(most_provers) * 1.1)?;
    provers.configure_mesh().x_desc("hours").draw()?;
    let mut queued = ChartBuilder::on(&bottom)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .caption("queued partitions", ("sans-serif", 15))
        .build_cartesian_2d(0.0..end, 0.0..most_queued as f64 * 1.1)?;
    queued.configure_mesh().x_desc("hours").draw()?;

    for (index, outcome) in outcomes.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        let label = format!(
            "{}: {:.1} GPU-h, p99 {:.0} s",
            outcome.pool, outcome.gpu_hours, outcome.p99_seconds_to_proof
        );
        provers
            .draw_series(LineSeries::new(
                outcome
                    .samples
                    .iter()
                    .map(|s| (hours(s.seconds), f64::from(s.provers))),
                color.stroke_width(2),
            ))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        queued.draw_series(LineSeries::new(
            outcome
                .samples
                .iter()
                .map(|s| (hours(s.seconds), s.queued_partitions as f64)),
            color.stroke_width(1),
        ))?;
    }
    provers
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}
