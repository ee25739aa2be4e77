//! The production core's ports on a peer's runtime: everything but the network and the
//! timers is shared.
//!
//! Terminology:
//! - *peer time*: [`PeerTime`], the peer's virtual clock and timers (`tokio::time` under
//!   turmoil, `madsim::time` under madsim), in ms since the run began.
//! - *transport*: [`Transport`], one store call over the peer's simulated network: a request
//!   frame out, the answer back, or `None` when no answer came in time.
//! - *replica context*: [`Replica`], what every port of one replica shares: its id, the peer
//!   time, the recorder, its own seeded generator.
//! - *slow leg*: in a workload with slow operations, the store port waits the drawn extra of
//!   the request leg before sending and of the reply leg after receiving
//!   ([`crate::workload::Workload::extra_leg_ms`]); the peer's network adds its own 1-5 ms to
//!   each. The call's timeout counts from the call, as leasesim's does.
//!
//! Each port reports to the recorder what the simulated ports of leasesim record: the clock
//! a timer set, the store a call and its answer, the job its start, steps and end.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

use holder_lock_worker::{
    Clock, HolderToken, Job, JobError, Removal, Renewal, Store, StoreError, TokenSource,
};
use leasesim_events::{NetFailure, OpSet, ReplicaId};
use leasesim_holder_lock::events::{Answer, Key, Note, Request};

use crate::recorder::Recorder;
use crate::rng::Rng;
use crate::wire;
use crate::workload;

/// A peer's virtual clock and timers.
pub trait PeerTime: Clone + 'static {
    /// Virtual ms since the run began.
    fn now_ms(&self) -> u64;
    /// Completes `ms` virtual ms from now.
    fn sleep(&self, ms: u64) -> impl Future<Output = ()>;
}

/// One store call over a peer's network.
pub trait Transport: 'static {
    /// Sends `frame` (call `call`) to the store node; its answer, or `None` when none came
    /// within [`workload::CALL_TIMEOUT_MS`].
    fn round_trip(
        &self,
        call: u64,
        frame: [u8; wire::REQUEST_LEN],
    ) -> impl Future<Output = Option<Answer>>;
}

/// What every port of one replica shares.
pub struct Replica<T: PeerTime> {
    pub id: ReplicaId,
    pub time: T,
    pub recorder: Recorder,
    pub rng: RefCell<Rng>,
    /// Set when the replica's `stop()` is called: its driver starts no further attempt.
    pub stopping: Cell<bool>,
}

impl<T: PeerTime> Replica<T> {
    /// Replica `id` of the run `seed`.
    pub fn new(id: ReplicaId, time: T, recorder: Recorder, seed: u64) -> Rc<Replica<T>> {
        let rng = RefCell::new(Rng::new(seed, u64::from(id.0) + 1));
        Rc::new(Replica {
            id,
            time,
            recorder,
            rng,
            stopping: Cell::new(false),
        })
    }

    pub fn note(&self, note: Note) {
        self.recorder.note(self.id, note, self.time.now_ms());
    }
}

/// The replica's timers (reports each timer set, as leasesim's `SimClock` does).
pub struct PeerClock<T: PeerTime>(pub Rc<Replica<T>>);

impl<T: PeerTime> Clock for PeerClock<T> {
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        let replica = &self.0;
        replica
            .recorder
            .timer_set(replica.id, ms, replica.time.now_ms());
        replica.time.sleep(ms)
    }
}

/// Fresh tokens: a random upper half from the replica's generator, the run's serial below.
pub struct PeerTokens<T: PeerTime>(pub Rc<Replica<T>>);

impl<T: PeerTime> TokenSource for PeerTokens<T> {
    fn fresh(&self) -> HolderToken {
        let random = self.0.rng.borrow_mut().range(1, 0xFF_FFFF);
        HolderToken((random << 32) | u64::from(self.0.recorder.next_serial()))
    }
}

/// The job: drawn like the simulated one, a step every [`workload::STEP_MS`] on peer time.
pub struct PeerJob<T: PeerTime>(pub Rc<Replica<T>>);

impl<T: PeerTime> Job for PeerJob<T> {
    async fn run(&self) -> Result<(), JobError> {
        let replica = &self.0;
        let steps = workload::draw_job(&mut replica.rng.borrow_mut());
        let count = u32::try_from(steps.len()).unwrap_or(u32::MAX);
        let duration_ms = steps.iter().sum();
        replica.note(Note::JobStarted {
            duration_ms,
            steps: count,
        });
        for (step, ms) in (1..).zip(steps) {
            replica.time.sleep(ms).await;
            replica.note(Note::JobStep { step });
        }
        replica.note(Note::JobFinished { steps: count });
        Ok(())
    }
}

