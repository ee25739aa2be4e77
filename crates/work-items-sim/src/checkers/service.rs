//! What the services applied: `stale-apply`, `stale-done`, `claimable-only`, `effect-once`,
//! `done-after-effect`.
//!
//! Terminology:
//! - *stale write*: a chunk or a done-mark the store applied although its token was not the
//!   item's live claim at that instant (only possible through an unguarded primitive, or with
//!   the store's fencing off).
//! - *claimable*: unclaimed, released, or claimed with the claim expired; never done or
//!   failed.
//! - *application*: the provider really carrying out an item's effect (a duplicate key is
//!   not one).
//!
//! Each checker reads the item book of the run's shared facts (replayed from the `Applied`
//! events, as of the events before the one judged) and keeps the `Call` events of the writes
//! it judges (to say when they were sent).

use leasesim_invariants::{At, CallBook, Checker};

use super::facts::Facts;
use super::track::BookItem;
use super::{Invariant, Violation};
use leasesim_events::mask;

use crate::events::{
    Applied, ClockMs, Event, EventKind, ItemState, Mark, Op, Request, Stamped, WorkItems,
};

/// What an item's book said at an instant, as a sentence ends it.
fn live_words(entry: &BookItem, live: Option<u64>) -> String {
    if let Some(token) = live {
        let granted = entry.claimed.as_ref().map_or(0, |e| e.at_ms);
        let owner = entry.claimed.as_ref().and_then(|e| e.event.replica);
        let owner = owner.map_or(String::new(), |r| format!(" to {r}"));
        return format!(
            "its live claim was token {token} (granted{owner} at {})",
            At(granted)
        );
    }
    match entry.state {
        ItemState::Claimed => format!(
            "it had no live claim (token {} expired at {})",
            entry.token,
            ClockMs(entry.expires_at_ms)
        ),
        ItemState::Done => "it was already done".into(),
        ItemState::Failed => "it had already failed".into(),
        ItemState::Released => format!("it had been released by token {}", entry.token),
        ItemState::Pending => "it had never been claimed".into(),
    }
}

/// The sent-at phrase of a call.
fn sent_words(call: Option<&Stamped<Event>>) -> String {
    call.map_or(String::new(), |c| format!(" (sent at {})", At(c.at_ms)))
}

/// The kinds the service-side checkers read: the writes they judge being sent, and the
/// services' decisions.
fn service_kinds(kind: &EventKind) -> bool {
    kind.bit() & (mask::CALL | mask::SERVICE_SIDE) != 0
}

/// Books the `Call` of a request `wanted` picks; forgets a call once it is applied or refused.
fn book_call(
    calls: &mut CallBook<Stamped<Event>>,
    event: &Stamped<Event>,
    wanted: fn(&Request) -> bool,
) -> Option<(u64, Option<Stamped<Event>>)> {
    let replica = event.event.replica;
    match event.event.kind {
        EventKind::Call { call, request } if wanted(&request) => {
            calls.insert(call, replica?, event.clone());
            None
        }
        EventKind::Rejected { call, .. } | EventKind::RequestLost { call, .. } => {
            calls.take(call, replica);
            None
        }
        EventKind::Applied { call, .. } => {
            Some((call, calls.take(call, replica).map(|(_, sent)| sent)))
        }
        _ => None,
    }
}

/// `stale-apply`: every applied chunk carried the item's live claim token.
#[derive(Debug, Default)]
pub struct StaleApply {
    calls: CallBook<Stamped<Event>>,
}

impl StaleApply {
    pub fn new() -> StaleApply {
        StaleApply::default()
    }
}

impl Checker<WorkItems> for StaleApply {
    fn invariant(&self) -> Invariant {
        Invariant::StaleApply
    }

