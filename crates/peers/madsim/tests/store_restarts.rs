//! The third workload on this side, through its binary (`peers_common::side_checks`): the
//! store restarts, the checkers see each restart as the store forgetting every key, the
//! correct worker passes across them, and the two workers a restart catches fail after a
//! restart.

use peers_common::side_checks;

const BINARY: &str = env!("CARGO_BIN_EXE_peer-madsim");

#[test]
fn the_correct_worker_passes_across_store_restarts() {
    side_checks::correct_worker_passes_across_restarts(BINARY);
}

#[test]
fn a_restart_catches_a_plain_delete_and_a_swallowed_release() {
    side_checks::a_restart_catches_a_plain_delete_and_a_swallowed_release(BINARY);
}
