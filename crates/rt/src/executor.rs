//! The single-threaded executor.
//!
//! Terminology:
//! - *task*: a spawned future with an id (its index; ids are never reused within a run).
//! - *ready list*: tasks woken and not yet polled, oldest first. Which one runs next is a
//!   scheduling choice made by the strategy, through the choice source.
//! - *step*: one poll of one task. The step budget counts these.
//! - *main*: the future given to `block_on`; it is scheduled like a task but lives on the
//!   caller's stack, so it may borrow.
//! - *quiescence*: nothing is ready and no timer is pending.
//! - *instant budget*: the most polls one task may take at one virtual instant. A task that
//!   keeps yielding without ever letting time move (`loop { sleep(0).await }`) exhausts it
//!   and the run ends with [`RunOutcome::Spin`] naming the task, instead of never ending.
//! - *interrupt*: a flag set from outside the simulation (a wall-clock watchdog). It never
//!   changes a run; it only ends one that is stuck, with [`RunOutcome::Interrupted`].
//! - *fresh waker*: every poll of a task gets a waker of its own, and the wakers of the
//!   task's earlier polls go dead (waking one does nothing). `Future::poll` promises a wakeup
//!   only to the waker of the latest poll; an executor that moves tasks between threads hands
//!   out a different one each time. A future that keeps an earlier poll's waker (it compares
//!   wakers wrongly, or registers once) is then never woken, and the run ends stuck where it
//!   would have hung in production, instead of passing because the waker happened to be the
//!   same.
//! - *closed*: a dropped `Sim`. Its tasks are dropped (in a loop, since dropping a future may
//!   spawn), and a [`Handle`] that outlives it refuses to spawn: the future is dropped at once.
//!
//! Time moves only at quiescence of ready work: when no task is ready the clock jumps to the
//! earliest timer deadline and every timer due then fires, in registration order.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::choice::{Choice, ChoiceKind, ChoiceSource, Feed};
use crate::outcome::{RunOutcome, TaskInfo};
use crate::sched::{PctStats, Scheduler, Strategy};
use crate::time::TimerQueue;
use crate::waker::{Inbox, WakeCell};
use crate::{TaskId, hash};

type LocalFuture = Pin<Box<dyn Future<Output = ()>>>;

/// The most name addresses remembered (see `Core::intern`).
const MAX_NAME_ADDRESSES: usize = 64;

/// How a run is fed and bounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    pub feed: Feed,
    pub strategy: Strategy,
    /// Polls allowed before the run ends with `StepLimit`.
    pub max_steps: u64,
    /// Virtual instant beyond which no timer fires; the run ends with `TimeLimit`.
    pub max_time_ms: u64,
    /// Keep every choice (needed for replay files and shrinking; off for plain fuzzing).
    pub record_choices: bool,
    /// PCT: the expected number of steps, over which change points are spread. Size it from
    /// measured step counts of the same program (see [`pct_steps_from`]).
    pub pct_steps_estimate: u64,
    /// The most polls one task may take at one virtual instant (see *instant budget*).
    pub max_polls_per_instant: u32,
    /// Set from outside to end a stuck run (see *interrupt*).
    pub interrupt: Option<Interrupt>,
}

/// A flag another thread sets to end a stuck run ([`RunOutcome::Interrupted`]). It is read
/// at every step and every event, never written by the simulation, so it cannot change a run
/// that is not stuck. The run publishes its virtual time through it as the clock moves (a
/// store nothing in the run reads back).
#[derive(Clone, Debug, Default)]
pub struct Interrupt(std::sync::Arc<InterruptState>);

/// What the run and its watchdog share.
#[derive(Debug, Default)]
struct InterruptState {
    raised: std::sync::atomic::AtomicBool,
    /// The run's virtual time, published as it advances: the watchdog tells a run that is
    /// slow (virtual time moves) from one that is stuck (it does not).
    virtual_ms: std::sync::atomic::AtomicU64,
}

