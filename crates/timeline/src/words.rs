//! What a system calls the things a timeline draws: its held bars, its call rows and its marks.
//!
//! Terminology:
//! - *words*: one system's texts for the legend and the hover summaries ([`Words`]). The
//!   drawing (shapes, classes, colours, rows) is shared; only what the pieces are called is the
//!   system's.
//! - *held*: the bar of a held token (the retention system's lease, another system's claim).
//! - *call class*: the CSS class a system gives a call row in its `call_style` (`ca`, `cr`,
//!   `cd`, `cl`); the legend names each class the system lists ([`CallWords`]).
//! - *mark words*: one mark kind's noun (hover: `3 × delete`), legend text, and the templates
//!   of its count (hover: `5 rows`) and of the label under it (`5`); `{n}` in a template is
//!   the count. An empty template shows nothing.
//! - *fallback*: a kind a system leaves out of its `marks` reads in neutral words (the shared
//!   renderer's kinds: `rejected call`, `stop called`, ...; the others: `effect`, `renewal`,
//!   ...).
//! - *drawn kinds*: the kinds a system says it can draw; when given, the legend lists only
//!   those (otherwise every kind).

use crate::model::MarkKind;

/// One system's texts for a timeline (see the module docs); each system names its own
/// (`leasesim_timeline::Render::WORDS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Words {
    /// Legend text of a held bar, e.g. `lease held, labelled with its fencing token (t7: token
    /// 7)`.
    pub held: &'static str,
    /// What a held bar's hover summary calls it before the token: `lease token` reads
    /// `lease token 7 held 300 ms (t=10..310 ms)`.
    pub held_token: &'static str,
    /// Why a bar ended lost, after `lost: ` in its hover summary (`renew answered none`).
    pub held_lost: &'static str,
    /// The legend's call rows, in legend order.
    pub calls: &'static [CallWords],
    /// The mark kinds the system names itself; the others read in neutral words.
    pub marks: &'static [MarkWords],
    /// The mark kinds the system can draw, if it says so: the legend lists only these.
    pub drawn: Option<&'static [MarkKind]>,
}

/// The legend entry of one call class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallWords {
    /// The class the system's `CallStyle` gives these calls (`ca`, `cr`, `cd`, `cl`).
    pub class: &'static str,
    /// Legend text, e.g. `acquire call`.
    pub label: &'static str,
}

/// What one mark kind is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkWords {
    pub kind: MarkKind,
    /// Singular noun for hover summaries: `3 × delete`.
    pub noun: &'static str,
    /// Legend text.
    pub legend: &'static str,
    /// Hover text of a mark's count after its noun, `{n}` standing for the count (`{n} rows`
    /// reads `delete: 5 rows`); empty: the count is not shown.
    pub count: &'static str,
    /// The label under the mark, `{n}` standing for the count; empty: no label.
    pub label: &'static str,
}

impl MarkWords {
    /// Words of a kind that shows no count.
    pub const fn plain(kind: MarkKind, noun: &'static str, legend: &'static str) -> MarkWords {
        MarkWords {
            kind,
            noun,
            legend,
            count: "",
            label: "",
        }
    }
}

/// Fills `{n}` of `template` with `count`.
pub(crate) fn fill(template: &str, count: u64) -> String {
    template.replace("{n}", &count.to_string())
}

/// The words of every mark kind that a system does not name itself, in legend order: what
/// the shared renderer draws (refusals, losses, stops, restarts, clock jumps) and neutral
/// nouns for the kinds a system draws.
const NEUTRAL_MARKS: [MarkWords; 17] = {
    use MarkKind as K;
    let plain = MarkWords::plain;
    [
        MarkWords {
            kind: K::Delete,
            noun: "effect",
            legend: "effect applied (count)",
            count: "{n}",
            label: "{n}",
        },
        MarkWords {
            kind: K::StaleDelete,
            noun: "stale effect",
            legend: "effect applied with a STALE token",
            count: "{n}",
            label: "{n}",
        },
        plain(
            K::RefusedDelete,
            "refused call",
            "call refused: stale token",
        ),
        plain(K::Renewal, "renewal", "renewal"),
        plain(K::RenewLost, "hold lost", "a renewal found the hold lost"),
        plain(K::Release, "release", "release"),
        plain(
            K::FreedNothing,
            "release freed nothing",
            "release freed nothing",
        ),
        plain(K::Takeover, "takeover", "took over an expired hold"),
        plain(K::Rejected, "rejected call", "call rejected before apply"),
        plain(K::RequestLost, "lost request", "request lost before apply"),
        plain(K::ReplyLost, "lost reply", "reply lost after apply"),
        plain(K::StopCalled, "stop called", "stop() called"),
        plain(K::StopResolved, "stop returned", "stop() returned"),
        plain(K::Restarted, "restart", "restarted with a fresh worker"),
        plain(K::ClockJump, "clock jump", "clock jump"),
        plain(K::Revoked, "revocation", "hold revoked by the service"),
        MarkWords {
            kind: K::Backlog,
            noun: "check",
            legend: "check as liveness ends (left)",
            count: "{n} left",
            label: "{n} left",
        },
    ]
};

impl Words {
    /// The words of `kind`: the system's own, else the neutral ones.
    pub fn mark(&self, kind: MarkKind) -> &MarkWords {
        self.marks
            .iter()
            .chain(NEUTRAL_MARKS.iter())
            .find(|words| words.kind == kind)
            .expect("the neutral words name every mark kind")
    }

    /// Does the legend list `kind`?
    pub fn lists(&self, kind: MarkKind) -> bool {
        self.drawn.is_none_or(|drawn| drawn.contains(&kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::style::ALL_KINDS;

    #[test]
    fn neutral_words_name_every_kind_once_in_legend_order() {
        let kinds: Vec<MarkKind> = NEUTRAL_MARKS.iter().map(|words| words.kind).collect();
        assert_eq!(kinds, ALL_KINDS);
    }

    #[test]
    fn a_kind_left_out_reads_neutral_and_drawn_kinds_limit_the_legend() {
        const EVERY: Words = Words {
            held: "claim held",
            held_token: "claim token",
            held_lost: "claim lost",
            calls: &[],
            marks: &[],
            drawn: None,
        };
        const OWN: Words = Words {
            marks: &[MarkWords::plain(MarkKind::Delete, "step", "job step")],
            drawn: Some(&[MarkKind::Delete]),
            ..EVERY
        };
        assert_eq!(OWN.mark(MarkKind::Delete).noun, "step");
        assert_eq!(OWN.mark(MarkKind::Delete).count, "");
        assert_eq!(OWN.mark(MarkKind::Release).noun, "release");
        assert!(OWN.lists(MarkKind::Delete) && !OWN.lists(MarkKind::Release));
        assert!(EVERY.lists(MarkKind::Release));
        assert_eq!(EVERY.mark(MarkKind::Delete).noun, "effect");
    }

    #[test]
    fn a_template_fills_every_count() {
        assert_eq!(fill("{n} rows", 5), "5 rows");
        assert_eq!(fill("backlog {n} left", 0), "backlog 0 left");
        assert_eq!(fill("", 3), "");
    }
}
