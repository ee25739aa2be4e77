//! The envelope page of a 5 x 5 map of holder-lock's overlap draws each grid point as one cell
//! of its class's colour and the boundary between classes as black lines: read off the
//! document's SVG (every `cargo test`), and off a real browser's screenshot (ignored by
//! default: `.ci/run` installs Chromium and runs it with `--ignored`).
//!
//! Terminology:
//! - *envelope*: `holder-long-jobs`, worker `correct`, marked by the situation
//!   `overlap-after-expiry`, over `claim.lifetime_ms` 1000-8000 (x) and `job.long_share` 0-0.5
//!   (y), 30 seeds a point, searched adaptively: safe and unsafe points, measured and inferred,
//!   with a boundary between them.
//! - *cell*: a grid point's `<rect>` of side `html::CELL`, the grid's top-left corner at
//!   (`html::LEFT_TWO_KEYS`, `html::TOP`) in the SVG, `y` rising upwards. Its *class colour*:
//!   `html::SAFE` when safe, `html::PALETTE[0]` when unsafe (a situation has one colour),
//!   `html::REFUSED` when refused. A *measured* cell is drawn at `MEASURED_OPACITY` and
//!   carries `marked/seeds`; an *inferred* one at `INFERRED_OPACITY` under the white hatch
//!   pattern, with no text.
//! - *on screen*: a colour at an opacity over the white page: `c * opacity + 255 * (1 -
//!   opacity)` per channel.
//! - *edge*: the side two neighbouring cells share; a *boundary line* is `<line
//!   class='boundary'>` along an edge between two classes (`Envelope::boundary()`).
//! - *probe*: the pixel a quarter of a cell below a cell's top, centred across it: clear of
//!   the cell's text (at its middle) and of its edges.
//! - *grid on screen*: the box of the pixels showing a cell colour on screen; its centre is the
//!   grid's, which places every cell in the screenshot whatever the text above the map.
//! - *screenshot*: Chromium's, `WINDOW` px, kept after the run as `envelope_screenshot.png`
//!   in Cargo's `CARGO_TARGET_TMPDIR` (`target/tmp/`) for a look.

#[path = "timeline_support/browser.rs"]
mod browser;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use browser::{Image, find_chromium, screenshot};
use leasesim::catalog::resolve_one;
use leasesim::envelope::html::{self, CELL, LEFT_TWO_KEYS, PALETTE, REFUSED, SAFE, TOP};
use leasesim::envelope::{Axis, Class, Envelope, EnvelopeSpec, Index, Mark, PointResult, measure};
use leasesim::fuzz::Progress;

const SEEDS: u64 = 30;
const RESOLUTION: usize = 5;
const MEASURED_OPACITY: f64 = 0.85;
const INFERRED_OPACITY: f64 = 0.3;
const WINDOW: (u32, u32) = (1200, 800);

/// The envelope (see the module docs), checked to hold every kind of cell and a boundary.
fn envelope() -> Envelope {
    let scenario = resolve_one("holder-long-jobs").expect("a builtin scenario");
    let mark = Mark::situation(scenario.system(), "overlap-after-expiry")
        .expect("holder-lock has the overlap situation");
    let axes = ["claim.lifetime_ms=1000..8000", "job.long_share=0..0.5"]
        .iter()
        .map(|a| Axis::parse(a).expect("an axis"))
        .collect();
    let spec = EnvelopeSpec {
        resolution: RESOLUTION,
        seeds: SEEDS,
        jobs: 2,
        mark,
        ..EnvelopeSpec::new(scenario, "correct", axes)
    };
    let envelope =
        measure(&spec, &Arc::new(Progress::default()), &mut |_| {}).expect("a valid envelope");
    let map = &envelope.map;
    assert_eq!((map.width, map.height), (RESOLUTION, RESOLUTION));
    let kinds: BTreeSet<(Class, bool)> = map.cells.iter().copied().collect();
    for kind in [
        (Class::Safe, true),
        (Class::Safe, false),
        (Class::Unsafe, true),
        (Class::Unsafe, false),
    ] {
        assert!(
            kinds.contains(&kind),
            "no {kind:?} cell (class, measured):\n{}",
            leasesim::envelope::render::text(&envelope)
        );
    }
    assert!(!envelope.boundary().is_empty(), "no boundary");
    envelope
}

/// Every grid point, `y` then `x`.
fn grid(envelope: &Envelope) -> Vec<Index> {
    let (w, h) = (envelope.map.width, envelope.map.height);
    (0..h).flat_map(|y| (0..w).map(move |x| (x, y))).collect()
}

