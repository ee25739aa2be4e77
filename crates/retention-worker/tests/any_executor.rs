//! The worker's futures driven by hand, with no runtime at all: each is polled only when the
//! test decides, and the test checks that the waker of a pending `stop` is woken when the run
//! it waits for settles (an executor that polls only on wake-ups would otherwise hang).

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use retention_worker::{
    Clock, Lease, Leases, PortError, Records, RetentionWorker, RunError, TermEnd, WorkerConfig,
};

#[derive(Debug, PartialEq, Eq)]
enum Call {
    Acquire,
    Renew,
    Release(u64),
    Delete,
}

/// Ports whose acquire answers only once `gate` is open; a sleep never completes.
#[derive(Default)]
struct HandPorts {
    gate: Cell<bool>,
    calls: RefCell<Vec<Call>>,
}

impl Clock for &HandPorts {
    fn now_ms(&self) -> u64 {
        1_000
    }
    fn sleep(&self, _ms: u64) -> impl Future<Output = ()> {
        poll_fn(|_| Poll::Pending)
    }
}

impl Leases for &HandPorts {
    fn acquire(&self, _owner: &str) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        self.calls.borrow_mut().push(Call::Acquire);
        poll_fn(|_| {
            if self.gate.get() {
                let lease = Lease {
                    owner_id: "w1".into(),
                    fencing_token: 9,
                    expires_at_ms: 1,
                };
                Poll::Ready(Ok(Some(lease)))
            } else {
                Poll::Pending
            }
        })
    }
    fn renew(&self, _lease: &Lease) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        self.calls.borrow_mut().push(Call::Renew);
        std::future::ready(Ok(None))
    }
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>> {
        self.calls
            .borrow_mut()
            .push(Call::Release(lease.fencing_token));
        std::future::ready(Ok(()))
    }
}

impl Records for &HandPorts {
    fn delete_batch(&self, _: u64, _: u32, _: u64) -> impl Future<Output = Result<u32, PortError>> {
        self.calls.borrow_mut().push(Call::Delete);
        std::future::ready(Ok(0))
    }
}

struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn run_and_stop_polled_by_hand_settle_and_wake_each_other() {
    let ports = HandPorts::default();
    let worker = RetentionWorker::new("w1", WorkerConfig::default(), &ports, &ports, &ports)
        .expect("valid config");
    let stop_wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let stop_waker = Waker::from(stop_wakes.clone());
    let mut stop_cx = Context::from_waker(&stop_waker);
    let mut run_cx = Context::from_waker(Waker::noop());

    let mut run = pin!(worker.run());
    assert!(
        run.as_mut().poll(&mut run_cx).is_pending(),
        "acquire is gated"
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
    assert!(
        stop.as_mut().poll(&mut stop_cx).is_pending(),
        "run has not been polled yet"
    );
    assert_eq!(stop_wakes.0.load(Ordering::SeqCst), 0);

    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut run_cx) else {
        panic!("the run settles in one poll once acquire answers");
    };
    assert_eq!(report.end, TermEnd::Stopped);
    assert_eq!(report.release, Some(Ok(())));
    assert!(
        stop_wakes.0.load(Ordering::SeqCst) >= 1,
        "the pending stop was woken"
    );
    assert_eq!(stop.as_mut().poll(&mut stop_cx), Poll::Ready(()));
    assert_eq!(*ports.calls.borrow(), vec![Call::Acquire, Call::Release(9)]);
}

#[test]
fn a_term_with_immediate_ports_completes_in_one_poll() {
    let ports = HandPorts::default();
    ports.gate.set(true);
    let worker = RetentionWorker::new("w1", WorkerConfig::default(), &ports, &ports, &ports)
        .expect("valid config");
    let mut cx = Context::from_waker(Waker::noop());

    let mut run = pin!(worker.run());
    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut cx) else {
        panic!("nothing to wait for");
    };
    assert_eq!(report.end, TermEnd::Drained);
    assert_eq!(report.cutoff_ms, Some(0), "1 s minus 7 days saturates at 0");
    assert_eq!(
        *ports.calls.borrow(),
        vec![Call::Acquire, Call::Delete, Call::Release(9)]
    );
    let mut stop = pin!(worker.stop());
    assert_eq!(
        stop.as_mut().poll(&mut cx),
        Poll::Ready(()),
        "no run is active"
    );
}
