//! Real runs on the shared world: the simulated world's phases, stopper, pauser, fault plan and
//! flights on tokio in real time, with a system's store hook applying requests to a real
//! store in place of the simulated services.
//!
//! Terminology:
//! - *real env*: [`RealEnv`], the world's [`Env`] on a tokio `current_thread` runtime whose
//!   clock is the wall clock: virtual ms are real ms since the run started, sleeps are tokio
//!   timers, tasks are `spawn_local` tasks, and every draw comes from one choice source seeded
//!   with the run's seed.
//! - *store hook*: the system's [`StoreHook`]; a blocking store call blocks the one thread, so
//!   calls are applied one at a time, in the order their flights reach the store.
//! - *reproducible as far as real time allows*: a seed fixes the fault profile (every draw made
//!   before the run starts: clocks, stop plan, swarm choices) exactly. The draws made during the
//!   run (latencies, faults per call, pause lengths) come from the same stream in the order the
//!   tasks ask for them, and that order follows real time: two runs of one seed draw the same
//!   values, but the calls they land on can differ once two tasks race for the next draw.
//! - *wall-clock budget*: a real run that has not ended [`time_budget_ms`] after its start is
//!   cut off (outcome `TimeLimit`): a stuck run is a verdict. (A store call that never
//!   returns blocks the thread the budget runs on: the store clients' own timeouts bound it.)
//! - *panic*: a task of the run that panics (a worker, a flight, a store hook's assertion)
//!   ends the run with outcome `Panic`, as in a simulated run; tokio would otherwise swallow
//!   it with the task.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use leasesim_events::{Event, Flow, Stamped};
use leasesim_rt::hash::{mix, stable_hash};
use leasesim_rt::{ChoiceKind, ChoiceSource, Feed, PctStats, RunOutcome};
use leasesim_sim::{
    Env, EnvSleep, FaultProfile, LocalTask, Observer, Scenario, Signal, StoreFailure, StoreHook,
    System, WorkerFactory, World, WorldRun, run_phases, time_budget_ms,
};

/// Builds a run's observer once its profile is drawn (the checkers that judge the run).
pub use leasesim_sim::ObserverFactory;

/// The world's [`Env`] on tokio in real time (see the module docs).
pub struct RealEnv<S: System> {
    start: Cell<tokio::time::Instant>,
    choices: RefCell<ChoiceSource>,
    next_seq: Cell<u64>,
    last_event_ms: Cell<u64>,
    trace_hash: Cell<u64>,
    kept: Option<RefCell<Vec<Stamped<Event<S>>>>>,
    observer: RefCell<Option<Observer<Event<S>>>>,
    /// Notified when the observer asks to halt (a violation) or a task panics.
    halt: Rc<Signal>,
    halted: Cell<bool>,
    /// The first task that panicked: its name and message.
    panicked: Rc<RefCell<Option<(String, String)>>>,
}

impl<S: System> RealEnv<S> {
    /// An env whose time starts now; must be called inside the tokio runtime.
    pub fn new(seed: u64, keep_events: bool) -> RealEnv<S> {
        RealEnv {
            start: Cell::new(tokio::time::Instant::now()),
            choices: RefCell::new(ChoiceSource::new(Feed::Seed(seed), false)),
            next_seq: Cell::new(0),
            last_event_ms: Cell::new(0),
            trace_hash: Cell::new(0),
            kept: keep_events.then(|| RefCell::new(Vec::new())),
            observer: RefCell::new(None),
            halt: Rc::new(Signal::default()),
            halted: Cell::new(false),
            panicked: Rc::new(RefCell::new(None)),
        }
    }

    /// Time 0 is now (once the store is set up, before the first event).
    fn start_clock(&self) {
        // invariant: the clock starts before any event is stamped.
        assert_eq!(self.next_seq.get(), 0, "the clock started after an event");
        self.start.set(tokio::time::Instant::now());
    }
}

impl<S: System> Env<S> for RealEnv<S> {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.get().elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep_until(&self, at_ms: u64) -> EnvSleep {
        if at_ms <= self.now_ms() {
            return EnvSleep::Ready;
        }
        let deadline = self.start.get() + Duration::from_millis(at_ms);
        EnvSleep::Boxed(Box::pin(tokio::time::sleep_until(deadline)))
    }

