/*
 * Callgrind client requests for the Rust phases (src/phases.rs): the
 * requests are inline-assembly macros, so Rust reaches them through these
 * functions. Without <valgrind/callgrind.h> (build.rs defines
 * MDB_BENCH_NO_CALLGRIND) they do nothing and report it.
 */
#ifndef MDB_BENCH_NO_CALLGRIND
#include <valgrind/callgrind.h>
#endif

int mdb_bench_cg_available(void)
{
#ifdef MDB_BENCH_NO_CALLGRIND
	return 0;
#else
	return 1;
#endif
}

void mdb_bench_cg_zero(void)
{
#ifndef MDB_BENCH_NO_CALLGRIND
	CALLGRIND_ZERO_STATS;
#endif
}

void mdb_bench_cg_dump(const char *name)
{
#ifdef MDB_BENCH_NO_CALLGRIND
	(void)name;
#else
	CALLGRIND_DUMP_STATS_AT(name);
#endif
}
