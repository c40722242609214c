/* MDB_MAP_FULL on a 64-page map: how many puts one transaction takes before
 * MAP_FULL, and how many it may hold and still commit. Runs on Debian's
 * liblmdb and on ours (same source, library swapped).
 *
 * usage: mapfull DIR VALUE_LEN PREFILL_TXNS ORDER(random|seq)
 * prints: "fail N commit M" where N puts succeeded before MAP_FULL and M is
 * the largest transaction of the same puts that commits. */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vlen, prefill, seq;
static char vb[4000];

static void fresh(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd)) exit(1);
}

/* On a fresh 64-page env (after PREFILL small commits): put n keys in one
 * txn, then commit. Returns 0 or the first error; *done = puts that worked. */
static int attempt(const char *dir, long n, long *done) {
    fresh(dir);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    char kb[32];
    int rc;
    if (mdb_env_create(&env) || mdb_env_set_mapsize(env, 64 * 4096) ||
        mdb_env_open(env, dir, MDB_NOSYNC, 0644)) {
        fprintf(stderr, "open failed\n");
        exit(1);
    }
    for (int p = 0; p < prefill; p++) {
        if (mdb_txn_begin(env, NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &dbi)) exit(1);
        for (long i = 0; i < 20; i++) {
            MDB_val k = {(size_t)snprintf(kb, sizeof kb, "p%07ld", (i * 31 + p) % 300), kb};
            MDB_val v = {(size_t)vlen, vb};
            if ((rc = mdb_put(txn, dbi, &k, &v, 0))) {
                fprintf(stderr, "prefill put: %s\n", mdb_strerror(rc));
                exit(1);
            }
        }
        if ((rc = mdb_txn_commit(txn))) {
            fprintf(stderr, "prefill commit: %s\n", mdb_strerror(rc));
            exit(1);
        }
    }
    if (mdb_txn_begin(env, NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &dbi)) exit(1);
    *done = 0;
    for (long i = 0; i < n; i++) {
        long kn = seq ? i : (i * 7919) % 1000003;
        MDB_val k = {(size_t)snprintf(kb, sizeof kb, "%08ld", kn), kb};
        MDB_val v = {(size_t)vlen, vb};
        if ((rc = mdb_put(txn, dbi, &k, &v, 0))) {
            mdb_txn_abort(txn);
            mdb_env_close(env);
            return rc;
        }
        *done = i + 1;
    }
    rc = mdb_txn_commit(txn);
    mdb_env_close(env);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: mapfull DIR VALUE_LEN PREFILL_TXNS random|seq\n");
        return 2;
    }
    vlen = atoi(argv[2]);
    prefill = atoi(argv[3]);
    seq = !strcmp(argv[4], "seq");
    memset(vb, 'x', sizeof vb);
    long fail;
    int rc = attempt(argv[1], 1000000, &fail);
    if (rc != MDB_MAP_FULL) {
        fprintf(stderr, "expected MDB_MAP_FULL, got %s\n", mdb_strerror(rc));
        return 1;
    }
    /* Largest committing size, by bisection: lo commits, hi does not. */
    long lo = 0, hi = fail + 1, done;
    while (hi - lo > 1) {
        long mid = (lo + hi) / 2;
        rc = attempt(argv[1], mid, &done);
        if (rc == 0)
            lo = mid;
        else if (rc == MDB_MAP_FULL)
            hi = mid;
        else {
            fprintf(stderr, "unexpected %s\n", mdb_strerror(rc));
            return 1;
        }
    }
    printf("fail %ld commit %ld\n", fail, lo);
    return 0;
}
