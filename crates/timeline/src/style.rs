//! How each kind of mark looks, and the CSS that gives the classes their colours.
//!
//! Terminology:
//! - *class*: a short CSS class on a drawn element; the `<style>` block maps it to a colour
//!   from [`crate::palette`], so each element carries two letters instead of a colour.
//! - *shape*: the glyph of a mark (bar, dot, square, diamond, triangle, tick).
//! - *row*: where in its lane (or the world row) a mark sits.

use crate::model::MarkKind;
use crate::palette::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A rectangle as wide as the cluster (at least 3 px).
    Bar,
    Dot,
    Square,
    HollowSquare,
    Diamond,
    Triangle,
    /// A thin vertical line.
    Tick,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Row {
    Control,
    Delete,
    World,
}

/// How one kind of mark is drawn (what it is called is the system's: [`crate::Words`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KindStyle {
    pub class: &'static str,
    pub shape: Shape,
    pub row: Row,
}

/// How each mark kind is drawn, in legend order.
const KIND_STYLES: [(MarkKind, KindStyle); 17] = {
    use {MarkKind as K, Row as R, Shape as S};
    [
        (
            K::Delete,
            KindStyle {
                class: "md",
                shape: S::Bar,
                row: R::Delete,
            },
        ),
        (
            K::StaleDelete,
            KindStyle {
                class: "ms",
                shape: S::Bar,
                row: R::Delete,
            },
        ),
        (
            K::RefusedDelete,
            KindStyle {
                class: "mx",
                shape: S::Bar,
                row: R::Delete,
            },
        ),
        (
            K::Renewal,
            KindStyle {
                class: "mn",
                shape: S::Dot,
                row: R::Control,
            },
        ),
        (
            K::RenewLost,
            KindStyle {
                class: "mo",
                shape: S::Dot,
                row: R::Control,
            },
        ),
        (
            K::Release,
            KindStyle {
                class: "mr",
                shape: S::Square,
                row: R::Control,
            },
        ),
        (
            K::FreedNothing,
            KindStyle {
                class: "mf",
                shape: S::Square,
                row: R::Control,
            },
        ),
        (
            K::Takeover,
            KindStyle {
                class: "mt",
                shape: S::Triangle,
                row: R::Control,
            },
        ),
        (
            K::Rejected,
            KindStyle {
                class: "mj",
                shape: S::Triangle,
                row: R::Control,
            },
        ),
        (
            K::RequestLost,
            KindStyle {
                class: "mu",
                shape: S::Square,
                row: R::Control,
            },
        ),
        (
            K::ReplyLost,
            KindStyle {
                class: "mq",
                shape: S::Diamond,
                row: R::Control,
            },
        ),
        (
            K::StopCalled,
            KindStyle {
                class: "mc",
                shape: S::HollowSquare,
                row: R::Control,
            },
        ),
        (
            K::StopResolved,
            KindStyle {
                class: "me",
                shape: S::Square,
                row: R::Control,
            },
        ),
        (
            K::Restarted,
            KindStyle {
                class: "mz",
                shape: S::Diamond,
                row: R::Control,
            },
        ),
        (
            K::ClockJump,
            KindStyle {
                class: "mk",
                shape: S::Tick,
                row: R::Control,
            },
        ),
        (
            K::Revoked,
            KindStyle {
                class: "mv",
                shape: S::Triangle,
                row: R::World,
            },
        ),
        (
            K::Backlog,
            KindStyle {
                class: "mb",
                shape: S::Dot,
                row: R::World,
            },
        ),
    ]
};

pub(crate) fn kind_style(kind: MarkKind) -> KindStyle {
    let (_, style) = KIND_STYLES
        .iter()
        .find(|(of, _)| *of == kind)
        .expect("every mark kind has a style");
    *style
}

