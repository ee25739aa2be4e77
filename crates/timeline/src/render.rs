//! How one system's events read and draw: the component a system implements in its own
//! `render.rs`, for the harness's trace lines and timelines.
//!
//! Terminology:
//! - *text*: the system's part of a trace line (a request, an apply, an answer, a note).
//! - *annotator*: per-run bookkeeping of the trace renderer that adds text an event alone
//!   does not carry (a term's tokens at its end, a lease handover).
//! - *draws*: what the system's parts of an event draw on a timeline ([`Draw`]); the shared
//!   parts (calls, faults, pauses, stops, phases) are drawn by the harness.
//! - *words*: what the system calls its held bars, call rows and marks ([`Words`]).

use leasesim_events::{Event, Vocabulary};

use crate::model::{CallStyle, Draw};
use crate::words::Words;

/// How one system's events read in a trace and draw on a timeline. See the module docs.
pub trait Render: Vocabulary {
    /// What the system calls its held bars, call rows and marks (legend and hover text).
    const WORDS: &'static Words;
    /// Per-run bookkeeping of the trace renderer.
    type Annotator: Annotator<Self> + Default;

    /// How the system's parts of an event read in a trace line.
    fn request_text(request: &Self::Request) -> String;
    fn applied_text(applied: &Self::Applied) -> String;
    fn answer_text(answer: &Self::Answer) -> String;
    fn note_text(note: &Self::Note) -> String;
    /// A short stable name of a note, for per-kind event counts.
    fn note_name(note: &Self::Note) -> &'static str;

    /// Is this answer an error of the system's service (not a network failure), e.g. a stale
    /// token refused? A timeline draws such a call as failed.
    fn answer_is_error(answer: &Self::Answer) -> bool;

    /// How the calls of `op` are drawn on a timeline (their row, class and name).
    fn call_style(op: Self::Op) -> CallStyle;

    /// What the system's parts of `event` draw on a timeline (its applies, its answers' effect
    /// on what a worker holds, its notes).
    fn draws(event: &Event<Self>, out: &mut Vec<Draw>);
}

/// Per-run bookkeeping of the trace renderer for one system.
pub trait Annotator<V: Vocabulary> {
    /// Text appended to `event`'s line (e.g. a term's tokens and cutoff at its end).
    fn suffix(&mut self, event: &Event<V>) -> Option<String> {
        let _ = event;
        None
    }

    /// A line of its own after `event`'s (e.g. a lease handover).
    fn note(&mut self, event: &Event<V>) -> Option<String> {
        let _ = event;
        None
    }
}
