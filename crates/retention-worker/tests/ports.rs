//! The ports as the worker sees them: the forwarding impls that let one port be shared by
//! reference or by `Rc`, and the messages of the errors a caller may print.
//!
//! Terminology:
//! - *forwarding impl*: `impl Clock for &T` / `impl Clock for Rc<T>` (and the same for the
//!   lease service and the store): every call goes to the port behind the pointer, unchanged.
//! - *noted port*: a port fake that notes each call it receives, so a test sees what arrived.

use std::cell::RefCell;
use std::future::{Future, ready};
use std::rc::Rc;

use futures::FutureExt;
use retention_worker::{Clock, Lease, Leases, PortError, Records, RunError};

/// A port fake behind every trait: the clock reads `now_ms`; every call is noted.
struct NotedPort {
    now_ms: u64,
    calls: RefCell<Vec<String>>,
}

impl NotedPort {
    fn new(now_ms: u64) -> NotedPort {
        NotedPort {
            now_ms,
            calls: RefCell::new(Vec::new()),
        }
    }

    fn note(&self, call: String) {
        self.calls.borrow_mut().push(call);
    }
}

impl Clock for NotedPort {
    fn now_ms(&self) -> u64 {
        self.note("now".to_owned());
        self.now_ms
    }
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        self.note(format!("sleep {ms}"));
        ready(())
    }
}

impl Leases for NotedPort {
    fn acquire(&self, owner_id: &str) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        self.note(format!("acquire {owner_id}"));
        ready(Ok(Some(lease(7))))
    }
    fn renew(&self, lease: &Lease) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        self.note(format!("renew {}", lease.fencing_token));
        ready(Ok(None))
    }
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>> {
        self.note(format!("release {}", lease.fencing_token));
        ready(Err(PortError::Timeout))
    }
}

impl Records for NotedPort {
    fn delete_batch(
        &self,
        older_than_ms: u64,
        limit: u32,
        fencing_token: u64,
    ) -> impl Future<Output = Result<u32, PortError>> {
        self.note(format!("delete {older_than_ms} {limit} {fencing_token}"));
        ready(Ok(limit - 1))
    }
}

fn lease(token: u64) -> Lease {
    Lease {
        owner_id: "w1".to_owned(),
        fencing_token: token,
        expires_at_ms: 5_000,
    }
}

/// Every port call once through `port`; returns what each answered, in order.
fn use_every_port<P: Clock + Leases + Records>(port: P) -> Vec<String> {
    vec![
        format!("{}", port.now_ms()),
        format!("{:?}", port.sleep(40).now_or_never()),
        format!("{:?}", port.acquire("w1").now_or_never()),
        format!("{:?}", port.renew(&lease(8)).now_or_never()),
        format!("{:?}", port.release(&lease(9)).now_or_never()),
        format!("{:?}", port.delete_batch(123, 50, 9).now_or_never()),
    ]
}

#[test]
fn a_port_behind_a_reference_or_an_rc_answers_as_the_port_itself() {
    let direct = NotedPort::new(1_234_567);
    let expected = use_every_port(&direct);
    assert_eq!(
        expected[..3],
        [
            "1234567".to_owned(),
            "Some(())".to_owned(),
            format!("{:?}", Some(Ok::<_, PortError>(Some(lease(7))))),
        ]
    );
    let calls = [
        "now",
        "sleep 40",
        "acquire w1",
        "renew 8",
        "release 9",
        "delete 123 50 9",
    ];
    assert_eq!(*direct.calls.borrow(), calls);

    let shared = Rc::new(NotedPort::new(1_234_567));
    assert_eq!(use_every_port(Rc::clone(&shared)), expected);
    assert_eq!(*shared.calls.borrow(), calls);
}

#[test]
fn error_messages_say_what_went_wrong() {
    let rejected = PortError::Rejected {
        reason: "overloaded".to_owned(),
    };
    assert_eq!(rejected.to_string(), "request rejected: overloaded");
    assert_eq!(
        PortError::Timeout.to_string(),
        "no answer (the request may or may not have been applied)"
    );
    assert_eq!(
        PortError::StaleToken { token: 41 }.to_string(),
        "fencing token 41 is not current"
    );
    assert_eq!(
        RunError::AlreadyRunning.to_string(),
        "a term of this worker is already running"
    );
}
