//! The worker's futures driven by hand, with no runtime at all: each is polled only when the
//! test decides. A pending `stop` must be woken when the run it waits for settles (an
//! executor that polls only on wake-ups would otherwise hang).

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use reservations_worker::{
    ClaimToken, Clock, DeadLetter, DeadLetters, ExpireOutcome, ExpiryWorker, Now, Reservation,
    ReservationId, RunEnd, Status, Store, StoreError, Tokens, WorkerConfig,
};

/// Ports whose first claim answers one reservation, and only once `gate` is open (later
/// claims answer nothing); a sleep never ends.
#[derive(Default)]
struct HandPorts {
    gate: Cell<bool>,
    claims: Cell<u32>,
    calls: RefCell<Vec<String>>,
}

impl Store for &HandPorts {
    fn claim_expired(
        &self,
        _: u32,
        _: Now,
        token: ClaimToken,
        _: u64,
    ) -> impl Future<Output = Result<Vec<Reservation>, StoreError>> {
        self.calls.borrow_mut().push(format!("claim {}", token.0));
        let first = self.claims.replace(self.claims.get() + 1) == 0;
        poll_fn(move |_| match (self.gate.get(), first) {
            (false, _) => Poll::Pending,
            (true, false) => Poll::Ready(Ok(Vec::new())),
            (true, true) => Poll::Ready(Ok(vec![Reservation {
                id: ReservationId(8),
                status: Status::Held,
                hold_until_ms: 0,
                claim_token: Some(token),
                claim_until_ms: Some(1),
            }])),
        })
    }
    fn expire_if_held(
        &self,
        id: ReservationId,
        _: Now,
    ) -> impl Future<Output = Result<ExpireOutcome, StoreError>> {
        self.calls.borrow_mut().push(format!("expire {}", id.0));
        std::future::ready(Ok(ExpireOutcome::Expired))
    }
    fn release_claim(
        &self,
        id: ReservationId,
        token: ClaimToken,
    ) -> impl Future<Output = Result<(), StoreError>> {
        self.calls
            .borrow_mut()
            .push(format!("release {} {}", id.0, token.0));
        std::future::ready(Ok(()))
    }
}

impl DeadLetters for &HandPorts {
    fn record(&self, _: DeadLetter) -> impl Future<Output = Result<(), StoreError>> {
        std::future::ready(Ok(()))
    }
}

impl Clock for &HandPorts {
    fn now_ms(&self) -> u64 {
        1_000
    }
    fn sleep_jittered(&self, _: u64, _: u64) -> impl Future<Output = ()> {
        poll_fn(|_| Poll::Pending)
    }
}

impl Tokens for &HandPorts {
    fn fresh_token(&self) -> ClaimToken {
        ClaimToken(self.calls.borrow().len() as u64 + 1)
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
    let worker = ExpiryWorker::new(WorkerConfig::default(), &ports, &ports, &ports, &ports)
        .expect("the default configuration is valid");
    let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let stop_waker = Waker::from(wakes.clone());
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
    assert_eq!(wakes.0.load(Ordering::SeqCst), 0);

    ports.gate.set(true);
    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut run_cx) else {
        panic!("the run settles in one poll once the claim answers");
    };
    assert_eq!(
        (report.end, report.claimed, report.abandoned),
        (RunEnd::Stopped, 1, 1)
    );
    assert!(
        wakes.0.load(Ordering::SeqCst) >= 1,
        "the pending stop was woken"
    );
    assert_eq!(stop.as_mut().poll(&mut stop_cx), Poll::Ready(()));
    assert_eq!(*ports.calls.borrow(), ["claim 1", "release 8 1"]);
}

#[test]
fn an_idle_worker_is_stopped_from_its_pause_in_one_poll() {
    let ports = HandPorts::default();
    ports.gate.set(true);
    let worker =
        ExpiryWorker::new(WorkerConfig::default(), &ports, &ports, &ports, &ports).expect("valid");
    let mut cx = Context::from_waker(Waker::noop());
    let mut run = pin!(worker.run());
    assert!(
        run.as_mut().poll(&mut cx).is_pending(),
        "a batch, an empty claim, a pause"
    );
    let mut stop = pin!(worker.stop());
    assert!(stop.as_mut().poll(&mut cx).is_pending());
    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut cx) else {
        panic!("a stopped pause ends the run");
    };
    assert_eq!((report.expired, report.polls), (1, 2));
    assert_eq!(stop.as_mut().poll(&mut cx), Poll::Ready(()));
}
