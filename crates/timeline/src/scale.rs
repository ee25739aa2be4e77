//! Virtual time to pixels, and the time axis.
//!
//! Terminology:
//! - *span*: the virtual time the timeline covers, from 0 to the last event (at least 1 s).
//! - *scale*: whole pixels per second of virtual time. The default keeps a 2-minute run
//!   readable in a horizontal scroll container; short runs are stretched to a minimum plot
//!   width, long runs squeezed to a maximum one.
//! - *tenths*: x coordinates are integers in tenths of a pixel (`x_tenths`), printed with at
//!   most one decimal: no float ever reaches the output, so the bytes are stable.
//! - *tick*: a labelled instant on the axis; ticks are a "nice" step apart (1-2-5 ms up to
//!   an hour), the smallest step that keeps labels at least `MIN_TICK_GAP_PX` apart.

/// Pixels per second when the run is neither very short nor very long.
pub const DEFAULT_PX_PER_S: u64 = 60;
/// Short runs are stretched to at least this plot width.
pub const MIN_PLOT_WIDTH_PX: u64 = 960;
/// Long runs are squeezed to at most this plot width (down to 1 px/s).
pub const MAX_PLOT_WIDTH_PX: u64 = 16_000;
/// Stretching stops here (2 px per ms).
pub const MAX_PX_PER_S: u64 = 2_000;
/// Room left of t = 0 and right of the last event, so edge marks are not clipped.
pub(crate) const PLOT_PAD_LEFT_PX: u64 = 10;
pub(crate) const PLOT_PAD_RIGHT_PX: u64 = 40;
const MIN_TICK_GAP_PX: u64 = 70;
const TICK_STEPS_MS: [u64; 22] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000,
    120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000,
];

/// How virtual time maps to x.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scale {
    pub px_per_s: u64,
    pub span_ms: u64,
}

impl Scale {
    /// The scale for a run whose last event happened at `end_ms`.
    pub(crate) fn for_end(end_ms: u64) -> Scale {
        let span_ms = end_ms.max(1_000);
        let natural_px = span_ms.saturating_mul(DEFAULT_PX_PER_S) / 1_000;
        let px_per_s = if natural_px < MIN_PLOT_WIDTH_PX {
            (MIN_PLOT_WIDTH_PX * 1_000)
                .div_ceil(span_ms)
                .min(MAX_PX_PER_S)
        } else if natural_px > MAX_PLOT_WIDTH_PX {
            (MAX_PLOT_WIDTH_PX * 1_000 / span_ms).max(1)
        } else {
            DEFAULT_PX_PER_S
        };
        Scale { px_per_s, span_ms }
    }

    /// x of virtual instant `at_ms`, in tenths of a pixel from the plot's left edge.
    pub(crate) fn x_tenths(self, at_ms: u64) -> u64 {
        PLOT_PAD_LEFT_PX * 10 + at_ms.saturating_mul(self.px_per_s) / 100
    }

    /// Width of the plot, padding included.
    pub(crate) fn plot_width_px(self) -> u64 {
        let span_px = self.span_ms.saturating_mul(self.px_per_s).div_ceil(1_000);
        PLOT_PAD_LEFT_PX + span_px + PLOT_PAD_RIGHT_PX
    }

    /// The distance between two labelled ticks.
    pub(crate) fn tick_step_ms(self) -> u64 {
        TICK_STEPS_MS
            .into_iter()
            .find(|step_ms| step_ms * self.px_per_s >= MIN_TICK_GAP_PX * 1_000)
            .unwrap_or(TICK_STEPS_MS[TICK_STEPS_MS.len() - 1])
    }

    /// The ticks from 0 through the end of the span.
    pub(crate) fn ticks_ms(self) -> impl Iterator<Item = u64> {
        let step_ms = self.tick_step_ms();
        (0..=self.span_ms / step_ms).map(move |n| n * step_ms)
    }
}

/// The axis label of tick `t_ms` when ticks are `step_ms` apart: `0`, `20ms`, `1.5s`, `42s`,
/// `2m`, `2m30s`.
pub(crate) fn tick_label(t_ms: u64, step_ms: u64) -> String {
    let (seconds, rest_ms) = (t_ms / 1_000, t_ms % 1_000);
    if t_ms == 0 {
        "0".to_string()
    } else if step_ms < 100 {
        format!("{t_ms}ms")
    } else if step_ms < 1_000 && rest_ms != 0 {
        format!("{seconds}.{}s", rest_ms / 100)
    } else if step_ms >= 60_000 {
        match seconds % 60 {
            0 => format!("{}m", seconds / 60),
            rest_s => format!("{}m{rest_s:02}s", seconds / 60),
        }
    } else {
        format!("{seconds}s")
    }
}

