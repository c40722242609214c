/*
 * One side of the live-interop test (tests/live_interop.rs): two processes,
 * one on Debian's liblmdb and one on ours, share one environment at once.
 * Commands arrive on stdin, one per line; each answers one line.
 *
 *   put K V      write txn: put, commit          -> ok | error text
 *   get K        fresh read txn: get             -> value | NOTFOUND
 *   rbegin       begin a read txn and keep it    -> ok
 *   rget K       get in the kept read txn        -> value | NOTFOUND
 *   rend         abort the kept read txn         -> ok
 *   wbegin       begin a write txn and keep it   -> ok
 *   wput K V     put in the kept write txn       -> ok
 *   wcommit      commit it                       -> ok
 *   tput K V MS  put+commit in a thread; after MS ms -> blocked | done,
 *                and when the thread ends        -> finished
 *   quit
 *
 * Usage: interop <env dir>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lmdb.h"

static MDB_env *env;
static MDB_dbi dbi = 1;

static int put(const char *k, const char *v)
{
	MDB_txn *txn;
	MDB_val key = {strlen(k), (void *)k}, data = {strlen(v), (void *)v};
	int rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (rc)
		return rc;
	rc = mdb_put(txn, dbi, &key, &data, 0);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	return mdb_txn_commit(txn);
}

static void get(MDB_txn *txn, const char *k)
{
	MDB_val key = {strlen(k), (void *)k}, data;
	int rc = mdb_get(txn, dbi, &key, &data);
	if (rc == 0)
		printf("%.*s\n", (int)data.mv_size, (char *)data.mv_data);
	else
		printf("%s\n", rc == MDB_NOTFOUND ? "NOTFOUND" : mdb_strerror(rc));
}

struct job {
	char k[256], v[256];
	volatile int done;
	int rc;
};

static void *tput(void *arg)
{
	struct job *j = arg;
	j->rc = put(j->k, j->v);
	j->done = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	char line[1024], a[256], b[256];
	int ms;
	MDB_txn *rtxn = NULL, *wtxn = NULL;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2)
		return 2;
	if (mdb_env_create(&env) || mdb_env_set_mapsize(env, 8 << 20) ||
	    mdb_env_open(env, argv[1], MDB_NOTLS, 0644)) {
		printf("open failed\n");
		return 1;
	}
	{
		/* install DBI 1's comparators (LMDB needs this) */
		MDB_txn *txn;
		if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
			mdb_dbi_open(txn, NULL, 0, &dbi);
			mdb_txn_commit(txn);
		}
	}
	printf("ready\n");
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "put %255s %255s", a, b) == 2) {
			int rc = put(a, b);
			printf("%s\n", rc ? mdb_strerror(rc) : "ok");
		} else if (sscanf(line, "get %255s", a) == 1) {
			MDB_txn *txn;
			int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
			if (rc) {
				printf("%s\n", mdb_strerror(rc));
				continue;
			}
			get(txn, a);
			mdb_txn_abort(txn);
		} else if (strncmp(line, "rbegin", 6) == 0) {
			int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &rtxn);
			printf("%s\n", rc ? mdb_strerror(rc) : "ok");
		} else if (sscanf(line, "rget %255s", a) == 1) {
			get(rtxn, a);
		} else if (strncmp(line, "rend", 4) == 0) {
			mdb_txn_abort(rtxn);
			printf("ok\n");
		} else if (strncmp(line, "wbegin", 6) == 0) {
			int rc = mdb_txn_begin(env, NULL, 0, &wtxn);
			printf("%s\n", rc ? mdb_strerror(rc) : "ok");
		} else if (sscanf(line, "wput %255s %255s", a, b) == 2) {
			MDB_val key = {strlen(a), a}, data = {strlen(b), b};
			int rc = mdb_put(wtxn, dbi, &key, &data, 0);
			printf("%s\n", rc ? mdb_strerror(rc) : "ok");
		} else if (strncmp(line, "wcommit", 7) == 0) {
			int rc = mdb_txn_commit(wtxn);
			printf("%s\n", rc ? mdb_strerror(rc) : "ok");
		} else if (sscanf(line, "tput %255s %255s %d", a, b, &ms) == 3) {
			static struct job j;
			pthread_t th;
			struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
			memset(&j, 0, sizeof j);
			strcpy(j.k, a);
			strcpy(j.v, b);
			pthread_create(&th, NULL, tput, &j);
			nanosleep(&ts, NULL);
			printf("%s\n", j.done ? "done" : "blocked");
			pthread_join(th, NULL);
			printf("finished %s\n", j.rc ? mdb_strerror(j.rc) : "ok");
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		} else {
			printf("bad command\n");
		}
	}
	mdb_env_close(env);
	return 0;
}
