//! What one system under test brings to the shared harness.
//!
//! Terminology:
//! - *system*: a family member of lease-fenced workers (the retention worker, claimed work
//!   items, reservation expiry, a holder-token claim). A marker type implements [`System`]
//!   (and the vocabulary and judgement traits it extends); everything else of a run (the
//!   runtime, the network and process faults, phases, scenarios, checking plumbing, campaigns,
//!   shrinking, traces, timelines, the CLI) is shared and written once.
//! - *settings*: the system's part of a scenario file (its own tables and keys), checked.
//! - *drawn*: what one run draws from the settings (swarm choices), printed in the trace
//!   header next to the shared fault profile.
//! - *services*: the state machines the system's requests are applied to, at the apply
//!   instant, in the services' own time ([`crate::EPOCH_MS`] + virtual time).
//! - *worker*: what the driver of one replica calls (a trait object of the system), built by a
//!   *factory* from the replica's *ports*.
//! - *driver*: the system's loop for one replica (e.g. "call `run()` on a jittered
//!   schedule"); it marks the replica between terms when a stop may land there.

use std::rc::Rc;

use leasesim_events::{Event, ReplicaId};
use leasesim_invariants::{Checker, Coverage, Judged};

use crate::env::{Env, LocalTask};
use crate::faults::{FaultProfile, Scale};
use crate::scenario::{Scenario, SystemPart};
use crate::world::World;

/// A system's worker factory: one fresh worker per replica (at start, and on restart).
pub type WorkerFactory<S> = dyn Fn(<S as System>::Ports) -> Rc<<S as System>::Worker>;

/// One worker a system offers by name (`correct`, or a defective one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    /// `--worker NAME`; unique across systems (except `correct`).
    pub name: &'static str,
    /// What it does, or what is wrong with it, in one line.
    pub description: &'static str,
    /// The invariants expected to catch it, by name (empty for `correct`); the first is its
    /// own.
    pub caught_by: &'static [&'static str],
}

/// One defective worker of a system's catalogue: how it is listed, and what it is built with
/// (`B`: the system's flaws, or a function that builds the worker).
#[derive(Clone, Copy, Debug)]
pub struct Defect<B: 'static> {
    pub info: WorkerInfo,
    pub build: B,
}

/// What a system lists (`System::workers`): `correct`, the production core described by
/// `correct`, then its defective workers in their catalogue's order.
pub fn catalogue<B>(correct: &'static str, defects: &[Defect<B>]) -> Vec<WorkerInfo> {
    let production = WorkerInfo {
        name: "correct",
        description: correct,
        caught_by: &[],
    };
    let listed: Vec<WorkerInfo> = std::iter::once(production)
        .chain(defects.iter().map(|defect| defect.info))
        .collect();
    // invariant: every defective worker declares the invariants that must catch it.
    debug_assert!(listed[1..].iter().all(|info| !info.caught_by.is_empty()));
    listed
}

