//! A user's retention worker, written from scratch against leasesim's public ports.
//!
//! Terminology:
//! - *term*: one call of `run()`: acquire, read the clock once for the cutoff, delete batches
//!   until the cap, a short batch, a lost lease, an error or `stop()`, then release.
//! - *renewal task*: a task of its own (started with `ports.tasks.spawn`) that renews the
//!   lease every renewal interval while the term runs and hands each new lease to the term.
//! - *careful* / *leaky*: the careful worker ends its renewal task with the term (aborting it
//!   unless a renewal is in flight, joining it while one is); the leaky one drops the
//!   handle, so the task outlives its term (`renewal-stops` catches it).
//!
//! Everything comes from `leasesim` alone: the port traits, the simulated ports, the report
//! types and `futures`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leasesim::futures::channel::oneshot;
use leasesim::retention::prelude::*;

/// What the term and its renewal task share.
#[derive(Default)]
struct Shared {
    /// The newest lease the term holds.
    lease: RefCell<Option<Lease>>,
    /// Set when a renewal answered `None` (lost) or failed (with its error).
    loss: RefCell<Option<LossCause>>,
    /// The token of every lease the term held, oldest first.
    tokens: RefCell<Vec<u64>>,
    /// A renewal call is in flight (aborting the task now would cancel it; at any other
    /// moment, before the task first runs or while it sleeps, aborting cancels no call).
    renewing: Cell<bool>,
    /// The term is over, or the worker stopped: the task must not renew again.
    done: Cell<bool>,
    /// The renewal task, while the term has not joined it.
    renewal: RefCell<Option<TaskHandle<()>>>,
}

impl Shared {
    /// No renewal from now on: a renewal task without a renewal in flight (sleeping, or not
    /// yet started) is aborted at once; one with a renewal in flight finishes that renewal,
    /// sees `done` and ends.
    fn end_renewals(&self) {
        self.done.set(true);
        if !self.renewing.get()
            && let Some(task) = self.renewal.borrow().as_ref()
        {
            task.abort();
        }
    }
}

/// A retention worker with its renewal loop as a task of its own.
pub struct MyWorker {
    ports: WorkerPorts,
    /// False: the renewal task is leaked at the end of a term (a defect, for the tests).
    careful: bool,
    stop_requested: Cell<bool>,
    running: Cell<bool>,
    /// `stop()` calls waiting for the running term to end.
    stopping: RefCell<Vec<oneshot::Sender<()>>>,
    /// The running term's shared state (for `stop()` to end its renewals).
    current: RefCell<Option<Rc<Shared>>>,
}

impl MyWorker {
    /// A careful worker: its settings are `ports.config`, what the run judges it against.
    pub fn new(ports: WorkerPorts) -> MyWorker {
        MyWorker {
            ports,
            careful: true,
            stop_requested: Cell::new(false),
            running: Cell::new(false),
            stopping: RefCell::new(Vec::new()),
            current: RefCell::new(None),
        }
    }

    /// The defective variant that leaks its renewal task.
    pub fn leaky(ports: WorkerPorts) -> MyWorker {
        MyWorker {
            careful: false,
            ..MyWorker::new(ports)
        }
    }