/// A coordinate in tenths of a pixel as SVG text: `12`, `12.5`.
pub(crate) fn px(tenths: u64) -> String {
    match tenths % 10 {
        0 => (tenths / 10).to_string(),
        fraction => format!("{}.{fraction}", tenths / 10),
    }
}

/// Rough width of `chars` characters of the 10 px sans-serif used for labels, in tenths.
pub(crate) fn text_width_tenths(chars: usize) -> u64 {
    u64::try_from(chars).unwrap_or(u64::MAX).saturating_mul(60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_minute_run_uses_the_default_scale() {
        let scale = Scale::for_end(120_000);
        assert_eq!(scale.px_per_s, DEFAULT_PX_PER_S);
        assert_eq!(
            scale.plot_width_px(),
            PLOT_PAD_LEFT_PX + 7_200 + PLOT_PAD_RIGHT_PX
        );
    }

    #[test]
    fn short_runs_are_stretched_and_long_runs_squeezed() {
        assert_eq!(Scale::for_end(4_000).px_per_s, 240);
        assert_eq!(Scale::for_end(0).px_per_s, 960);
        assert_eq!(
            Scale::for_end(10).px_per_s,
            960,
            "the span is at least one second"
        );
        assert_eq!(Scale::for_end(1_000_000).px_per_s, 16);
        assert_eq!(Scale::for_end(100_000_000).px_per_s, 1);
        for end_ms in [1, 999, 4_537, 16_000, 120_107, 266_667, 3_600_000] {
            let width_px = Scale::for_end(end_ms).plot_width_px();
            assert!((MIN_PLOT_WIDTH_PX..=MAX_PLOT_WIDTH_PX + 100).contains(&width_px));
        }
    }

    #[test]
    fn time_maps_to_tenths_of_a_pixel() {
        let scale = Scale::for_end(120_000);
        assert_eq!(scale.x_tenths(0), PLOT_PAD_LEFT_PX * 10);
        assert_eq!(scale.x_tenths(1_000), PLOT_PAD_LEFT_PX * 10 + 600);
        assert_eq!(scale.x_tenths(1_234), PLOT_PAD_LEFT_PX * 10 + 740);
        assert_eq!(scale.x_tenths(1_235), PLOT_PAD_LEFT_PX * 10 + 741);
        assert!(
            scale.x_tenths(u64::MAX) >= scale.x_tenths(120_000),
            "saturates, no overflow"
        );
    }

    #[test]
    fn x_is_monotonic_in_time() {
        let scale = Scale::for_end(4_537);
        let xs: Vec<u64> = (0..5_000).map(|t_ms| scale.x_tenths(t_ms)).collect();
        assert!(xs.windows(2).all(|pair| pair[0] <= pair[1]));
    }

    #[test]
    fn ticks_are_far_enough_apart() {
        assert_eq!(Scale::for_end(120_000).tick_step_ms(), 2_000);
        assert_eq!(Scale::for_end(4_000).tick_step_ms(), 500);
        assert_eq!(Scale::for_end(0).tick_step_ms(), 100);
        assert_eq!(Scale::for_end(1_000_000).tick_step_ms(), 5_000);
        let ticks: Vec<u64> = Scale::for_end(4_000).ticks_ms().collect();
        assert_eq!(
            ticks,
            [0, 500, 1_000, 1_500, 2_000, 2_500, 3_000, 3_500, 4_000]
        );
    }

    #[test]
    fn tick_labels_read_as_ms_seconds_and_minutes() {
        assert_eq!(tick_label(0, 500), "0");
        assert_eq!(tick_label(40, 20), "40ms");
        assert_eq!(tick_label(1_500, 500), "1.5s");
        assert_eq!(tick_label(2_000, 500), "2s");
        assert_eq!(tick_label(42_000, 2_000), "42s");
        assert_eq!(tick_label(120_000, 60_000), "2m");
        assert_eq!(tick_label(150_000, 120_000), "2m30s");
    }

    #[test]
    fn coordinates_print_with_at_most_one_decimal() {
        assert_eq!(px(0), "0");
        assert_eq!(px(120), "12");
        assert_eq!(px(125), "12.5");
        assert_eq!(px(7), "0.7");
    }
}