/// The replica's store client over the peer's transport.
pub struct PeerStore<T: PeerTime, X: Transport> {
    pub replica: Rc<Replica<T>>,
    pub transport: Rc<X>,
}

fn key_of(name: &str) -> Key {
    Key::from_name(name).unwrap_or_else(|| panic!("the store holds no key `{name}`"))
}

impl<T: PeerTime, X: Transport> PeerStore<T, X> {
    /// Sends `call` over its slow legs if any: its answer, `None` when none came within
    /// [`workload::CALL_TIMEOUT_MS`] of the call.
    async fn legs(&self, call: u64, request: &Request) -> Option<Answer> {
        let replica = &self.replica;
        let (op, workload) = (request.op().name(), workload::current());
        let (out_ms, back_ms) = {
            let mut rng = replica.rng.borrow_mut();
            let out_ms = workload.extra_leg_ms(op, &mut rng);
            (out_ms, workload.extra_leg_ms(op, &mut rng))
        };
        if out_ms == 0 && back_ms == 0 {
            return self
                .transport
                .round_trip(call, wire::encode_request(call, replica.id, request))
                .await;
        }
        let trip = async {
            replica.time.sleep(out_ms).await;
            let frame = wire::encode_request(call, replica.id, request);
            let answer = self.transport.round_trip(call, frame).await?;
            replica.time.sleep(back_ms).await;
            Some(answer)
        };
        let timeout = replica.time.sleep(workload::CALL_TIMEOUT_MS);
        match futures::future::select(std::pin::pin!(trip), std::pin::pin!(timeout)).await {
            futures::future::Either::Left((answer, _)) => answer,
            futures::future::Either::Right(((), _)) => None,
        }
    }

    /// Reports the call, sends it, reports the answer (a missing one as a timeout).
    async fn call(&self, request: Request) -> Result<Answer, StoreError> {
        let replica = &self.replica;
        let call = replica
            .recorder
            .call(replica.id, request, replica.time.now_ms());
        let answer = self.legs(call, &request).await;
        let answer = answer.unwrap_or(Answer::Failed(NetFailure::Timeout));
        let now_ms = replica.time.now_ms();
        replica
            .recorder
            .answered(replica.id, call, request.op(), answer, now_ms);
        match answer {
            Answer::Failed(NetFailure::Timeout) => Err(StoreError::Timeout),
            Answer::Failed(NetFailure::Rejected) => Err(StoreError::Unavailable {
                reason: "refused".into(),
            }),
            Answer::Unsupported => Err(StoreError::Unsupported),
            answer => Ok(answer),
        }
    }
}

impl<T: PeerTime, X: Transport> Store for PeerStore<T, X> {
    async fn create_if_absent(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<bool, StoreError> {
        let request = Request::Create {
            key: key_of(key),
            token: token.0,
            lifetime_ms,
        };
        Ok(self.call(request).await? == Answer::Created)
    }

    async fn renew_if_holder(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<Renewal, StoreError> {
        let request = Request::Renew {
            key: key_of(key),
            token: token.0,
            lifetime_ms,
        };
        Ok(match self.call(request).await? {
            Answer::Renewed => Renewal::Renewed,
            Answer::NotHolder => Renewal::NotHolder,
            _ => Renewal::Absent,
        })
    }

    async fn delete_if_holder(&self, key: &str, token: HolderToken) -> Result<Removal, StoreError> {
        let request = Request::DeleteIfHolder {
            key: key_of(key),
            token: token.0,
        };
        Ok(match self.call(request).await? {
            Answer::Deleted => Removal::Deleted,
            Answer::NotHolder => Removal::NotHolder,
            _ => Removal::Absent,
        })
    }

    async fn get(&self, key: &str) -> Result<Option<HolderToken>, StoreError> {
        match self.call(Request::Get { key: key_of(key) }).await? {
            Answer::Value(token) => Ok(Some(HolderToken(token))),
            _ => Ok(None),
        }
    }

    async fn delete(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.call(Request::Delete { key: key_of(key) }).await? == Answer::Deleted)
    }

    async fn set(&self, key: &str, token: HolderToken, lifetime_ms: u64) -> Result<(), StoreError> {
        let request = Request::Set {
            key: key_of(key),
            token: token.0,
            lifetime_ms,
        };
        self.call(request).await.map(|_| ())
    }

    fn compare_and_delete(&self) -> bool {
        true
    }
}
