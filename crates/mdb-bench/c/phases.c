/*
 * The phases of `mdb-bench instr`, through LMDB 0.9's C API.
 *
 * Compiled twice by `mdb-bench instr`: against Debian's lmdb.h and -llmdb,
 * and against crates/mdb-ffi/include/lmdb.h and our liblmdb.so. Same source,
 * same data, the library swapped. The Rust API twin is src/phases.rs; both
 * generate their data the same way (SplitMix64, see src/workloads.rs).
 *
 * Each phase runs between CALLGRIND_ZERO_STATS and
 * CALLGRIND_DUMP_STATS_AT(name), so a callgrind dump holds exactly its
 * instructions; data generation and checks run outside the phases. Outside
 * valgrind the client requests do nothing.
 *
 * Usage: phases <empty directory> <N>
 * Prints "phase <name> <ops>" for each phase; exits 1 on any error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "lmdb.h"

#define BATCH 1000
#define VAL_LEN 100
#define IDS_PER_KEY 100
#define RANGE_LEN 10
#define LARGE_LEN 100000
#define LARGE_BATCH 10

#define MUST(expr)                                                             \
	do {                                                                   \
		int rc_ = (expr);                                              \
		if (rc_ != 0) {                                                \
			fprintf(stderr, "phases.c:%d: %s = %d (%s)\n",         \
				__LINE__, #expr, rc_, mdb_strerror(rc_));      \
			exit(1);                                               \
		}                                                              \
	} while (0)

static void fail(const char *what)
{
	fprintf(stderr, "phases: %s\n", what);
	exit(1);
}

/* SplitMix64, as workloads::mix. */
static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

/* workloads::key: two hashes of i, big-endian. */
static void make_key(uint64_t i, unsigned char *k)
{
	put_be64(k, mix(i));
	put_be64(k + 8, mix(i ^ 0x5555555555555555ull));
}