impl Interrupt {
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Asks the run to end at its next step or event.
    pub fn raise(&self) {
        self.0
            .raised
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Re-arms the flag, and the published virtual time, for the next run.
    pub fn clear(&self) {
        self.0
            .raised
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.0
            .virtual_ms
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn is_raised(&self) -> bool {
        self.0.raised.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The virtual time the run last reached (0 before it moved).
    pub fn virtual_ms(&self) -> u64 {
        self.0.virtual_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Publishes the run's virtual time: the executor calls it as the clock moves (a test of
    /// a watchdog may too).
    pub fn reached(&self, now_ms: u64) {
        self.0
            .virtual_ms
            .store(now_ms, std::sync::atomic::Ordering::Relaxed);
    }
}

impl PartialEq for Interrupt {
    fn eq(&self, other: &Interrupt) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Interrupt {}

/// The payload a poll unwinds with when the interrupt is raised inside it.
struct InterruptedUnwind;

/// A PCT step estimate from measured step counts of the same program: the largest count seen,
/// so change points fall on steps the runs actually take (at least 1).
pub fn pct_steps_from(measured_steps: impl IntoIterator<Item = u64>) -> u64 {
    // At least 1: an estimate always leaves room for one change point.
    measured_steps.into_iter().max().unwrap_or(1).max(1)
}

impl SimConfig {
    /// A run driven by a ChaCha stream from `seed`, uniform random scheduling.
    pub fn seeded(seed: u64) -> SimConfig {
        SimConfig {
            feed: Feed::Seed(seed),
            strategy: Strategy::Random,
            max_steps: 50_000_000,
            max_time_ms: 30 * 24 * 3_600_000,
            record_choices: true,
            pct_steps_estimate: 5_000,
            max_polls_per_instant: 10_000,
            interrupt: None,
        }
    }

    /// A run driven by recorded choice values.
    pub fn replay(values: Vec<u64>) -> SimConfig {
        SimConfig {
            feed: Feed::Replay(values),
            ..SimConfig::seeded(0)
        }
    }

    pub fn with_strategy(mut self, strategy: Strategy) -> SimConfig {
        self.strategy = strategy;
        self
    }

    pub fn with_max_steps(mut self, max_steps: u64) -> SimConfig {
        self.max_steps = max_steps;
        self
    }

    pub fn with_max_time_ms(mut self, max_time_ms: u64) -> SimConfig {
        self.max_time_ms = max_time_ms;
        self
    }

    pub fn with_recording(mut self, record_choices: bool) -> SimConfig {
        self.record_choices = record_choices;
        self
    }

    pub fn with_pct_steps_estimate(mut self, steps: u64) -> SimConfig {
        self.pct_steps_estimate = steps.max(1);
        self
    }

    pub fn with_interrupt(mut self, interrupt: Interrupt) -> SimConfig {
        self.interrupt = Some(interrupt);
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskState {
    Live,
    /// Being polled right now (its future is out of the slot).
    Running,
    /// Aborted while being polled: drop the future when the poll returns.
    AbortedWhileRunning,
    Done,
}

struct TaskSlot {
    name: Rc<str>,
    future: Option<LocalFuture>,
    wake: Rc<WakeCell>,
    state: TaskState,
    priority: u64,
    /// The virtual instant of this task's latest poll, and its polls at that instant.
    instant_ms: u64,
    polls_at_instant: u32,
}

/// The executor's shared state. Every field is borrowed only briefly and never across a
/// poll, so futures may spawn, sleep, draw and wake freely while being polled.
pub(crate) struct Core {
    now_ms: Cell<u64>,
    tasks: RefCell<Vec<TaskSlot>>,
    live_tasks: Cell<usize>,
    inbox: Rc<Inbox>,
    pub(crate) timers: RefCell<TimerQueue>,
    fired: RefCell<Vec<Waker>>,
    pub(crate) choices: RefCell<ChoiceSource>,
    sched: RefCell<Scheduler>,
    hash: Cell<u64>,
    steps: Cell<u64>,
    halted: Cell<bool>,
    /// Task names seen so far, shared by every task of that name (no allocation per spawn),
    /// each under the address of the text it was asked for (a literal keeps its address, so
    /// a spawn site finds its name by one comparison of addresses).
    names: RefCell<Vec<(usize, Rc<str>)>>,
    /// Wake cells of finished tasks that nothing else holds, for the next tasks to take.
    spare_wakes: RefCell<Vec<Rc<WakeCell>>>,
    /// What a finished task's slot holds once its cell went back to the spares: never live.
    dead_wake: Rc<WakeCell>,
    /// PCT demotions decided at the current step (scratch, kept for its capacity).
    demoted: RefCell<Vec<(TaskId, u64)>>,
    /// A task is being polled right now.
    in_poll: Cell<bool>,
    /// The `Sim` was dropped: nothing may spawn any more.
    closed: Cell<bool>,
    interrupt: Option<Interrupt>,
    /// The strategy wants every step, lone tasks included (PCT's change points).
    consult_every_step: bool,
    max_steps: u64,
    max_time_ms: u64,
    max_polls_per_instant: u32,
}

/// The deterministic simulator: owns the executor and its tasks.
pub struct Sim {
    core: Rc<Core>,
}

/// A cheap, cloneable reference to a simulator, for spawning, time and draws.
#[derive(Clone)]
pub struct Handle {
    pub(crate) core: Rc<Core>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("now_ms", &self.core.now_ms.get())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("now_ms", &self.core.now_ms.get())
            .finish_non_exhaustive()
    }
}

impl Sim {
    pub fn new(config: SimConfig) -> Sim {
        let mut choices = ChoiceSource::new(config.feed, config.record_choices);
        let sched = Scheduler::new(config.strategy, config.pct_steps_estimate, &mut choices);
        let consult_every_step = sched.consults_every_step();
        let inbox = Rc::new(Inbox::new());
        let dead_wake = WakeCell::new(TaskId(u32::MAX), inbox.clone());
        dead_wake.live.set(false);
        let core = Core {
            now_ms: Cell::new(0),
            tasks: RefCell::new(Vec::new()),
            live_tasks: Cell::new(0),
            inbox,
            timers: RefCell::new(TimerQueue::default()),
            fired: RefCell::new(Vec::new()),
            choices: RefCell::new(choices),
            sched: RefCell::new(sched),
            hash: Cell::new(0),
            steps: Cell::new(0),
            halted: Cell::new(false),
            names: RefCell::new(Vec::new()),
            spare_wakes: RefCell::new(Vec::new()),
            dead_wake,
            demoted: RefCell::new(Vec::new()),
            in_poll: Cell::new(false),
            closed: Cell::new(false),
            interrupt: config.interrupt,
            consult_every_step,
            max_steps: config.max_steps,
            max_time_ms: config.max_time_ms,
            max_polls_per_instant: config.max_polls_per_instant.max(1),
        };
        Sim {
            core: Rc::new(core),
        }
    }

    pub fn handle(&self) -> Handle {
        Handle {
            core: self.core.clone(),
        }
    }

    /// Runs `future` together with every spawned task until it completes or the run ends
    /// another way (deadlock, panic, halt, step or time limit).
    pub fn block_on<F: Future>(&mut self, future: F) -> RunOutcome<F::Output> {
        let mut output = None;
        let outcome = {
            let main = async {
                output = Some(future.await);
            };
            let mut main = std::pin::pin!(main);
            let main_id = self.core.add_task(Rc::from("main"), None);
            self.core.wake_task(main_id);
            let stop = self.core.run(Some((main_id, main.as_mut())));
            self.core.finish_task(main_id);
            stop
        };
        match outcome {
            RunOutcome::Completed(()) => {
                RunOutcome::Completed(output.expect("main completed, so its output is set"))
            }
            other => other.map(|()| unreachable!("only Completed carries a value")),
        }
    }

    /// Runs spawned tasks until all have finished (`Completed`) or none can progress.
    pub fn run_until_quiescent(&mut self) -> RunOutcome<()> {
        self.core.run(None)
    }

    /// The choices recorded so far.
    pub fn recorded_choices(&self) -> Vec<Choice> {
        self.core.choices.borrow().recorded().to_vec()
    }

    /// Takes the recorded choices out (cheaper than copying for long runs).
    pub fn take_recorded_choices(&self) -> Vec<Choice> {
        self.core.choices.borrow_mut().take_recorded()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Futures hold handles to the core; drop them outside any borrow to break the cycle.
        // A future's destructor may spawn: the core is closed first, so such a spawn is
        // refused (its future dropped at once), and the loop catches anything left behind.
        self.core.closed.set(true);
        loop {
            let futures: Vec<LocalFuture> = self
                .core
                .tasks
                .borrow_mut()
                .iter_mut()
                .filter_map(|slot| slot.future.take())
                .collect();
            if futures.is_empty() {
                break;
            }
            drop(futures);
        }
        self.core.timers.borrow_mut().clear();
        self.core.inbox.ready.borrow_mut().clear();
        // invariant: a closed simulator holds no future, no timer and no ready task.
        debug_assert!(
            self.core
                .tasks
                .borrow()
                .iter()
                .all(|slot| slot.future.is_none())
        );
        debug_assert_eq!(self.core.timers.borrow().live(), 0);
    }
}

impl Core {
    fn intern(&self, name: &str) -> Rc<str> {
        let mut names = self.names.borrow_mut();
        let address = name.as_ptr() as usize;
        // The address only narrows the search: a name built at run time may be freed and its
        // address reused by another text, so the text is compared too.
        if let Some((_, found)) = names
            .iter()
            .find(|(at, known)| *at == address && **known == *name)
        {
            return found.clone();
        }
        let known = names.iter().find(|(_, known)| **known == *name);
        let interned = known.map_or_else(|| Rc::from(name), |(_, known)| known.clone());
        // A new address of a known name is remembered while the list is short (names built at
        // run time must not grow it with every spawn).
        if known.is_none() || names.len() < MAX_NAME_ADDRESSES {
            names.push((address, interned.clone()));
        }
        // invariant: the name handed out reads as asked.
        debug_assert_eq!(&*interned, name);
        interned
    }

    fn add_task(&self, name: Rc<str>, future: Option<LocalFuture>) -> TaskId {
        let priority = self
            .sched
            .borrow()
            .initial_priority(&mut self.choices.borrow_mut());
        let mut tasks = self.tasks.borrow_mut();
        let id = TaskId(u32::try_from(tasks.len()).expect("fewer than 2^32 tasks per run"));
        let spare = self.spare_wakes.borrow_mut().pop();
        let wake = match spare.map(|cell| WakeCell::reuse(cell, id)) {
            Some(Ok(cell)) => cell,
            _ => WakeCell::new(id, self.inbox.clone()),
        };
        tasks.push(TaskSlot {
            name,
            future,
            wake,
            state: TaskState::Live,
            priority,
            instant_ms: 0,
            polls_at_instant: 0,
        });
        self.live_tasks.set(self.live_tasks.get() + 1);
        id
    }

    /// The wake cell of task `id`'s next poll (see *fresh waker*): a spare one, or a new one;
    /// the cell of its previous poll goes dead, and back to the spares if nothing holds it.
    fn fresh_wake(&self, id: TaskId) -> Rc<WakeCell> {
        let spare = self.spare_wakes.borrow_mut().pop();
        let fresh = match spare.map(|cell| WakeCell::reuse(cell, id)) {
            Some(Ok(cell)) => cell,
            _ => WakeCell::new(id, self.inbox.clone()),
        };
        let old = std::mem::replace(&mut self.tasks.borrow_mut()[id.index()].wake, fresh.clone());
        // invariant: the task was taken off the ready list before this poll.
        debug_assert!(!old.queued.get());
        old.live.set(false);
        if Rc::strong_count(&old) == 1 {
            self.spare_wakes.borrow_mut().push(old);
        }
        fresh
    }

    fn wake_task(&self, id: TaskId) {
        let wake = self.tasks.borrow()[id.index()].wake.clone();
        wake.wake();
    }

    /// Marks a task finished: it leaves the ready list and later wakes are no-ops.
    fn finish_task(&self, id: TaskId) {
        let mut tasks = self.tasks.borrow_mut();
        let slot = &mut tasks[id.index()];
        if slot.state == TaskState::Done {
            return;
        }
        slot.state = TaskState::Done;
        slot.wake.live.set(false);
        if slot.wake.queued.replace(false) {
            self.inbox.ready.borrow_mut().retain(|queued| *queued != id);
        }
        self.live_tasks.set(self.live_tasks.get() - 1);
        // invariant: a finished task is never listed as ready.
        debug_assert!(!self.inbox.ready.borrow().contains(&id));
    }

    /// Gives a finished task's wake cell back to the spares if nothing else holds it (its
    /// future is dropped, and no timer or waiter kept one of its wakers).
    fn reclaim_wake(&self, id: TaskId) {
        let cell = {
            let mut tasks = self.tasks.borrow_mut();
            let slot = &mut tasks[id.index()];
            // invariant: only a finished task gives its cell back, and a cell no one else holds.
            debug_assert!(slot.state == TaskState::Done && !slot.wake.live.get());
            if Rc::strong_count(&slot.wake) != 1 {
                return;
            }
            std::mem::replace(&mut slot.wake, self.dead_wake.clone())
        };
        self.spare_wakes.borrow_mut().push(cell);
    }

    /// Aborts a task: its future is dropped and it never runs again.
    pub(crate) fn abort(&self, id: TaskId) {
        let future = {
            let mut tasks = self.tasks.borrow_mut();
            let slot = &mut tasks[id.index()];
            match slot.state {
                TaskState::Done | TaskState::AbortedWhileRunning => return,
                TaskState::Running => {
                    slot.state = TaskState::AbortedWhileRunning;
                    return;
                }
                TaskState::Live => slot.future.take(),
            }
        };
        self.finish_task(id);
        // Dropped outside every borrow: the future's destructors may cancel timers.
        drop(future);
        self.reclaim_wake(id);
    }

    fn run(
        &self,
        mut main: Option<(TaskId, Pin<&mut (dyn Future<Output = ()> + '_)>)>,
    ) -> RunOutcome<()> {
        loop {
            if self.halted.get() {
                return RunOutcome::Halted;
            }
            if self.interrupt.as_ref().is_some_and(Interrupt::is_raised) {
                return RunOutcome::Interrupted {
                    now_ms: self.now_ms.get(),
                };
            }
            if let Some((id, _)) = &main
                && self.tasks.borrow()[id.index()].state == TaskState::Done
            {
                return RunOutcome::Completed(());
            }
            let Some((id, polls_at_instant)) = self.pick_ready() else {
                match self.advance_time(main.is_some()) {
                    Some(stop) => return stop,
                    None => continue,
                }
            };
            let steps = self.steps.get() + 1;
            self.steps.set(steps);
            if steps > self.max_steps {
                return RunOutcome::StepLimit { steps: steps - 1 };
            }
            self.hash.set(hash::mix(self.hash.get(), u64::from(id.0)));
            if polls_at_instant > self.max_polls_per_instant {
                return self.spin_outcome(id, polls_at_instant);
            }
            let result = match &mut main {
                Some((main_id, future)) if *main_id == id => self.poll_main(id, future.as_mut()),
                _ => self.poll_task(id),
            };
            if let Err(stop) = result {
                return stop;
            }
        }
    }

    /// Nothing is ready: move the clock to the next deadline and fire it, or end the run.
    fn advance_time(&self, has_main: bool) -> Option<RunOutcome<()>> {
        let next = self.timers.borrow_mut().next_deadline();
        let Some(deadline_ms) = next else {
            if !has_main && self.live_tasks.get() == 0 {
                return Some(RunOutcome::Completed(()));
            }
            return Some(RunOutcome::Deadlock {
                blocked: self.blocked_tasks(),
            });
        };
        if deadline_ms > self.max_time_ms {
            return Some(RunOutcome::TimeLimit {
                now_ms: self.now_ms.get(),
            });
        }
        // invariant: virtual time never moves backwards.
        assert!(
            deadline_ms >= self.now_ms.get(),
            "timer deadline lies in the past"
        );
        self.now_ms.set(deadline_ms);
        if let Some(interrupt) = &self.interrupt {
            interrupt.reached(deadline_ms);
        }
        self.hash
            .set(hash::mix(self.hash.get(), deadline_ms ^ (1 << 63)));
        let mut fired = std::mem::take(&mut *self.fired.borrow_mut());
        self.timers.borrow_mut().fire_due(deadline_ms, &mut fired);
        debug_assert!(!fired.is_empty(), "the next deadline had a live timer");
        for waker in fired.drain(..) {
            waker.wake();
        }
        *self.fired.borrow_mut() = fired;
        None
    }

    fn blocked_tasks(&self) -> Vec<TaskInfo> {
        let tasks = self.tasks.borrow();
        tasks
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.state != TaskState::Done)
            .map(|(index, slot)| TaskInfo {
                id: TaskId(index as u32),
                name: slot.name.to_string(),
            })
            .collect()
    }

    /// Removes and returns the next task to poll, as the strategy decides, with the number of
    /// polls it will have had at this instant (its instant budget) once polled.
    fn pick_ready(&self) -> Option<(TaskId, u32)> {
        let len = self.inbox.ready.borrow().len();
        if len == 0 {
            return None;
        }
        let index = if len == 1 && !self.consult_every_step {
            0
        } else {
            self.pick_index()
        };
        let id = self.inbox.ready.borrow_mut().remove(index);
        let now_ms = self.now_ms.get();
        let mut tasks = self.tasks.borrow_mut();
        let slot = &mut tasks[id.index()];
        // invariant: the ready list holds each live task at most once, flagged as queued.
        debug_assert!(slot.wake.queued.get() && slot.wake.live.get());
        slot.wake.queued.set(false);
        if slot.instant_ms != now_ms {
            slot.instant_ms = now_ms;
            slot.polls_at_instant = 0;
        }
        slot.polls_at_instant = slot.polls_at_instant.saturating_add(1);
        Some((id, slot.polls_at_instant))
    }

    /// Asks the strategy which ready task runs (PCT may demote tasks on the way).
    fn pick_index(&self) -> usize {
        let tasks = self.tasks.borrow();
        let ready = self.inbox.ready.borrow();
        let mut demoted = self.demoted.borrow_mut();
        demoted.clear();
        let priority_of = |id: TaskId| tasks[id.index()].priority;
        let step = self.steps.get() + 1;
        let choices = &mut self.choices.borrow_mut();
        let index = self
            .sched
            .borrow_mut()
            .pick(&ready, priority_of, step, choices, &mut demoted);
        drop(ready);
        drop(tasks);
        let mut tasks = self.tasks.borrow_mut();
        for &(id, priority) in demoted.iter() {
            tasks[id.index()].priority = priority;
        }
        // invariant: a task demoted several times at one step keeps its last demotion.
        debug_assert!(demoted.iter().enumerate().all(|(at, &(id, p))| {
            demoted[at + 1..].iter().any(|&(later, _)| later == id)
                || tasks[id.index()].priority == p
        }));
        index
    }

    /// The verdict for a task over its instant budget.
    #[cold]
    fn spin_outcome(&self, id: TaskId, polls: u32) -> RunOutcome<()> {
        let name = self.tasks.borrow()[id.index()].name.to_string();
        RunOutcome::Spin {
            task: TaskInfo { id, name },
            at_ms: self.now_ms.get(),
            polls: u64::from(polls),
        }
    }

    fn poll_main(
        &self,
        id: TaskId,
        main: Pin<&mut (dyn Future<Output = ()> + '_)>,
    ) -> Result<(), RunOutcome<()>> {
        let wake = self.fresh_wake(id);
        let waker = WakeCell::borrowed_waker(&wake);
        let mut cx = Context::from_waker(&waker);
        self.in_poll.set(true);
        let polled = catch_unwind(AssertUnwindSafe(|| main.poll(&mut cx)));
        self.in_poll.set(false);
        match polled {
            Ok(Poll::Pending) => Ok(()),
            Ok(Poll::Ready(())) => {
                self.finish_task(id);
                Ok(())
            }
            Err(payload) => Err(self.panic_outcome(id, payload.as_ref())),
        }
    }

    fn poll_task(&self, id: TaskId) -> Result<(), RunOutcome<()>> {
        let mut future = {
            let mut tasks = self.tasks.borrow_mut();
            let slot = &mut tasks[id.index()];
            // invariant: only live tasks are ever picked.
            assert_eq!(
                slot.state,
                TaskState::Live,
                "picked a task that is not live"
            );
            slot.state = TaskState::Running;
            slot.future.take().expect("a live task has its future")
        };
        let wake = self.fresh_wake(id);
        let waker = WakeCell::borrowed_waker(&wake);
        let mut cx = Context::from_waker(&waker);
        self.in_poll.set(true);
        let polled = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx)));
        self.in_poll.set(false);
        drop(wake);
        let state = self.tasks.borrow()[id.index()].state;
        match polled {
            Ok(Poll::Pending) if state == TaskState::Running => {
                let mut tasks = self.tasks.borrow_mut();
                tasks[id.index()].state = TaskState::Live;
                tasks[id.index()].future = Some(future);
                Ok(())
            }
            Ok(_) => {
                self.finish_task(id);
                drop(future);
                self.reclaim_wake(id);
                Ok(())
            }
            Err(payload) => {
                self.finish_task(id);
                let outcome = self.panic_outcome(id, payload.as_ref());
                // A future that panicked may panic again while dropped; keep the first report.
                let _ = catch_unwind(AssertUnwindSafe(move || drop(future)));
                Err(outcome)
            }
        }
    }

    fn panic_outcome(&self, id: TaskId, payload: &(dyn std::any::Any + Send)) -> RunOutcome<()> {
        if payload.is::<InterruptedUnwind>() {
            return RunOutcome::Interrupted {
                now_ms: self.now_ms.get(),
            };
        }
        let message = if let Some(text) = payload.downcast_ref::<&str>() {
            (*text).to_string()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            "non-string panic payload".to_string()
        };
        let name = self.tasks.borrow()[id.index()].name.to_string();
        RunOutcome::Panic {
            task: TaskInfo { id, name },
            message,
            location: crate::panics::take_location(),
        }
    }
}

impl Handle {
    /// Spawns a task. It is first polled when the scheduler picks it.
    pub fn spawn<F>(&self, future: F) -> crate::JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.spawn_named("task", future)
    }

    /// Spawns a task with a name that deadlock and panic reports will show.
    pub fn spawn_named<F>(&self, name: &str, future: F) -> crate::JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let join = crate::join::JoinState::new();
        if self.core.closed.get() {
            // The simulator is gone: the task could never run. Refuse it: its future is
            // dropped here and its handle reports it aborted.
            drop(future);
            join.complete(Err(crate::JoinError::Aborted));
            return crate::JoinHandle::new(TaskId(u32::MAX), join, self.clone());
        }
        let completion = join.clone();
        let wrapped = async move {
            let value = future.await;
            completion.complete(Ok(value));
        };
        let id = self
            .core
            .add_task(self.core.intern(name), Some(Box::pin(wrapped)));
        self.core.wake_task(id);
        crate::JoinHandle::new(id, join, self.clone())
    }

    /// Spawns a detached task: no join state, no wrapper future.
    pub fn spawn_detached(&self, name: &str, future: LocalFuture) {
        if self.core.closed.get() {
            drop(future);
            return;
        }
        let id = self.core.add_task(self.core.intern(name), Some(future));
        self.core.wake_task(id);
    }

    /// The current virtual instant.
    pub fn now_ms(&self) -> u64 {
        self.core.now_ms.get()
    }

    /// Draws a value in `lo..=hi` (the lowest is the simplest).
    pub fn range(&self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        lo + self
            .core
            .choices
            .borrow_mut()
            .draw(ChoiceKind::Range, hi - lo)
    }

    /// Draws an index in `0..n` (0 is the simplest).
    pub fn pick(&self, n: usize) -> usize {
        assert!(n > 0, "pick from nothing");
        self.core
            .choices
            .borrow_mut()
            .draw(ChoiceKind::Range, (n - 1) as u64) as usize
    }

    /// A biased coin: true (the interesting side) with probability `p`.
    pub fn coin(&self, p: f64) -> bool {
        self.core.choices.borrow_mut().coin(p)
    }

    /// Folds a value into the run's trace hash (events call this). A raised interrupt ends the
    /// poll that records an event, so a task that spins inside one poll while emitting events
    /// is stopped too.
    pub fn note(&self, word: u64) {
        self.core.hash.set(hash::mix(self.core.hash.get(), word));
        if self.core.in_poll.get()
            && self
                .core
                .interrupt
                .as_ref()
                .is_some_and(Interrupt::is_raised)
        {
            std::panic::resume_unwind(Box::new(InterruptedUnwind));
        }
    }

    /// PCT change points drawn by this run, and how many its steps reached so far.
    pub fn pct_stats(&self) -> PctStats {
        self.core.sched.borrow().pct_stats()
    }

    /// The running hash of every step, timer, event and choice so far.
    pub fn trace_hash(&self) -> u64 {
        hash::mix(self.core.hash.get(), self.core.choices.borrow().hash())
    }

    /// Asks the executor to end the run (`RunOutcome::Halted`) before its next step.
    pub fn halt(&self) {
        self.core.halted.set(true);
    }

    /// Polls made so far.
    pub fn steps(&self) -> u64 {
        self.core.steps.get()
    }

    /// Draws made so far.
    pub fn draws(&self) -> u64 {
        self.core.choices.borrow().draws()
    }

    /// Timers waiting to fire.
    pub fn pending_timers(&self) -> usize {
        self.core.timers.borrow().live()
    }

    /// Timer-queue entries, stale ones included (a dropped sleep must not leave these growing).
    pub fn timer_queue_len(&self) -> usize {
        self.core.timers.borrow().entry_len()
    }

    /// Tasks spawned and not yet finished or aborted.
    pub fn live_tasks(&self) -> usize {
        self.core.live_tasks.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_by_its_text_even_where_another_text_lived() {
        let sim = Sim::new(SimConfig::seeded(1));
        let mut buffer = *b"flight";
        let first = sim.core.intern(std::str::from_utf8(&buffer).unwrap());
        assert_eq!(&*first, "flight");
        // The same address now holds another text (a name built at run time, then freed).
        buffer[0] = b'b';
        let second = sim.core.intern(std::str::from_utf8(&buffer).unwrap());
        assert_eq!(&*second, "blight");
        let again = sim.core.intern("flight");
        assert!(Rc::ptr_eq(&first, &again), "one Rc per name");
    }

    #[test]
    fn a_finished_tasks_wake_cell_is_reused_when_nothing_holds_it() {
        let mut sim = Sim::new(SimConfig::seeded(1).with_strategy(Strategy::Fifo));
        let handle = sim.handle();
        handle.spawn_detached("first", Box::pin(async {}));
        sim.run_until_quiescent().expect_completed();
        // The spawn's cell (dead at the poll) and the poll's (dead at the end), both free.
        let spares: Vec<*const WakeCell> = sim
            .core
            .spare_wakes
            .borrow()
            .iter()
            .map(Rc::as_ptr)
            .collect();
        assert_eq!(spares.len(), 2);
        handle.spawn_detached("second", Box::pin(async {}));
        let second = Rc::as_ptr(&sim.core.tasks.borrow()[1].wake);
        assert!(spares.contains(&second), "the second task got a new cell");
        assert_eq!(sim.core.spare_wakes.borrow().len(), 1);
    }

    /// Pending until woken once; `refresh`: it keeps the latest poll's waker, else the first.
    struct WaitOnce {
        kept: Rc<RefCell<Option<Waker>>>,
        woken: Rc<Cell<bool>>,
        refresh: bool,
    }

    impl Future for WaitOnce {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.woken.get() {
                return Poll::Ready(());
            }
            let mut kept = self.kept.borrow_mut();
            if self.refresh || kept.is_none() {
                *kept = Some(cx.waker().clone());
            }
            Poll::Pending
        }
    }

    /// A waiter polled twice (a spurious wake between), then woken by the waker it kept.
    fn wait_once(refresh: bool) -> RunOutcome<()> {
        let mut sim = Sim::new(SimConfig::seeded(1).with_strategy(Strategy::Fifo));
        let handle = sim.handle();
        let (kept, woken) = (Rc::new(RefCell::new(None)), Rc::new(Cell::new(false)));
        let waiter = WaitOnce {
            kept: kept.clone(),
            woken: woken.clone(),
            refresh,
        };
        handle.spawn_detached("waiter", Box::pin(waiter));
        let (waker_of_waiter, yielder) = (kept.clone(), handle.clone());
        handle.spawn_detached(
            "waker",
            Box::pin(async move {
                let spurious = waker_of_waiter
                    .borrow()
                    .clone()
                    .expect("the waiter ran first");
                spurious.wake();
                yielder.yield_now().await;
                woken.set(true);
                let kept = waker_of_waiter.borrow_mut().take().expect("still kept");
                kept.wake();
            }),
        );
        sim.run_until_quiescent()
    }

    #[test]
    fn a_waker_of_an_earlier_poll_is_dead() {
        wait_once(true).expect_completed();
        let stuck = wait_once(false);
        assert!(
            matches!(stuck, RunOutcome::Deadlock { .. }),
            "a future that kept its first poll's waker must not be woken: {stuck:?}"
        );
    }
}
