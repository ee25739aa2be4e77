//! The lease authority: one named lease, fenced by a strictly increasing token.
//!
//! Terminology:
//! - *held*: the lease record the authority keeps; it is *live* while `now < expires_at_ms`.
//! - *grant*: an acquire that succeeds (no live lease); it may take over an expired one.
//! - *rotate*: a successful renew; the holder gets a new token and a new expiry.
//! - *owner mode* (default) renews for the owner of the live lease, whatever token it shows,
//!   like `UPDATE ... WHERE owner = ? AND expires > now`; *exact-token mode* also demands the
//!   current token.
//!
//! Times are on the authority's clock: [`leasesim_sim::EPOCH_MS`] plus virtual time.

/// A lease as the authority stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub owner_id: String,
    pub token: u64,
    pub expires_at_ms: u64,
}

/// Result of an acquire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// Granted; `replaced` is the token of an expired lease this grant took over.
    Granted { lease: Held, replaced: Option<u64> },
    /// A live lease is held by someone (possibly the caller itself).
    Busy { holder_token: u64 },
}

/// Result of a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    Freed,
    /// Nothing was freed: the lease had expired, moved on, or never matched.
    FreedNothing,
}

#[derive(Clone, Debug)]
pub struct LeaseAuthority {
    held: Option<Held>,
    last_token: u64,
    ttl_ms: u64,
    exact_token: bool,
}

impl LeaseAuthority {
    pub fn new(ttl_ms: u64, exact_token: bool) -> LeaseAuthority {
        assert!(ttl_ms > 0, "a lease needs a lifetime");
        LeaseAuthority {
            held: None,
            last_token: 0,
            ttl_ms,
            exact_token,
        }
    }

    fn next_token(&mut self) -> u64 {
        let previous = self.last_token;
        self.last_token = previous
            .checked_add(1)
            .expect("the token space is exhausted");
        // invariant: tokens strictly increase, so no token is ever handed out twice.
        assert!(self.last_token > previous);
        self.last_token
    }

    /// The live lease at `now_ms`, if any.
    pub fn live(&self, now_ms: u64) -> Option<&Held> {
        self.held
            .as_ref()
            .filter(|held| now_ms < held.expires_at_ms)
    }

    /// The token of the live lease at `now_ms`.
    pub fn current_token(&self, now_ms: u64) -> Option<u64> {
        self.live(now_ms).map(|held| held.token)
    }

    pub fn acquire(&mut self, owner_id: &str, now_ms: u64) -> Acquired {
        if let Some(live) = self.live(now_ms) {
            return Acquired::Busy {
                holder_token: live.token,
            };
        }
        let replaced = self.held.as_ref().map(|expired| expired.token);
        let token = self.next_token();
        let lease = Held {
            owner_id: owner_id.to_string(),
            token,
            expires_at_ms: now_ms + self.ttl_ms,
        };
        // invariant: tokens strictly increase across every grant and rotation.
        debug_assert!(replaced.is_none_or(|old| old < token));
        self.held = Some(lease.clone());
        // invariant: the grant is the live lease, the caller's, with the newest token.
        debug_assert!(self.live(now_ms) == Some(&lease) && lease.token == self.last_token);
        Acquired::Granted { lease, replaced }
    }