    fn yield_now(&self) -> EnvSleep {
        EnvSleep::Boxed(Box::pin(tokio::task::yield_now()))
    }

    fn spawn(&self, name: &str, task: LocalTask) {
        // Detached, as in a simulated run: the world never joins its tasks. A panic is kept
        // and ends the run.
        let guarded = guard(
            name.to_string(),
            task,
            self.panicked.clone(),
            self.halt.clone(),
        );
        drop(tokio::task::spawn_local(guarded));
    }

    fn range(&self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        lo + self.choices.borrow_mut().draw(ChoiceKind::Range, hi - lo)
    }

    fn coin(&self, p: f64) -> bool {
        self.choices.borrow_mut().coin(p)
    }

    fn emit(&self, event: Event<S>) {
        self.emit_at(self.now_ms(), event);
    }

    fn emit_at(&self, at_ms: u64, event: Event<S>) {
        // invariant: an event is never stamped after now; one stamped at an earlier instant
        // (what a store call applied, when the call returned) is still no earlier than the
        // event before it, since the call blocked the one thread the events come from.
        debug_assert!(at_ms <= self.now_ms(), "an event stamped in the future");
        // invariant: event time never decreases along a run's stream (tokio's clock is
        // monotonic, and one thread emits every event).
        assert!(
            at_ms >= self.last_event_ms.get(),
            "an event went back in time"
        );
        self.last_event_ms.set(at_ms);
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        let stamped = Stamped { seq, at_ms, event };
        self.trace_hash
            .set(mix(self.trace_hash.get(), stable_hash(&stamped)));
        if let Some(observer) = self.observer.borrow_mut().as_mut()
            && observer(&stamped) == Flow::Halt
            && !self.halted.replace(true)
        {
            self.halt.notify();
        }
        if let Some(kept) = &self.kept {
            kept.borrow_mut().push(stamped);
        }
    }
}

/// `task`, with a panic of it kept in `panicked` (the first one) and announced on `halt`.
async fn guard(
    name: String,
    task: LocalTask,
    panicked: Rc<RefCell<Option<(String, String)>>>,
    halt: Rc<Signal>,
) {
    use futures::FutureExt;
    if let Err(payload) = std::panic::AssertUnwindSafe(task).catch_unwind().await {
        let message = payload
            .downcast_ref::<&str>()
            .map(ToString::to_string)
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with no message".to_string());
        panicked.borrow_mut().get_or_insert((name, message));
        halt.notify();
    }
}

/// Runs `scenario` once in real time with workers from `factory`, the fault plan drawn from
/// `seed`, every request applied by the store hook `open` sets up for the drawn profile (its
/// error ends the run before it starts). `observe` builds the checkers from the drawn
/// profile; a violation they report ends the run at once (outcome `Halted`). The run's
/// [`WorldRun`] has no steps, choices or PCT figures (tokio schedules the tasks).
pub fn run_on_store<S: System, E>(
    scenario: &Rc<Scenario<S>>,
    factory: &Rc<WorkerFactory<S>>,
    open: impl FnOnce(&FaultProfile<S>) -> Result<Rc<dyn StoreHook<S>>, E>,
    seed: u64,
    keep_events: bool,
    observe: Option<ObserverFactory<S>>,
) -> Result<WorldRun<S>, E> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio current_thread runtime builds");
    let local = tokio::task::LocalSet::new();
    let run = local.block_on(&runtime, async {
        let env = Rc::new(RealEnv::<S>::new(seed, keep_events));
        let profile = FaultProfile::draw(scenario, &*env);
        let draws_before_open = env.choices.borrow().draws();
        let store = open(&profile)?;
        // invariant: setting the store up drew nothing, so the profile is the seed's alone.
        debug_assert_eq!(env.choices.borrow().draws(), draws_before_open);
        if let Some(observe) = observe {
            *env.observer.borrow_mut() = Some(observe(&profile));
        }
        env.start_clock();
        let dyn_env: Rc<dyn Env<S>> = env.clone();
        let world = Rc::new(World::new(scenario.clone(), profile, dyn_env).with_store(store));
        let outcome = run_phases_within(&world, factory, &env).await;
        world.teardown();
        // The observer usually owns checker state its caller reads next; let go of it now.
        drop(env.observer.borrow_mut().take());
        let events = env
            .kept
            .as_ref()
            .map(|kept| kept.take())
            .unwrap_or_default();
        Ok(WorldRun {
            outcome,
            events,
            profile: world.profile().clone(),
            choices: Vec::new(),
            steps: 0,
            draws: env.choices.borrow().draws(),
            events_emitted: env.next_seq.get(),
            end_ms: env.now_ms(),
            trace_hash: env.trace_hash.get(),
            pct: PctStats::default(),
        })
    });
    // Drops the tasks still parked (flights, tickers), as dropping a simulation does.
    drop(local);
    run
}

