//! A replica: its clock, its process (which can be paused), and the ports its worker uses.
//!
//! Terminology:
//! - *local time*: what this replica's clock reads: [`EPOCH_MS`] + virtual time + offset +
//!   drift (ppm of elapsed time) + the sum of clock jumps so far.
//! - *gate*: a paused process runs no code. Every port crossing (sending a request, receiving
//!   an answer, waking from a sleep) waits at the gate until the pause ends, so a pause between
//!   reading a token and sending a delete makes the delete leave late, with an old token.
//! - *ports*: [`SimClock`], [`SimLeases`], [`SimRecords`]: the worker's view of the world.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

use lease_worker::{Clock, Lease, Leases, PortError, Records};
use leasesim_events::{Answer, EventKind, Failure, LeaseView, OpKind, ReplicaId, Request};

use crate::adapter::WorkerUnderTest;
use crate::env::{EPOCH_MS, Env};
use crate::profile::ClockSpec;
use crate::signal::Signal;
use crate::world::World;

/// Per-replica state kept by the world.
pub struct ReplicaState {
    pub id: ReplicaId,
    clock: ClockSpec,
    jumped_ms: Cell<i64>,
    paused_until_ms: Cell<u64>,
    in_flight: Cell<[u16; 4]>,
    between_terms: Cell<bool>,
    /// Notified whenever a call starts or ends, or a term starts or ends.
    pub changed: Signal,
    pub stop_called: Cell<bool>,
    pub stop_resolved: Cell<bool>,
    pub worker: RefCell<Option<Rc<dyn WorkerUnderTest>>>,
}

impl ReplicaState {
    pub fn new(id: ReplicaId, clock: ClockSpec) -> ReplicaState {
        ReplicaState {
            id,
            clock,
            jumped_ms: Cell::new(0),
            paused_until_ms: Cell::new(0),
            in_flight: Cell::new([0; 4]),
            between_terms: Cell::new(true),
            changed: Signal::default(),
            stop_called: Cell::new(false),
            stop_resolved: Cell::new(false),
            worker: RefCell::new(None),
        }
    }

    /// This replica's clock reading at virtual instant `virtual_ms`.
    pub fn local_ms(&self, virtual_ms: u64) -> u64 {
        let elapsed = virtual_ms as i128;
        let drift = elapsed * i128::from(self.clock.drift_ppm) / 1_000_000;
        let local = i128::from(EPOCH_MS)
            + elapsed
            + i128::from(self.clock.offset_ms)
            + drift
            + i128::from(self.jumped_ms.get());
        local.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// Virtual ms that pass while this clock advances `local_ms`.
    pub fn virtual_span_ms(&self, local_ms: u64) -> u64 {
        let rate = 1_000_000 + self.clock.drift_ppm;
        debug_assert!(rate > 0, "drift below -100% would stop the clock");
        let scaled = u128::from(local_ms) * 1_000_000;
        let span_ms = scaled
            .div_ceil(rate.max(1) as u128)
            .min(u128::from(u64::MAX)) as u64;
        // invariant: a sleep never ends before this clock has advanced `local_ms` (rounded up).
        debug_assert!(span_ms == u64::MAX || u128::from(span_ms) * rate.max(1) as u128 >= scaled);
        span_ms
    }

    pub fn jump(&self, by_ms: i64) {
        self.jumped_ms
            .set(self.jumped_ms.get().saturating_add(by_ms));
    }

    /// Pauses the process until virtual instant `until_ms` (extends a running pause).
    pub fn pause_until(&self, until_ms: u64) {
        self.paused_until_ms
            .set(self.paused_until_ms.get().max(until_ms));
        // invariant: a pause only ever extends; it never shortens a running one.
        debug_assert!(self.paused_until_ms.get() >= until_ms);
    }

    /// Waits while the process is paused.
    pub async fn gate(&self, env: &dyn Env) {
        loop {
            let until = self.paused_until_ms.get();
            if env.now_ms() >= until {
                // invariant: nothing of a paused process passes the gate.
                debug_assert!(env.now_ms() >= self.paused_until_ms.get());
                return;
            }
            env.sleep_until(until).await;
        }
    }

    pub fn in_flight(&self, op: OpKind) -> u16 {
        self.in_flight.get()[op as usize]
    }

    fn adjust_in_flight(&self, op: OpKind, up: bool) {
        let mut counts = self.in_flight.get();
        let slot = &mut counts[op as usize];
        // invariant: a call leaves flight only after it entered it.
        debug_assert!(up || *slot > 0);
        *slot = if up { *slot + 1 } else { *slot - 1 };
        self.in_flight.set(counts);
        self.changed.notify();
    }

    pub fn is_between_terms(&self) -> bool {
        self.between_terms.get()
    }

    pub fn set_between_terms(&self, between: bool) {
        self.between_terms.set(between);
        self.changed.notify();
    }
}

/// Marks a call in flight for as long as the worker waits for it (or until it gives up).
struct InFlight<'a> {
    replica: &'a ReplicaState,
    op: OpKind,
}

