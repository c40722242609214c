//! PNG charts of a matrix run: speed relative to LMDB per workload, file
//! sizes, and the cost per key of a random load against N.
//!
//! Text is drawn with DejaVu Sans (Debian's fonts-dejavu-core, which
//! scripts/setup.sh installs), loaded at run time.

use super::{Config, Eng, Metric, Results, Stat};
use crate::workloads::Res;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

pub const FILES: [&str; 3] = ["matrix-speed.png", "matrix-size.png", "matrix-scale.png"];

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

fn color(e: Eng) -> RGBColor {
    match e {
        Eng::Lmdb => RGBColor(90, 90, 90),
        Eng::Mdb => RGBColor(31, 119, 180),
        Eng::MdbWal => RGBColor(23, 190, 207),
        Eng::Redb => RGBColor(214, 39, 40),
        Eng::Rocks => RGBColor(255, 127, 14),
        Eng::Sqlite => RGBColor(44, 160, 44),
        Eng::Fjall => RGBColor(148, 103, 189),
        Eng::Sled => RGBColor(140, 86, 75),
    }
}

fn load_font() -> Res<()> {
    static ONCE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let bytes =
            std::fs::read(FONT).map_err(|e| format!("{FONT}: {e} (install fonts-dejavu-core)"))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{FONT}: not a font"))
    })
    .clone()
    .map_err(Into::into)
}

fn err<E: std::fmt::Debug>(e: E) -> Box<dyn std::error::Error> {
    format!("chart: {e:?}").into()
}

/// The label under group `x` of a grouped bar chart (groups at 0, 1, ...).
fn group_label(names: &[&str], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        names
            .get(i as usize)
            .map(|s| s.to_string())
            .unwrap_or_default()
    } else {
        String::new()
    }
}

/// Engine `e`'s bars, the `j`th of `n` in each group, from `base` to its
/// value in each group (none where it has no value), with its legend entry.
fn engine_bars<'a, DB, CT>(
    ch: &mut ChartContext<'a, DB, CT>,
    e: Eng,
    j: usize,
    n: usize,
    base: f64,
    vals: impl Iterator<Item = Option<f64>>,
) -> Res<()>
where
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate<From = (f64, f64)>,
{
    let c = color(e);
    let w = 0.84 / n as f64;
    let bars: Vec<_> = vals
        .enumerate()
        .filter_map(|(i, v)| {
            let x0 = i as f64 - 0.42 + j as f64 * w;
            Some(Rectangle::new([(x0, base), (x0 + w * 0.9, v?)], c.filled()))
        })
        .collect();
    ch.draw_series(bars)
        .map_err(err)?
        .label(e.name())
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    Ok(())
}

/// The series legend, in one style for every chart.
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    ch: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> Res<()> {
    ch.configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    Ok(())
}

pub fn write_all(cfg: &Config, r: &Results) -> Res<()> {
    load_font()?;
    speed(cfg, r)?;
    sizes(cfg, r)?;
    scale(cfg, r)
}