/// Runs the phases until they end, the checkers halt the run, or the wall-clock budget is
/// spent.
async fn run_phases_within<S: System>(
    world: &Rc<World<S>>,
    factory: &Rc<WorkerFactory<S>>,
    env: &RealEnv<S>,
) -> RunOutcome<()> {
    let budget = Duration::from_millis(time_budget_ms(world.scenario()));
    let phases = guard(
        "phases".to_string(),
        Box::pin(run_phases(world.clone(), factory.clone())),
        env.panicked.clone(),
        env.halt.clone(),
    );
    let halted = std::pin::pin!(env.halt.changed());
    let ended = tokio::time::timeout(budget, futures::future::select(Box::pin(phases), halted));
    let outcome = match ended.await {
        Ok(futures::future::Either::Left(((), _))) => RunOutcome::Completed(()),
        Ok(futures::future::Either::Right(((), _))) => RunOutcome::Halted,
        Err(_) => RunOutcome::TimeLimit {
            now_ms: env.now_ms(),
        },
    };
    match env.panicked.borrow_mut().take() {
        Some((name, message)) => RunOutcome::Panic {
            task: leasesim_rt::TaskInfo {
                id: leasesim_rt::TaskId(0),
                name,
            },
            message,
            location: None,
        },
        None => outcome,
    }
}

/// Runs `call` on a thread of its own and waits for it: a blocking store client that drives a
/// runtime of its own (the `postgres` client) cannot be called on the run's tokio thread.
pub fn off_runtime<T: Send>(call: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(call)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Whatever must live as long as a run's connections (a PostgreSQL store drops its schema
/// when dropped).
pub type Guard = Option<Box<dyn std::any::Any + Send>>;

/// A store hook's connections to its store (one per caller) and their guard. Each call runs
/// off the run's tokio thread ([`off_runtime`]), and dropping them closes them off it too (the
/// `postgres` client blocks on a runtime of its own as it closes).
pub struct Connections<C: ?Sized + Send> {
    open: RefCell<Vec<Box<C>>>,
    guard: Guard,
}

impl<C: ?Sized + Send> Connections<C> {
    pub fn new(open: Vec<Box<C>>, guard: Guard) -> Connections<C> {
        Connections {
            open: RefCell::new(open),
            guard,
        }
    }

    /// Runs `call` on connection `index`, off the run's runtime.
    pub fn call<T: Send>(&self, index: usize, call: impl FnOnce(&mut C) -> T + Send) -> T {
        let connection = &mut self.open.borrow_mut()[index];
        off_runtime(|| call(connection))
    }

    /// Runs `call` on the last connection (the world's own, where a hook keeps one).
    pub fn call_last<T: Send>(&self, call: impl FnOnce(&mut C) -> T + Send) -> T {
        let last = self
            .open
            .borrow()
            .len()
            .checked_sub(1)
            .expect("a connection");
        self.call(last, call)
    }
}

impl<C: ?Sized + Send> Drop for Connections<C> {
    fn drop(&mut self) {
        let open = std::mem::take(self.open.get_mut());
        let guard = self.guard.take();
        off_runtime(move || drop((open, guard)));
    }
}

/// The refusal of a PostgreSQL store by a build without the client.
pub fn no_postgres_client() -> crate::RealError {
    crate::RealError::BadConfig(
        "this build has no PostgreSQL client: build with `--features postgres`".into(),
    )
}

/// The refusal of a Redis store by a system whose store runs on SQL.
pub fn sql_only(system: &str) -> crate::RealError {
    crate::RealError::BadConfig(format!(
        "the {system} system's store runs on sqlite or postgres, not redis"
    ))
}

/// What a store hook saw of its store over one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreTally {
    /// Calls the store answered.
    pub answered: u64,
    /// Calls the store refused (applied nothing; the caller saw a refusal).
    pub refused: u64,
    /// Calls whose outcome is unknown (the caller saw a timeout).
    pub unknown: u64,
    /// Answered calls the model answered alike only at an instant shifted from the call's,
    /// within a clock margin: a store on its own clock (Redis) ends lifetimes up to a round
    /// trip away from the model.
    pub skewed: u64,
    /// The first call the store answered differently from the simulated model: the store's
    /// answer, the model's, and the request.
    pub divergence: Option<String>,
    /// The last store error, as the store said it.
    pub last_error: Option<String>,
}