    /// Rotates the token of the caller's live lease; `None` when it is not the holder.
    pub fn renew(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Option<Held> {
        let live = self.live(now_ms)?;
        if live.owner_id != owner_id || (self.exact_token && live.token != token) {
            return None;
        }
        let old_token = live.token;
        let next = self.next_token();
        let held = self.held.as_mut().expect("a live lease is held");
        held.token = next;
        held.expires_at_ms = now_ms + self.ttl_ms;
        // invariant: rotation hands out a token above the one it replaces, the highest ever
        // handed out, and the renewed lease is live for the caller. (In owner mode the token
        // the caller showed is not checked, so it may even be one never handed out: a real
        // store renews all the same, and so does this one.)
        assert!(next > old_token && next == self.last_token);
        debug_assert!(held.owner_id == owner_id && held.expires_at_ms > now_ms);
        Some(held.clone())
    }

    /// Compare-and-set release: frees the live lease only if owner and token match.
    pub fn release(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Release {
        // Tokens are never reissued, so a held lease is identified by its token and expiry.
        let fingerprint = |held: &Option<Held>| held.as_ref().map(|h| (h.token, h.expires_at_ms));
        let before = fingerprint(&self.held);
        let outcome = match self.live(now_ms) {
            Some(live) if live.owner_id == owner_id && live.token == token => {
                self.held = None;
                Release::Freed
            }
            _ => Release::FreedNothing,
        };
        // invariant: a release frees only the matching live lease; any other leaves the held
        // lease exactly as it was (a successor's lease is never freed).
        match outcome {
            Release::Freed => assert!(before.is_some_and(|(held, _)| held == token)),
            Release::FreedNothing => assert_eq!(fingerprint(&self.held), before),
        }
        outcome
    }

    /// Fault: drops the live lease. Returns its token.
    pub fn revoke(&mut self, now_ms: u64) -> Option<u64> {
        let token = self.current_token(now_ms)?;
        self.held = None;
        // invariant: after a revocation no lease is live, and the token is never reissued.
        debug_assert!(self.current_token(now_ms).is_none() && self.last_token >= token);
        Some(token)
    }

    /// The highest token ever handed out.
    pub fn last_token(&self) -> u64 {
        self.last_token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_renew_release_cycle() {
        let mut authority = LeaseAuthority::new(100, false);
        let Acquired::Granted {
            lease,
            replaced: None,
        } = authority.acquire("r1", 0)
        else {
            panic!("first acquire is granted")
        };
        assert_eq!((lease.token, lease.expires_at_ms), (1, 100));
        assert_eq!(
            authority.acquire("r2", 50),
            Acquired::Busy { holder_token: 1 }
        );
        let renewed = authority.renew("r1", 1, 60).expect("holder renews");
        assert_eq!((renewed.token, renewed.expires_at_ms), (2, 160));
        assert_eq!(
            authority.release("r1", 1, 70),
            Release::FreedNothing,
            "stale token"
        );
        assert_eq!(authority.release("r1", 2, 70), Release::Freed);
        assert_eq!(authority.current_token(70), None);
    }

    #[test]
    fn expiry_lets_a_rival_take_over_and_the_old_holder_cannot_renew() {
        let mut authority = LeaseAuthority::new(100, false);
        authority.acquire("r1", 0);
        let granted = authority.acquire("r2", 100);
        assert_eq!(
            granted,
            Acquired::Granted {
                lease: Held {
                    owner_id: "r2".into(),
                    token: 2,
                    expires_at_ms: 200
                },
                replaced: Some(1)
            }
        );
        assert_eq!(authority.renew("r1", 1, 150), None);
        assert_eq!(authority.release("r1", 1, 150), Release::FreedNothing);
        assert_eq!(authority.current_token(150), Some(2));
    }

    #[test]
    fn exact_token_mode_refuses_a_stale_token_from_the_owner() {
        let mut owner_mode = LeaseAuthority::new(100, false);
        owner_mode.acquire("r1", 0);
        owner_mode.renew("r1", 1, 10).unwrap();
        assert!(
            owner_mode.renew("r1", 1, 20).is_some(),
            "owner mode ignores the token"
        );
        let mut exact = LeaseAuthority::new(100, true);
        exact.acquire("r1", 0);
        exact.renew("r1", 1, 10).unwrap();
        assert_eq!(exact.renew("r1", 1, 20), None);
    }

    #[test]
    fn owner_mode_renews_whatever_token_the_owner_shows() {
        // Found by conformance against SQLite: a renewal showing a token never handed out
        // tripped an assertion here, while a store renews for the owner all the same.
        let mut authority = LeaseAuthority::new(100, false);
        authority.acquire("r1", 0);
        let renewed = authority.renew("r1", 2, 10).expect("the owner renews");
        assert_eq!(renewed.token, 2);
        assert_eq!(
            authority.renew("r1", 99, 20).map(|held| held.token),
            Some(3)
        );
    }

    #[test]
    fn revoke_drops_the_live_lease() {
        let mut authority = LeaseAuthority::new(100, false);
        assert_eq!(authority.revoke(0), None);
        authority.acquire("r1", 0);
        assert_eq!(authority.revoke(10), Some(1));
        assert_eq!(authority.renew("r1", 1, 20), None);
    }
}
