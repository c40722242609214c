/* Instructions per put of a new id under a key whose ids are in a
 * sub-database (tree/dups.rs `put_sub_value`): back-mdb's index puts.
 *
 * A DUPSORT | DUPFIXED | INTEGERDUP database of 100 keys with 2,000 8-byte
 * ids each (sub-databases of several leaves), then 20,000 puts of a new id
 * to a random key, 1,000 a transaction with commits, between callgrind's
 * client requests. "random": ids in random order (odd, so all new);
 * "append": each key's next id, with MDB_APPENDDUP (slapadd's order).
 *
 * Built against LMDB, and against our library (the same source):
 *   gcc -O2 crates/mdb-bench/probes/subdb_put.c -o /tmp/sp_lmdb -llmdb
 *   mkdir -p /tmp/ourlib && ln -sf $PWD/target/release/liblmdb.so /tmp/ourlib/liblmdb.so.0 \
 *       && ln -sf $PWD/target/release/liblmdb.so /tmp/ourlib/liblmdb.so
 *   gcc -O2 -I crates/mdb-ffi/include crates/mdb-bench/probes/subdb_put.c -o /tmp/sp_ours \
 *       -L /tmp/ourlib -Wl,-rpath,/tmp/ourlib -llmdb
 *   mkdir /tmp/d && valgrind --tool=callgrind --callgrind-out-file=/tmp/sp.cg /tmp/sp_ours /tmp/d random
 * and divide the `summary:` of /tmp/sp.cg.1 by 20,000.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "lmdb.h"

#define MUST(x)                                                                \
	do {                                                                   \
		int r_ = (x);                                                  \
		if (r_) {                                                      \
			fprintf(stderr, "%d: %s\n", __LINE__, mdb_strerror(r_)); \
			exit(1);                                               \
		}                                                              \
	} while (0)

static uint64_t rs = 88172645463325252ull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static void put(MDB_txn *txn, MDB_dbi db, uint32_t key, uint64_t id, unsigned flags)
{
	MDB_val k = {4, &key}, v = {8, &id};
	int rc = mdb_put(txn, db, &k, &v, flags);
	if (rc && rc != MDB_KEYEXIST)
		MUST(rc);
}

int main(int argc, char **argv)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi db;
	uint64_t next[100];
	int append;
	if (argc != 3) {
		fprintf(stderr, "usage: %s <empty dir> random|append\n", argv[0]);
		return 2;
	}
	append = strcmp(argv[2], "append") == 0;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_set_mapsize(env, 1ull << 30));
	MUST(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "idx", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP, &db));
	for (uint32_t key = 0; key < 100; key++) {
		for (uint64_t id = 0; id < 2000; id++)
			put(txn, db, key, append ? id : (rnd() % 1000000) * 2,
			    append ? MDB_APPENDDUP : 0);
		next[key] = 2000;
	}
	MUST(mdb_txn_commit(txn));
	CALLGRIND_ZERO_STATS;
	for (int t = 0; t < 20; t++) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (int j = 0; j < 1000; j++) {
			uint32_t key = rnd() % 100;
			if (append)
				put(txn, db, key, next[key]++, MDB_APPENDDUP);
			else
				put(txn, db, key, (rnd() % 1000000) * 2 + 1, 0);
		}
		MUST(mdb_txn_commit(txn));
	}
	CALLGRIND_DUMP_STATS_AT("puts");
	mdb_env_close(env);
	return 0;
}