/* workloads::shuffled: Fisher-Yates over 0..n driven by SplitMix64. */
static uint32_t *shuffled(size_t n, uint64_t seed)
{
	uint32_t *v = malloc(n * sizeof *v);
	if (!v)
		fail("out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = (uint32_t)i;
	uint64_t s = seed;
	for (size_t i = n; i-- > 1;) {
		s = mix(s);
		size_t j = (size_t)(s % (i + 1));
		uint32_t t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	return v;
}

static int cmp16(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

/* Announce a phase's operation count (after its dump). */
static void done(const char *name, size_t ops)
{
	printf("phase %s %zu\n", name, ops);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		fail("usage: phases <directory> <N>");
	size_t n = strtoul(argv[2], NULL, 10);
	if (n < 100 || n > UINT32_MAX)
		fail("N must be between 100 and 2^32-1");

	/* Data, exactly as src/phases.rs makes it. */
	unsigned char *keys = malloc(n * 16), *sorted = malloc(n * 16);
	size_t nkeys = (n + IDS_PER_KEY - 1) / IDS_PER_KEY;
	unsigned char *dkeys = malloc(nkeys * 16), *pairs = malloc(n * 24);
	if (!keys || !sorted || !dkeys || !pairs)
		fail("out of memory");
	for (size_t i = 0; i < n; i++)
		make_key(i, keys + 16 * i);
	memcpy(sorted, keys, n * 16);
	qsort(sorted, n, 16, cmp16);
	uint32_t *get_order = shuffled(n, 0x123456789ABCDEF0ull);
	uint32_t *del_order = shuffled(n, 0x0DE1E7E0DE1E7E00ull);
	for (size_t i = 0; i < nkeys; i++)
		make_key(i ^ 0x1D1D1D1Dull, dkeys + 16 * i);
	/* Pair p = (dkeys[p % nkeys], id p), in a random order; ids are
	 * big-endian so that memcmp sorts them as integers. */
	uint32_t *dup_order = shuffled(n, 0x0F1E2D3C4B5A6978ull);
	for (size_t i = 0; i < n; i++) {
		uint32_t p = dup_order[i];
		memcpy(pairs + 24 * i, dkeys + 16 * (p % nkeys), 16);
		put_be64(pairs + 24 * i + 16, mix(p ^ 0x0123456789ABCDEFull));
	}
	unsigned char val[VAL_LEN];
	for (int j = 0; j < VAL_LEN; j++)
		val[j] = (unsigned char)mix((uint64_t)j + 1000);

	MDB_env *env;
	MUST(mdb_env_create(&env));
	size_t map = (size_t)1 << 30;
	if (n * 4096 > map)
		map = n * 4096;
	MUST(mdb_env_set_mapsize(env, map));
	MUST(mdb_env_set_maxdbs(env, 6));
	MUST(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
	MDB_txn *txn;
	MDB_dbi rnd, app, dup, large, front;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "random", MDB_CREATE, &rnd));
	MUST(mdb_dbi_open(txn, "append", MDB_CREATE, &app));
	MUST(mdb_dbi_open(txn, "dupsort", MDB_CREATE | MDB_DUPSORT, &dup));
	MUST(mdb_dbi_open(txn, "large", MDB_CREATE, &large));
	MUST(mdb_dbi_open(txn, "front", MDB_CREATE, &front));
	MUST(mdb_txn_commit(txn));

	MDB_val k, v;
	MDB_cursor *cur;
	size_t count, bytes;
	int rc;

	CALLGRIND_ZERO_STATS;
	for (size_t i = 0; i < n; i += BATCH) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (size_t j = i; j < n && j < i + BATCH; j++) {
			memcpy(val, &j, 8);
			k.mv_size = 16, k.mv_data = keys + 16 * j;
			v.mv_size = VAL_LEN, v.mv_data = val;
			MUST(mdb_put(txn, rnd, &k, &v, 0));
		}
		MUST(mdb_txn_commit(txn));
	}
	CALLGRIND_DUMP_STATS_AT("put_random");
	done("put_random", n);

	CALLGRIND_ZERO_STATS;
	for (size_t i = 0; i < n; i += BATCH) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (size_t j = i; j < n && j < i + BATCH; j++) {
			memcpy(val, &j, 8);
			k.mv_size = 16, k.mv_data = sorted + 16 * j;
			v.mv_size = VAL_LEN, v.mv_data = val;
			MUST(mdb_put(txn, app, &k, &v, MDB_APPEND));
		}
		MUST(mdb_txn_commit(txn));
	}
	CALLGRIND_DUMP_STATS_AT("put_append");
	done("put_append", n);

	count = 0;
	CALLGRIND_ZERO_STATS;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	for (size_t i = 0; i < n; i++) {
		uint32_t x = get_order[i];
		k.mv_size = 16, k.mv_data = keys + 16 * (size_t)x;
		MUST(mdb_get(txn, rnd, &k, &v));
		count += v.mv_size == VAL_LEN && memcmp(v.mv_data, &(size_t){x}, 8) == 0;
	}
	mdb_txn_abort(txn);
	CALLGRIND_DUMP_STATS_AT("get");
	if (count != n)
		fail("get: wrong values");
	done("get", n);

	count = 0, bytes = 0;
	CALLGRIND_ZERO_STATS;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_cursor_open(txn, rnd, &cur));
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
		count++, bytes += v.mv_size;
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	CALLGRIND_DUMP_STATS_AT("scan");
	if (rc != MDB_NOTFOUND || count != n || bytes != n * VAL_LEN)
		fail("scan: wrong items");
	done("scan", n);

	/* Ranges: MDB_SET_RANGE at a random key, then MDB_NEXT for the rest
	 * of RANGE_LEN items (fewer at the end of the database). */
	count = 0;
	CALLGRIND_ZERO_STATS;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_cursor_open(txn, rnd, &cur));
	for (size_t i = 0; i < n / 10; i++) {
		k.mv_size = 16, k.mv_data = keys + 16 * (size_t)get_order[i];
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		for (int j = 1; rc == 0; j++) {
			count++;
			if (j == RANGE_LEN)
				break;
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			MUST(rc);
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	CALLGRIND_DUMP_STATS_AT("range_10");
	if (count < n / 10 || count > n / 10 * RANGE_LEN)
		fail("range_10: wrong items");
	done("range_10", n / 10);

	count = 0;
	CALLGRIND_ZERO_STATS;
	for (size_t i = 0; i < n / 10; i++) {
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		k.mv_size = 16, k.mv_data = keys + 16 * (size_t)get_order[i];
		MUST(mdb_get(txn, rnd, &k, &v));
		count += v.mv_size;
		mdb_txn_abort(txn);
	}
	CALLGRIND_DUMP_STATS_AT("read_txn");
	if (count != n / 10 * VAL_LEN)
		fail("read_txn: wrong values");
	done("read_txn", n / 10);

	/* Values of 100 KB (overflow pages): n/100 of them, read back in a
	 * scattered order in one read transaction. */
	size_t nlarge = n / 100;
	unsigned char *big = malloc(LARGE_LEN);
	if (!big)
		fail("out of memory");
	for (size_t j = 0; j < LARGE_LEN; j++)
		big[j] = (unsigned char)mix(j);
	for (size_t i = 0; i < nlarge; i += LARGE_BATCH) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (size_t j = i; j < nlarge && j < i + LARGE_BATCH; j++) {
			memcpy(big, &j, 8);
			k.mv_size = 16, k.mv_data = keys + 16 * j;
			v.mv_size = LARGE_LEN, v.mv_data = big;
			MUST(mdb_put(txn, large, &k, &v, 0));
		}
		MUST(mdb_txn_commit(txn));
	}
	count = 0;
	CALLGRIND_ZERO_STATS;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	for (size_t i = 0; i < nlarge; i++) {
		size_t x = (i * 7919) % nlarge;
		k.mv_size = 16, k.mv_data = keys + 16 * x;
		MUST(mdb_get(txn, large, &k, &v));
		count += v.mv_size == LARGE_LEN && memcmp(v.mv_data, &x, 8) == 0;
	}
	mdb_txn_abort(txn);
	CALLGRIND_DUMP_STATS_AT("large_get");
	free(big);
	if (count != nlarge)
		fail("large_get: wrong values");
	done("large_get", nlarge);

	CALLGRIND_ZERO_STATS;
	for (size_t i = 0; i < n; i += BATCH) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (size_t j = i; j < n && j < i + BATCH; j++) {
			k.mv_size = 16, k.mv_data = pairs + 24 * j;
			v.mv_size = 8, v.mv_data = pairs + 24 * j + 16;
			MUST(mdb_put(txn, dup, &k, &v, 0));
		}
		MUST(mdb_txn_commit(txn));
	}
	CALLGRIND_DUMP_STATS_AT("dupsort_put");
	done("dupsort_put", n);

	/* Per item: MDB_NEXT_NODUP to each key, then MDB_NEXT_DUP along its
	 * values (back-mdb's walk of an index, or of dn2id's children). */
	count = 0;
	CALLGRIND_ZERO_STATS;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_cursor_open(txn, dup, &cur));
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_NODUP)) == 0) {
		do
			count++;
		while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP)) == 0);
		if (rc != MDB_NOTFOUND)
			MUST(rc);
	}
	if (rc != MDB_NOTFOUND)
		MUST(rc);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	CALLGRIND_DUMP_STATS_AT("dupsort_walk");
	if (count != n)
		fail("dupsort_walk: wrong count");
	done("dupsort_walk", n);

	CALLGRIND_ZERO_STATS;
	for (size_t i = 0; i < n; i += BATCH) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (size_t j = i; j < n && j < i + BATCH; j++) {
			k.mv_size = 16, k.mv_data = keys + 16 * (size_t)del_order[j];
			MUST(mdb_del(txn, rnd, &k, NULL));
		}
		MUST(mdb_txn_commit(txn));
	}
	CALLGRIND_DUMP_STATS_AT("delete");
	done("delete", n);

	/* Per step: delete at the cursor, then MDB_NEXT to what followed. */
	count = 0;
	CALLGRIND_ZERO_STATS;
	do {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_cursor_open(txn, app, &cur));
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		for (int j = 0; j < BATCH && rc == 0; j++) {
			MUST(mdb_cursor_del(cur, 0));
			count++;
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			MUST(rc);
		mdb_cursor_close(cur);
		MUST(mdb_txn_commit(txn));
	} while (rc == 0);
	CALLGRIND_DUMP_STATS_AT("cursor_delete");
	if (count != n)
		fail("cursor_delete: wrong count");
	done("cursor_delete", n);

	/* Per step: MDB_FIRST, then delete there (a queue drained from its
	 * head). The database is loaded with APPEND outside the phase. */
	for (size_t i = 0; i < n; i += BATCH) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (size_t j = i; j < n && j < i + BATCH; j++) {
			k.mv_size = 16, k.mv_data = sorted + 16 * j;
			v.mv_size = VAL_LEN, v.mv_data = val;
			MUST(mdb_put(txn, front, &k, &v, MDB_APPEND));
		}
		MUST(mdb_txn_commit(txn));
	}
	count = 0;
	CALLGRIND_ZERO_STATS;
	do {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_cursor_open(txn, front, &cur));
		rc = 0;
		for (int j = 0; j < BATCH; j++) {
			rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
			if (rc != 0)
				break;
			MUST(mdb_cursor_del(cur, 0));
			count++;
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			MUST(rc);
		mdb_cursor_close(cur);
		MUST(mdb_txn_commit(txn));
	} while (rc == 0);
	CALLGRIND_DUMP_STATS_AT("first_delete");
	if (count != n)
		fail("first_delete: wrong count");
	done("first_delete", n);

	/* Every database holds what the phases left. */
	MDB_stat st;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_stat(txn, rnd, &st));
	if (st.ms_entries != 0)
		fail("delete left entries");
	MUST(mdb_stat(txn, app, &st));
	if (st.ms_entries != 0)
		fail("cursor_delete left entries");
	MUST(mdb_stat(txn, dup, &st));
	if (st.ms_entries != n)
		fail("dupsort_put: wrong entry count");
	mdb_txn_abort(txn);
	mdb_env_close(env);
	free(keys), free(sorted), free(dkeys), free(pairs);
	free(get_order), free(del_order), free(dup_order);
	return 0;
}