/// The class colour of a point (see the module docs).
fn class_colour(envelope: &Envelope, index: Index) -> &'static str {
    match envelope.map.class(index) {
        Class::Safe => SAFE,
        Class::Refused => REFUSED,
        Class::Unsafe => {
            assert!(matches!(envelope.mark, Mark::Situation(..)));
            PALETTE[0]
        }
    }
}

/// The SVG's top-left corner of a point's cell.
fn cell_origin(envelope: &Envelope, (x, y): Index) -> (usize, usize) {
    let h = envelope.map.height;
    (LEFT_TWO_KEYS + x * CELL, TOP + (h - 1 - y) * CELL)
}

/// Every pair of neighbours (right, then up), flagged when their classes differ.
fn neighbour_pairs(envelope: &Envelope) -> Vec<(Index, Index, bool)> {
    let (w, h) = (envelope.map.width, envelope.map.height);
    let mut pairs = Vec::new();
    for (x, y) in grid(envelope) {
        for n in [(x + 1, y), (x, y + 1)] {
            if n.0 < w && n.1 < h {
                let differ = envelope.map.class((x, y)) != envelope.map.class(n);
                pairs.push(((x, y), n, differ));
            }
        }
    }
    pairs
}

/// The edge two neighbours share in the SVG: `((x1, y1), (x2, y2))`, the smaller end first.
fn edge(envelope: &Envelope, a: Index, b: Index) -> ((usize, usize), (usize, usize)) {
    let (ax, ay) = cell_origin(envelope, a);
    if a.1 == b.1 {
        ((ax + CELL, ay), (ax + CELL, ay + CELL))
    } else {
        ((ax, ay), (ax + CELL, ay))
    }
}

/// The `name='value'` attributes of one element's opening tag.
fn attributes(tag: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("='") {
        let name = rest[..eq].rsplit([' ', '<']).next().unwrap_or_default();
        let value_and_more = &rest[eq + 2..];
        let end = value_and_more.find('\'').expect("a closing quote");
        out.push((name, &value_and_more[..end]));
        rest = &value_and_more[end + 1..];
    }
    out
}

fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    attributes(tag)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

fn number(tag: &str, name: &str) -> usize {
    let value = attribute(tag, name).unwrap_or_else(|| panic!("no {name} in {tag}"));
    value.parse().unwrap_or_else(|_| panic!("{name}='{value}'"))
}

/// The opening tags (`<name ...`) of every `name` element in `text`, in document order.
fn tags<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.split(&format!("<{name} "))
        .skip(1)
        .map(|element| &element[..element.find('>').expect("a closed tag")])
        .collect()
}

/// The map's SVG element.
fn svg_of(html: &str) -> &str {
    let start = html.find("<svg ").expect("an SVG in the page");
    let end = html[start..].find("</svg>").expect("the SVG is closed");
    &html[start..start + end]
}

/// One cell group as the document states it: its fill rects (not the hatch), whether it is
/// hatched, and its text.
struct Group<'a> {
    fills: Vec<&'a str>,
    hatched: Vec<&'a str>,
    text: &'a str,
}

fn groups(svg: &str) -> Vec<Group<'_>> {
    svg.split("<g>")
        .skip(1)
        .map(|group| {
            let group = &group[..group.find("</g>").expect("a closed group")];
            let (hatched, fills) = tags(group, "rect")
                .into_iter()
                .partition(|tag| attribute(tag, "fill") == Some("url(#hatch)"));
            let text = group
                .split("class='share'>")
                .nth(1)
                .and_then(|t| t.split("</text>").next())
                .expect("a cell's text");
            Group {
                fills,
                hatched,
                text,
            }
        })
        .collect()
}

/// A group's grid point, from its fill rect's corner; checks the rect is a whole cell there.
fn group_index(envelope: &Envelope, rect: &str) -> Index {
    let (x, y) = (number(rect, "x"), number(rect, "y"));
    assert_eq!(
        (number(rect, "width"), number(rect, "height")),
        (CELL, CELL)
    );
    assert!(
        x >= LEFT_TWO_KEYS && (x - LEFT_TWO_KEYS).is_multiple_of(CELL),
        "x={x}"
    );
    assert!(y >= TOP && (y - TOP).is_multiple_of(CELL), "y={y}");
    let row = (y - TOP) / CELL;
    assert!(row < envelope.map.height, "y={y} is below the grid");
    ((x - LEFT_TWO_KEYS) / CELL, envelope.map.height - 1 - row)
}

