//! The outside world as the worker sees it: three small async traits.
//!
//! Terminology:
//! - *port*: a trait the worker calls through; production wires real services behind it, the
//!   simulation wires fakes. The worker never names a runtime, only these traits.
//! - *lease*: the right to act as the single deleting replica until `expires_at_ms`.
//! - *fencing token*: the number carried by a lease. The lease service hands out a fresh one on
//!   every acquire and every successful renewal; the record store refuses deletes whose token
//!   is not the current one.
//! - *owner id*: the name under which one replica asks for the lease.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::rc::Rc;

/// A lease as handed out by the lease service.
///
/// A renewal answers a *new* `Lease` value; the worker always acts (deletes, renews, releases)
/// with the most recent one it was given.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The replica this lease was granted to.
    pub owner_id: String,
    /// The token the record store checks on every delete.
    pub fencing_token: u64,
    /// Expiry instant on the lease service's clock, in milliseconds.
    pub expires_at_ms: u64,
}

/// Why a port call did not produce an answer the worker can use.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PortError {
    /// The service turned the request down without applying it.
    Rejected {
        /// Free-form explanation from the service.
        reason: String,
    },
    /// The answer never arrived: the request may or may not have taken effect.
    Timeout,
    /// The record store turned a delete down: its fencing token is no longer the current one.
    StaleToken {
        /// The token the refused delete carried.
        token: u64,
    },
}

impl fmt::Display for PortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected { reason } => write!(f, "request rejected: {reason}"),
            Self::Timeout => {
                f.write_str("no answer (the request may or may not have been applied)")
            }
            Self::StaleToken { token } => write!(f, "fencing token {token} is not current"),
        }
    }
}

impl Error for PortError {}

/// This replica's notion of time.
///
/// `now_ms` may be skewed against other replicas; the worker only uses it to compute the
/// retention cutoff once per term. `sleep` is the only way the worker ever waits for time to
/// pass, and the worker may drop a sleep future before it completes (cancellation).
pub trait Clock {
    /// Current time on this replica's clock, in milliseconds.
    fn now_ms(&self) -> u64;
    /// A future that completes once `ms` milliseconds have passed on this clock.
    fn sleep(&self, ms: u64) -> impl Future<Output = ()>;
}

/// The lease service.
pub trait Leases {
    /// Ask for the lease under `owner_id`: `Some` means this replica now leads, `None` means
    /// another replica does.
    fn acquire(&self, owner_id: &str) -> impl Future<Output = Result<Option<Lease>, PortError>>;
    /// Extend `lease`: `Some(next)` is the replacement lease (with a new fencing token),
    /// `None` means leadership is gone.
    fn renew(&self, lease: &Lease) -> impl Future<Output = Result<Option<Lease>, PortError>>;
    /// Give `lease` back; the service frees it only if it is still exactly this lease.
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>>;
}

/// The store holding the rows subject to retention.
pub trait Records {
    /// Delete at most `limit` rows created before `older_than_ms`, provided `fencing_token` is
    /// current when the delete is applied. Answers how many rows were deleted.
    fn delete_batch(
        &self,
        older_than_ms: u64,
        limit: u32,
        fencing_token: u64,
    ) -> impl Future<Output = Result<u32, PortError>>;
}

// Forwarding impls so a port can be shared (by reference or by `Rc`) between the worker, a
// test, or several workers.

impl<T: Clock + ?Sized> Clock for &T {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        (**self).sleep(ms)
    }
}

impl<T: Clock + ?Sized> Clock for Rc<T> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        (**self).sleep(ms)
    }
}

impl<T: Leases + ?Sized> Leases for &T {
    fn acquire(&self, owner_id: &str) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        (**self).acquire(owner_id)
    }
    fn renew(&self, lease: &Lease) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        (**self).renew(lease)
    }
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>> {
        (**self).release(lease)
    }
}

impl<T: Leases + ?Sized> Leases for Rc<T> {
    fn acquire(&self, owner_id: &str) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        (**self).acquire(owner_id)
    }
    fn renew(&self, lease: &Lease) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        (**self).renew(lease)
    }
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>> {
        (**self).release(lease)
    }
}

impl<T: Records + ?Sized> Records for &T {
    fn delete_batch(
        &self,
        older_than_ms: u64,
        limit: u32,
        fencing_token: u64,
    ) -> impl Future<Output = Result<u32, PortError>> {
        (**self).delete_batch(older_than_ms, limit, fencing_token)
    }
}

impl<T: Records + ?Sized> Records for Rc<T> {
    fn delete_batch(
        &self,
        older_than_ms: u64,
        limit: u32,
        fencing_token: u64,
    ) -> impl Future<Output = Result<u32, PortError>> {
        (**self).delete_batch(older_than_ms, limit, fencing_token)
    }
}
