/* Page counts after a load: the same load runs on Debian's liblmdb and on
 * ours (same source, library swapped) and prints the database's page counts.
 *
 * usage: pages DIR MODE N
 * MODE: random      N random 16-byte keys, 100-byte values
 *       seq         N ascending keys, no MDB_APPEND
 *       seq_desc    N descending keys
 *       append_var  N ascending keys of 8-60 bytes with MDB_APPEND, values 20-300 bytes
 *       seq_var     the same without MDB_APPEND
 *       dup2, dup3, dup100
 *                   DUPSORT: N values in all, 2, 3 or 100 8-byte values per key,
 *                   random key order
 * prints: "depth D branch B leaf L overflow O entries E" */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                              \
    do {                                                                      \
        int rc_ = (x);                                                        \
        if (rc_) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,        \
                    mdb_strerror(rc_));                                       \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static unsigned long long next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A permutation of 0..n-1 (multiplicative hash modulo a power of two). */
static unsigned long perm(unsigned long i, unsigned long n) {
    unsigned long m = 1;
    while (m < n) m <<= 1;
    unsigned long x = i;
    do {
        x = (x * 0x5851F42DUL + 0x14057B7EUL) & (m - 1);
    } while (x >= n);
    return x;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: pages DIR MODE N\n");
        return 2;
    }
    const char *mode = argv[2];
    long n = atol(argv[3]);
    int dups = 0;
    if (!strncmp(mode, "dup", 3)) dups = atoi(mode + 3);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)4 << 30));
    CHECK(mdb_env_set_maxdbs(env, 2));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "db", MDB_CREATE | (dups ? MDB_DUPSORT : 0), &dbi));
    static char vb[400];
    memset(vb, 'v', sizeof vb);
    for (long i = 0; i < n; i++) {
        char kb[80];
        MDB_val key, val;
        unsigned flags = 0;
        key.mv_data = kb;
        val.mv_data = vb;
        val.mv_size = 100;
        if (!strcmp(mode, "random")) {
            key.mv_size = 16;
            unsigned long long a = next(), b = next();
            memcpy(kb, &a, 8);
            memcpy(kb + 8, &b, 8);
        } else if (!strcmp(mode, "seq") || !strcmp(mode, "seq_desc")) {
            long k = strcmp(mode, "seq") ? n - 1 - i : i;
            key.mv_size = (size_t)snprintf(kb, sizeof kb, "%016ld", k);
        } else if (!strcmp(mode, "append_var") || !strcmp(mode, "seq_var")) {
            int len = snprintf(kb, sizeof kb, "%012ld", i);
            int extra = (int)(next() % 53);
            memset(kb + len, 'k', (size_t)extra);
            key.mv_size = (size_t)(len + extra);
            val.mv_size = 20 + next() % 281;
            if (!strcmp(mode, "append_var")) flags = MDB_APPEND;
        } else if (dups) {
            long nkeys = n / dups;
            long j = (long)perm((unsigned long)i, (unsigned long)(nkeys * dups));
            key.mv_size = (size_t)snprintf(kb, sizeof kb, "key%012ld", j % nkeys);
            unsigned long long id = (unsigned long long)(j / nkeys) * 0x9E3779B97F4A7C15ULL;
            memcpy(vb, &id, 8);
            val.mv_size = 8;
        } else {
            fprintf(stderr, "unknown mode %s\n", mode);
            return 2;
        }
        CHECK(mdb_put(txn, dbi, &key, &val, flags));
        if (i % 1000 == 999) {
            CHECK(mdb_txn_commit(txn));
            CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        }
    }
    CHECK(mdb_txn_commit(txn));
    MDB_stat st;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_stat(txn, dbi, &st));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    printf("depth %u branch %zu leaf %zu overflow %zu entries %zu\n", st.ms_depth,
           st.ms_branch_pages, st.ms_leaf_pages, st.ms_overflow_pages, st.ms_entries);
    return 0;
}
