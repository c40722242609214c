//! Node encodings built without a page around them: what a leaf node
//! carries, and branch and leaf nodes as byte strings.

use super::*;

/// What a new leaf node carries as data.
#[derive(Clone, Copy)]
pub enum NodeData<'a> {
    /// Inline value bytes.
    Inline(&'a [u8]),
    /// Inline space of this length, left zeroed (MDB_RESERVE).
    Reserve(usize),
    /// An overflow reference: first page, real value length.
    Overflow(u64, usize),
    /// A named database record (48 bytes), flagged F_SUBDATA.
    SubDb(&'a [u8; 48]),
    /// A sub-page of sorted duplicates, flagged F_DUPDATA.
    SubPage(&'a [u8]),
    /// The record of a duplicates sub-database, flagged F_SUBDATA|F_DUPDATA.
    DupDb(&'a [u8; 48]),
}

impl NodeData<'_> {
    /// Bytes stored inline in the node.
    pub fn stored(&self) -> usize {
        match *self {
            NodeData::Inline(v) => v.len(),
            NodeData::Reserve(n) => n,
            NodeData::Overflow(..) => 8,
            NodeData::SubDb(_) | NodeData::DupDb(_) => 48,
            NodeData::SubPage(p) => p.len(),
        }
    }

    /// The node header's data size and flags.
    pub(super) fn header(&self) -> (usize, u16) {
        match *self {
            NodeData::Inline(v) => (v.len(), 0),
            NodeData::Reserve(n) => (n, 0),
            NodeData::Overflow(_, len) => (len, F_BIGDATA),
            NodeData::SubDb(_) => (48, F_SUBDATA),
            NodeData::SubPage(p) => (p.len(), F_DUPDATA),
            NodeData::DupDb(_) => (48, F_SUBDATA | F_DUPDATA),
        }
    }
}

/// A leaf node's bytes (header, key, stored data; no padding), built
/// without a page around it.
pub fn encode_leaf(key: &[u8], data: NodeData<'_>) -> Vec<u8> {
    let (dsize, flags) = data.header();
    let mut v = Vec::with_capacity(NODE_HDR + key.len() + data.stored());
    v.extend_from_slice(&(dsize as u16).to_le_bytes());
    v.extend_from_slice(&((dsize >> 16) as u16).to_le_bytes());
    v.extend_from_slice(&flags.to_le_bytes());
    v.extend_from_slice(&(key.len() as u16).to_le_bytes());
    v.extend_from_slice(key);
    match data {
        NodeData::Inline(d) | NodeData::SubPage(d) => v.extend_from_slice(d),
        NodeData::Reserve(n) => v.resize(v.len() + n, 0),
        NodeData::Overflow(pg, _) => v.extend_from_slice(&pg.to_le_bytes()),
        NodeData::SubDb(r) | NodeData::DupDb(r) => v.extend_from_slice(r),
    }
    v
}

/// Encode a branch node with the given key and child.
pub fn encode_branch(key: &[u8], child: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(NODE_HDR + key.len());
    v.extend_from_slice(&(child as u16).to_le_bytes());
    v.extend_from_slice(&((child >> 16) as u16).to_le_bytes());
    v.extend_from_slice(&((child >> 32) as u16).to_le_bytes());
    v.extend_from_slice(&(key.len() as u16).to_le_bytes());
    v.extend_from_slice(key);
    v
}

/// Re-encode a branch node with a different key.
pub fn rekey_branch(raw: &[u8], key: &[u8]) -> Vec<u8> {
    let child = Node {
        b: raw,
        branch: true,
    }
    .child();
    encode_branch(key, child)
}

/// Key of an encoded node.
pub fn raw_key(raw: &[u8]) -> &[u8] {
    let ks = rd16(raw, 6) as usize;
    &raw[NODE_HDR..NODE_HDR + ks]
}