    async fn term(&self) -> TermReport {
        if self.stop_requested.get() {
            return TermReport::new(TermEnd::StoppedBeforeStart);
        }
        let lease = match self.ports.leases.acquire(&self.ports.owner_id).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return TermReport::new(TermEnd::NotLeader),
            Err(error) => {
                let op = Op::Acquire;
                return TermReport::new(TermEnd::Failed { op, error });
            }
        };
        let shared = Rc::new(Shared::default());
        shared.tokens.borrow_mut().push(lease.fencing_token);
        *shared.lease.borrow_mut() = Some(lease);
        let renewal = self.ports.tasks.spawn(
            "renewal",
            renew_loop(renewal_ports(&self.ports), shared.clone()),
        );
        *shared.renewal.borrow_mut() = Some(renewal);
        *self.current.borrow_mut() = Some(shared.clone());
        let mut report = TermReport::new(TermEnd::Stopped);
        report.end = self.delete_loop(&shared, &mut report).await;
        if self.careful {
            shared.end_renewals();
            let renewal = shared.renewal.borrow_mut().take();
            if let Some(renewal) = renewal {
                renewal.join().await;
            }
        }
        *self.current.borrow_mut() = None;
        report.tokens = shared.tokens.borrow().clone();
        report.renewals = report.tokens.len() as u32 - 1;
        self.release(&shared, &mut report).await;
        report
    }

    /// Deletes batches under the newest lease until the term must end; how it ended.
    async fn delete_loop(&self, shared: &Shared, report: &mut TermReport) -> TermEnd {
        let config = &self.ports.config;
        let cutoff_ms = self
            .ports
            .clock
            .now_ms()
            .saturating_sub(config.retention_ms);
        report.cutoff_ms = Some(cutoff_ms);
        loop {
            if self.stop_requested.get() {
                return TermEnd::Stopped;
            }
            if let Some(cause) = shared.loss.borrow().clone() {
                return TermEnd::LeadershipLost(cause);
            }
            let left_rows = u64::from(config.cap_rows) - report.rows_deleted;
            if left_rows == 0 {
                return TermEnd::CapReached;
            }
            let limit = config.batch_rows.min(left_rows as u32);
            let token = shared
                .lease
                .borrow()
                .as_ref()
                .map_or(0, |l| l.fencing_token);
            match self
                .ports
                .records
                .delete_batch(cutoff_ms, limit, token)
                .await
            {
                Ok(rows) => {
                    report.rows_deleted += u64::from(rows);
                    report.batches += 1;
                    if rows < limit {
                        return TermEnd::Drained;
                    }
                }
                Err(error) => {
                    return TermEnd::Failed {
                        op: Op::Delete,
                        error,
                    };
                }
            }
        }
    }

    /// Releases the newest lease, unless a renewal answered that it is gone.
    async fn release(&self, shared: &Shared, report: &mut TermReport) {
        if matches!(
            report.end,
            TermEnd::LeadershipLost(LossCause::RenewAnsweredNone)
        ) {
            return;
        }
        let latest = shared.lease.borrow().clone();
        if let Some(lease) = latest {
            report.release = Some(self.ports.leases.release(&lease).await);
        }
    }
}

/// The ports the renewal task needs (it outlives no borrow of the worker).
struct RenewalPorts {
    clock: SimClock,
    leases: SimLeases,
    renew_every_ms: u64,
}

fn renewal_ports(ports: &WorkerPorts) -> RenewalPorts {
    RenewalPorts {
        clock: ports.clock.clone(),
        leases: ports.leases.clone(),
        renew_every_ms: ports.config.renew_every_ms,
    }
}

/// Sleep, renew with the newest lease, hand the new one over; one renewal at a time.
async fn renew_loop(ports: RenewalPorts, shared: Rc<Shared>) {
    // The term may end while a renewal is in flight: it then waits for this task, which must
    // not start another sleep.
    while !shared.done.get() {
        ports.clock.sleep(ports.renew_every_ms).await;
        if shared.done.get() {
            return;
        }
        let Some(lease) = shared.lease.borrow().clone() else {
            return;
        };
        shared.renewing.set(true);
        let answer = ports.leases.renew(&lease).await;
        shared.renewing.set(false);
        match answer {
            Ok(Some(renewed)) => {
                shared.tokens.borrow_mut().push(renewed.fencing_token);
                *shared.lease.borrow_mut() = Some(renewed);
            }
            Ok(None) => {
                *shared.loss.borrow_mut() = Some(LossCause::RenewAnsweredNone);
                return;
            }
            Err(error) => {
                *shared.loss.borrow_mut() = Some(LossCause::RenewFailed(error));
                return;
            }
        }
    }
}

impl WorkerUnderTest for MyWorker {
    type Report = Result<TermReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<TermReport, RunError>> {
        Box::pin(async move {
            if self.running.replace(true) {
                return Err(RunError::AlreadyRunning);
            }
            let report = self.term().await;
            self.running.set(false);
            for waiter in self.stopping.borrow_mut().drain(..) {
                let _ = waiter.send(());
            }
            Ok(report)
        })
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move {
            self.stop_requested.set(true);
            if let Some(term) = self.current.borrow().as_ref() {
                term.end_renewals();
            }
            if self.running.get() {
                // The term winds down (it checks the flag before every call) and wakes us.
                let (waiter, woken) = oneshot::channel();
                self.stopping.borrow_mut().push(waiter);
                let _ = woken.await;
            }
        })
    }
}
