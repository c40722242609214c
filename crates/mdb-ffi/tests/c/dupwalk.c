/*
 * Random cursor walks over DUPSORT databases through the C API, printing
 * what every call returns. tests/dup_walk.rs runs it twice against our
 * library and compares the traces line by line:
 *
 * - "kept": the walk as it is. In a read transaction our library steps
 *   MDB_NEXT_DUP and MDB_NEXT along the page of the key's values it kept
 *   from the call before (cursor.rs `next_dup_in_leaf`).
 * - "general": the same walk with an MDB_GET_CURRENT before every move of
 *   a read transaction's cursor, which drops what the library kept, so
 *   every step takes the general path. (In a read transaction
 *   GET_CURRENT changes nothing else.)
 *
 * The walks lean on MDB_NEXT_DUP and MDB_NEXT and mix in every other move,
 * counts, MDB_GET_MULTIPLE and MDB_NEXT_MULTIPLE, reset and renewed
 * snapshots and renewed cursors with the values changed in between (keys
 * whose values cross from a sub-page into a sub-database), and write
 * transactions that put and delete between the steps.
 *
 * (Not against LMDB: 0.9.24 itself answers some of these walks wrongly,
 * e.g. MDB_NEXT_DUP after a failed MDB_NEXT_NODUP and a GET_BOTH_RANGE,
 * and aborts on assertions in the write transactions' cursor deletes.)
 *
 * Usage: dupwalk <empty scratch directory> <seed> kept|general
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lmdb.h"

#define DIE(expr)                                                              \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_) {                                                      \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#expr, mdb_strerror(r_));                      \
			exit(1);                                               \
		}                                                              \
	} while (0)

static uint64_t rs;

static unsigned rnd(unsigned n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (unsigned)(rs % n);
}

static MDB_env *env;
static MDB_dbi dups, fixed;
/* The "general" mode, in a read transaction: see the top. */
static int refresh;
/* Walking a read transaction's cursor. */
static int reading;

static int get(MDB_cursor *c, MDB_val *k, MDB_val *d, MDB_cursor_op op)
{
	if (refresh) {
		MDB_val k2, d2;
		mdb_cursor_get(c, &k2, &d2, MDB_GET_CURRENT);
	}
	return mdb_cursor_get(c, k, d, op);
}

/* Keys: "k0".."k9" in dups, "f0".."f7" in fixed. Values: "v%04u" strings,
 * 32-bit integers (INTEGERDUP). */
static char kbuf[8], vbuf[8];
static uint32_t ibuf;

static MDB_val key_of(int isfixed, unsigned i)
{
	MDB_val k;
	snprintf(kbuf, sizeof kbuf, "%c%u", isfixed ? 'f' : 'k', i);
	k.mv_size = strlen(kbuf);
	k.mv_data = kbuf;
	return k;
}

static MDB_val val_of(int isfixed, unsigned v)
{
	MDB_val d;
	if (isfixed) {
		ibuf = v;
		d.mv_size = 4;
		d.mv_data = &ibuf;
	} else {
		snprintf(vbuf, sizeof vbuf, "v%04u", v % 10000);
		d.mv_size = 5;
		d.mv_data = vbuf;
	}
	return d;
}

static unsigned nkeys(int isfixed)
{
	return isfixed ? 8 : 10;
}

static unsigned vspace(int isfixed)
{
	return isfixed ? 5000 : 1000;
}

static void print_val(MDB_val v)
{
	if (v.mv_size == 4 && v.mv_data) {
		uint32_t x;
		memcpy(&x, v.mv_data, 4);
		printf("#%u", x);
	} else if (v.mv_data) {
		printf("%.*s", (int)v.mv_size, (const char *)v.mv_data);
	} else {
		printf("-");
	}
}

static void report(const char *what, int rc, MDB_val k, MDB_val d)
{
	printf("%s %d", what, rc);
	if (rc == 0) {
		printf(" ");
		print_val(k);
		printf(" ");
		print_val(d);
	}
	printf("\n");
}

/* Put `n` random values under key `i` (a sub-page grows into a
 * sub-database past about 120 string or 500 integer values). */
static void fill(MDB_txn *txn, int isfixed, unsigned i, unsigned n)
{
	MDB_dbi db = isfixed ? fixed : dups;
	for (unsigned j = 0; j < n; j++) {
		MDB_val k = key_of(isfixed, i), d = val_of(isfixed, rnd(vspace(isfixed)));
		int rc = mdb_put(txn, db, &k, &d, MDB_NODUPDATA);
		if (rc && rc != MDB_KEYEXIST)
			DIE(rc);
	}
}

/* The value after the last of a MULTIPLE buffer, by a fresh cursor (no
 * layout involved): whether `c`'s NEXT_DUP lands on it. */
