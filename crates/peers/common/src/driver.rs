//! A replica's life on a peer: the driver loop calling `run()`, and the stop at the end.
//!
//! Terminology:
//! - *driver*: waits a gap drawn from the workload's `run_every_ms`, notes the attempt's start,
//!   awaits `run()`, notes its end with what the report says (as leasesim's driver does),
//!   until the replica is stopping (checked after each gap, as leasesim's driver does) or an
//!   attempt reports the worker stopped before it started.
//! - *stopper*: at [`workload::STOP_AT_MS`] calls `stop()` and notes its call and return.

use std::rc::Rc;

use holder_lock_worker::AttemptEnd;
use leasesim_holder_lock::driver::ended;
use leasesim_holder_lock::events::Note;

use crate::ports::{PeerTime, Replica};
use crate::workers::PeerWorker;
use crate::workload;

/// Calls `run()` until the worker answers it was stopped before the attempt started.
pub async fn drive<T: PeerTime>(replica: Rc<Replica<T>>, worker: Rc<dyn PeerWorker>) {
    for attempt in 1.. {
        let (min, max) = workload::current().run_every_ms;
        let gap = replica.rng.borrow_mut().range(min, max);
        replica.time.sleep(gap).await;
        if replica.stopping.get() {
            return;
        }
        replica.note(Note::AttemptStarted { attempt });
        let result = worker.run().await;
        replica.note(ended(attempt, &result));
        if matches!(&result, Ok(report) if report.end == AttemptEnd::StoppedBeforeStart) {
            return;
        }
    }
}

/// Stops the worker at [`workload::STOP_AT_MS`].
pub async fn stop_at_end<T: PeerTime>(replica: Rc<Replica<T>>, worker: Rc<dyn PeerWorker>) {
    let now_ms = replica.time.now_ms();
    replica
        .time
        .sleep(workload::STOP_AT_MS.saturating_sub(now_ms))
        .await;
    let (recorder, id) = (&replica.recorder, replica.id);
    replica.stopping.set(true);
    recorder.stop_called(id, replica.time.now_ms());
    worker.stop().await;
    recorder.stop_resolved(id, replica.time.now_ms());
}

/// The replica's life: the driver and the stopper side by side, until `stop()` returned (as
/// leasesim's run ends once every stop returned; the driver is dropped between attempts).
pub async fn replica_life<T: PeerTime>(replica: Rc<Replica<T>>, worker: Rc<dyn PeerWorker>) {
    let driver = std::pin::pin!(drive(replica.clone(), worker.clone()));
    let stopper = std::pin::pin!(stop_at_end(replica, worker));
    match futures::future::select(driver, stopper).await {
        futures::future::Either::Left(((), stopper)) => stopper.await,
        futures::future::Either::Right(((), _driver)) => {}
    }
}
