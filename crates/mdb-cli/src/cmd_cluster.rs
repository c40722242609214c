//! `mdb cluster status`: a replicated cluster's members, leader, and each
//! node's applied log index and lag, from the nodes' `GET /status`
//! (crates/mdb-raft's HTTP server). A plain HTTP/1.1 client over std's
//! TcpStream: the tool needs one GET per node, not an HTTP stack.

use crate::{errln, getopt, take_long, usage, Invocation, ToolOpts};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

const SYNOPSIS: &str = "status [--json] host:port";

const HELP: &str = "\
Usage: mdb cluster status [--json] host:port

Show a replicated cluster (crates/mdb-raft, mdb-raft-node) as the node at
host:port and the others see it: the members (voters and learners), the
leader and its term, and for each node its state, the last log index it
applied to its data file, its lag (the leader's last log index minus that),
and its last snapshot's index. The members are the leader's, if the node
asked knows one that answers.

Options:
  --json    print one JSON object instead of a table

Exit status: 0 if every member answered and a leader is known, 2 if not
(the table says which), 1 on error (the node asked did not answer).
";

/// How long one node may take to answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// `GET path` from `addr`: the JSON body of a 200 answer.
fn get_json(addr: &str, path: &str) -> Result<Value, String> {
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = TcpStream::connect_timeout(&sock, TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| e.to_string())?;
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("not an HTTP answer")?;
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let code = head.split_whitespace().nth(1).unwrap_or("");
    if code != "200" {
        return Err(format!("HTTP status {code}"));
    }
    let mut body = buf[end + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = unchunk(&body).ok_or("bad chunked body")?;
    }
    serde_json::from_slice(&body).map_err(|e| format!("not a node's status: {e}"))
}

/// The body of a chunked HTTP/1.1 answer.
fn unchunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&b[..eol]).ok()?.split(';').next()?;
        let n = usize::from_str_radix(size.trim(), 16).ok()?;
        if n == 0 {
            return Some(out);
        }
        let chunk = b.get(eol + 2..eol + 2 + n)?;
        out.extend_from_slice(chunk);
        b = b.get(eol + 4 + n..)?;
    }
}

/// What the tool reports about one member.
struct Row {
    id: u64,
    addr: String,
    voter: bool,
    /// The member's status, or why it did not answer.
    status: Result<Value, String>,
}

/// The cluster as seen from one node.
struct Survey {
    /// The leader the node asked names.
    leader: Option<u64>,
    /// The leader's status, if it answered (as the leader).
    leader_status: Option<Value>,
    rows: Vec<Row>,
}

/// The cluster as seen from `addr`.
fn survey(addr: &str) -> Result<Survey, String> {
    let first = get_json(addr, "/status")?;
    // The leader's view of the membership, if it answers: the node asked
    // may lag, or have been removed.
    let leader = first["leader"].as_u64();
    let leader_status = if first["state"] == "Leader" {
        Some(first.clone())
    } else {
        let a = first["leader_addr"].as_str();
        a.and_then(|a| get_json(a, "/status").ok())
            .filter(|s| s["state"] == "Leader")
    };
    let view = leader_status.as_ref().unwrap_or(&first);
    let voters: Vec<u64> = view["voters"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for (id, a) in view["members"].as_object().into_iter().flatten() {
        let (Ok(id), Some(a)) = (id.parse::<u64>(), a.as_str()) else {
            return Err("not a node's status: bad members".into());
        };
        rows.push(Row {
            id,
            addr: a.to_string(),
            voter: voters.contains(&id),
            status: get_json(a, "/status"),
        });
    }
    Ok(Survey {
        leader,
        leader_status,
        rows,
    })
}

fn index(v: &Value, field: &str) -> Option<u64> {
    v[field].as_u64()
}

/// Run the tool; returns the exit status.
pub(crate) fn run(inv: &Invocation, mut args: Vec<OsString>) -> i32 {
    let prog = &inv.prog[..];
    let [as_json] = take_long(&mut args, ["--json"]);
    let g = getopt::Getopt::new(args, "V").with_long_help(true);
    let mut g = ToolOpts::new(g, prog, (SYNOPSIS, HELP), 1, true);
    if let Some(opt) = g.next() {
        unreachable!("option string and match disagree: {opt:?}");
    }
    if let Some(code) = g.exit {
        return code;
    }
    let ops: Vec<String> = g
        .operands()
        .iter()
        .map(|o| o.to_string_lossy().into_owned())
        .collect();
    let [cmd, addr] = &ops[..] else {
        usage(prog, SYNOPSIS);
        return 1;
    };
    if cmd != "status" {
        usage(prog, SYNOPSIS);
        return 1;
    }
    let Survey {
        leader,
        leader_status,
        rows,
    } = match survey(addr) {
        Ok(s) => s,
        Err(e) => {
            errln(&[prog, b": ", addr.as_bytes(), b": ", e.as_bytes()]);
            return 1;
        }
    };
    let last = leader_status
        .as_ref()
        .and_then(|s| index(s, "last_log_index"));
    let term = leader_status.as_ref().and_then(|s| index(s, "term"));
    let lag = |s: &Value| Some(last?.saturating_sub(index(s, "applied_index").unwrap_or(0)));
    let healthy = leader_status.is_some() && rows.iter().all(|r| r.status.is_ok());
    let mut out = String::new();
    if as_json {
        let members: Vec<Value> = rows
            .iter()
            .map(|r| match &r.status {
                Ok(s) => json!({
                    "id": r.id, "addr": r.addr, "voter": r.voter, "state": s["state"],
                    "applied_index": s["applied_index"], "lag": lag(s),
                    "snapshot_index": s["snapshot_index"],
                }),
                Err(e) => json!({"id": r.id, "addr": r.addr, "voter": r.voter, "error": e}),
            })
            .collect();
        let v = json!({"leader": leader, "term": term, "last_log_index": last, "members": members});
        out = format!("{v}\n");
    } else {
        out += &match (leader, &leader_status) {
            (Some(l), Some(_)) => format!(
                "leader {l}, term {}, last log index {}\n",
                term.unwrap_or(0),
                last.map_or("-".into(), |i| i.to_string())
            ),
            (Some(l), None) => format!("leader {l} (not answering)\n"),
            (None, _) => "no leader known\n".into(),
        };
        out += &format!(
            "{:<5} {:<8} {:<10} {:<22} {:>10} {:>8} {:>10}\n",
            "id", "role", "state", "address", "applied", "lag", "snapshot"
        );
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        for r in &rows {
            let role = if r.voter { "voter" } else { "learner" };
            out += &match &r.status {
                Ok(s) => format!(
                    "{:<5} {role:<8} {:<10} {:<22} {:>10} {:>8} {:>10}\n",
                    r.id,
                    s["state"].as_str().unwrap_or("?"),
                    r.addr,
                    opt(index(s, "applied_index")),
                    opt(lag(s)),
                    opt(index(s, "snapshot_index")),
                ),
                Err(e) => format!(
                    "{:<5} {role:<8} {:<10} {:<22} unreachable: {e}\n",
                    r.id, "-", r.addr
                ),
            };
        }
    }
    let mut o = std::io::stdout().lock();
    if o.write_all(out.as_bytes()).and_then(|_| o.flush()).is_err() {
        return 1;
    }
    if healthy {
        0
    } else {
        2
    }
}