static int next_is_successor(MDB_txn *txn, MDB_cursor *c, MDB_val k, MDB_val buf)
{
	MDB_cursor *f;
	MDB_val fk = k, fd, ck, cd;
	uint32_t last;
	int frc, crc;
	if (buf.mv_size < 4 || buf.mv_size % 4)
		return 0;
	memcpy(&last, (const char *)buf.mv_data + buf.mv_size - 4, 4);
	last++;
	fd.mv_size = 4, fd.mv_data = &last;
	DIE(mdb_cursor_open(txn, fixed, &f));
	frc = mdb_cursor_get(f, &fk, &fd, MDB_GET_BOTH_RANGE);
	crc = get(c, &ck, &cd, MDB_NEXT_DUP);
	mdb_cursor_close(f);
	if (frc != crc)
		return 0;
	return crc != 0 || (cd.mv_size == 4 && memcmp(cd.mv_data, fd.mv_data, 4) == 0);
}

static const MDB_cursor_op steps[] = {
	MDB_NEXT_DUP, MDB_NEXT_DUP, MDB_NEXT_DUP, MDB_NEXT_DUP, MDB_NEXT_DUP,
	MDB_NEXT_DUP, MDB_NEXT, MDB_NEXT, MDB_NEXT, MDB_PREV, MDB_PREV_DUP,
	MDB_NEXT_NODUP, MDB_PREV_NODUP, MDB_FIRST_DUP, MDB_LAST_DUP,
	MDB_GET_CURRENT,
};

/* One random call on cursor `c` over `db`. */
static void step(MDB_txn *txn, MDB_cursor *c, int isfixed)
{
	MDB_val k = {0, NULL}, d = {0, NULL};
	unsigned pick = rnd(40);
	int rc;
	size_t n;
	if (pick < 28) {
		MDB_cursor_op op = steps[pick % (sizeof steps / sizeof steps[0])];
		rc = get(c, &k, &d, op);
		printf("op%d ", (int)op);
		report("", rc, k, d);
		return;
	}
	switch (pick) {
	case 28:
		report("first", get(c, &k, &d, MDB_FIRST), k, d);
		break;
	case 29:
		report("last", get(c, &k, &d, MDB_LAST), k, d);
		break;
	case 30:
	case 31:
		k = key_of(isfixed, rnd(nkeys(isfixed) + 1));
		report("set", get(c, &k, &d, MDB_SET), k, d);
		break;
	case 32:
		k = key_of(isfixed, rnd(nkeys(isfixed) + 1));
		report("set_range", get(c, &k, &d, MDB_SET_RANGE), k, d);
		break;
	case 33:
	case 34:
		k = key_of(isfixed, rnd(nkeys(isfixed)));
		d = val_of(isfixed, rnd(vspace(isfixed)));
		rc = get(c, &k, &d, pick == 33 ? MDB_GET_BOTH : MDB_GET_BOTH_RANGE);
		report(pick == 33 ? "get_both" : "get_both_range", rc, k, d);
		break;
	case 35:
		rc = mdb_cursor_count(c, &n);
		printf("count %d %zu\n", rc, rc ? 0 : n);
		break;
	case 36:
	case 37:
		if (!isfixed)
			break;
		/* GET_MULTIPLE on a key holding one value answers differently
		 * (LMDB leaves `data` alone): only on duplicates. */
		if (pick == 36 && (mdb_cursor_count(c, &n) || n < 2))
			break;
		rc = get(c, &k, &d, pick == 36 ? MDB_GET_MULTIPLE : MDB_NEXT_MULTIPLE);
		printf("%s %d", pick == 36 ? "get_multiple" : "next_multiple", rc);
		if (rc == 0) {
			MDB_val ck = k;
			if (pick == 36) {
				/* GET_MULTIPLE leaves `k` as it was. */
				DIE(get(c, &ck, NULL, MDB_GET_CURRENT));
			}
			/* (In a write transaction a delete through the txn may
			 * leave the cursor a value to return first.) */
			printf(" %s %d", reading ? "successor" : "w-successor",
			       next_is_successor(txn, c, ck, d));
		}
		printf("\n");
		break;
	default:
		/* A run of NEXT_DUP to the end of the key's values. */
		while ((rc = get(c, &k, &d, MDB_NEXT_DUP)) == 0)
			report("run", rc, k, d);
		report("run", rc, k, d);
	}
}