impl StoreTally {
    /// Counts a store call whose answer is `real` and whose answer in the model (applied
    /// beside the store, at the same service time) is `model`: the answer the caller gets.
    /// The model is applied only when the store answered, so the two see the same calls.
    pub fn shadow<A: PartialEq + std::fmt::Debug, R: std::fmt::Debug>(
        &mut self,
        request: &R,
        real: Result<A, leasesim_stores::StoreError>,
        model: impl FnOnce() -> A,
    ) -> Result<A, StoreFailure> {
        use leasesim_stores::StoreError;
        match real {
            Ok(applied) => {
                self.answered += 1;
                let expected = model();
                if applied != expected && self.divergence.is_none() {
                    self.divergence = Some(format!(
                        "{request:?}: the store answered {applied:?}, the model {expected:?}"
                    ));
                }
                Ok(applied)
            }
            Err(StoreError::Refused(why)) => {
                self.refused += 1;
                self.last_error = Some(why);
                Err(StoreFailure::Refused)
            }
            Err(StoreError::Unknown(why)) => {
                self.unknown += 1;
                self.last_error = Some(why);
                Err(StoreFailure::Unknown)
            }
        }
    }
}

/// A system's store hook for real runs: opened fresh per run, and tallied.
pub trait RealHook<S: System>: StoreHook<S> + Sized {
    /// The invariants that judge exact instants (a stop resolving at the instant of the
    /// event it waited for): real time puts a millisecond or more between any two steps, so
    /// a real run observes them without halting and reports them apart.
    const EXACT_INSTANT: &'static [&'static str] = &["stop-prompt"];

    /// A fresh store at `target` holding what the simulated services of `scenario` start
    /// with for `profile` ([`Apply::services`](leasesim_sim::Apply::services)), with a
    /// connection for each replica.
    fn open(
        target: &crate::StoreTarget,
        scenario: &Scenario<S>,
        profile: &FaultProfile<S>,
    ) -> Result<Self, crate::RealError>;

    /// What the hook saw so far.
    fn tally(&self) -> StoreTally;
}

#[cfg(test)]
mod tests {
    use leasesim_stores::StoreError;

    use super::*;

    #[test]
    fn the_store_answers_the_caller_and_its_first_disagreement_with_the_model_is_kept() {
        let mut tally = StoreTally::default();
        assert_eq!(tally.shadow(&"find", Ok(3), || 3), Ok(3));
        assert_eq!(tally.divergence, None);
        assert_eq!(tally.shadow(&"claim", Ok(5), || 4), Ok(5));
        assert_eq!(tally.shadow(&"renew", Ok(7), || 6), Ok(7));
        assert_eq!(tally.answered, 3);
        assert_eq!(
            tally.divergence.as_deref(),
            Some("\"claim\": the store answered 5, the model 4")
        );
    }

    #[test]
    fn a_refused_or_unknown_call_is_not_applied_to_the_model() {
        let mut tally = StoreTally::default();
        let never = || -> u32 { panic!("the model applied a call the store did not answer") };
        let refused = tally.shadow(&"claim", Err(StoreError::Refused("locked".into())), never);
        assert_eq!(refused, Err(StoreFailure::Refused));
        let unknown = tally.shadow(&"done", Err(StoreError::Unknown("reset".into())), never);
        assert_eq!(unknown, Err(StoreFailure::Unknown));
        assert_eq!((tally.answered, tally.refused, tally.unknown), (0, 1, 1));
        assert_eq!(tally.last_error.as_deref(), Some("reset"));
        assert_eq!(tally.divergence, None);
    }
}
