//! An SVG timeline of a pipeline run: when each stage's workers were busy (top) and how many
//! partitions held large buffers in each stage (bottom).

use std::path::Path;

use plotters::prelude::*;

use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::pipeline::{BusySpan, Stage, TimelinePoint};

fn color(stage: Stage) -> RGBColor {
    match stage {
        Stage::Synthesizing => RGBColor(66, 133, 244),
        Stage::Queued => RGBColor(251, 188, 5),
        Stage::Gpu => RGBColor(52, 168, 83),
        Stage::Finalizing => RGBColor(171, 71, 188),
    }
}

/// Draws the timeline into `path` (SVG).
pub fn timeline_svg(
    path: &Path,
    title: &str,
    spans: &[BusySpan],
    points: &[TimelinePoint],
) -> Result<(), ProverError> {
    draw(path, title, spans, points).map_err(|e| ProverError::Io {
        action: "drawing the timeline plot",
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}

fn draw(
    path: &Path,
    title: &str,
    spans: &[BusySpan],
    points: &[TimelinePoint],
) -> Result<(), Box<dyn std::error::Error>> {
    let end = spans
        .iter()
        .map(|s| s.end)
        .chain(points.iter().map(|p| p.seconds))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    // One row per worker, grouped by stage.
    let mut rows: Vec<(Stage, usize)> = spans.iter().map(|s| (s.stage, s.worker)).collect();
    rows.sort_by_key(|&(s, w)| (s as usize, w));
    rows.dedup();

    let root = SVGBackend::new(path, (1100, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 20))?;
    let (top, bottom) = root.split_vertically(300);

    let mut gantt = ChartBuilder::on(&top)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(90)
        .caption("stage occupancy", ("sans-serif", 15))
        .build_cartesian_2d(0.0..end, 0.0..rows.len().max(1) as f64)?;
    let labels: Vec<String> = rows
        .iter()
        .map(|(s, w)| format!("{}-{w}", s.name()))
        .collect();
    gantt
        .configure_mesh()
        .disable_y_mesh()
        // Ticks every half row; only the row centres (k + 0.5) get a label.
        .y_labels(rows.len().max(1) * 2 + 1)
        .y_label_formatter(&|y| {
            let centre = (y.fract() - 0.5).abs() < 1e-6;
            if centre {
                labels.get(y.floor() as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_desc("seconds")
        .draw()?;
    gantt.draw_series(spans.iter().map(|s| {
        let row = rows
            .iter()
            .position(|r| *r == (s.stage, s.worker))
            .unwrap_or(0) as f64;
        Rectangle::new(
            [(s.start, row + 0.15), (s.end, row + 0.85)],
            color(s.stage).filled(),
        )
    }))?;

    let max = points
        .iter()
        .map(|p| {
            p.snapshot
                .synthesizing
                .max(p.snapshot.queued)
                .max(p.snapshot.gpu)
                .max(p.snapshot.finalizing)
        })
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut counts = ChartBuilder::on(&bottom)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(90)
        .caption("partitions holding buffers, by stage", ("sans-serif", 15))
        .build_cartesian_2d(0.0..end, 0.0..max + 0.5)?;
    counts
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("partitions")
        .draw()?;
    for stage in Stage::ALL {
        // A step plot: each count holds until the next transition.
        let mut line = Vec::with_capacity(points.len() * 2);
        let mut last = 0.0;
        for p in points {
            line.push((p.seconds, last));
            last = p.snapshot.count(stage) as f64;
            line.push((p.seconds, last));
        }
        let c = color(stage);
        counts
            .draw_series(LineSeries::new(line, c.stroke_width(2)))?
            .label(stage.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    counts
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()?;
    root.present()?;
    Ok(())
}