    fn wants(&self, kind: &EventKind) -> bool {
        service_kinds(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let wanted = |r: &Request| r.op() == Op::Apply;
        let sent = book_call(&mut self.calls, event, wanted).and_then(|(_, sent)| sent);
        let verdict = match event.event.kind {
            EventKind::Applied {
                applied:
                    Applied::ChunkApplied {
                        item, token, chunk, ..
                    },
                ..
            } => {
                let live = facts.live(item, event);
                (live != Some(token)).then(|| {
                    let entry = facts.item(item);
                    let sentence = format!(
                        "the store applied chunk {chunk} of item {item} under token {token} at \
                         {}{}, but {}",
                        At(event.at_ms),
                        sent_words(sent.as_ref()),
                        live_words(entry, live)
                    );
                    let context = [entry.claimed.as_ref(), sent.as_ref()];
                    Violation::new(Invariant::StaleApply, event, context, sentence)
                })
            }
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `stale-done`: every done-mark carried the item's live claim token.
#[derive(Debug, Default)]
pub struct StaleDone {
    calls: CallBook<Stamped<Event>>,
}

impl StaleDone {
    pub fn new() -> StaleDone {
        StaleDone::default()
    }
}

impl Checker<WorkItems> for StaleDone {
    fn invariant(&self) -> Invariant {
        Invariant::StaleDone
    }

    fn wants(&self, kind: &EventKind) -> bool {
        service_kinds(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let wanted = |r: &Request| r.op() == Op::Done;
        let sent = book_call(&mut self.calls, event, wanted).and_then(|(_, sent)| sent);
        let verdict = match event.event.kind {
            EventKind::Applied {
                applied:
                    Applied::Marked {
                        item,
                        token,
                        mark: Mark::Done,
                        repeat: false,
                        ..
                    },
                ..
            } => {
                let live = facts.live(item, event);
                (live != Some(token)).then(|| {
                    let entry = facts.item(item);
                    let sentence = format!(
                        "the store marked item {item} done under token {token} at {}{}, but {}",
                        At(event.at_ms),
                        sent_words(sent.as_ref()),
                        live_words(entry, live)
                    );
                    let context = [entry.claimed.as_ref(), sent.as_ref()];
                    Violation::new(Invariant::StaleDone, event, context, sentence)
                })
            }
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `claimable-only`: claims are granted on claimable items only.
#[derive(Debug, Default)]
pub struct ClaimableOnly {}

impl ClaimableOnly {
    pub fn new() -> ClaimableOnly {
        ClaimableOnly::default()
    }

    /// Judged on the before view: the item as it was when the claim was granted.
    fn judge(
        &self,
        event: &Stamped<Event>,
        item: u32,
        token: u64,
        facts: &Facts,
    ) -> Option<Violation> {
        let live = facts.live(item, event);
        let entry = facts.item(item);
        let why = match (entry.state, live) {
            (ItemState::Done | ItemState::Failed, _) => {
                let marked = entry.marked.as_ref().map_or(0, |e| e.at_ms);
                let state = if entry.state == ItemState::Done {
                    "done"
                } else {
                    "failed"
                };
                format!("item {item} had been {state} since {}", At(marked))
            }
            (_, Some(held)) => format!(
                "{} until {}",
                live_words(entry, Some(held)),
                ClockMs(entry.expires_at_ms)
            ),
            _ => return None,
        };
        let replica = event.event.replica?;
        let sentence = format!(
            "{replica} was granted item {item} with token {token} at {}, but {why}",
            At(event.at_ms)
        );
        let context = [entry.claimed.as_ref(), entry.marked.as_ref()];
        Some(Violation::new(
            Invariant::ClaimableOnly,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<WorkItems> for ClaimableOnly {
    fn invariant(&self) -> Invariant {
        Invariant::ClaimableOnly
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::APPLIED != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let verdict = match event.event.kind {
            EventKind::Applied {
                applied: Applied::Claimed { item, token, .. },
                ..
            } => self.judge(event, item, token, facts),
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `effect-once`: the provider carries out each item's effect at most once.
#[derive(Debug, Default)]
pub struct EffectOnce {}

impl EffectOnce {
    pub fn new() -> EffectOnce {
        EffectOnce::default()
    }
}

impl Checker<WorkItems> for EffectOnce {
    fn invariant(&self) -> Invariant {
        Invariant::EffectOnce
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::APPLIED != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let verdict =
            match event.event.kind {
                EventKind::Applied {
                    applied: Applied::ProviderApplied { item, key },
                    ..
                } => {
                    let entry = facts.item(item);
                    entry.first_effect.as_ref().map(|first| {
                    let first_key = match first.event.kind {
                        EventKind::Applied {
                            applied: Applied::ProviderApplied { key, .. },
                            ..
                        } => crate::render::key_text(key),
                        _ => "?".into(),
                    };
                    let by = event.event.replica.map_or(String::new(), |r| format!(" for {r}"));
                    let sentence = format!(
                        "the provider carried out item {item}'s effect again at {} (key {}{by}), \
                         after carrying it out at {} under key {first_key}",
                        At(event.at_ms),
                        crate::render::key_text(key),
                        At(first.at_ms)
                    );
                    Violation::new(Invariant::EffectOnce, event, [Some(first)], sentence)
                })
                }
                _ => None,
            };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

/// `done-after-effect`: a done-mark comes only after the whole effect was applied.
#[derive(Debug, Default)]
pub struct DoneAfterEffect {}

impl DoneAfterEffect {
    pub fn new() -> DoneAfterEffect {
        DoneAfterEffect::default()
    }
}

impl Checker<WorkItems> for DoneAfterEffect {
    fn invariant(&self) -> Invariant {
        Invariant::DoneAfterEffect
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::APPLIED != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let verdict = match event.event.kind {
            EventKind::Applied {
                applied:
                    Applied::Marked {
                        item,
                        token,
                        mark: Mark::Done,
                        repeat: false,
                        ..
                    },
                ..
            } => {
                let entry = facts.item(item);
                let missing = match entry.missing_chunk() {
                    Some(chunk) => Some(format!(
                        "chunk {chunk} of its {} was never applied",
                        entry.chunks
                    )),
                    None if entry.applications == 0 => {
                        Some("the provider had not carried out its effect".into())
                    }
                    None => None,
                };
                missing.map(|why| {
                    let sentence = format!(
                        "item {item} was marked done under token {token} at {}, but {why}",
                        At(event.at_ms)
                    );
                    let context = [entry.claimed.as_ref(), entry.first_effect.as_ref()];
                    Violation::new(Invariant::DoneAfterEffect, event, context, sentence)
                })
            }
            _ => None,
        };
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, key};
    use crate::events::{Answer, EPOCH_MS, Key, Prior, ProviderView};

    /// r1 claims item 0 at 1 s (token 1, live until about 3 s); `then` scripts the rest.
    fn claimed(then: impl FnOnce(&mut Script) -> u64) -> (Script, u64) {
        let mut script = Script::new();
        script.at(1_000).claim(R1, 0, 1, 1);
        let seq = then(&mut script);
        (script, seq)
    }

    fn applied_chunk(script: &mut Script, token: u64, live: Option<u64>) -> u64 {
        let request = Request::UnguardedApply {
            item: 0,
            token,
            chunk: 0,
            now_ms: 0,
        };
        let call = script.send(R1, request);
        let applied = Applied::ChunkApplied {
            item: 0,
            token,
            chunk: 0,
            fresh: true,
            live,
        };
        script.apply(R1, call, applied)
    }

    fn marked_done(script: &mut Script, token: u64, live: Option<u64>) -> u64 {
        let request = Request::UnguardedDone {
            item: 0,
            token,
            now_ms: 0,
        };
        let call = script.send(R1, request);
        let applied = Applied::Marked {
            item: 0,
            token,
            mark: Mark::Done,
            repeat: false,
            live,
        };
        script.apply(R1, call, applied)
    }

    #[test]
    fn every_service_checker_holds_for_a_correct_run() {
        for invariant in [
            Invariant::StaleApply,
            Invariant::StaleDone,
            Invariant::ClaimableOnly,
            Invariant::EffectOnce,
            Invariant::DoneAfterEffect,
        ] {
            assert_holds(invariant, &Script::correct_run());
        }
    }

    #[test]
    fn stale_apply_breaks_on_a_chunk_applied_after_the_claim_expired_or_moved_on() {
        let (script, _) = claimed(|s| applied_chunk(s.at(1_500), 1, Some(1)));
        assert_holds(Invariant::StaleApply, &script);
        let (script, seq) = claimed(|s| applied_chunk(s.at(5_000), 1, None));
        let words = [
            "the store applied chunk 0 of item 0 under token 1 at t=5000ms (sent at t=5000ms)",
            "it had no live claim (token 1 expired at +3005ms)",
        ];
        assert_broken(Invariant::StaleApply, &script, seq, &words);
        let (script, seq) = claimed(|s| {
            s.at(4_000)
                .claim_sized(R2, 0, 2, 2, 1, Prior::Expired { token: 1 });
            applied_chunk(s, 1, Some(2))
        });
        let words = ["its live claim was token 2 (granted to r2 at t=4005ms)"];
        assert_broken(Invariant::StaleApply, &script, seq, &words);
    }

    #[test]
    fn stale_done_breaks_on_a_done_mark_after_the_claim_expired() {
        let (script, _) = claimed(|s| marked_done(s.at(2_000), 1, Some(1)));
        assert_holds(Invariant::StaleDone, &script);
        let (script, seq) = claimed(|s| marked_done(s.at(9_000), 1, None));
        let words = [
            "the store marked item 0 done under token 1 at t=9000ms",
            "expired",
        ];
        assert_broken(Invariant::StaleDone, &script, seq, &words);
    }

    #[test]
    fn claimable_only_breaks_on_a_grant_over_a_live_claim_or_a_done_item() {
        let (script, _) = claimed(|s| {
            s.at(4_000)
                .claim_sized(R2, 0, 2, 2, 1, Prior::Expired { token: 1 });
            s.last_seq()
        });
        assert_holds(Invariant::ClaimableOnly, &script);
        let (script, seq) = claimed(|s| {
            let call = s.at(1_500).send(
                R2,
                Request::PlainClaim {
                    item: 0,
                    lease_ms: 2_000,
                    now_ms: 0,
                },
            );
            let applied = Applied::Claimed {
                item: 0,
                token: 2,
                expires_at_ms: EPOCH_MS + 3_500,
                attempt: 2,
                chunks: 1,
                prior: Prior::Held { token: 1 },
            };
            s.apply(R2, call, applied)
        });
        let words = [
            "r2 was granted item 0 with token 2 at t=1500ms",
            "its live claim was token 1 (granted to r1 at t=1005ms) until +3005ms",
        ];
        assert_broken(Invariant::ClaimableOnly, &script, seq, &words);
        let mut done = Script::correct_run();
        done.at(30_000).claim_sized(R2, 0, 9, 2, 1, Prior::Fresh);
        let seq = done.last_seq() - 1;
        let words = ["item 0 had been done since t=1045ms"];
        assert_broken(Invariant::ClaimableOnly, &done, seq, &words);
    }

    #[test]
    fn effect_once_breaks_on_a_second_application_under_another_key() {
        let mut script = Script::new();
        script.at(100).provider(R1, 0);
        script.at(200).provider(R2, 1);
        assert_holds(Invariant::EffectOnce, &script);
        let other = Key { item: 0, salt: 1 };
        let call = script.at(300).send(
            R2,
            Request::ProviderApply {
                item: 0,
                key: other,
            },
        );
        let seq = script.apply(
            R2,
            call,
            Applied::ProviderApplied {
                item: 0,
                key: other,
            },
        );
        script.answer(
            R2,
            call,
            Op::Provider,
            Answer::Provider(ProviderView::Applied),
        );
        let words = [
            "the provider carried out item 0's effect again at t=300ms (key k0~1 for r2)",
            "after carrying it out at t=105ms under key k0",
        ];
        assert_broken(Invariant::EffectOnce, &script, seq, &words);
        let _ = key(0);
    }

    #[test]
    fn done_after_effect_breaks_on_a_done_before_every_chunk_and_the_provider() {
        let mut script = Script::new();
        script.at(100).claim_sized(R1, 0, 1, 1, 2, Prior::Fresh);
        script.chunk(R1, 0, 1, 0);
        script.done(R1, 0, 1);
        let seq = script.last_seq() - 1;
        let words = [
            "item 0 was marked done under token 1",
            "chunk 1 of its 2 was never applied",
        ];
        assert_broken(Invariant::DoneAfterEffect, &script, seq, &words);
        let mut script = Script::new();
        script.at(100).claim(R1, 0, 1, 1);
        script.chunk(R1, 0, 1, 0);
        script.done(R1, 0, 1);
        let seq = script.last_seq() - 1;
        let words = ["the provider had not carried out its effect"];
        assert_broken(Invariant::DoneAfterEffect, &script, seq, &words);
    }
}