/// Grouped bars: for each workload, each engine's speed as a multiple of
/// LMDB's on a log axis, drawn from 1 (LMDB) up or down.
fn speed(cfg: &Config, r: &Results) -> Res<()> {
    let metrics: Vec<Metric> = Metric::ALL
        .iter()
        .copied()
        .filter(|m| !m.is_size() && *m != Metric::Compact)
        .filter(|m| r.median(Eng::Lmdb, *m).is_some())
        .collect();
    let others: Vec<Eng> = r
        .engines
        .iter()
        .copied()
        .filter(|&e| e != Eng::Lmdb)
        .collect();
    if metrics.is_empty() || others.is_empty() {
        return Ok(());
    }
    let path = cfg.out.join(FILES[0]);
    let root = BitMapBackend::new(&path, (1500, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let k = metrics.len();
    let (lo, hi) = (0.01f64, 100.0f64);
    let mut ch = ChartBuilder::on(&root)
        .caption(
            format!(
                "Speed relative to LMDB (= 1, higher is faster), N = {}, median of {}",
                cfg.n, cfg.reps
            ),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(k as f64 - 0.5), (lo..hi).log_scale())
        .map_err(err)?;
    let names: Vec<&str> = metrics.iter().map(|m| m.key()).collect();
    ch.configure_mesh()
        .disable_x_mesh()
        .x_labels(k)
        .x_label_formatter(&|x| group_label(&names, *x))
        .y_desc("x LMDB")
        .y_label_formatter(&|y| format!("{y}"))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (j, &e) in others.iter().enumerate() {
        let vals = metrics
            .iter()
            .map(|&m| r.vs_lmdb(e, m).map(|x| x.clamp(lo, hi)));
        engine_bars(&mut ch, e, j, others.len(), 1.0, vals)?;
    }
    ch.draw_series(LineSeries::new([(-0.5, 1.0), (k as f64 - 0.5, 1.0)], BLACK))
        .map_err(err)?;
    draw_legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Grouped bars of the file sizes (MB) after the load, after removing half
/// the keys, and after compaction.
fn sizes(cfg: &Config, r: &Results) -> Res<()> {
    let metrics = [
        Metric::SizeLoaded,
        Metric::SizeRemoved,
        Metric::SizeCompacted,
    ];
    let top = r
        .engines
        .iter()
        .flat_map(|&e| metrics.iter().filter_map(move |&m| r.median(e, m)))
        .map(|s| s.median / 1e6)
        .fold(0.0f64, f64::max);
    if top <= 0.0 {
        return Ok(());
    }
    let path = cfg.out.join(FILES[1]);
    let root = BitMapBackend::new(&path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let k = metrics.len();
    let mut ch = ChartBuilder::on(&root)
        .caption(
            format!("Disk space, MB (lower is better), N = {}", cfg.n),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(k as f64 - 0.5), 0f64..top * 1.1)
        .map_err(err)?;
    let names = ["after load", "after removing half", "after compaction"];
    ch.configure_mesh()
        .disable_x_mesh()
        .x_labels(k)
        .x_label_formatter(&|x| group_label(&names, *x))
        .y_desc("MB")
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (j, &e) in r.engines.iter().enumerate() {
        let vals = metrics.iter().map(|&m| Some(r.median(e, m)?.median / 1e6));
        engine_bars(&mut ch, e, j, r.engines.len(), 0.0, vals)?;
    }
    draw_legend(&mut ch, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Lines: ns per key of a random load against the number of keys, both
/// axes logarithmic.
fn scale(cfg: &Config, r: &Results) -> Res<()> {
    let series: Vec<(Eng, Vec<(f64, f64)>)> = r
        .engines
        .iter()
        .filter_map(|&e| {
            let pts: Vec<(f64, f64)> = r
                .samples
                .get(&e)?
                .scale
                .iter()
                .filter_map(|(&n, v)| Some((n as f64, Stat::of(v)?.median)))
                .collect();
            (!pts.is_empty()).then_some((e, pts))
        })
        .collect();
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, 0f64, f64::MAX, 0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if series.is_empty() || x1 <= 0.0 || y1 <= 0.0 {
        return Ok(());
    }
    let path = cfg.out.join(FILES[2]);
    let root = BitMapBackend::new(&path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            "Random load: ns per key against the number of keys",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x0 / 1.5..x1 * 1.5).log_scale(),
            (y0 / 1.5..y1 * 1.5).log_scale(),
        )
        .map_err(err)?;
    ch.configure_mesh()
        .x_desc("keys")
        .y_desc("ns per key")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (e, pts) in series {
        let c = color(e);
        ch.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(e.name())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
        ch.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))
            .map_err(err)?;
    }
    draw_legend(&mut ch, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)?;
    Ok(())
}
