/* Extensions of this liblmdb.so.0 beyond LMDB 0.9's API. Include after
 * <lmdb.h>; programs that use them need this library, not LMDB's. */
#ifndef MDB_LMDB_EXT_H
#define MDB_LMDB_EXT_H

#include <stdint.h>
#include "lmdb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Write-ahead-log mode, chosen before mdb_env_open (on != 0); the
 * environment variable MDB_WAL=1 chooses it at mdb_env_open for programs
 * that do not call this. A commit is durable once its record is in the
 * log (wal/ beside the data file, <file>-wal/ with MDB_NOSUBDIR): one sync
 * per commit instead of two. A background thread syncs the data file
 * every 30 s (a checkpoint), and an open after a crash rolls the log
 * forward. The data file stays an LMDB file. EINVAL after mdb_env_open. */
int mdb_env_set_wal(MDB_env *env, int on);

/* Checkpoint now: sync the data file, record how far the log is applied,
 * recycle the log segments that covers. Stores the transaction id covered
 * in *txnid when txnid is not NULL. MDB_INCOMPATIBLE outside WAL mode,
 * MDB_BAD_TXN from the thread that holds the write transaction. */
int mdb_env_checkpoint(MDB_env *env, uint64_t *txnid);

#ifdef __cplusplus
}
#endif

#endif /* MDB_LMDB_EXT_H */
