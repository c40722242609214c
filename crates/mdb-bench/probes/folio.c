/* What a one-page write costs the disk, by how the kernel cached the file.
 *
 * Fills a 463 MiB file (one of mdb-bench wal-batch's size), then writes
 * 1,360 random 4 KiB pages (one 1,000-key commit's worth) and fdatasyncs,
 * three times, and prints the bytes the process sent to the device per page
 * written (/proc/self/io write_bytes) and the time of the writes and sync.
 *
 *   mode 0: file filled by pwritev of 256 pages (as a commit's runs are)
 *   mode 1: file filled by one pwrite per page
 *   mode 2: as 0, then the cache dropped and the file read through a map
 *           (read-around)
 *   mode 3: as 2 with madvise(MADV_RANDOM) on the map (MDB_NORDAHEAD)
 *   mode 4: as 1, then dropped and read through a map as in 2
 *
 * Build and run on the disk to measure (not tmpfs):
 *   gcc -O2 crates/mdb-bench/probes/folio.c -o /tmp/folio
 *   cd /some/disk/dir && for m in 0 1 2 3 4; do /tmp/folio $m; done
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static long device_bytes(void) {
    FILE *f = fopen("/proc/self/io", "r");
    char l[256];
    long v = 0;
    while (fgets(l, sizeof l, f))
        if (!strncmp(l, "write_bytes:", 12)) v = atol(l + 12);
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    size_t sz = (size_t)463 << 20;
    int n = 1360, mode = argc > 1 ? atoi(argv[1]) : 0;
    int fd = open("folio-probe", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, sz)) return perror("open"), 1;
    static char pages[256][4096];
    struct iovec iov[256];
    for (int i = 0; i < 256; i++) {
        memset(pages[i], i, 4096);
        iov[i].iov_base = pages[i];
        iov[i].iov_len = 4096;
    }
    for (size_t o = 0; o < sz; o += 256 * 4096) {
        if (mode == 1 || mode == 4)
            for (int i = 0; i < 256; i++) pwrite(fd, pages[i], 4096, o + i * 4096);
        else
            pwritev(fd, iov, 256, o);
    }
    fsync(fd);
    if (mode >= 2) {
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        char *m = mmap(0, sz, PROT_READ, MAP_SHARED, fd, 0);
        if (mode == 3) madvise(m, sz, MADV_RANDOM);
        volatile char s = 0;
        for (size_t o = 0; o < sz; o += 4096) s += m[o];
    }
    srand(3);
    for (int r = 0; r < 3; r++) {
        long a = device_bytes();
        double t = now();
        for (int i = 0; i < n; i++) {
            pages[0][0] = i;
            pwrite(fd, pages[0], 4096, (size_t)(rand() % (sz / 4096)) * 4096);
        }
        double w = now() - t;
        t = now();
        fdatasync(fd);
        double s = now() - t;
        printf("mode %d: %.1f KiB to the device per page written; write %.2f us/page, sync %.2f us/page\n",
               mode, (device_bytes() - a) / 1024.0 / n, w / n, s / n);
    }
    unlink("folio-probe");
    return 0;
}
