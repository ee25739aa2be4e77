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
//! - *fallback*: a kind a system leaves out of its `marks` reads as [`Words::RETENTION`] says.
//! - *drawn kinds*: the kinds a system says it can draw; when given, the legend lists only
//!   those (otherwise every kind, as for retention).

use crate::model::MarkKind;

/// One system's texts for a timeline (see the module docs). [`Words::RETENTION`] (also the
/// [`Default`]) is the retention system's, and the fallback of every kind another system
/// leaves out.
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
    /// The mark kinds the system names itself; the others fall back to retention's words.
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

/// The retention system's words of every mark kind, in legend order.
const RETENTION_MARKS: [MarkWords; 17] = {
    use MarkKind as K;
    let plain = MarkWords::plain;
    [
        MarkWords {
            kind: K::Delete,
            noun: "delete",
            legend: "delete applied (rows)",
            count: "{n} rows",
            label: "{n}",
        },
        MarkWords {
            kind: K::StaleDelete,
            noun: "stale delete",
            legend: "delete applied with a STALE token",
            count: "{n} rows",
            label: "{n}",
        },
        plain(
            K::RefusedDelete,
            "refused delete",
            "delete refused: stale token",
        ),
        plain(K::Renewal, "renewal", "renewal (new token)"),
        plain(
            K::RenewLost,
            "renew answered none",
            "renew answered none: leadership lost",
        ),
        plain(K::Release, "release", "release freed the lease"),
        plain(
            K::FreedNothing,
            "release freed nothing",
            "release freed nothing",
        ),
        plain(
            K::Takeover,
            "takeover",
            "acquire took over an expired lease",
        ),
        plain(K::Rejected, "rejected call", "call rejected before apply"),
        plain(K::RequestLost, "lost request", "request lost before apply"),
        plain(K::ReplyLost, "lost reply", "reply lost after apply"),
        plain(K::StopCalled, "stop called", "stop() called"),
        plain(K::StopResolved, "stop returned", "stop() returned"),
        plain(K::Restarted, "restart", "restarted with a fresh worker"),
        plain(K::ClockJump, "clock jump", "clock jump"),
        plain(K::Revoked, "revocation", "lease revoked by the authority"),
        MarkWords {
            kind: K::Backlog,
            noun: "backlog check",
            legend: "backlog check (rows left)",
            count: "{n} rows left",
            label: "backlog {n} left",
        },
    ]
};

impl Words {
    /// The retention system's words: the texts every timeline had before systems named their
    /// own.
    pub const RETENTION: Words = Words {
        held: "lease held, labelled with its fencing token (t7: token 7)",
        held_token: "lease token",
        held_lost: "renew answered none",
        calls: &[
            CallWords {
                class: "ca",
                label: "acquire call",
            },
            CallWords {
                class: "cr",
                label: "renew call",
            },
            CallWords {
                class: "cd",
                label: "delete call",
            },
            CallWords {
                class: "cl",
                label: "release call",
            },
        ],
        marks: &RETENTION_MARKS,
        drawn: None,
    };

    /// The words of `kind`: the system's own, else retention's.
    pub fn mark(&self, kind: MarkKind) -> &MarkWords {
        self.marks
            .iter()
            .chain(RETENTION_MARKS.iter())
            .find(|words| words.kind == kind)
            .expect("retention's words name every mark kind")
    }

    /// Does the legend list `kind`?
    pub fn lists(&self, kind: MarkKind) -> bool {
        self.drawn.is_none_or(|drawn| drawn.contains(&kind))
    }
}

impl Default for Words {
    fn default() -> Self {
        Words::RETENTION
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::style::ALL_KINDS;

    #[test]
    fn retention_names_every_kind_once_in_legend_order() {
        let kinds: Vec<MarkKind> = RETENTION_MARKS.iter().map(|words| words.kind).collect();
        assert_eq!(kinds, ALL_KINDS);
    }

    #[test]
    fn a_kind_left_out_reads_as_retention_and_drawn_kinds_limit_the_legend() {
        const OWN: Words = Words {
            marks: &[MarkWords::plain(MarkKind::Delete, "step", "job step")],
            drawn: Some(&[MarkKind::Delete]),
            ..Words::RETENTION
        };
        assert_eq!(OWN.mark(MarkKind::Delete).noun, "step");
        assert_eq!(OWN.mark(MarkKind::Delete).count, "");
        assert_eq!(OWN.mark(MarkKind::Release).noun, "release");
        assert!(OWN.lists(MarkKind::Delete) && !OWN.lists(MarkKind::Release));
        assert!(Words::default().lists(MarkKind::Release));
    }

    #[test]
    fn a_template_fills_every_count() {
        assert_eq!(fill("{n} rows", 5), "5 rows");
        assert_eq!(fill("backlog {n} left", 0), "backlog 0 left");
        assert_eq!(fill("", 3), "");
    }
}
