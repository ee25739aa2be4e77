//! The timeline of a two-minute, five-replica run draws one band per lane: read off the
//! document's geometry (every `cargo test`), and off a real browser's screenshot (ignored by
//! default: `.ci/run` installs Chromium and runs it with `--ignored`).
//!
//! Terminology:
//! - *Chromium*: see `timeline_support/browser.rs`. The browser test needs it and, without
//!   it, fails saying how to install it.
//! - *probe column*: the pixel column `LANE_PROBE_X_PX` at the page's left edge, where only
//!   the lane fills, the world row and the page background are drawn. Counting the bands of
//!   the two documented lane fills there gives the number of lanes the browser drew.
//! - *geometry*: the `<rect>` elements with a `fill` attribute of the name column's and the
//!   plot's SVG, as the document states them. Stacking them in document order (later on top)
//!   gives the fill of every row of a column without a browser.

#[path = "timeline_support/browser.rs"]
mod browser;
#[path = "timeline_support/mod.rs"]
mod support;

use browser::{Image, find_chromium, screenshot};

use leasesim_timeline::{
    LANE_FILL_EVEN, LANE_FILL_EVEN_RGB, LANE_FILL_ODD, LANE_FILL_ODD_RGB, LANE_HEIGHT_PX,
    LANE_PROBE_X_PX, ViolationMark,
};

const WIDTH_PX: u32 = 1400;
const HEIGHT_PX: u32 = 900;

fn close(pixel: [u8; 3], expected: [u8; 3]) -> bool {
    pixel
        .iter()
        .zip(expected)
        .all(|(got, want)| got.abs_diff(want) <= 3)
}

/// Bands of equal lane fills down a column given top to bottom as the index of the lane
/// fill at each row (0 = odd, 1 = even, None = anything else): (fill index, height px).
fn bands(column: impl IntoIterator<Item = Option<usize>>) -> Vec<(usize, u32)> {
    let mut bands: Vec<(usize, u32)> = Vec::new();
    let mut previous = None;
    for fill in column {
        match (fill, bands.last_mut()) {
            (Some(fill), Some(band)) if previous == Some(fill) => band.1 += 1,
            (Some(fill), _) => bands.push((fill, 1)),
            (None, _) => {}
        }
        previous = fill;
    }
    bands
}

/// Bands of lane fills down the screenshot's probe column.
fn lane_bands(image: &Image) -> Vec<(usize, u32)> {
    let probe_x = u32::try_from(LANE_PROBE_X_PX).expect("small");
    bands((0..image.height).map(|y| {
        let pixel = image.at(probe_x, y);
        [LANE_FILL_ODD_RGB, LANE_FILL_EVEN_RGB]
            .iter()
            .position(|fill| close(pixel, *fill))
    }))
}

/// Checks `bands` show exactly `replicas` lanes, r1 odd, alternating, each a lane tall.
fn assert_one_band_per_lane(bands: &[(usize, u32)], replicas: u16, tolerance_px: u32) {
    let lane_px = u32::try_from(LANE_HEIGHT_PX).expect("small");
    let lanes: Vec<&(usize, u32)> = bands.iter().filter(|band| band.1 >= lane_px / 2).collect();
    assert_eq!(
        lanes.len(),
        usize::from(replicas),
        "lane bands in the probe column: {bands:?}"
    );
    for (index, (fill, height_px)) in lanes.iter().enumerate() {
        assert_eq!(*fill, index % 2, "lanes alternate fills, r1 odd: {bands:?}");
        assert!(
            height_px.abs_diff(lane_px) <= tolerance_px,
            "lane r{} is {height_px} px tall: {bands:?}",
            index + 1
        );
    }
}

/// The `name="value"` attributes of one element's opening tag.
fn attributes(tag: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].rsplit([' ', '<']).next().unwrap_or_default();
        let value_and_more = &rest[eq + 2..];
        let end = value_and_more.find('"').expect("a closing quote");
        out.push((name, &value_and_more[..end]));
        rest = &value_and_more[end + 1..];
    }
    out
}

/// A filled rectangle of an SVG: x, y, width, height (px, whole) and fill.
struct Filled {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    fill: String,
}

/// The SVG element `<svg class="{class}" ...>...</svg>` of `html`.
fn svg_of<'a>(html: &'a str, class: &str) -> &'a str {
    let start = html
        .find(&format!("<svg class=\"{class}\""))
        .unwrap_or_else(|| panic!("no <svg class=\"{class}\"> in the document"));
    let end = html[start..].find("</svg>").expect("the SVG is closed");
    &html[start..start + end]
}

/// The rects of `svg` that carry a `fill` attribute, in document order.
fn filled_rects(svg: &str) -> Vec<Filled> {
    svg.split("<rect")
        .skip(1)
        .filter_map(|element| {
            let tag = &element[..element.find('>').expect("a closed tag")];
            let attrs = attributes(tag);
            let get = |name: &str| attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
            let number = |name: &str| get(name).map_or(0.0, |v| v.parse().expect("a number"));
            Some(Filled {
                x: number("x"),
                y: number("y"),
                width: number("width"),
                height: number("height"),
                fill: get("fill")?.to_string(),
            })
        })
        .collect()
}

