//! What a job may do: `effects-under-claim`.
//!
//! Terminology:
//! - *effect*: a finished job step (`Note::JobStep`), the job's mark on the world.
//! - *reason to stop*: its attempt's renewal answered that the claim was gone (or failed),
//!   its attempt sent its release, or `stop()` was called on its worker. After any of these
//!   the worker must take the job's further effects away (the production core drops the
//!   job's future).
//! - *claimed effect*: with renewal on, the worker stops the job as soon as it can no longer
//!   trust its claim, so every effect must land while the store holds the attempt's claim.
//!   Without renewal the job runs on past its claim's deadline, as the design's story has it.
//! - *unpreventable effect*: the one exception. When the store forgets the attempt's claim
//!   (eviction, failover, restart: a ghost in the claim model), no worker can know before its
//!   next renewal is answered; a step in between is excused while the forgotten claim would
//!   still have been live. The answer that tells the worker (`not holder`, `absent`, or an
//!   error) is a reason to stop like any other, so no step after it is excused; nor is a step
//!   of another attempt, or one after the forgotten claim would have run out anyway.

use leasesim_events::{ReplicaId, mask};
use leasesim_invariants::{At, PerReplica};

use crate::HolderLock;
use crate::events::{Event, EventKind, Note, Stamped, notes};

use super::facts::Facts;
use super::{CheckConfig, Checker, Invariant, Violation};

/// `effects-under-claim` (see the module docs).
#[derive(Debug)]
pub struct EffectsUnderClaim {
    renewal: bool,
    /// Per replica: the current worker's `StopCalled`.
    stopped: PerReplica<Option<Stamped<Event>>>,
}

impl EffectsUnderClaim {
    pub fn new(config: &CheckConfig) -> EffectsUnderClaim {
        EffectsUnderClaim {
            renewal: config.renewal,
            stopped: PerReplica::default(),
        }
    }

    /// Judged on the after view (a step moves neither the attempts nor the claim key).
    fn judge(
        &mut self,
        event: &Stamped<Event>,
        replica: ReplicaId,
        facts: &Facts,
    ) -> Option<Violation> {
        let open = facts.after().open(replica)?;
        let stopped = self.stopped.at(replica).as_ref();
        let live = facts.claims_after().live(event.at_ms);
        let (why, cause) = if let Some(lost) = &open.lost {
            let at = At(lost.at_ms);
            (
                format!("its renewal found the claim gone or failed at {at}"),
                Some(lost),
            )
        } else if let Some(released) = &open.released {
            let at = At(released.at_ms);
            (format!("it had sent its release at {at}"), Some(released))
        } else if let Some(stop) = stopped {
            (
                format!("stop() was called at {}", At(stop.at_ms)),
                Some(stop),
            )
        } else if self.renewal && live.is_none_or(|c| c.attempt != Some(open.id)) {
            // The one excuse: an unpreventable effect (see the module docs).
            let model = facts.claims_after();
            if model.ghost_of(open.id, event.at_ms).is_some() {
                return None;
            }
            let held = live.map_or("nothing".into(), |c| c.describe());
            (format!("with renewal on, the store held {held}"), None)
        } else {
            return None;
        };
        let sentence = format!(
            "{}'s job took a step at {}, but {why}",
            open.id,
            At(event.at_ms)
        );
        let context = [open.job.as_ref(), cause, live.map(|c| &c.made)];
        Some(Violation::new(
            Invariant::EffectsUnderClaim,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<HolderLock> for EffectsUnderClaim {
    fn invariant(&self) -> Invariant {
        Invariant::EffectsUnderClaim
    }

    /// Stops, restarts and job notes (a step is judged): the facts follow the rest.
    fn wants(&self, kind: &EventKind) -> bool {
        let wanted = mask::RESTARTED | mask::STOP_CALLED | notes::JOB;
        kind.bit() & wanted != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        match event.event.kind {
            EventKind::StopCalled => *self.stopped.at(replica) = Some(event.clone()),
            EventKind::Restarted => *self.stopped.at(replica) = None,
            EventKind::Note(Note::JobStep { .. }) => return self.judge(event, replica, facts),
            _ => {}
        }
        None
    }
}
