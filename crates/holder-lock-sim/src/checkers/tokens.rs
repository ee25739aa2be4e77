//! Whose token is it: `fresh-token`, `own-token`.
//!
//! Terminology:
//! - *used token*: the token of an attempt's claim create; a token once used belongs to that
//!   attempt for the rest of the run.
//! - *own token*: the token of the attempt's own create; renewals, conditional deletes and
//!   writes of the attempt must carry it, and only after the create won.

use leasesim_events::mask;
use leasesim_invariants::At;

use crate::HolderLock;
use crate::events::{Event, EventKind, Key, Request, Stamped, TokenText};

use super::facts::Facts;
use super::track::AttemptRef;
use super::{Checker, Invariant, Violation};

/// Calls only (both checkers judge a call): the facts follow the attempts.
fn calls(kind: &EventKind) -> bool {
    kind.bit() & mask::CALL != 0
}

/// `fresh-token`: no two attempts create their claim with the same token.
#[derive(Debug, Default)]
pub struct FreshToken {
    /// Every token used so far, with its attempt and its create.
    used: Vec<(u64, AttemptRef, Stamped<Event>)>,
}

impl FreshToken {
    pub fn new() -> FreshToken {
        FreshToken::default()
    }
}

impl Checker<HolderLock> for FreshToken {
    fn invariant(&self) -> Invariant {
        Invariant::FreshToken
    }

    fn wants(&self, kind: &EventKind) -> bool {
        calls(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let EventKind::Call {
            call,
            request:
                Request::Create {
                    key: Key::Claim,
                    token,
                    ..
                },
        } = event.event.kind
        else {
            return None;
        };
        // The after view: the call is booked to its attempt.
        let attempt = facts.after().attempt_of(call)?;
        let earlier = self
            .used
            .iter()
            .find(|(used, by, _)| *used == token && *by != attempt);
        if let Some((_, by, create)) = earlier {
            let whose = match by.replica == attempt.replica {
                true => format!("its own attempt {}", by.number),
                false => by.to_string(),
            };
            let sentence = format!(
                "{attempt} created its claim with token {} at {}, but {whose} had already used \
                 that token at {}: a holder token must be fresh for every attempt",
                TokenText(token),
                At(event.at_ms),
                At(create.at_ms)
            );
            let context = [Some(create)];
            return Some(Violation::new(
                Invariant::FreshToken,
                event,
                context,
                sentence,
            ));
        }
        self.used.push((token, attempt, event.clone()));
        None
    }
}

/// `own-token`: renewals, conditional deletes and writes carry the attempt's own token,
/// after its create won.
#[derive(Debug, Default)]
pub struct OwnToken {}

impl OwnToken {
    pub fn new() -> OwnToken {
        OwnToken::default()
    }
}

/// The token a request shows, if it is one `own-token` judges.
fn shown_token(request: &Request) -> Option<u64> {
    match *request {
        Request::Renew { token, .. }
        | Request::DeleteIfHolder { token, .. }
        | Request::Set { token, .. } => Some(token),
        _ => None,
    }
}

impl Checker<HolderLock> for OwnToken {
    fn invariant(&self) -> Invariant {
        Invariant::OwnToken
    }

    fn wants(&self, kind: &EventKind) -> bool {
        calls(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        let judged = match event.event.kind {
            EventKind::Call { request, .. } => shown_token(&request).map(|t| (t, request)),
            _ => None,
        };
        let (token, request) = judged?;
        // The before view: the attempt as it was when it sent the call.
        let open = facts.before().open(replica);
        let op = request.op();
        let name = leasesim_events::OpSet::name(op);
        let why = match &open {
            None => "outside any attempt".to_string(),
            Some(open) => match (open.token(), &open.won) {
                (Some(own), Some(_)) if own == token => return None,
                (Some(own), Some(_)) => format!("its claim's token is {}", TokenText(own)),
                (None, _) | (_, None) => "its create had not won".to_string(),
            },
        };
        let who = open
            .as_ref()
            .map_or(replica.to_string(), |o| o.id.to_string());
        let sentence = format!(
            "{who} sent {name} on {} with token {} at {}, but {why}",
            request.key().name(),
            TokenText(token),
            At(event.at_ms)
        );
        let context = open.as_ref().map_or([None, None], |o| {
            [o.create.as_ref().map(|(_, e)| e), o.won.as_ref()]
        });
        Some(Violation::new(
            Invariant::OwnToken,
            event,
            context,
            sentence,
        ))
    }
}
