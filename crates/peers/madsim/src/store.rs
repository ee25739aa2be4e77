//! The store as a madsim node, and the workers' client of it: madsim's RPC over its
//! simulated network.
//!
//! Terminology:
//! - *store call*: one [`StoreCall`] RPC (`#[derive(Request)]`), carrying the peers' shared
//!   request frame (call id, replica, request) and answered with an answer frame, so every
//!   peer puts the same bytes on its network.
//! - *service*: [`StoreService`], the store's `#[madsim::service]`. madsim runs each RPC
//!   handler as a `Send` task, so the handler only forwards the frame to the keeper and awaits
//!   its answer.
//! - *keeper*: the one task on the store node that owns the keys: the peers' shared
//!   [`StoreNode`] (the system crate's `ClaimStore`: create-if-absent with a lifetime,
//!   compare-and-renew, compare-and-delete, get, delete, set, lifetimes that run out),
//!   applying each request at the virtual ms it arrives.
//! - *transport*: [`MadsimTransport`], a worker node's `Endpoint` calling the store with
//!   `call_timeout`; a call lost on the way (madsim's packet loss) or unanswered in time gives
//!   no answer, which the port reports as a timeout.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::{mpsc, oneshot};
use leasesim_holder_lock::events::Answer;
use madsim::Request;
use madsim::net::Endpoint;
use peers_common::ports::{PeerTime, Transport};
use peers_common::recorder::StoreNode;
use peers_common::{wire, workload};
use serde::{Deserialize, Serialize};

use crate::time::MadsimTime;

/// The store node's IP address, and the port its service listens on.
pub const STORE_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const STORE_PORT: u16 = 7000;

fn store_addr() -> SocketAddr {
    SocketAddr::from((STORE_IP, STORE_PORT))
}

/// One store call: a request frame out, an answer frame back.
#[derive(Clone, Debug, Serialize, Deserialize, Request)]
#[rtype("Vec<u8>")]
pub struct StoreCall(pub Vec<u8>);

/// A frame on its way from a handler to the keeper, and where its answer goes.
type Envelope = (Vec<u8>, oneshot::Sender<Vec<u8>>);

/// The store's RPC service (see the module docs).
#[derive(Clone)]
pub struct StoreService {
    keeper: mpsc::UnboundedSender<Envelope>,
}

#[madsim::service]
impl StoreService {
    #[rpc]
    async fn call(&self, req: StoreCall) -> Vec<u8> {
        let (answer, answered) = oneshot::channel();
        if self.keeper.unbounded_send((req.0, answer)).is_ok()
            && let Ok(frame) = answered.await
        {
            return frame;
        }
        // The keeper is gone (the node was killed): never answer; the caller's timeout decides.
        futures::future::pending().await
    }
}

/// The store node's life: the service on its endpoint, the keeper beside it.
pub async fn store_node(node: StoreNode, time: MadsimTime) {
    let (keeper, inbox) = mpsc::unbounded();
    let endpoint = Endpoint::bind(store_addr())
        .await
        .expect("the store's address is free");
    let service = StoreService { keeper };
    let (served, ()) =
        futures::future::join(service.serve_on(endpoint), keep(node, inbox, time)).await;
    served.expect("the service serves until the node ends");
}

/// The keeper (see the module docs): applies frames in arrival order.
async fn keep(mut node: StoreNode, mut inbox: mpsc::UnboundedReceiver<Envelope>, time: MadsimTime) {
    while let Some((frame, answer)) = inbox.next().await {
        let Some((call, replica, request)) = wire::decode_request(&frame) else {
            continue;
        };
        let applied = node.apply(replica, call, request, time.now_ms());
        // The caller may have given up (its node was killed): nothing to answer then.
        let _ = answer.send(wire::encode_answer(call, &applied).to_vec());
    }
}

/// A worker node's client of the store (see the module docs).
pub struct MadsimTransport {
    pub endpoint: Endpoint,
    pub store: SocketAddr,
}

impl MadsimTransport {
    /// Binds the worker's endpoint on its node's address.
    pub async fn bind() -> MadsimTransport {
        let endpoint = Endpoint::bind("0.0.0.0:0")
            .await
            .expect("an ephemeral port is free");
        MadsimTransport {
            endpoint,
            store: store_addr(),
        }
    }
}

impl Transport for MadsimTransport {
    async fn round_trip(&self, _call: u64, frame: [u8; wire::REQUEST_LEN]) -> Option<Answer> {
        let timeout = Duration::from_millis(workload::CALL_TIMEOUT_MS);
        let call = StoreCall(frame.to_vec());
        let answer = self
            .endpoint
            .call_timeout(self.store, call, timeout)
            .await
            .ok()?;
        wire::decode_answer(&answer).map(|(_, answer)| answer)
    }
}
