/* mtune: glibc malloc's per-thread caches (tcache) off for `serve`.
 *
 * Every thread that frees memory keeps up to 7 chunks of each small size for itself. The
 * service's threads live as long as it does (the HTTP pool, informers, the patch workers while
 * busy), and chunks parked in their caches count as in use: the trim cannot give their pages
 * back. Under waves of pods RSS then rose 16-25 KiB a wave for 20 minutes and more; with the
 * caches off it stayed flat and ~2 MiB lower (e2e soak, docs/reliability.md
 * "glibc's per-thread caches off").
 * glibc reads the setting (GLIBC_TUNABLES) only when a process starts, so `serve` re-executes
 * itself once with it. A GLIBC_TUNABLES that already sets glibc.malloc.tcache_count wins. */
#ifndef VS_MTUNE_H
#define VS_MTUNE_H

/* The GLIBC_TUNABLES value to run with, given the current one (NULL: unset): `current` with
 * glibc.malloc.tcache_count=0 appended; NULL when `current` sets tcache_count already (nothing
 * to do) or out of memory. Returns a new string, free with free(). */
char *vs_mtune_tunables(const char *current);

/* Re-executes the running program (/proc/self/exe) with argv and the tunable set, when it is not
 * set yet and the process does not run in secure-execution mode (AT_SECURE: file capabilities
 * or set-user-ID, where glibc erases GLIBC_TUNABLES, so the re-execution would repeat forever).
 * Returns only when nothing was done or the exec failed (then the caches stay on). Call before
 * any thread starts. */
void vs_mtune_exec(char **argv);

#endif
