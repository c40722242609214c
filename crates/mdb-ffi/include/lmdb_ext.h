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
 * per commit instead of two, shared by the threads committing at once. A
 * background thread syncs the data file every 30 s (a checkpoint), and an
 * open after a crash rolls the log forward. The data file stays an LMDB
 * file; while the log holds commits it may lack, LMDB 0.9 refuses to open
 * it (MDB_VERSION_MISMATCH) until a checkpoint or a clean close.
 * MDB_NOSYNC in WAL mode means relaxed durability: mdb_txn_commit returns
 * before the log sync, a background thread syncs within 10 ms, and
 * mdb_env_sync syncs at once; a machine crash loses at most those commits
 * and never corrupts the file. EINVAL after mdb_env_open. */
int mdb_env_set_wal(MDB_env *env, int on);

/* Write-ahead-log mode with relaxed durability, before mdb_env_open:
 * mdb_txn_commit returns before the log sync, a background thread syncs
 * within ms milliseconds, mdb_env_sync syncs at once; this process sees
 * such commits at once, other processes once durable. A machine crash
 * loses at most the commits of the last period, never corrupts the file.
 * ms = 0: every commit durable (as mdb_env_set_wal). EINVAL after
 * mdb_env_open. */
int mdb_env_set_wal_sync(MDB_env *env, unsigned int ms);

/* Checkpoint now: sync the data file, record how far the log is applied,
 * recycle the log segments that covers. Stores the transaction id covered
 * in *txnid when txnid is not NULL. MDB_INCOMPATIBLE outside WAL mode,
 * MDB_BAD_TXN from the thread that holds the write transaction. */
int mdb_env_checkpoint(MDB_env *env, uint64_t *txnid);

/* A map that grows by itself, chosen before mdb_env_open: the map size
 * set with mdb_env_set_mapsize is where a new file starts, and the file
 * and map grow in steps as commits need pages, up to ceiling bytes
 * (MDB_AUTOGROW_DEFAULT: 1 TiB of address space, reserved at open; memory
 * is only what the file uses). MDB_MAP_FULL comes only at the ceiling, and
 * a database another process grew is followed without MDB_MAP_RESIZED.
 * ceiling = 0 keeps LMDB's fixed map (the default). The environment
 * variable MDB_AUTOGROW chooses it at mdb_env_open for programs that do
 * not call this, and takes precedence: 1 (the default ceiling), 0 (off),
 * or a ceiling such as 64G. LMDB processes sharing the file see the size
 * it has grown to (mdb_env_set_mapsize(env, 0) after MDB_MAP_RESIZED).
 * EINVAL after mdb_env_open. */
#define MDB_AUTOGROW_DEFAULT ((size_t)1 << 40)
int mdb_env_set_autogrow(MDB_env *env, size_t ceiling);

#ifdef __cplusplus
}
#endif

#endif /* MDB_LMDB_EXT_H */