/// Checks one point's group: its colour, opacity, hatch and text.
fn assert_cell(envelope: &Envelope, index: Index, group: &Group<'_>) {
    let rect = group.fills[0];
    let measured = envelope.map.was_measured(index);
    let what = format!(
        "cell {index:?} ({:?}, measured {measured})",
        envelope.map.class(index)
    );
    assert_eq!(
        attribute(rect, "fill"),
        Some(class_colour(envelope, index)),
        "{what}"
    );
    let opacity: f64 = attribute(rect, "fill-opacity")
        .expect("a fill-opacity")
        .parse()
        .expect("a number");
    let hatched: Vec<Index> = group
        .hatched
        .iter()
        .map(|h| group_index(envelope, h))
        .collect();
    let expected_text = match envelope.point(index).map(|p| &p.result) {
        Some(PointResult::Ran(runs)) => format!("{}/{}", runs.marked, runs.seeds),
        Some(PointResult::Refused { .. }) => "refused".to_string(),
        None => String::new(),
    };
    if measured {
        assert_eq!((opacity, hatched), (MEASURED_OPACITY, vec![]), "{what}");
    } else {
        assert_eq!(
            (opacity, hatched),
            (INFERRED_OPACITY, vec![index]),
            "{what}"
        );
    }
    assert_eq!(group.text, expected_text, "{what}: its text");
}

/// Every grid point has exactly one cell, of its class colour, solid with `marked/seeds` when
/// measured, pale and hatched when inferred.
fn assert_cells(envelope: &Envelope, svg: &str) {
    let groups = groups(svg);
    let mut seen = BTreeSet::new();
    for group in &groups {
        assert_eq!(group.fills.len(), 1, "a cell group has one fill rect");
        let index = group_index(envelope, group.fills[0]);
        assert!(seen.insert(index), "two cells at {index:?}");
        assert_cell(envelope, index, group);
    }
    let every: BTreeSet<Index> = grid(envelope).into_iter().collect();
    assert_eq!(seen, every, "cells drawn vs the grid");
    let all_rects = tags(svg, "rect").len();
    let hatches = groups.iter().map(|g| g.hatched.len()).sum::<usize>();
    assert_eq!(all_rects, every.len() + hatches, "rects outside the cells");
}

/// The boundary lines are exactly the edges between neighbours of different classes, one line
/// each, and those neighbours are `Envelope::boundary()`.
fn assert_boundary(envelope: &Envelope, svg: &str) {
    let lines: Vec<_> = tags(svg, "line")
        .into_iter()
        .filter(|tag| attribute(tag, "class") == Some("boundary"))
        .map(|tag| {
            let (a, b) = (
                (number(tag, "x1"), number(tag, "y1")),
                (number(tag, "x2"), number(tag, "y2")),
            );
            (a.min(b), a.max(b))
        })
        .collect();
    let drawn: BTreeSet<_> = lines.iter().copied().collect();
    assert_eq!(drawn.len(), lines.len(), "a boundary line drawn twice");
    let differing: Vec<(Index, Index)> = neighbour_pairs(envelope)
        .into_iter()
        .filter(|(_, _, differ)| *differ)
        .map(|(a, b, _)| (a, b))
        .collect();
    assert_eq!(differing, envelope.boundary());
    let expected: BTreeSet<_> = differing
        .iter()
        .map(|(a, b)| edge(envelope, *a, *b))
        .collect();
    assert_eq!(
        drawn, expected,
        "boundary lines drawn vs edges between classes"
    );
}

/// The texts of the elements of `svg` with `class='{class}'`: (opening tag, text).
fn texts<'a>(svg: &'a str, class: &str) -> Vec<(&'a str, &'a str)> {
    let marker = format!("class='{class}'");
    svg.split("<text ")
        .skip(1)
        .filter(|element| element[..element.find('>').expect("a closed tag")].contains(&marker))
        .map(|element| {
            let open = element.find('>').expect("a closed tag");
            let close = element.find("</text>").expect("a closed text");
            (&element[..open], &element[open + 1..close])
        })
        .collect()
}

