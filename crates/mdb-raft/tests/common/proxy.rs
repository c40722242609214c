//! Fault-injecting TCP proxies between the nodes of a test cluster: node
//! `a` dials node `b` through its own proxy (`--route`), so a test can cut,
//! delay or reset the connections of one direction (`a` dials `b`) and heal
//! them. The proxies run on their own small runtime, which stops when the
//! [`Proxies`] are dropped.

use std::collections::BTreeMap;
use std::net::TcpListener as StdListener;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What a link does to the bytes of its connections (both directions of
/// each TCP connection that the dialing node opened).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward at once.
    Up,
    /// Hold every byte (reads stop, new connections are accepted and
    /// held): a partition. Healing delivers what was held, late, as a
    /// network that comes back does; the dialer has usually given up on
    /// those requests by then.
    Cut,
    /// Forward each chunk after this long.
    Delay(Duration),
}

struct Link {
    port: u16,
    fault: watch::Sender<Fault>,
    /// Bumped to close every connection the link carries.
    generation: watch::Sender<u64>,
}

/// One proxy per ordered pair of nodes: `(from, to)` carries the
/// connections node `from` opens to node `to` (indices from 0).
pub struct Proxies {
    rt: Option<tokio::runtime::Runtime>,
    links: BTreeMap<(usize, usize), Link>,
}

impl Proxies {
    /// Proxies between every pair of the nodes listening on `ports`.
    pub fn start(ports: &[u16]) -> Proxies {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-proxy")
            .enable_all()
            .build()
            .expect("the proxies' runtime");
        let mut links = BTreeMap::new();
        for from in 0..ports.len() {
            for (to, &target) in ports.iter().enumerate() {
                if from == to {
                    continue;
                }
                let l = StdListener::bind("127.0.0.1:0").expect("a proxy port");
                l.set_nonblocking(true).unwrap();
                let port = l.local_addr().unwrap().port();
                let (fault, fault_rx) = watch::channel(Fault::Up);
                let (generation, gen_rx) = watch::channel(0);
                let _guard = rt.enter();
                let l = TcpListener::from_std(l).unwrap();
                rt.spawn(accept(l, target, fault_rx, gen_rx));
                links.insert(
                    (from, to),
                    Link {
                        port,
                        fault,
                        generation,
                    },
                );
            }
        }
        Proxies {
            rt: Some(rt),
            links,
        }
    }

    /// The port node `from` dials to reach node `to`.
    pub fn port(&self, from: usize, to: usize) -> u16 {
        self.links[&(from, to)].port
    }

    /// Set the fault of the connections `from` opens to `to`.
    pub fn set(&self, from: usize, to: usize, f: Fault) {
        self.links[&(from, to)].fault.send_replace(f);
    }

    /// Set the fault of both directions between `a` and `b`.
    pub fn set_both(&self, a: usize, b: usize, f: Fault) {
        self.set(a, b, f);
        self.set(b, a, f);
    }

    /// Cut node `i` off from every other node, both ways.
    pub fn isolate(&self, i: usize) {
        for &(a, b) in self.links.keys() {
            if a == i || b == i {
                self.set(a, b, Fault::Cut);
            }
        }
    }

    /// Cut every link between a node of `side` and a node outside it.
    pub fn partition(&self, side: &[usize]) {
        for &(a, b) in self.links.keys() {
            if side.contains(&a) != side.contains(&b) {
                self.set(a, b, Fault::Cut);
            }
        }
    }

    /// Set every link to `f` (`Fault::Up`: heal them all).
    pub fn set_all(&self, f: Fault) {
        for l in self.links.values() {
            l.fault.send_replace(f);
        }
    }

    /// Close every connection `from` has open to `to` (new ones work).
    pub fn reset(&self, from: usize, to: usize) {
        self.links[&(from, to)].generation.send_modify(|g| *g += 1);
    }

    /// Close every connection between the nodes.
    pub fn reset_all(&self) {
        for l in self.links.values() {
            l.generation.send_modify(|g| *g += 1);
        }
    }
}

impl Drop for Proxies {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

async fn accept(
    l: TcpListener,
    target: u16,
    fault: watch::Receiver<Fault>,
    generation: watch::Receiver<u64>,
) {
    while let Ok((inbound, _)) = l.accept().await {
        let (fault, mut generation) = (fault.clone(), generation.clone());
        generation.mark_unchanged();
        tokio::spawn(async move {
            let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
                return; // the node is down: the dialer sees its connection closed
            };
            let _ = inbound.set_nodelay(true);
            let _ = outbound.set_nodelay(true);
            let (ir, iw) = inbound.into_split();
            let (or, ow) = outbound.into_split();
            tokio::select! {
                _ = async { tokio::join!(pump(ir, ow, fault.clone()), pump(or, iw, fault)) } => {}
                _ = generation.changed() => {} // reset: both sockets close on drop
            }
        });
    }
}

/// Copy `from` to `to` under the link's fault until either side closes.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut fault: watch::Receiver<Fault>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // While cut, read nothing: the bytes wait in the kernel.
        if fault.wait_for(|f| *f != Fault::Cut).await.is_err() {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        // A cut that began meanwhile holds this chunk too.
        let f = match fault.wait_for(|f| *f != Fault::Cut).await {
            Ok(f) => *f,
            Err(_) => return,
        };
        if let Fault::Delay(d) = f {
            tokio::time::sleep(d).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
