//! A real browser draws the timeline of a two-minute, five-replica run.
//!
//! Terminology:
//! - *Chromium*: `$CHROMIUM`, else `/usr/bin/chromium`, else `chromium` or `chromium-browser`
//!   on `PATH`. It is required: without it this test fails and says how to install it.
//! - *probe column*: the pixel column `LANE_PROBE_X_PX` at the page's left edge, where only
//!   the lane fills, the world row and the page background are drawn. Counting the bands of
//!   the two documented lane fills there gives the number of lanes the browser drew.

mod support;

use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use leasesim_timeline::{LANE_FILL_EVEN_RGB, LANE_FILL_ODD_RGB, LANE_HEIGHT_PX, LANE_PROBE_X_PX};

const WIDTH_PX: u32 = 1400;
const HEIGHT_PX: u32 = 900;
const TIMEOUT_POLLS: u32 = 600;
const POLL: Duration = Duration::from_millis(100);
const INSTALL_HINT: &str = "install it with `apt-get install -y chromium` (Debian/Ubuntu), or \
                            point $CHROMIUM at a Chromium or Chrome binary";

fn find_chromium() -> PathBuf {
    let from_env = std::env::var_os("CHROMIUM").map(PathBuf::from);
    let fixed = Some(PathBuf::from("/usr/bin/chromium"));
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|paths| {
        std::env::split_paths(&paths)
            .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
            .collect::<Vec<_>>()
    });
    from_env
        .into_iter()
        .chain(fixed)
        .chain(on_path)
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("Chromium was not found (needed for this test): {INSTALL_HINT}"))
}

/// Runs headless Chromium on `html_path`, writing `png_path`; kills it after ~60 s.
fn screenshot(chromium: &Path, html_path: &Path, png_path: &Path, work: &Path) {
    let profile = work.join("profile");
    let log_path = work.join("chromium.log");
    let log = File::create(&log_path).expect("create the log file");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--force-color-profile=srgb",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={WIDTH_PX},{HEIGHT_PX}"))
        .arg(format!("--screenshot={}", png_path.display()))
        .arg(format!("file://{}", html_path.display()))
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("clone the log handle"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|err| {
            panic!(
                "Chromium ({}) could not start: {err}; {INSTALL_HINT}",
                chromium.display()
            )
        });
    let mut status = None;
    for _ in 0..TIMEOUT_POLLS {
        status = child.try_wait().expect("poll Chromium");
        if status.is_some() {
            break;
        }
        std::thread::sleep(POLL);
    }
    let log_text = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "Chromium did not finish within 60 s; its output:\n{}",
            log_text()
        );
    };
    assert!(
        status.success() && png_path.is_file(),
        "Chromium ({status}) wrote no screenshot; {INSTALL_HINT}; its output:\n{}",
        log_text()
    );
}

/// The decoded screenshot: width, height and RGB pixels.
struct Image {
    width: u32,
    height: u32,
    rgb: Vec<[u8; 3]>,
}

impl Image {
    fn decode(bytes: Vec<u8>) -> Image {
        let mut decoder = png::Decoder::new(Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().expect("the screenshot is a PNG");
        let mut buffer = vec![0; reader.output_buffer_size().expect("a sane PNG size")];
        let info = reader
            .next_frame(&mut buffer)
            .expect("decode the screenshot");
        let channels = info.color_type.samples();
        assert!(
            channels >= 3,
            "expected a colour screenshot, got {:?}",
            info.color_type
        );
        let rgb = buffer[..info.buffer_size()]
            .chunks_exact(channels)
            .map(|pixel| [pixel[0], pixel[1], pixel[2]])
            .collect();
        Image {
            width: info.width,
            height: info.height,
            rgb,
        }
    }

    fn at(&self, x: u32, y: u32) -> [u8; 3] {
        self.rgb[(y * self.width + x) as usize]
    }
}

fn close(pixel: [u8; 3], expected: [u8; 3]) -> bool {
    pixel
        .iter()
        .zip(expected)
        .all(|(got, want)| got.abs_diff(want) <= 3)
}

/// Bands of lane fills down the probe column: (fill index 0 = odd / 1 = even, height px).
fn lane_bands(image: &Image) -> Vec<(usize, u32)> {
    let probe_x = u32::try_from(LANE_PROBE_X_PX).expect("small");
    let mut bands: Vec<(usize, u32)> = Vec::new();
    let mut previous = None;
    for y in 0..image.height {
        let pixel = image.at(probe_x, y);
        let fill = [LANE_FILL_ODD_RGB, LANE_FILL_EVEN_RGB]
            .iter()
            .position(|fill| close(pixel, *fill));
        match (fill, bands.last_mut()) {
            (Some(fill), Some(band)) if previous == Some(fill) => band.1 += 1,
            (Some(fill), _) => bands.push((fill, 1)),
            (None, _) => {}
        }
        previous = fill;
    }
    bands
}

#[test]
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
    screenshot(&chromium, &html_path, &png_path, work.path());
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
    let bands = lane_bands(&image);
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
            height_px.abs_diff(lane_px) <= 2,
            "lane r{} is {height_px} px tall",
            index + 1
        );
    }
}
