//! The worker's futures polled by hand, with no runtime at all: a future is polled only when
//! the test says, and the test checks that a pending `stop` is woken when the run it waits
//! for settles (an executor that polls only on wake-ups would otherwise hang).

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use work_items_worker::{
    ApplyAck, ClaimError, Clock, Effect, IdempotencyKey, ItemError, ItemId, ItemOutcome,
    ItemWorker, Lease, Lookup, Provider, ProviderAck, ProviderError, RunEnd, RunError, RunStatus,
    Store, Transport, WorkerConfig, WriteError,
};

/// Ports that answer at once, except a claim, which answers only once `gate` is open. A
/// sleep never completes.
#[derive(Default)]
struct HandPorts {
    gate: Cell<bool>,
    calls: RefCell<Vec<&'static str>>,
    done: Cell<bool>,
}

impl HandPorts {
    fn log(&self, call: &'static str) {
        self.calls.borrow_mut().push(call);
    }
}

impl Clock for &HandPorts {
    fn now_ms(&self) -> u64 {
        5
    }
    fn sleep(&self, _ms: u64) -> impl Future<Output = ()> {
        poll_fn(|_| Poll::Pending)
    }
}

impl Store for &HandPorts {
    async fn next_claimable(&self, _: Option<ItemId>) -> Result<Option<ItemId>, Transport> {
        self.log("find");
        Ok((!self.done.get()).then_some(ItemId(0)))
    }
    fn claim(
        &self,
        item: ItemId,
        _: &str,
        _: u64,
        _: u64,
    ) -> impl Future<Output = Result<Lease, ClaimError>> {
        self.log("claim");
        poll_fn(move |_| match self.gate.get() {
            true => Poll::Ready(Ok(Lease {
                item,
                token: 4,
                expires_at_ms: 1_000,
                attempt: 1,
                chunks: 1,
            })),
            false => Poll::Pending,
        })
    }
    async fn renew_if_owner(&self, _: ItemId, _: u64, _: u64, _: u64) -> Result<u64, WriteError> {
        self.log("renew");
        Ok(1_000)
    }
    async fn apply_if_owner(
        &self,
        _: ItemId,
        _: u64,
        _: u64,
        _: Effect,
    ) -> Result<ApplyAck, WriteError> {
        self.log("apply");
        Ok(ApplyAck::Applied)
    }
    async fn mark_done_if_owner(&self, _: ItemId, _: u64, _: u64) -> Result<(), WriteError> {
        self.log("done");
        self.done.set(true);
        Ok(())
    }
    async fn release_if_owner(
        &self,
        _: ItemId,
        _: u64,
        _: u64,
        _: ItemError,
    ) -> Result<(), WriteError> {
        self.log("release");
        Ok(())
    }
    async fn fail_if_owner(
        &self,
        _: ItemId,
        _: u64,
        _: u64,
        _: ItemError,
    ) -> Result<(), WriteError> {
        self.log("fail");
        Ok(())
    }
    async fn status(&self) -> Result<RunStatus, Transport> {
        self.log("status");
        Ok(RunStatus {
            open: 0,
            done: 1,
            failed: 0,
        })
    }
}

impl Provider for &HandPorts {
    async fn apply(&self, _: IdempotencyKey, _: ItemId) -> Result<ProviderAck, ProviderError> {
        self.log("provider");
        Ok(ProviderAck::Applied)
    }
    async fn lookup(&self, _: IdempotencyKey) -> Result<Lookup, Transport> {
        self.log("lookup");
        Ok(Lookup::Unknown)
    }
}

struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn worker(ports: &HandPorts) -> ItemWorker<&HandPorts, &HandPorts, &HandPorts> {
    ItemWorker::new("w1", WorkerConfig::default(), ports, ports, ports).expect("valid config")
}

#[test]
fn run_and_stop_polled_by_hand_settle_and_wake_each_other() {
    let ports = HandPorts::default();
    let worker = worker(&ports);
    let stop_wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let stop_waker = Waker::from(stop_wakes.clone());
    let mut stop_cx = Context::from_waker(&stop_waker);
    let mut run_cx = Context::from_waker(Waker::noop());

    let mut run = pin!(worker.run());
    assert!(
        run.as_mut().poll(&mut run_cx).is_pending(),
        "the claim is gated"
    );
    let mut stop = pin!(worker.stop());
    assert!(
        stop.as_mut().poll(&mut stop_cx).is_pending(),
        "a run is active"
    );
    let mut overlapping = pin!(worker.run());
    assert_eq!(
        overlapping.as_mut().poll(&mut run_cx),
        Poll::Ready(Err(RunError::AlreadyRunning))
    );

    ports.gate.set(true);
    assert_eq!(stop_wakes.0.load(Ordering::SeqCst), 0);
    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut run_cx) else {
        panic!("the run settles in one poll once the claim answers");
    };
    assert_eq!(report.end, RunEnd::Stopped);
    assert_eq!(
        report.items[0].outcome,
        ItemOutcome::Released(ItemError::Stopped)
    );
    assert!(
        stop_wakes.0.load(Ordering::SeqCst) >= 1,
        "the pending stop was woken"
    );
    assert_eq!(stop.as_mut().poll(&mut stop_cx), Poll::Ready(()));
    assert_eq!(*ports.calls.borrow(), ["find", "claim", "release"]);
}

#[test]
fn a_run_with_immediate_ports_completes_in_one_poll() {
    let ports = HandPorts::default();
    ports.gate.set(true);
    let worker = worker(&ports);
    let mut cx = Context::from_waker(Waker::noop());
    let mut run = pin!(worker.run());
    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut cx) else {
        panic!("nothing to wait for");
    };
    assert_eq!(report.end, RunEnd::Complete);
    assert_eq!(
        *ports.calls.borrow(),
        [
            "find", "claim", "apply", "provider", "done", "find", "status"
        ]
    );
    let mut stop = pin!(worker.stop());
    assert_eq!(
        stop.as_mut().poll(&mut cx),
        Poll::Ready(()),
        "no run is active"
    );
}