impl<'a> InFlight<'a> {
    fn enter(replica: &'a ReplicaState, op: OpKind) -> InFlight<'a> {
        replica.adjust_in_flight(op, true);
        InFlight { replica, op }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.replica.adjust_in_flight(self.op, false);
    }
}

/// What a worker is given: one replica's view of the world.
#[derive(Clone)]
pub struct Port {
    world: Rc<World>,
    replica: ReplicaId,
}

impl Port {
    pub(crate) fn new(world: Rc<World>, replica: ReplicaId) -> Port {
        Port { world, replica }
    }

    fn state(&self) -> &ReplicaState {
        self.world.replica(self.replica)
    }

    /// Sends `request` and waits for the answer, as this replica's process.
    async fn call(&self, request: Request, owner_id: &str) -> Answer {
        let env = self.world.env();
        let state = self.state();
        state.gate(env).await;
        let call = self.world.next_call_id();
        // invariant: a request leaves only from a running process.
        debug_assert!(env.now_ms() >= state.paused_until_ms.get());
        env.emit_for(self.replica, EventKind::Call { call, request });
        let _flight = InFlight::enter(state, request.op());
        let answer = self
            .world
            .clone()
            .send(self.replica, call, request, owner_id.to_string())
            .await;
        state.gate(env).await;
        env.emit_for(
            self.replica,
            EventKind::Answered {
                call,
                op: request.op(),
                answer,
            },
        );
        answer
    }
}

fn port_error(failure: Failure, token: u64) -> PortError {
    match failure {
        Failure::Rejected => PortError::Rejected {
            reason: "refused by fault injection".into(),
        },
        Failure::Timeout => PortError::Timeout,
        Failure::StaleToken => PortError::StaleToken { token },
    }
}

fn view(lease: &Lease) -> LeaseView {
    LeaseView {
        token: lease.fencing_token,
        expires_at_ms: lease.expires_at_ms,
    }
}

fn lease_answer(answer: Answer, owner_id: &str) -> Result<Option<Lease>, PortError> {
    match answer {
        Answer::Lease(lease) => Ok(lease.map(|v| Lease {
            owner_id: owner_id.to_string(),
            fencing_token: v.token,
            expires_at_ms: v.expires_at_ms,
        })),
        Answer::Failed(failure) => Err(port_error(failure, 0)),
        other => unreachable!("lease call answered {other:?}"),
    }
}

/// The replica's clock port.
#[derive(Clone)]
pub struct SimClock(pub(crate) Port);

/// The replica's lease-service port.
#[derive(Clone)]
pub struct SimLeases(pub(crate) Port);

/// The replica's record-store port.
#[derive(Clone)]
pub struct SimRecords(pub(crate) Port);

macro_rules! replica_of {
    ($($port:ident),*) => {$(
        impl $port {
            /// The replica this port belongs to.
            pub fn replica(&self) -> ReplicaId {
                self.0.replica
            }
        }
    )*};
}

replica_of!(SimClock, SimLeases, SimRecords);

impl Clock for SimClock {
    fn now_ms(&self) -> u64 {
        let port = &self.0;
        let env = port.world.env();
        let now_ms = port.state().local_ms(env.now_ms());
        env.emit_for(port.replica, EventKind::ClockRead { now_ms });
        now_ms
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        let port = self.0.clone();
        async move {
            let env = port.world.env();
            env.emit_for(port.replica, EventKind::TimerSet { duration_ms: ms });
            let state = port.state();
            match state.virtual_span_ms(ms) {
                // A zero-length sleep still yields: a worker polling `sleep(0)` in a loop lets
                // the others run, and the executor's instant budget catches it if it spins.
                0 => env.yield_now().await,
                span_ms => env.sleep(span_ms).await,
            }
            state.gate(env).await;
        }
    }
}

impl Leases for SimLeases {
    fn acquire(&self, owner_id: &str) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        let owner_id = owner_id.to_string();
        async move { lease_answer(self.0.call(Request::Acquire, &owner_id).await, &owner_id) }
    }

    fn renew(&self, lease: &Lease) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        let lease = lease.clone();
        async move {
            let request = Request::Renew {
                lease: view(&lease),
            };
            lease_answer(self.0.call(request, &lease.owner_id).await, &lease.owner_id)
        }
    }

    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>> {
        let lease = lease.clone();
        async move {
            match self
                .0
                .call(
                    Request::Release {
                        lease: view(&lease),
                    },
                    &lease.owner_id,
                )
                .await
            {
                Answer::Released => Ok(()),
                Answer::Failed(failure) => Err(port_error(failure, lease.fencing_token)),
                other => unreachable!("release answered {other:?}"),
            }
        }
    }
}

impl Records for SimRecords {
    async fn delete_batch(
        &self,
        older_than_ms: u64,
        limit: u32,
        fencing_token: u64,
    ) -> Result<u32, PortError> {
        let request = Request::Delete {
            older_than_ms,
            limit,
            token: fencing_token,
        };
        let owner_id = self.0.replica.owner_id();
        match self.0.call(request, &owner_id).await {
            Answer::Rows(rows) => Ok(rows),
            Answer::Failed(failure) => Err(port_error(failure, fencing_token)),
            other => unreachable!("delete answered {other:?}"),
        }
    }
}
