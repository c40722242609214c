//! Cursors: ordered navigation over one database ([`Cursor`], `nav`), the
//! iterators over it (`iter`), LMDB's cursor operations and the one place
//! their rules live (`op`), the cursor that owns its position for the
//! C ABI (`state`), and the position every cursor moves (`position`: the
//! key's place in the main tree and, for DUPSORT, the value's place among
//! the key's values).

mod iter;
mod nav;
mod op;
pub(crate) mod position;
mod state;

pub use iter::{Iter, Range};
pub use nav::Cursor;
pub use op::CursorOp;
pub use state::{CursorState, SeekLeaf};
