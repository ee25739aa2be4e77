//! The colours of the timeline, as CSS hex strings.
//!
//! Terminology:
//! - *lane fill*: the solid background of one replica's lane. Lanes alternate between two
//!   light colours, odd lanes (`r1`, `r3`, ...) first. The lane fills are drawn, untouched by
//!   anything else, in the name column at the page's left edge (x < [`NAMES_WIDTH_PX`]), so a
//!   screenshot can count the lanes by scanning a pixel column there
//!   ([`LANE_PROBE_X_PX`]).
//! - *warning colour*: faults and refusals (rejected calls, lost replies, refused deletes,
//!   releases that freed nothing, renewals answered `None`, revocations).
//! - *violation colour*: the violated invariant's marker and banner, and deletes applied with
//!   a stale token.
//!
//! [`NAMES_WIDTH_PX`]: crate::NAMES_WIDTH_PX
//! [`LANE_PROBE_X_PX`]: crate::LANE_PROBE_X_PX

/// Background of odd lanes (`r1`, `r3`, `r5`, ...).
pub const LANE_FILL_ODD: &str = "#dce9f9";
/// [`LANE_FILL_ODD`] as RGB bytes.
pub const LANE_FILL_ODD_RGB: [u8; 3] = [0xdc, 0xe9, 0xf9];
/// Background of even lanes (`r2`, `r4`, ...).
pub const LANE_FILL_EVEN: &str = "#f5ecd4";
/// [`LANE_FILL_EVEN`] as RGB bytes.
pub const LANE_FILL_EVEN_RGB: [u8; 3] = [0xf5, 0xec, 0xd4];
/// Background of the world row (phases, revocations, backlog checks) above the lanes.
pub const WORLD_ROW_FILL: &str = "#e6e8eb";
/// Page background.
pub const PAGE_FILL: &str = "#ffffff";
/// Lease segments (the worker holds a lease with one token).
pub const TERM_FILL: &str = "#74c0fc";
/// Outline of lease segments.
pub const TERM_STROKE: &str = "#1864ab";
/// Token labels inside lease segments.
pub const TOKEN_TEXT: &str = "#0b2e4f";
/// Deletes applied with the current token.
pub const DELETE_FILL: &str = "#2b8a3e";
/// Successful renewals (a new token).
pub const RENEWAL_FILL: &str = "#7048e8";
/// Releases that freed the lease.
pub const RELEASE_FILL: &str = "#0b7285";
/// Acquires that took over an expired lease.
pub const TAKEOVER_FILL: &str = "#e8a200";
/// Faults and refusals (see the module doc).
pub const WARNING_FILL: &str = "#f76707";
/// Deletes applied with a stale token, and the violation.
pub const VIOLATION_FILL: &str = "#e03131";
/// Stops and restarts.
pub const STOP_FILL: &str = "#212529";
/// Clock jumps.
pub const CLOCK_JUMP_FILL: &str = "#ae3ec9";
/// Acquire call lines.
pub const ACQUIRE_CALL_FILL: &str = "#868e96";
/// Backlog check marks.
pub const BACKLOG_FILL: &str = "#495057";
/// Process pauses, drawn over the lane with [`PAUSE_OPACITY`].
pub const PAUSE_FILL: &str = "#343a40";
/// Opacity of the pause shading.
pub const PAUSE_OPACITY: &str = "0.22";
/// Phase band: safety (faults on).
pub const PHASE_SAFETY_FILL: &str = "#ffd8a8";
/// Phase band: liveness (faults healed).
pub const PHASE_LIVENESS_FILL: &str = "#b2f2bb";
/// Phase band: shutdown (every replica is being stopped).
pub const PHASE_SHUTDOWN_FILL: &str = "#d0bfff";
/// Opacity of the safety band (most of a run: kept faint so lanes stay light).
pub const PHASE_SAFETY_OPACITY: &str = "0.15";
/// Opacity of the liveness and shutdown bands.
pub const PHASE_OPACITY: &str = "0.3";
/// Vertical grid lines at the axis ticks.
pub const GRID_STROKE: &str = "#868e96";

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(rgb: [u8; 3]) -> String {
        format!("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2])
    }

    #[test]
    fn lane_fills_match_their_rgb_bytes_and_differ() {
        assert_eq!(hex(LANE_FILL_ODD_RGB), LANE_FILL_ODD);
        assert_eq!(hex(LANE_FILL_EVEN_RGB), LANE_FILL_EVEN);
        assert_ne!(LANE_FILL_ODD, LANE_FILL_EVEN);
        for other in [WORLD_ROW_FILL, PAGE_FILL] {
            assert_ne!(other, LANE_FILL_ODD);
            assert_ne!(other, LANE_FILL_EVEN);
        }
    }
}
