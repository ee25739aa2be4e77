//! Vertical layout: where the axis, the world row and each lane sit.
//!
//! Terminology:
//! - *name column*: the fixed SVG left of the scrolling plot, holding the row names.
//! - *lane*: one replica's band, `LANE_HEIGHT_PX` tall, `LANE_GAP_PX` apart. From its top:
//!   four thin call rows (acquire, renew, delete, release), the lease bar, the control-mark
//!   row (renewals, releases, faults, stops), the delete-mark row, and the delete row counts.
//! - *axis*: tick labels above the world row and below the last lane.
//!
//! All y values are whole pixels.

/// Width of the name column left of the plot.
pub const NAMES_WIDTH_PX: u64 = 44;
/// x (page pixels) of the column where only lane fills, the world row fill and the page
/// background are drawn: scan it to count lanes.
pub const LANE_PROBE_X_PX: u64 = 2;
/// Height of one lane.
pub const LANE_HEIGHT_PX: u64 = 64;
/// Space between lanes (page background).
pub const LANE_GAP_PX: u64 = 4;
pub(crate) const AXIS_HEIGHT_PX: u64 = 18;
pub(crate) const WORLD_ROW_HEIGHT_PX: u64 = 22;
pub(crate) const CALL_ROW_TOP_PX: u64 = 3;
pub(crate) const CALL_ROW_STEP_PX: u64 = 3;
pub(crate) const CALL_HEIGHT_PX: u64 = 2;
pub(crate) const BAR_TOP_PX: u64 = 17;
pub(crate) const BAR_HEIGHT_PX: u64 = 16;
pub(crate) const CONTROL_ROW_TOP_PX: u64 = 36;
pub(crate) const DELETE_ROW_TOP_PX: u64 = 46;
pub(crate) const MARK_HEIGHT_PX: u64 = 8;
pub(crate) const DELETE_LABEL_BASELINE_PX: u64 = 62;

// invariant: the rows of a lane follow one another without overlap and fit in the lane.
const _: () = {
    assert!(CALL_ROW_TOP_PX + 3 * CALL_ROW_STEP_PX + CALL_HEIGHT_PX <= BAR_TOP_PX);
    assert!(BAR_TOP_PX + BAR_HEIGHT_PX <= CONTROL_ROW_TOP_PX);
    assert!(CONTROL_ROW_TOP_PX + MARK_HEIGHT_PX <= DELETE_ROW_TOP_PX);
    assert!(DELETE_ROW_TOP_PX + MARK_HEIGHT_PX < DELETE_LABEL_BASELINE_PX - 7);
    assert!(DELETE_LABEL_BASELINE_PX < LANE_HEIGHT_PX);
    assert!(LANE_PROBE_X_PX + 2 < NAMES_WIDTH_PX);
};

/// Top of the world row.
pub(crate) fn world_row_top_px() -> u64 {
    AXIS_HEIGHT_PX
}

/// Top of lane `index` (0-based).
pub(crate) fn lane_top_px(index: usize) -> u64 {
    let index = u64::try_from(index).unwrap_or(u64::MAX / 256);
    AXIS_HEIGHT_PX + WORLD_ROW_HEIGHT_PX + LANE_GAP_PX + index * (LANE_HEIGHT_PX + LANE_GAP_PX)
}

/// Bottom of the last of `lanes` lanes (the world row's bottom when there are none).
pub(crate) fn lanes_bottom_px(lanes: usize) -> u64 {
    lane_top_px(lanes) - LANE_GAP_PX
}

/// Height of both SVGs: axis, world row, lanes, axis.
pub(crate) fn svg_height_px(lanes: usize) -> u64 {
    lanes_bottom_px(lanes) + AXIS_HEIGHT_PX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_stack_below_the_world_row_without_overlap() {
        assert_eq!(lane_top_px(0), 44);
        assert_eq!(lane_top_px(1), 44 + 68);
        assert_eq!(lanes_bottom_px(0), 40, "no lanes: the world row's bottom");
        assert_eq!(lanes_bottom_px(2), 44 + 68 + 64);
        assert_eq!(svg_height_px(2), 44 + 68 + 64 + 18);
    }
}
