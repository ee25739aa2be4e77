//! How a store call crosses a peer's simulated network: fixed-size frames.
//!
//! Terminology:
//! - *request frame*: call id, replica, the request ([`REQUEST_LEN`] bytes).
//! - *answer frame*: call id, the store's answer ([`ANSWER_LEN`] bytes).
//!
//! The call id travels with the request so the store node reports its apply against the
//! call the worker's port reported, and the port matches a reply to its call.

use leasesim_events::{NetFailure, ReplicaId};
use leasesim_holder_lock::events::{Answer, Key, Request};

pub const REQUEST_LEN: usize = 28;
pub const ANSWER_LEN: usize = 17;

fn key_byte(key: Key) -> u8 {
    key as u8
}

fn key_of(byte: u8) -> Key {
    match byte {
        0 => Key::Claim,
        _ => Key::Holder,
    }
}

/// A request frame.
pub fn encode_request(call: u64, replica: ReplicaId, request: &Request) -> [u8; REQUEST_LEN] {
    let (tag, token, lifetime) = match *request {
        Request::Create {
            token, lifetime_ms, ..
        } => (0, token, lifetime_ms),
        Request::Renew {
            token, lifetime_ms, ..
        } => (1, token, lifetime_ms),
        Request::DeleteIfHolder { token, .. } => (2, token, 0),
        Request::Get { .. } => (3, 0, 0),
        Request::Delete { .. } => (4, 0, 0),
        Request::Set {
            token, lifetime_ms, ..
        } => (5, token, lifetime_ms),
    };
    let mut frame = [0u8; REQUEST_LEN];
    frame[0..8].copy_from_slice(&call.to_le_bytes());
    frame[8..10].copy_from_slice(&replica.0.to_le_bytes());
    frame[10] = tag;
    frame[11] = key_byte(request.key());
    frame[12..20].copy_from_slice(&token.to_le_bytes());
    frame[20..28].copy_from_slice(&lifetime.to_le_bytes());
    frame
}

fn u64_at(frame: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&frame[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// The call id, replica and request of a request frame (`None`: not one).
pub fn decode_request(frame: &[u8]) -> Option<(u64, ReplicaId, Request)> {
    if frame.len() != REQUEST_LEN {
        return None;
    }
    let call = u64_at(frame, 0);
    let replica = ReplicaId(u16::from_le_bytes([frame[8], frame[9]]));
    let (key, token, lifetime_ms) = (key_of(frame[11]), u64_at(frame, 12), u64_at(frame, 20));
    let request = match frame[10] {
        0 => Request::Create {
            key,
            token,
            lifetime_ms,
        },
        1 => Request::Renew {
            key,
            token,
            lifetime_ms,
        },
        2 => Request::DeleteIfHolder { key, token },
        3 => Request::Get { key },
        4 => Request::Delete { key },
        5 => Request::Set {
            key,
            token,
            lifetime_ms,
        },
        _ => return None,
    };
    Some((call, replica, request))
}

/// An answer frame.
pub fn encode_answer(call: u64, answer: &Answer) -> [u8; ANSWER_LEN] {
    let (tag, value) = match *answer {
        Answer::Created => (0, 0),
        Answer::Exists => (1, 0),
        Answer::Renewed => (2, 0),
        Answer::Deleted => (3, 0),
        Answer::NotHolder => (4, 0),
        Answer::Absent => (5, 0),
        Answer::Value(token) => (6, token),
        Answer::Written => (7, 0),
        Answer::Unsupported => (8, 0),
        Answer::Failed(NetFailure::Rejected) => (9, 0),
        Answer::Failed(NetFailure::Timeout) => (10, 0),
    };
    let mut frame = [0u8; ANSWER_LEN];
    frame[0..8].copy_from_slice(&call.to_le_bytes());
    frame[8] = tag;
    frame[9..17].copy_from_slice(&value.to_le_bytes());
    frame
}

/// The call id and answer of an answer frame (`None`: not one).
pub fn decode_answer(frame: &[u8]) -> Option<(u64, Answer)> {
    if frame.len() != ANSWER_LEN {
        return None;
    }
    let answer = match frame[8] {
        0 => Answer::Created,
        1 => Answer::Exists,
        2 => Answer::Renewed,
        3 => Answer::Deleted,
        4 => Answer::NotHolder,
        5 => Answer::Absent,
        6 => Answer::Value(u64_at(frame, 9)),
        7 => Answer::Written,
        8 => Answer::Unsupported,
        9 => Answer::Failed(NetFailure::Rejected),
        10 => Answer::Failed(NetFailure::Timeout),
        _ => return None,
    };
    Some((u64_at(frame, 0), answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let request = Request::Create {
            key: Key::Holder,
            token: 7 << 32 | 3,
            lifetime_ms: 3_000,
        };
        let frame = encode_request(42, ReplicaId(2), &request);
        assert_eq!(decode_request(&frame), Some((42, ReplicaId(2), request)));
        let frame = encode_answer(42, &Answer::Value(9));
        assert_eq!(decode_answer(&frame), Some((42, Answer::Value(9))));
    }
}
