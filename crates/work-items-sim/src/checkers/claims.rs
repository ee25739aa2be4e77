//! What a worker sends under a claim: `stop-on-lease-lost`, `reconcile-first`, `claim-token`,
//! `give-up-policy`.
//!
//! Terminology:
//! - *held claim*: the claim a replica's worker was last granted in its open pass (see
//!   [`Ledger`]); the worker holds one claim at a time.
//! - *write*: a store write (claim, renewal, apply, done, release, fail, and the unsafe ones)
//!   or a provider apply; a lookup, a find and a status read are not writes.
//! - *ambiguous*: a provider apply of the held claim answered a timeout and no lookup of the
//!   same key answered since.
//! - *give up*: a release or fail the worker sends for its held claim.

use leasesim_events::mask;
use leasesim_invariants::{At, Checker};

use super::facts::Facts;
use super::track::Held;
use super::{CheckConfig, Invariant, Violation};
use crate::events::{ErrorCode, Event, EventKind, Request, Stamped, WorkItems};
use crate::render::{error_text, key_text};

/// The calls a worker sends: what the checkers that judge a call read (the facts follow
/// the rest of the worker side).
pub(crate) fn calls(kind: &EventKind) -> bool {
    kind.bit() & mask::CALL != 0
}

fn op_name(request: &Request) -> &'static str {
    leasesim_events::OpSet::name(request.op())
}

/// `r1 sent apply_if_owner for item 3 with token 7 at t=...`.
fn sent_words(replica: leasesim_events::ReplicaId, request: &Request, at_ms: u64) -> String {
    let item = request
        .item()
        .map_or(String::new(), |i| format!(" for item {i}"));
    let token = request
        .token()
        .map_or(String::new(), |t| format!(" with token {t}"));
    format!(
        "{replica} sent {}{item}{token} at {}",
        op_name(request),
        At(at_ms)
    )
}

/// The op an `Answered` event answered, by name.
fn answered_op(event: &Stamped<Event>) -> &'static str {
    match event.event.kind {
        EventKind::Answered { op, .. } => leasesim_events::OpSet::name(op),
        _ => "call",
    }
}

/// `stop-on-lease-lost`: no write for an item after lease-lost under the same claim.
#[derive(Debug, Default)]
pub struct StopOnLeaseLost {}

impl StopOnLeaseLost {
    pub fn new() -> StopOnLeaseLost {
        StopOnLeaseLost::default()
    }
}

impl Checker<WorkItems> for StopOnLeaseLost {
    fn invariant(&self) -> Invariant {
        Invariant::StopOnLeaseLost
    }