/// Everything one system under test brings. See the module docs.
pub trait System: Judged + Sized {
    /// The name scenario files declare (`system = "retention"`) and `--system` takes.
    const NAME: &'static str;
    /// One line for `leasesim list`.
    const DESCRIPTION: &'static str;
    /// The system's top-level scenario keys (tables or values), besides the shared ones.
    const KEYS: &'static [&'static str];
    /// Keys the system adds inside `[faults]`.
    const FAULT_KEYS: &'static [&'static str];
    /// The operations a stop at `anywhere` may land in, in draw order.
    const STOP_OPS: &'static [Self::Op];

    type Settings: Clone + std::fmt::Debug + PartialEq + Send + Sync + 'static;
    type Drawn: Clone + std::fmt::Debug + PartialEq + 'static;
    type Services: 'static;
    type Worker: ?Sized + 'static;
    type Ports: 'static;
    /// The system's checkers, one variant per invariant (static dispatch).
    type Checker: Checker<Self> + 'static;
    /// The system's "sometimes" situations, observed per run.
    type Coverage: Coverage<Self> + Default + 'static;
    /// Per-run bookkeeping of the trace renderer (term summaries, handovers).
    type Annotator: Annotator<Self> + Default;
    /// What the system remembers from the instant faults heal until the liveness phase ends.
    type HealMark: 'static;

    /// Checks the system's part of a scenario file.
    fn settings(part: SystemPart<'_>) -> Result<Self::Settings, crate::ScenarioError>;

    /// Checks the whole scenario, once every key is read, for what its runs can do across
    /// keys (e.g. a backlog no worker could drain in time, a bound no correct term can keep):
    /// bad input is refused here, never reported later as the worker's failure. An error is
    /// `(dotted key to blame, message)`; the message follows the key (`` `store.rows` ...``).
    fn check_scenario(_scenario: &Scenario<Self>) -> Result<(), (&'static str, String)> {
        Ok(())
    }

    /// Draws the system's part of one run's profile (after the shared draws). `scale` switches
    /// and scales a fault probability as swarm does (a no-op without swarm).
    fn draw(scenario: &Scenario<Self>, env: &dyn Env<Self>, scale: &Scale<'_>) -> Self::Drawn;

    /// Header lines describing the system's drawn part (faults that are off are left out).
    fn describe(drawn: &Self::Drawn) -> Vec<String>;

    /// The services' initial state.
    fn services(scenario: &Scenario<Self>, profile: &FaultProfile<Self>) -> Self::Services;

    /// Applies `request` of `replica` at the service now, with faults on unless healed.
    fn apply(
        world: &World<Self>,
        replica: ReplicaId,
        request: Self::Request,
    ) -> (Self::Applied, Self::Answer);

    /// The ports a worker of `replica` is built from.
    fn ports(world: &Rc<World<Self>>, replica: ReplicaId) -> Self::Ports;

    /// The driver of one replica (see the module docs).
    fn drive(world: Rc<World<Self>>, replica: ReplicaId) -> LocalTask;

    /// Stops a worker; completes once it has quiesced.
    fn stop(worker: Rc<Self::Worker>) -> LocalTask;

    /// Starts the system's own periodic faults for the safety phase (none by default).
    fn start_faults(world: &Rc<World<Self>>) {
        let _ = world;
    }

    /// Called as faults heal, before the liveness phase begins.
    fn faults_heal(world: &World<Self>) -> Self::HealMark;

    /// Called as the liveness phase ends, before shutdown (e.g. records what is left to do).
    fn liveness_ends(world: &World<Self>, mark: Self::HealMark);

    /// The checkers of the given invariants for one run, judging against what it drew.
    fn checkers(
        scenario: &Scenario<Self>,
        profile: &FaultProfile<Self>,
        invariants: &[Self::Invariant],
    ) -> Vec<Self::Checker>;

    /// The workers the system offers: `correct` first.
    fn workers() -> Vec<WorkerInfo>;

    /// The factory of a worker by name.
    fn factory(name: &str) -> Option<Rc<WorkerFactory<Self>>>;

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
    fn call_style(op: Self::Op) -> leasesim_timeline::CallStyle;

    /// What the system's parts of `event` draw on a timeline (its applies, its answers' effect
    /// on what a worker holds, its notes); the shared parts (calls, faults, pauses, stops,
    /// phases) are drawn by the shared renderer.
    fn draws(event: &Event<Self>, out: &mut Vec<leasesim_timeline::Draw>);

    /// What the system calls its held bars, call rows and marks on a timeline (legend and
    /// hover text). The default is the retention system's words, which every timeline used
    /// before systems named their own; a system names what its `draws` and `call_style` mean.
    fn timeline_words() -> &'static leasesim_timeline::Words {
        &leasesim_timeline::Words::RETENTION
    }

    /// Scenario keys a shrink may simplify, with their simplest value (TOML): faults it may
    /// switch off, loads it may reduce (`faults.short_delete = 0`, `store.rows = 0`).
    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Scenario keys a shrink sets with their value when it ends a run early (the phases too
    /// short for what liveness asks, e.g. `drain = false`), unless liveness is the target.
    fn shrink_end_moves() -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// How many of the system's own faults the scenario has on (shrinking prefers fewer).
    fn faults_on(settings: &Self::Settings) -> usize {
        let _ = settings;
        0
    }
}

/// Per-run bookkeeping of the trace renderer for one system.
pub trait Annotator<S: System> {
    /// Text appended to `event`'s line (e.g. a term's tokens and cutoff at its end).
    fn suffix(&mut self, event: &Event<S>) -> Option<String> {
        let _ = event;
        None
    }

    /// A line of its own after `event`'s (e.g. a lease handover).
    fn note(&mut self, event: &Event<S>) -> Option<String> {
        let _ = event;
        None
    }
}