/// The lane-fill index at each pixel row of column `x` of `svg`, the topmost rect winning.
fn geometry_column(svg: &str, x: f64) -> Vec<Option<usize>> {
    let rects = filled_rects(svg);
    let height_px = rects.iter().map(|r| r.y + r.height).fold(0.0, f64::max) as u32;
    (0..height_px)
        .map(|row| {
            let y = f64::from(row) + 0.5;
            let top = rects
                .iter()
                .rev()
                .find(|r| r.x <= x && x < r.x + r.width && r.y <= y && y < r.y + r.height)?;
            [LANE_FILL_ODD, LANE_FILL_EVEN]
                .iter()
                .position(|fill| *fill == top.fill)
        })
        .collect()
}

/// The rows (px) of the first row of every band in `column`.
fn band_tops(column: &[Option<usize>]) -> Vec<usize> {
    (0..column.len())
        .filter(|&y| column[y].is_some() && (y == 0 || column[y - 1] != column[y]))
        .collect()
}

/// What the browser test checks, read off the document itself: one band per lane down the
/// name column's probe column and down the plot, at the same heights; a highlighted violation
/// on the lane of its event; and a document that loads nothing from anywhere.
#[test]
fn the_document_draws_one_band_per_lane_without_a_browser() {
    let (replicas, events) = support::run_events("long", support::LONG_SCENARIO, 3);
    let target = events
        .iter()
        .rev()
        .find(|e| e.event.replica.is_some_and(|r| r.0 == 2))
        .expect("r3 does something");
    let violation = ViolationMark {
        seq: target.seq,
        invariant: "stale-token-delete".to_string(),
        sentence: "a stale delete".to_string(),
    };
    let html = support::render("long", 3, replicas, &events, Some(violation));

    let probe_x = LANE_PROBE_X_PX as f64 + 0.5;
    let names = geometry_column(svg_of(&html, "names"), probe_x);
    assert_one_band_per_lane(&bands(names.iter().copied()), replicas, 0);
    let plot = geometry_column(svg_of(&html, "plot"), probe_x);
    assert_one_band_per_lane(&bands(plot.iter().copied()), replicas, 0);
    assert_eq!(
        band_tops(&names),
        band_tops(&plot),
        "the plot's lanes are not level with their names"
    );

    let lane_top = band_tops(&names)[2] as f64;
    let marker = svg_of(&html, "plot")
        .split("<g id=\"violation\"")
        .nth(1)
        .expect("the violation is marked on the plot");
    let circle = &marker[marker.find("<circle").expect("a marker circle")..];
    let cy: f64 = attributes(&circle[..circle.find('>').unwrap()])
        .iter()
        .find(|(name, _)| *name == "cy")
        .map(|(_, value)| value.parse().expect("a number"))
        .expect("the circle has a cy");
    assert!(
        (lane_top..lane_top + LANE_HEIGHT_PX as f64).contains(&cy),
        "the violation marker (cy={cy}) is not on lane r3 (top {lane_top})"
    );
    assert!(html.contains("<div class=\"banner\"><b>VIOLATION stale-token-delete</b>"));

    let lower = html.to_lowercase();
    for forbidden in [
        "http:", "https:", "<script", "<link", "<img", "<iframe", "url(", "@import",
    ] {
        assert!(
            !lower.contains(forbidden),
            "the document contains {forbidden:?}"
        );
    }
    for (name, value) in attributes(&html) {
        if name == "href" || name == "src" {
            assert!(
                value.starts_with('#'),
                "{name}=\"{value}\" leaves the document"
            );
        }
    }
}

#[test]
#[ignore = "needs chromium; .ci/run installs it"]
fn chromium_draws_one_band_per_lane() {
    let chromium = find_chromium();
    let (replicas, events) = support::run_events("long", support::LONG_SCENARIO, 3);
    let html = support::render("long", 3, replicas, &events, None);
    let work = tempfile::tempdir().expect("a temp dir");
    let (html_path, png_path) = (
        work.path().join("timeline.html"),
        work.path().join("shot.png"),
    );
    std::fs::write(&html_path, &html).expect("write the timeline");
    screenshot(
        &chromium,
        &html_path,
        &png_path,
        work.path(),
        (WIDTH_PX, HEIGHT_PX),
    );
    let image = Image::decode(std::fs::read(&png_path).expect("read the screenshot"));
    assert_eq!((image.width, image.height), (WIDTH_PX, HEIGHT_PX));
    let mut colours = image.rgb.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        colours.len() >= 50,
        "only {} distinct colours: a blank page?",
        colours.len()
    );
    let white = image
        .rgb
        .iter()
        .filter(|pixel| close(**pixel, [255, 255, 255]))
        .count();
    assert!(
        white * 10 < image.rgb.len() * 9,
        "the screenshot is almost all white"
    );
    assert_one_band_per_lane(&lane_bands(&image), replicas, 2);
}