    /// Calls only (a call is judged): the facts follow the rest of the worker side.
    fn wants(&self, kind: &EventKind) -> bool {
        calls(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        // The before view: the ledger as the worker stood when it sent or heard this.
        let ledger = facts.ledger(replica);
        let verdict = match (event.event.kind, &ledger.held) {
            (EventKind::Call { request, .. }, Some(held))
                if request.op().is_write()
                    && !matches!(request, Request::Claim { .. } | Request::PlainClaim { .. })
                    && request.item() == Some(held.item) =>
            {
                held.lost.as_ref().map(|lost| {
                    let sentence = format!(
                        "{}, after its {} for item {} answered LEASE LOST at {} under the same \
                         claim (token {})",
                        sent_words(replica, &request, event.at_ms),
                        answered_op(lost),
                        held.item,
                        At(lost.at_ms),
                        held.token
                    );
                    let context = [Some(&held.granted), Some(lost)];
                    Violation::new(Invariant::StopOnLeaseLost, event, context, sentence)
                })
            }
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `reconcile-first`: after an ambiguous provider apply, a lookup of the same key comes
/// before any other provider apply of the item.
#[derive(Debug, Default)]
pub struct ReconcileFirst {}

impl ReconcileFirst {
    pub fn new() -> ReconcileFirst {
        ReconcileFirst::default()
    }
}

impl Checker<WorkItems> for ReconcileFirst {
    fn invariant(&self) -> Invariant {
        Invariant::ReconcileFirst
    }

    /// Calls only (a call is judged): the facts follow the rest of the worker side.
    fn wants(&self, kind: &EventKind) -> bool {
        calls(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        // The before view: the ledger as the worker stood when it sent or heard this.
        let ledger = facts.ledger(replica);
        let verdict = match (event.event.kind, &ledger.held) {
            (
                EventKind::Call {
                    request: Request::ProviderApply { item, key },
                    ..
                },
                Some(held),
            ) if held.item == item => held.ambiguous.as_ref().map(|(earlier, timed_out)| {
                let sentence = format!(
                    "{replica} sent provider_apply for item {item} with key {} at {}, but its \
                     provider_apply with key {} had answered a timeout at {} and no lookup of \
                     that key had answered since",
                    key_text(key),
                    At(event.at_ms),
                    key_text(*earlier),
                    At(timed_out.at_ms)
                );
                let context = [Some(&held.granted), Some(timed_out)];
                Violation::new(Invariant::ReconcileFirst, event, context, sentence)
            }),
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `claim-token`: every write carries the held claim's item and token.
#[derive(Debug, Default)]
pub struct ClaimToken {}

impl ClaimToken {
    pub fn new() -> ClaimToken {
        ClaimToken::default()
    }
}

/// Why a write does not belong to the held claim, if it does not.
fn foreign(request: &Request, held: Option<&Held>) -> Option<String> {
    let item = request.item()?;
    let carries = request.token();
    let provider = matches!(
        request,
        Request::ProviderApply { .. } | Request::Lookup { .. }
    );
    if carries.is_none() && !provider {
        return None;
    }
    let Some(held) = held else {
        return Some("it held no claim in its pass".into());
    };
    let granted = At(held.granted.at_ms);
    if held.item != item {
        return Some(format!(
            "the claim it held was of item {} (token {}, granted at {granted})",
            held.item, held.token
        ));
    }
    match carries {
        Some(token) if token != held.token => Some(format!(
            "its claim of item {item} was granted token {} at {granted}",
            held.token
        )),
        _ => None,
    }
}

impl Checker<WorkItems> for ClaimToken {
    fn invariant(&self) -> Invariant {
        Invariant::ClaimToken
    }

    /// Calls only (a call is judged): the facts follow the rest of the worker side.
    fn wants(&self, kind: &EventKind) -> bool {
        calls(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        // The before view: the ledger as the worker stood when it sent or heard this.
        let ledger = facts.ledger(replica);
        let verdict = match event.event.kind {
            EventKind::Call { request, .. } => foreign(&request, ledger.held.as_ref()).map(|why| {
                let sentence = format!("{}, but {why}", sent_words(replica, &request, event.at_ms));
                let context = [
                    ledger.pass.as_ref(),
                    ledger.held.as_ref().map(|h| &h.granted),
                ];
                Violation::new(Invariant::ClaimToken, event, context, sentence)
            }),
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `give-up-policy`: releases and fails follow the attempts and carry the last error.
#[derive(Debug)]
pub struct GiveUpPolicy {
    max_attempts: u32,
}

impl GiveUpPolicy {
    pub fn new(config: &CheckConfig) -> GiveUpPolicy {
        GiveUpPolicy {
            max_attempts: config.max_attempts,
        }
    }
}

/// What is wrong with giving up `held` with `error` (`fail`: a fail, else a release).
fn misjudged(
    held: &Held,
    stopped: bool,
    fail: bool,
    error: ErrorCode,
    max_attempts: u32,
) -> Option<String> {
    let spent = held.attempt >= max_attempts;
    match error {
        ErrorCode::Stopped if !stopped => Some("the worker had not been stopped".into()),
        ErrorCode::Stopped if fail => Some("a stop gives a claim back, it does not fail it".into()),
        ErrorCode::Stopped => None,
        ErrorCode::ProviderRefused if held.refused.is_none() => {
            Some("the provider had not refused the item under this claim".into())
        }
        ErrorCode::ProviderRefused if !fail => {
            Some("an item the provider refuses for good must be failed, not released".into())
        }
        ErrorCode::ProviderRefused => None,
        code => {
            let last = held.last_failure().map(|(last, _)| *last);
            if last != Some(code) {
                let last = last.map_or("no error".into(), error_text);
                return Some(format!(
                    "the last error of a call not retried to success was {last}"
                ));
            }
            match (fail, spent) {
                (true, false) => Some(format!(
                    "it was attempt {} of {max_attempts}: attempts were left, so it must be \
                     released",
                    held.attempt
                )),
                (false, true) => Some(format!(
                    "it was attempt {} of {max_attempts}: the attempts were spent, so it must \
                     be failed",
                    held.attempt
                )),
                _ => None,
            }
        }
    }
}

impl Checker<WorkItems> for GiveUpPolicy {
    fn invariant(&self) -> Invariant {
        Invariant::GiveUpPolicy
    }

    /// Calls only (a call is judged): the facts follow the rest of the worker side.
    fn wants(&self, kind: &EventKind) -> bool {
        calls(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        // The before view: the ledger as the worker stood when it sent or heard this.
        let ledger = facts.ledger(replica);
        let given_up = match event.event.kind {
            EventKind::Call {
                request: request @ Request::Release { item, error, .. },
                ..
            } => Some((request, item, error, false)),
            EventKind::Call {
                request: request @ Request::Fail { item, error, .. },
                ..
            } => Some((request, item, error, true)),
            _ => None,
        };
        let verdict = given_up.and_then(|(request, item, error, fail)| {
            let held = ledger.held.as_ref().filter(|h| h.item == item)?;
            let stopped = ledger.stop.is_some();
            let why = misjudged(held, stopped, fail, error, self.max_attempts)?;
            let sentence = format!(
                "{} and error {}, but {why}",
                sent_words(replica, &request, event.at_ms),
                error_text(error)
            );
            let failure = held.last_failure().map(|(_, e)| e);
            let context = [Some(&held.granted), failure, ledger.stop.as_ref()];
            Some(Violation::new(
                Invariant::GiveUpPolicy,
                event,
                context,
                sentence,
            ))
        });
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::NetFailure;

    use super::*;
    use crate::checkers::testkit::{R1, Script, assert_broken, assert_holds, key};
    use crate::events::{Answer, Applied, Key, LookupView, Mark, Op, Prior};

    fn apply(item: u32, token: u64) -> Request {
        Request::Apply {
            item,
            token,
            chunk: 0,
            now_ms: 0,
        }
    }

    fn release(item: u32, token: u64, error: ErrorCode) -> Request {
        Request::Release {
            item,
            token,
            error,
            now_ms: 0,
        }
    }

    fn fail(item: u32, token: u64, error: ErrorCode) -> Request {
        Request::Fail {
            item,
            token,
            error,
            now_ms: 0,
        }
    }

    #[test]
    fn every_claim_checker_holds_for_a_correct_run() {
        for invariant in [
            Invariant::StopOnLeaseLost,
            Invariant::ReconcileFirst,
            Invariant::ClaimToken,
            Invariant::GiveUpPolicy,
        ] {
            assert_holds(invariant, &Script::correct_run());
        }
    }

    #[test]
    fn stop_on_lease_lost_breaks_on_a_write_after_lease_lost_under_the_same_claim() {
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim(R1, 3, 7, 1);
        script.at(500).lease_lost(R1, apply(3, 7), Some(9));
        script.at(700).send(R1, apply(3, 7));
        let seq = script.last_seq();
        let words = [
            "r1 sent apply_if_owner for item 3 with token 7 at t=700ms",
            "after its apply_if_owner for item 3 answered LEASE LOST at t=510ms",
            "(token 7)",
        ];
        assert_broken(Invariant::StopOnLeaseLost, &script, seq, &words);
        // A new claim of the same item is a new claim: its writes are fine.
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim(R1, 3, 7, 1);
        script.at(500).lease_lost(R1, apply(3, 7), Some(9));
        script.at(4_000).claim(R1, 3, 12, 3);
        script.chunk(R1, 3, 12, 0);
        assert_holds(Invariant::StopOnLeaseLost, &script);
    }

    /// r1 holds item 4 (token 2) and its provider apply answered a timeout.
    fn ambiguous() -> Script {
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim(R1, 4, 2, 1);
        let request = Request::ProviderApply {
            item: 4,
            key: key(4),
        };
        let applied = Applied::ProviderApplied {
            item: 4,
            key: key(4),
        };
        script
            .at(200)
            .failed(R1, request, Some(applied), NetFailure::Timeout);
        script
    }

    fn lookup(script: &mut Script, key: Key, found: LookupView) {
        let request = Request::Lookup { key };
        let applied = Applied::LookedUp { key, found };
        script.round(R1, request, applied, crate::events::Answer::Lookup(found));
    }

    #[test]
    fn reconcile_first_breaks_on_an_apply_before_a_lookup_of_the_same_key() {
        let mut script = ambiguous();
        let salted = Key { item: 4, salt: 1 };
        script.at(900).send(
            R1,
            Request::ProviderApply {
                item: 4,
                key: salted,
            },
        );
        let seq = script.last_seq();
        let words = [
            "r1 sent provider_apply for item 4 with key k4~1 at t=900ms",
            "its provider_apply with key k4 had answered a timeout at t=210ms",
        ];
        assert_broken(Invariant::ReconcileFirst, &script, seq, &words);
        // A lookup of another key settles nothing.
        let mut script = ambiguous();
        lookup(&mut script, Key { item: 4, salt: 5 }, LookupView::Unknown);
        script.send(
            R1,
            Request::ProviderApply {
                item: 4,
                key: key(4),
            },
        );
        let seq = script.last_seq();
        assert_broken(Invariant::ReconcileFirst, &script, seq, &["key k4"]);
        // A lookup of the key that answered `unknown` lets the same key be applied again.
        let mut script = ambiguous();
        lookup(&mut script, key(4), LookupView::Unknown);
        script.provider(R1, 4);
        assert_holds(Invariant::ReconcileFirst, &script);
    }

    #[test]
    fn claim_token_breaks_on_a_write_with_another_token_or_item_or_no_claim() {
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim(R1, 5, 9, 1);
        script.send(R1, apply(5, 1));
        let seq = script.last_seq();
        let words = [
            "r1 sent apply_if_owner for item 5 with token 1",
            "granted token 9",
        ];
        assert_broken(Invariant::ClaimToken, &script, seq, &words);
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim(R1, 5, 9, 1);
        script.send(
            R1,
            Request::ProviderApply {
                item: 6,
                key: key(6),
            },
        );
        let seq = script.last_seq();
        let words = ["the claim it held was of item 5 (token 9"];
        assert_broken(Invariant::ClaimToken, &script, seq, &words);
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.send(R1, apply(5, 9));
        let seq = script.last_seq();
        assert_broken(Invariant::ClaimToken, &script, seq, &["it held no claim"]);
    }

    /// r1 holds item 2 (token 4, attempt `attempt`) and its apply was rejected.
    fn rejected(attempt: u32) -> Script {
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim_sized(R1, 2, 4, attempt, 1, Prior::Fresh);
        script.failed(R1, apply(2, 4), None, NetFailure::Rejected);
        script
    }

    #[test]
    fn give_up_policy_holds_for_a_release_with_the_last_error_and_attempts_left() {
        let code = ErrorCode::Rejected(Op::Apply);
        let mut script = rejected(1);
        script.mark(R1, release(2, 4, code), Mark::Released);
        assert_holds(Invariant::GiveUpPolicy, &script);
        let mut script = rejected(2);
        script.mark(R1, fail(2, 4, code), Mark::Failed);
        assert_holds(Invariant::GiveUpPolicy, &script);
    }

    /// The apply is given up after a renewal on the way was refused once and then granted:
    /// the error to give up with is the apply's, not the renewal's.
    #[test]
    fn give_up_policy_names_the_call_that_ran_out_not_one_retried_to_success() {
        let renewed_after_a_refusal = || {
            let renew = Request::Renew {
                item: 2,
                token: 4,
                lease_ms: 1_000,
                now_ms: 0,
            };
            let mut script = rejected(1);
            script.failed(R1, renew, None, NetFailure::Rejected);
            let granted = Applied::Renewed {
                item: 2,
                token: 4,
                expires_at_ms: 9,
            };
            script.round(R1, renew, granted, Answer::Renewed { expires_at_ms: 9 });
            script
        };
        let mut given_up = renewed_after_a_refusal();
        let apply_code = ErrorCode::Rejected(Op::Apply);
        given_up.mark(R1, release(2, 4, apply_code), Mark::Released);
        assert_holds(Invariant::GiveUpPolicy, &given_up);
        let mut script = renewed_after_a_refusal();
        script.send(R1, release(2, 4, ErrorCode::Rejected(Op::Renew)));
        let seq = script.last_seq();
        let words =
            ["the last error of a call not retried to success was rejected(apply_if_owner)"];
        assert_broken(Invariant::GiveUpPolicy, &script, seq, &words);
    }

    #[test]
    fn give_up_policy_breaks_on_the_wrong_error_or_the_wrong_mark() {
        let code = ErrorCode::Rejected(Op::Apply);
        let cases: [(u32, Request, &str); 5] = [
            (1, fail(2, 4, code), "attempt 1 of 2: attempts were left"),
            (
                2,
                release(2, 4, code),
                "attempt 2 of 2: the attempts were spent",
            ),
            (
                1,
                release(2, 4, ErrorCode::Timeout(Op::Done)),
                "the last error of a call not retried to success was rejected(apply_if_owner)",
            ),
            (
                1,
                release(2, 4, ErrorCode::Stopped),
                "the worker had not been stopped",
            ),
            (
                1,
                fail(2, 4, ErrorCode::ProviderRefused),
                "the provider had not refused the item",
            ),
        ];
        for (attempt, request, words) in cases {
            let mut script = rejected(attempt);
            script.send(R1, request);
            let seq = script.last_seq();
            assert_broken(Invariant::GiveUpPolicy, &script, seq, &[words]);
        }
    }
}
