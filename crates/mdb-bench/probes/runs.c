/* The CPU a page write and its write-back cost, by how the pages lie.
 *
 * Fills a 463 MiB file (one of mdb-bench wal-batch's size at 1M keys) a
 * page per pwrite (so the page cache holds it in one-page folios), then 20
 * times writes 1,360 pages (one 1,000-key commit's worth) and fdatasyncs,
 * and prints the process's CPU time (user + system, getrusage) per page
 * for the writes and for the sync:
 *
 *   runs 0 [L]:  pages at random, one pwrite each
 *   runs 1 [L]:  the same pages sorted by offset
 *   runs 2 L:    runs of L adjacent pages at random places, one pwritev a
 *                run (at most 64 pages a call)
 *
 * Build and run on the disk to measure (not tmpfs):
 *   gcc -O2 crates/mdb-bench/probes/runs.c -o /tmp/runs
 *   cd /some/disk/dir && /tmp/runs 0 && for l in 2 4 8 16 64; do /tmp/runs 2 $l; done
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

static double cpu(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec * 1e6 + r.ru_utime.tv_usec + r.ru_stime.tv_sec * 1e6 +
           r.ru_stime.tv_usec;
}

static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t sz = (size_t)463 << 20;
    long np = sz / 4096;
    int n = 1360, reps = 20;
    int mode = argc > 1 ? atoi(argv[1]) : 0, L = argc > 2 ? atoi(argv[2]) : 1;
    if (L < 1) L = 1;
    int fd = open("runs-probe", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return perror("open"), 1;
    static char pg[64][4096];
    struct iovec iov[64];
    for (int i = 0; i < 64; i++) {
        memset(pg[i], i + 1, 4096);
        iov[i].iov_base = pg[i];
        iov[i].iov_len = 4096;
    }
    for (long p = 0; p < np; p++) pwrite(fd, pg[p % 64], 4096, p * 4096);
    fsync(fd);
    long *pn = malloc(n * sizeof(long));
    double w = 0, s = 0;
    srand(7);
    for (int r = 0; r < reps; r++) {
        if (mode == 2) {
            for (int i = 0; i < n; i += L) {
                long b = (rand() % (np / L)) * L;
                for (int j = 0; j < L && i + j < n; j++) pn[i + j] = b + j;
            }
            qsort(pn, n, sizeof(long), cmp);
        } else {
            for (int i = 0; i < n; i++) pn[i] = rand() % np;
            if (mode == 1) qsort(pn, n, sizeof(long), cmp);
        }
        double a = cpu();
        if (mode == 2) {
            for (int i = 0; i < n;) {
                int k = 1;
                while (i + k < n && k < 64 && pn[i + k] == pn[i] + k) k++;
                if (k == 1)
                    pwrite(fd, pg[0], 4096, pn[i] * 4096);
                else
                    pwritev(fd, iov, k, pn[i] * 4096);
                i += k;
            }
        } else {
            for (int i = 0; i < n; i++) pwrite(fd, pg[i % 64], 4096, pn[i] * 4096);
        }
        double b = cpu();
        fdatasync(fd);
        double c = cpu();
        w += b - a;
        s += c - b;
    }
    printf("%s, L=%d: CPU %.2f us/page to write, %.2f us/page to fdatasync\n",
           mode == 0 ? "random pages" : mode == 1 ? "random pages, sorted" : "runs of L pages",
           mode == 2 ? L : 1, w / reps / n, s / reps / n);
    unlink("runs-probe");
    return 0;
}