/* Changes made inside a write transaction between the steps of `c`. */
static void change(MDB_txn *txn, MDB_cursor *c, MDB_cursor *other, int isfixed)
{
	MDB_dbi db = isfixed ? fixed : dups;
	MDB_val k, d;
	unsigned i = rnd(nkeys(isfixed));
	int rc;
	switch (rnd(6)) {
	case 0:
		k = key_of(isfixed, i), d = val_of(isfixed, rnd(vspace(isfixed)));
		rc = mdb_put(txn, db, &k, &d, MDB_NODUPDATA);
		printf("put %d\n", rc);
		break;
	case 1:
		k = key_of(isfixed, i), d = val_of(isfixed, rnd(vspace(isfixed)));
		rc = mdb_cursor_put(other, &k, &d, MDB_NODUPDATA);
		printf("cursor_put %d\n", rc);
		break;
	case 2:
		/* The walking cursor's own key and value, through the txn. */
		k.mv_size = 0, k.mv_data = NULL, d = k;
		if (mdb_cursor_get(c, &k, &d, MDB_GET_CURRENT) == 0) {
			char kb[8], vb[8];
			memcpy(kb, k.mv_data, k.mv_size);
			memcpy(vb, d.mv_data, d.mv_size);
			k.mv_data = kb, d.mv_data = vb;
			rc = mdb_del(txn, db, &k, &d);
			printf("del_current %d\n", rc);
		}
		break;
	case 3:
		rc = mdb_cursor_del(c, 0);
		printf("cursor_del %d\n", rc);
		break;
	case 4:
		k = key_of(isfixed, i), d = val_of(isfixed, rnd(vspace(isfixed)));
		rc = mdb_del(txn, db, &k, &d);
		printf("del %d\n", rc);
		break;
	default:
		/* Enough values for a sub-page to become a sub-database. */
		fill(txn, isfixed, i, isfixed ? 300 : 80);
		printf("fill %u\n", i);
	}
}

/* `n` random calls on each of the read transaction's cursors. */
static void walk(MDB_txn *r, MDB_cursor **c, int general, int n)
{
	for (int f = 0; f < 2; f++) {
		refresh = general, reading = 1;
		for (int s = 0; s < n; s++)
			step(r, c[f], f);
		refresh = 0, reading = 0;
	}
}

int main(int argc, char **argv)
{
	MDB_txn *txn, *r;
	MDB_cursor *c[2], *wc, *other;
	int general;
	if (argc != 4) {
		fprintf(stderr, "usage: %s <scratch dir> <seed> kept|general\n", argv[0]);
		return 2;
	}
	general = strcmp(argv[3], "general") == 0;
	rs = strtoull(argv[2], NULL, 10) * 2654435761u + 1;
	DIE(mdb_env_create(&env));
	DIE(mdb_env_set_maxdbs(env, 4));
	DIE(mdb_env_set_mapsize(env, 64 << 20));
	/* NOTLS: two read transactions in this thread at once. */
	DIE(mdb_env_open(env, argv[1], MDB_NOSYNC | MDB_NOTLS, 0644));
	DIE(mdb_txn_begin(env, NULL, 0, &txn));
	DIE(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dups));
	DIE(mdb_dbi_open(txn, "fixed", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP,
			 &fixed));
	/* One value, a few, a sub-page near its limit, a sub-database. */
	for (int f = 0; f < 2; f++) {
		static const unsigned counts[2][10] = {
			{1, 3, 40, 100, 300, 1, 600, 20, 2, 150},
			{1, 5, 200, 450, 900, 2400, 1, 60},
		};
		for (unsigned i = 0; i < nkeys(f); i++)
			fill(txn, f, i, counts[f][i]);
	}
	DIE(mdb_txn_commit(txn));

	DIE(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	DIE(mdb_cursor_open(r, dups, &c[0]));
	DIE(mdb_cursor_open(r, fixed, &c[1]));
	for (int round = 0; round < 12; round++) {
		MDB_txn *r2;
		MDB_val k, d;
		printf("round %d\n", round);
		/* A renewed cursor starts unpositioned. */
		walk(r, c, general, 400);
		/* A write transaction walks the values and changes them, while
		 * the snapshot stays. */
		DIE(mdb_txn_begin(env, NULL, 0, &txn));
		for (int f = 0; f < 2; f++) {
			DIE(mdb_cursor_open(txn, f ? fixed : dups, &wc));
			DIE(mdb_cursor_open(txn, f ? fixed : dups, &other));
			for (int s = 0; s < 150; s++) {
				if (rnd(4) == 0)
					change(txn, wc, other, f);
				else
					step(txn, wc, f);
			}
			mdb_cursor_close(wc);
			mdb_cursor_close(other);
		}
		DIE(mdb_txn_commit(txn));
		/* The cursors move to a newer snapshot while theirs lives. */
		DIE(mdb_txn_begin(env, NULL, MDB_RDONLY, &r2));
		DIE(mdb_cursor_renew(r2, c[0]));
		DIE(mdb_cursor_renew(r2, c[1]));
		walk(r2, c, general, 100);
		/* A reset snapshot lends nothing. */
		mdb_txn_reset(r2);
		printf("after reset %d %d\n", mdb_cursor_get(c[0], &k, &d, MDB_NEXT_DUP) != 0,
		       mdb_cursor_get(c[1], &k, &d, MDB_NEXT) != 0);
		mdb_txn_abort(r);
		if (round % 2) {
			DIE(mdb_txn_renew(r2));
			r = r2;
		} else {
			mdb_txn_abort(r2);
			DIE(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
		}
		DIE(mdb_cursor_renew(r, c[0]));
		DIE(mdb_cursor_renew(r, c[1]));
	}
	mdb_cursor_close(c[0]);
	mdb_cursor_close(c[1]);
	mdb_txn_abort(r);
	mdb_env_close(env);
	printf("end\n");
	return 0;
}
