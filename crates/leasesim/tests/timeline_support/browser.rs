//! Test support: a screenshot of an HTML file by headless Chromium, decoded to RGB pixels.
//!
//! Terminology:
//! - *Chromium*: `$CHROMIUM`, else `/usr/bin/chromium`, else `chromium` or `chromium-browser`
//!   on `PATH`. A browser test needs it and, without it, fails saying how to install it.
//! - *window*: the viewport (CSS px) at device scale 1, so one CSS px is one screenshot pixel,
//!   in the sRGB colour profile, so a CSS colour is the pixel's colour.

use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const TIMEOUT_POLLS: u32 = 600;
const POLL: Duration = Duration::from_millis(100);
const INSTALL_HINT: &str = "install it with `apt-get install -y chromium` (Debian/Ubuntu), or \
                            point $CHROMIUM at a Chromium or Chrome binary";

pub fn find_chromium() -> PathBuf {
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

/// Runs headless Chromium on `html_path` in a `window` of (width, height) px, writing
/// `png_path`; its profile and log go in `work`; kills it after ~60 s.
pub fn screenshot(
    chromium: &Path,
    html_path: &Path,
    png_path: &Path,
    work: &Path,
    window: (u32, u32),
) {
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
        .arg(format!("--window-size={},{}", window.0, window.1))
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
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<[u8; 3]>,
}

impl Image {
    pub fn decode(bytes: Vec<u8>) -> Image {
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

    pub fn at(&self, x: u32, y: u32) -> [u8; 3] {
        self.rgb[(y * self.width + x) as usize]
    }
}
