//! The worker's futures polled by hand, with no runtime at all: each is polled only when the
//! test decides. A pending `stop` must be woken when the attempt it waits for settles (an
//! executor that polls only on wake-ups would otherwise wait forever).

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn, ready};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use holder_lock_worker::{
    AttemptEnd, ClaimConfig, Clock, HolderToken, Job, JobError, JobRunner, Release, Removal,
    Renewal, RunError, Store, StoreError, TokenSource,
};

#[derive(Debug, PartialEq, Eq)]
enum Call {
    Create,
    DeleteIfHolder(u64),
    Other,
}

/// Ports whose create answers once `gate` is open; every other call answers at once; timers
/// never fire; the job is done at once.
#[derive(Default)]
struct HandPorts {
    gate: Cell<bool>,
    calls: RefCell<Vec<Call>>,
}

impl Store for &HandPorts {
    fn create_if_absent(
        &self,
        _: &str,
        _: HolderToken,
        _: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> {
        self.calls.borrow_mut().push(Call::Create);
        poll_fn(|_| match self.gate.get() {
            true => Poll::Ready(Ok(true)),
            false => Poll::Pending,
        })
    }
    fn renew_if_holder(
        &self,
        _: &str,
        _: HolderToken,
        _: u64,
    ) -> impl Future<Output = Result<Renewal, StoreError>> {
        self.calls.borrow_mut().push(Call::Other);
        ready(Ok(Renewal::Renewed))
    }
    fn delete_if_holder(
        &self,
        _: &str,
        token: HolderToken,
    ) -> impl Future<Output = Result<Removal, StoreError>> {
        self.calls.borrow_mut().push(Call::DeleteIfHolder(token.0));
        ready(Ok(Removal::Deleted))
    }
    fn get(&self, _: &str) -> impl Future<Output = Result<Option<HolderToken>, StoreError>> {
        self.calls.borrow_mut().push(Call::Other);
        ready(Ok(None))
    }
    fn delete(&self, _: &str) -> impl Future<Output = Result<bool, StoreError>> {
        self.calls.borrow_mut().push(Call::Other);
        ready(Ok(false))
    }
    fn set(&self, _: &str, _: HolderToken, _: u64) -> impl Future<Output = Result<(), StoreError>> {
        self.calls.borrow_mut().push(Call::Other);
        ready(Ok(()))
    }
    fn compare_and_delete(&self) -> bool {
        true
    }
}

impl Clock for &HandPorts {
    fn sleep(&self, _: u64) -> impl Future<Output = ()> {
        poll_fn(|_| Poll::Pending)
    }
}

impl TokenSource for &HandPorts {
    fn fresh(&self) -> HolderToken {
        HolderToken(7)
    }
}

impl Job for &HandPorts {
    fn run(&self) -> impl Future<Output = Result<(), JobError>> {
        ready(Ok(()))
    }
}

struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn worker(ports: &HandPorts) -> JobRunner<&HandPorts, &HandPorts, &HandPorts, &HandPorts> {
    JobRunner::new(ClaimConfig::default(), ports, ports, ports, ports).expect("valid")
}

#[test]
fn an_attempt_with_immediate_ports_wakes_itself_and_completes_on_the_next_poll() {
    let ports = HandPorts::default();
    ports.gate.set(true);
    let worker = worker(&ports);
    let wakes = Arc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    let mut run = pin!(worker.run());
    // The job ends within the first poll; the keeper, polled before it, learns so when woken.
    assert!(run.as_mut().poll(&mut cx).is_pending());
    assert!(
        wakes.0.load(Ordering::SeqCst) >= 1,
        "the job's end woke the attempt"
    );
    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut cx) else {
        panic!("nothing left to wait for");
    };
    assert_eq!(report.end, AttemptEnd::JobDone);
    assert_eq!(report.release, Some(Release::Deleted));
    assert_eq!(
        *ports.calls.borrow(),
        vec![Call::Create, Call::DeleteIfHolder(7)]
    );
}

#[test]
fn run_and_stop_polled_by_hand_settle_and_wake_each_other() {
    let ports = HandPorts::default();
    let worker = worker(&ports);
    let stop_wakes = Arc::new(Counting(AtomicUsize::new(0)));
    let stop_waker = Waker::from(stop_wakes.clone());
    let mut stop_cx = Context::from_waker(&stop_waker);
    let mut run_cx = Context::from_waker(Waker::noop());

    let mut run = pin!(worker.run());
    assert!(
        run.as_mut().poll(&mut run_cx).is_pending(),
        "the create is gated"
    );
    let mut stop = pin!(worker.stop());
    assert!(
        stop.as_mut().poll(&mut stop_cx).is_pending(),
        "an attempt is active"
    );
    let mut second = pin!(worker.run());
    assert_eq!(
        second.as_mut().poll(&mut run_cx),
        Poll::Ready(Err(RunError::AlreadyRunning))
    );

    ports.gate.set(true);
    assert_eq!(stop_wakes.0.load(Ordering::SeqCst), 0);
    let Poll::Ready(Ok(report)) = run.as_mut().poll(&mut run_cx) else {
        panic!("the attempt settles in one poll once the create answers");
    };
    assert_eq!(report.end, AttemptEnd::Stopped);
    assert_eq!(report.release, Some(Release::Deleted));
    assert!(
        stop_wakes.0.load(Ordering::SeqCst) >= 1,
        "the stop was woken"
    );
    assert_eq!(stop.as_mut().poll(&mut stop_cx), Poll::Ready(()));
    assert_eq!(
        *ports.calls.borrow(),
        vec![Call::Create, Call::DeleteIfHolder(7)]
    );
}