/// Both keys are named; each column and row has its tick, the first and last as given.
fn assert_axes(envelope: &Envelope, svg: &str) {
    let keys: Vec<&str> = texts(svg, "axis").iter().map(|(_, t)| *t).collect();
    assert_eq!(keys, ["claim.lifetime_ms", "job.long_share"]);
    let (x_ticks, y_ticks) = (texts(svg, "tick"), texts(svg, "ytick"));
    let (w, h) = (envelope.map.width, envelope.map.height);
    assert_eq!(
        (x_ticks.len(), y_ticks.len()),
        (w, h),
        "one tick per column and row"
    );

    let bottom = TOP + h * CELL;
    for (x, (tag, text)) in x_ticks.iter().enumerate() {
        assert_eq!(*text, envelope.axes[0].text(x));
        assert_eq!(
            number(tag, "x"),
            LEFT_TWO_KEYS + x * CELL + CELL / 2,
            "x tick {x}"
        );
        assert!(number(tag, "y") > bottom, "x tick {x} is under the grid");
    }
    for (y, (tag, text)) in y_ticks.iter().enumerate() {
        assert_eq!(*text, envelope.axes[1].text(y));
        let top = cell_origin(envelope, (0, y)).1;
        assert!((top..top + CELL).contains(&number(tag, "y")), "y tick {y}");
        assert!(
            number(tag, "x") < LEFT_TWO_KEYS,
            "y tick {y} is left of the grid"
        );
    }
    let ends = |t: &[(&str, &str)]| (t[0].1.to_string(), t[t.len() - 1].1.to_string());
    assert_eq!(ends(&x_ticks), ("1000".into(), "8000".into()));
    assert_eq!(ends(&y_ticks), ("0".into(), "0.5".into()));
}

/// What the browser test checks, read off the document: one cell per grid point in its class
/// colour, measured solid with its share, inferred pale and hatched; boundary lines exactly
/// between classes; named axes with their ticks; a key naming each colour.
#[test]
fn the_document_draws_one_cell_per_point_and_lines_between_classes() {
    let envelope = envelope();
    let work = tempfile::tempdir().expect("a temp dir");
    let path = work.path().join("envelope.html");
    std::fs::write(&path, html::page(&envelope)).expect("write the page");
    let html = std::fs::read_to_string(&path).expect("read the page");
    let svg = svg_of(&html);
    assert_cells(&envelope, svg);
    assert_boundary(&envelope, svg);
    assert_axes(&envelope, svg);
    // The row labels end left of the grid: the page's style anchors their class at the end.
    assert!(html.contains(".ytick{font-size:11px;text-anchor:end}"));
    let key = &html[html.find("<ul class='key'>").expect("a key")..];
    for swatch in [SAFE, PALETTE[0], REFUSED] {
        assert!(key.contains(&format!("background:{swatch}")), "{swatch}");
    }
    for words in ["safe", "overlap-after-expiry", "inferred", "boundary"] {
        assert!(key.contains(words), "the key says nothing of {words}");
    }
}

fn rgb(hex: &str) -> [u8; 3] {
    let channel = |i: usize| u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).expect("hex");
    [channel(0), channel(1), channel(2)]
}

/// A colour at `opacity` on screen (see the module docs).
fn on_screen(hex: &str, opacity: f64) -> [u8; 3] {
    rgb(hex).map(|c| (f64::from(c) * opacity + 255.0 * (1.0 - opacity)).round() as u8)
}

fn near(pixel: [u8; 3], expected: [u8; 3], tolerance: u8) -> bool {
    pixel
        .iter()
        .zip(expected)
        .all(|(got, want)| got.abs_diff(want) <= tolerance)
}

/// The screenshot's pixel of the grid's top-left corner (see *grid on screen*).
fn grid_on_screen(image: &Image, envelope: &Envelope) -> (u32, u32) {
    let colours: Vec<[u8; 3]> = [SAFE, PALETTE[0]]
        .iter()
        .flat_map(|c| [MEASURED_OPACITY, INFERRED_OPACITY].map(|o| on_screen(c, o)))
        .collect();
    let (mut lo, mut hi) = ((u32::MAX, u32::MAX), (0, 0));
    for y in 0..image.height {
        for x in 0..image.width {
            if colours.iter().any(|c| near(image.at(x, y), *c, 4)) {
                (lo, hi) = ((lo.0.min(x), lo.1.min(y)), (hi.0.max(x), hi.1.max(y)));
            }
        }
    }
    let size = |n: usize| u32::try_from(n * CELL).expect("small");
    let (w, h) = (size(envelope.map.width), size(envelope.map.height));
    let (box_w, box_h) = (hi.0 + 1 - lo.0.min(hi.0 + 1), hi.1 + 1 - lo.1.min(hi.1 + 1));
    assert!(
        box_w.abs_diff(w) <= 4 && box_h.abs_diff(h) <= 4,
        "cell colours fill {box_w} x {box_h} px from {lo:?}, not the {w} x {h} px grid (a cell \
         of another colour?)"
    );
    // The box's centre, (lo + hi + 1) / 2, less half the grid.
    (
        (lo.0 + hi.0 + 1).saturating_sub(w) / 2,
        (lo.1 + hi.1 + 1).saturating_sub(h) / 2,
    )
}

