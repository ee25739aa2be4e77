//! The external provider: carries out an item's external effect, at most once per key.
//!
//! Terminology:
//! - *key*: an idempotency key. The provider remembers every key it accepted and what it did
//!   with it; the same key again is a *duplicate*: nothing is done twice.
//! - *refusal*: the provider's own fault: it refuses an item's effect for good (a business
//!   error). Whether it refuses an item is decided once, at the item's first apply, and then
//!   holds for every key of that item.
//! - *applications*: how many times the effect of an item was really carried out; with keys
//!   derived from the item it never exceeds one, with fresh keys it can.
//!
//! The provider does not know tokens: a stale worker's call is accepted like any other. What
//! keeps a second effect from happening is the key.

use std::collections::BTreeMap;

use crate::events::{Key, LookupView, ProviderView};

/// What the provider did with an accepted key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kept {
    Applied,
    Refused,
}

/// The provider's state in one run.
#[derive(Clone, Debug, Default)]
pub struct ExternalProvider {
    keys: BTreeMap<Key, Kept>,
    /// Per item: `Some(true)` once it was decided that the provider refuses it.
    refuses: Vec<Option<bool>>,
    /// Per item: how many times its effect was carried out.
    applications: Vec<u32>,
}

impl ExternalProvider {
    pub fn new(items: u32) -> ExternalProvider {
        ExternalProvider {
            keys: BTreeMap::new(),
            refuses: vec![None; items as usize],
            applications: vec![0; items as usize],
        }
    }

    /// How many times the effect of `item` was carried out.
    pub fn applications(&self, item: u32) -> u32 {
        self.applications[item as usize]
    }

    /// Whether `item` will be refused, if decided yet.
    pub fn refusal_decided(&self, item: u32) -> Option<bool> {
        self.refuses[item as usize]
    }

    /// Decides once that the provider refuses `item` (or not).
    pub fn decide_refusal(&mut self, item: u32, refuses: bool) {
        let slot = &mut self.refuses[item as usize];
        // invariant: a refusal is decided once and then holds.
        debug_assert!(slot.is_none());
        *slot = Some(refuses);
    }

    /// Carries out `item`'s effect under `key` (its refusal must be decided).
    pub fn apply(&mut self, item: u32, key: Key) -> ProviderView {
        match self.keys.get(&key) {
            Some(Kept::Applied) => return ProviderView::Duplicate,
            Some(Kept::Refused) => return ProviderView::Refused,
            None => {}
        }
        let refuses = self.refuses[item as usize].expect("the refusal is decided first");
        if refuses {
            self.keys.insert(key, Kept::Refused);
            return ProviderView::Refused;
        }
        let before = self.applications[item as usize];
        self.keys.insert(key, Kept::Applied);
        self.applications[item as usize] = before + 1;
        // invariant: a key is applied once; the item's count grows by exactly one.
        debug_assert_eq!(self.applications[item as usize], before + 1);
        ProviderView::Applied
    }

    /// What became of `key`.
    pub fn lookup(&self, key: Key) -> LookupView {
        match self.keys.get(&key) {
            Some(Kept::Applied) => LookupView::Applied,
            Some(Kept::Refused) => LookupView::Refused,
            None => LookupView::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(item: u32, salt: u32) -> Key {
        Key { item, salt }
    }

    #[test]
    fn a_key_is_applied_once_and_a_fresh_key_applies_again() {
        let mut provider = ExternalProvider::new(2);
        provider.decide_refusal(0, false);
        assert_eq!(provider.lookup(key(0, 0)), LookupView::Unknown);
        assert_eq!(provider.apply(0, key(0, 0)), ProviderView::Applied);
        assert_eq!(provider.apply(0, key(0, 0)), ProviderView::Duplicate);
        assert_eq!(provider.lookup(key(0, 0)), LookupView::Applied);
        assert_eq!(provider.applications(0), 1);
        assert_eq!(provider.apply(0, key(0, 1)), ProviderView::Applied);
        assert_eq!(provider.applications(0), 2);
    }

    #[test]
    fn a_refused_item_stays_refused_under_every_key() {
        let mut provider = ExternalProvider::new(1);
        provider.decide_refusal(0, true);
        assert_eq!(provider.apply(0, key(0, 0)), ProviderView::Refused);
        assert_eq!(provider.apply(0, key(0, 3)), ProviderView::Refused);
        assert_eq!(provider.lookup(key(0, 0)), LookupView::Refused);
        assert_eq!(provider.applications(0), 0);
    }
}