/// Every mark kind, in legend order.
pub(crate) const ALL_KINDS: [MarkKind; 17] = [
    MarkKind::Delete,
    MarkKind::StaleDelete,
    MarkKind::RefusedDelete,
    MarkKind::Renewal,
    MarkKind::RenewLost,
    MarkKind::Release,
    MarkKind::FreedNothing,
    MarkKind::Takeover,
    MarkKind::Rejected,
    MarkKind::RequestLost,
    MarkKind::ReplyLost,
    MarkKind::StopCalled,
    MarkKind::StopResolved,
    MarkKind::Restarted,
    MarkKind::ClockJump,
    MarkKind::Revoked,
    MarkKind::Backlog,
];

/// The `<style>` block's rules.
pub(crate) fn css() -> String {
    let rules = [
        "body{margin:0;font:13px/1.4 system-ui,sans-serif;color:#212529}".to_string(),
        format!("body,.scroll{{background:{PAGE_FILL}}}"),
        "header{padding:8px 12px 4px}h1{font-size:16px;margin:0 0 4px}".into(),
        "pre{margin:0;font:12px/1.35 ui-monospace,monospace;white-space:pre-wrap}".into(),
        format!(".banner{{margin:4px 12px 8px;padding:6px 10px;border:2px solid {VIOLATION_FILL};background:#fff5f5}}"),
        format!(".banner b{{color:{VIOLATION_FILL}}}"),
        ".tl{display:flex;align-items:flex-start;border-top:1px solid #ced4da;border-bottom:1px solid #ced4da}".into(),
        ".names{flex:none}.scroll{overflow-x:auto;flex:1}svg{display:block}".into(),
        "svg text{font:10px sans-serif}.ln{font:bold 12px sans-serif}".into(),
        ".legend{padding:8px 12px}.legend span{display:inline-block;margin:2px 14px 2px 0}".into(),
        ".legend svg{display:inline-block;vertical-align:middle;margin-right:4px}".into(),
        ".foot{padding:0 12px 12px;color:#495057}".into(),
        format!(".tb{{fill:{TERM_FILL};stroke:{TERM_STROKE}}}.tk{{fill:{TOKEN_TEXT}}}"),
        format!(".pz{{fill:{PAUSE_FILL};fill-opacity:{PAUSE_OPACITY}}}"),
        format!(".ps{{fill:{PHASE_SAFETY_FILL}}}.pl{{fill:{PHASE_LIVENESS_FILL}}}.pd{{fill:{PHASE_SHUTDOWN_FILL}}}"),
        format!(".ps{{fill-opacity:{PHASE_SAFETY_OPACITY}}}.pl,.pd{{fill-opacity:{PHASE_OPACITY}}}"),
        format!(".gr{{stroke:{GRID_STROKE};stroke-opacity:.35;fill:none}}.ax{{fill:#495057}}"),
        format!(".ca{{fill:{ACQUIRE_CALL_FILL}}}.cr,.mn{{fill:{RENEWAL_FILL}}}"),
        format!(".cd,.md,.dl{{fill:{DELETE_FILL}}}.cl,.mr{{fill:{RELEASE_FILL}}}"),
        format!(".cf,.mx,.mo,.mf,.mj,.mu,.mq,.mv,.lw{{fill:{WARNING_FILL}}}"),
        format!(".ms,.sl,.vi{{fill:{VIOLATION_FILL}}}.mt{{fill:{TAKEOVER_FILL}}}"),
        format!(".me,.mz{{fill:{STOP_FILL}}}.mc{{fill:{PAGE_FILL};stroke:{STOP_FILL};stroke-width:1.5}}"),
        format!(".mk{{fill:{CLOCK_JUMP_FILL}}}.mb,.bl{{fill:{BACKLOG_FILL}}}"),
        format!(".vr{{fill:none;stroke:{VIOLATION_FILL};stroke-width:2}}"),
    ];
    rules.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_class_and_a_css_rule() {
        let css = css();
        let mut classes: Vec<&str> = ALL_KINDS.iter().map(|k| kind_style(*k).class).collect();
        for class in &classes {
            assert!(css.contains(&format!(".{class}")), "no rule for .{class}");
        }
        classes.sort_unstable();
        classes.dedup();
        assert_eq!(classes.len(), ALL_KINDS.len());
    }
}