/// A point in SVG px from the grid's corner, as a screenshot pixel.
fn pixel_at(origin: (u32, u32), (x, y): (usize, usize)) -> (u32, u32) {
    let (dx, dy) = (x - LEFT_TWO_KEYS, y - TOP);
    let small = |n: usize| u32::try_from(n).expect("small");
    (origin.0 + small(dx), origin.1 + small(dy))
}

/// An inferred cell's probe area: mostly the pale class colour, crossed by the hatch's light
/// stripes (every channel at least halfway from the pale colour to white), nothing of the
/// measured colour.
fn assert_pale_and_hatched(image: &Image, probe: (u32, u32), colour: &str, what: &str) {
    let (solid, pale) = (
        on_screen(colour, MEASURED_OPACITY),
        on_screen(colour, INFERRED_OPACITY),
    );
    let area: Vec<[u8; 3]> = (probe.1 - 6..probe.1 + 6)
        .flat_map(|y| (probe.0 - 6..probe.0 + 6).map(move |x| image.at(x, y)))
        .collect();
    let pale_pixels = area.iter().filter(|p| near(**p, pale, 6)).count();
    let stripe_pixels = area
        .iter()
        .filter(|p| p.iter().zip(pale).all(|(c, pc)| *c >= pc + (255 - pc) / 2))
        .count();
    assert!(
        pale_pixels * 2 >= area.len() && stripe_pixels * 10 >= area.len(),
        "{what}: of {} pixels, {pale_pixels} pale {pale:?}, {stripe_pixels} hatch stripe: \
         {area:?}",
        area.len()
    );
    assert!(
        !area.iter().any(|p| near(*p, solid, 12)),
        "{what}: solid {solid:?} in an inferred cell: {area:?}"
    );
}

/// Every cell's probe shows its class colour: solid when measured, pale and hatched when
/// inferred.
fn assert_cell_colours(image: &Image, envelope: &Envelope, origin: (u32, u32)) {
    for index in grid(envelope) {
        let (x, y) = cell_origin(envelope, index);
        let probe = pixel_at(origin, (x + CELL / 2, y + CELL / 4));
        let colour = class_colour(envelope, index);
        let measured = envelope.map.was_measured(index);
        let what = format!(
            "cell {index:?} ({:?}, measured {measured}) at {probe:?}",
            envelope.map.class(index)
        );
        if measured {
            let expected = on_screen(colour, MEASURED_OPACITY);
            let got = image.at(probe.0, probe.1);
            assert!(near(got, expected, 4), "{what}: {got:?}, not {expected:?}");
        } else {
            assert_pale_and_hatched(image, probe, colour, &what);
        }
    }
}

/// A pixel on each edge, a quarter along it: near black on the boundary, light elsewhere.
fn assert_boundary_pixels(image: &Image, envelope: &Envelope, origin: (u32, u32)) {
    for (a, b, differ) in neighbour_pairs(envelope) {
        let ((x1, y1), (x2, y2)) = edge(envelope, a, b);
        let at = pixel_at(origin, ((3 * x1 + x2) / 4, (3 * y1 + y2) / 4));
        let pixel = image.at(at.0, at.1);
        let brightest = pixel.iter().copied().max().expect("three channels");
        if differ {
            assert!(brightest <= 60, "boundary {a:?}-{b:?} at {at:?}: {pixel:?}");
        } else {
            assert!(
                brightest >= 120,
                "no boundary {a:?}-{b:?} at {at:?}: {pixel:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs chromium; .ci/run installs it"]
fn chromium_draws_cells_in_class_colours_and_the_boundary_in_black() {
    let chromium = find_chromium();
    let envelope = envelope();
    let work = tempfile::tempdir().expect("a temp dir");
    let html_path = work.path().join("envelope.html");
    std::fs::write(&html_path, html::page(&envelope)).expect("write the page");
    // Kept for a look after the run.
    let png_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("envelope_screenshot.png");
    let _ = std::fs::remove_file(&png_path);
    screenshot(&chromium, &html_path, &png_path, work.path(), WINDOW);
    let image = Image::decode(std::fs::read(&png_path).expect("read the screenshot"));
    assert_eq!((image.width, image.height), WINDOW);
    let origin = grid_on_screen(&image, &envelope);
    assert_cell_colours(&image, &envelope, origin);
    assert_boundary_pixels(&image, &envelope, origin);
}
