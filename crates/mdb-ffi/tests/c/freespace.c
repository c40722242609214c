/* Free-space reuse under small write transactions: the same workload runs on
 * Debian's liblmdb and on ours (same source, library swapped) and prints the
 * data file's size, so the test can compare the two.
 *
 * usage: freespace DIR MODE COMMITS
 * MODE: small    1-6 random puts or deletes (15%) per txn, values 16-1500 B
 *       single   one put or delete per txn, values 16-1500 B
 *       overflow like small, 10% of values 5-20 KiB (overflow pages)
 *       dupsort  like small on a DUPSORT database, 1-8 values per key
 */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHECK(x)                                                              \
    do {                                                                      \
        int rc_ = (x);                                                        \
        if (rc_) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,        \
                    mdb_strerror(rc_));                                       \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static unsigned long long rng = 0x2545F4914F6CDD1DULL;
static unsigned next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

#define NKEYS 3000
static char buf[20 * 1024];

static size_t value_len(int overflow) {
    if (overflow && next() % 10 == 0)
        return 5 * 1024 + next() % (15 * 1024);
    return 16 + next() % (1500 - 16 + 1);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: freespace DIR MODE COMMITS\n");
        return 2;
    }
    const char *dir = argv[1], *mode = argv[2];
    long commits = atol(argv[3]);
    int single = !strcmp(mode, "single"), overflow = !strcmp(mode, "overflow"),
        dupsort = !strcmp(mode, "dupsort");
    if (!single && !overflow && !dupsort && strcmp(mode, "small")) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    memset(buf, 'v', sizeof buf);
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)1 << 30));
    CHECK(mdb_env_set_maxdbs(env, 2));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, dupsort ? "d" : NULL,
                       MDB_CREATE | (dupsort ? MDB_DUPSORT : 0), &dbi));
    /* Initial load: every key once. */
    for (unsigned k = 0; k < NKEYS; k++) {
        char kb[16];
        MDB_val key = {(size_t)snprintf(kb, sizeof kb, "key%08u", k), kb};
        MDB_val val = {dupsort ? 8 : value_len(overflow), buf};
        CHECK(mdb_put(txn, dbi, &key, &val, 0));
    }
    CHECK(mdb_txn_commit(txn));
    for (long c = 0; c < commits; c++) {
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        int ops = single ? 1 : 1 + next() % 6;
        for (int i = 0; i < ops; i++) {
            char kb[16];
            MDB_val key = {(size_t)snprintf(kb, sizeof kb, "key%08u", next() % NKEYS), kb};
            if (next() % 100 < 15) {
                int rc = mdb_del(txn, dbi, &key, NULL);
                if (rc != MDB_NOTFOUND)
                    CHECK(rc);
            } else if (dupsort) {
                /* Up to 8 distinct values per key, 8-183 bytes long. */
                char vb[256];
                unsigned tag = next() % 8;
                memset(vb, 'a' + tag, sizeof vb);
                MDB_val val = {8 + 25 * tag, vb};
                int rc = mdb_put(txn, dbi, &key, &val, MDB_NODUPDATA);
                if (rc != MDB_KEYEXIST)
                    CHECK(rc);
            } else {
                MDB_val val = {value_len(overflow), buf};
                CHECK(mdb_put(txn, dbi, &key, &val, 0));
            }
        }
        CHECK(mdb_txn_commit(txn));
    }
    MDB_envinfo info;
    MDB_stat st;
    CHECK(mdb_env_info(env, &info));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_stat(txn, dbi, &st));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    struct stat sb;
    if (stat(path, &sb)) {
        perror(path);
        return 1;
    }
    printf("file %lld last_pgno %zu entries %zu\n", (long long)sb.st_size,
           info.me_last_pgno, st.ms_entries);
    return 0;
}
