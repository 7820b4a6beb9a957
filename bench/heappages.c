/* heappages: replays heaptrack's raw data (the file DUMP_HEAPTRACK_OUTPUT names, before
 * heaptrack_interpret) and, at given byte offsets of it (one per soak wave), counts the live
 * chunks, their bytes and the 4 KiB pages they touch: the pages a trim cannot give back. Chunks
 * are also dated by the mark they were allocated after, so a page that holds a chunk made in
 * an earlier wave (not at start, not in the wave just ended) shows long-lived memory that
 * arrived later and scattered (docs/reliability.md "How the soak measures, and the tools").
 * Analysis tool, not shipped. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MARKS 4096
#define MMAP_MIN  (4u << 20) /* serve.c's M_MMAP_THRESHOLD: larger chunks are not in a heap */

struct chunk {
    uint64_t ptr, size, trace; /* trace: heaptrack's index of the allocating stack */
    int born;                  /* marks passed when it was allocated */
};

struct table {
    struct chunk *s;
    uint64_t cap, n;
};

static uint64_t mix(uint64_t p)
{
    p ^= p >> 33;
    p *= 0xff51afd7ed558ccdULL;
    return p ^ (p >> 33);
}

static void grow(struct table *t);

static void put(struct table *t, uint64_t ptr, uint64_t size, uint64_t trace, int born)
{
    if ((t->n + 1) * 2 > t->cap)
        grow(t);
    uint64_t i = mix(ptr) & (t->cap - 1);
    while (t->s[i].ptr && t->s[i].ptr != ptr)
        i = (i + 1) & (t->cap - 1);
    if (!t->s[i].ptr)
        t->n++;
    t->s[i] = (struct chunk){ptr, size, trace, born};
}

static void grow(struct table *t)
{
    struct table g = {calloc(t->cap ? t->cap * 2 : 1u << 16, sizeof(struct chunk)),
                      t->cap ? t->cap * 2 : 1u << 16, 0};
    if (!g.s) {
        fprintf(stderr, "heappages: out of memory\n");
        exit(1);
    }
    for (uint64_t i = 0; i < t->cap; i++)
        if (t->s[i].ptr)
            put(&g, t->s[i].ptr, t->s[i].size, t->s[i].trace, t->s[i].born);
    free(t->s);
    *t = g;
}

/* Removes ptr (backward-shift deletion keeps every probe chain whole). */
static void del(struct table *t, uint64_t ptr)
{
    if (!t->cap)
        return;
    uint64_t m = t->cap - 1, i = mix(ptr) & m;
    while (t->s[i].ptr != ptr) {
        if (!t->s[i].ptr)
            return;
        i = (i + 1) & m;
    }
    for (uint64_t j = (i + 1) & m; t->s[j].ptr; j = (j + 1) & m) {
        uint64_t home = mix(t->s[j].ptr) & m;
        if (((j - home) & m) >= ((j - i) & m)) { /* home is not in (i, j]: may move to i */
            t->s[i] = t->s[j];
            i = j;
        }
    }
    t->s[i].ptr = 0;
    t->n--;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One line per mark: the live heap chunks, the pages they touch, and how many of those pages
 * hold a chunk born after mark 1 and before the previous mark. */
static bool older(const struct chunk *c, int mark)
{
    return c->born >= 1 && c->born < mark - 1;
}

/* Every heap chunk live at this mark, one line each ("TRACE SIZE PTR BORN": hex as heaptrack
 * writes them, then the marks passed when it was allocated), for attributing them to the
 * stacks of RAW's "t" lines. */
static void dump_live(const struct table *t, FILE *out)
{
    for (uint64_t i = 0; i < t->cap; i++) {
        const struct chunk *c = &t->s[i];
        if (c->ptr && c->size < MMAP_MIN)
            fprintf(out, "%" PRIx64 " %" PRIx64 " %" PRIx64 " %d\n", c->trace, c->size, c->ptr,
                    c->born);
    }
}

static void report(const struct table *t, int mark)
{
    uint64_t *pg = NULL, n = 0, cap = 0, live = 0, chunks = 0;
    for (uint64_t i = 0; i < t->cap; i++) {
        const struct chunk *c = &t->s[i];
        if (!c->ptr || c->size >= MMAP_MIN)
            continue;
        chunks++;
        live += c->size;
        uint64_t first = (c->ptr - 16) >> 12, last = (c->ptr + c->size - 1) >> 12;
        for (uint64_t q = first; q <= last; q++) {
            if (n + 1 > cap) {
                cap = cap ? cap * 2 : 1u << 16;
                uint64_t *g = realloc(pg, cap * sizeof(*pg));
                if (!g) {
                    fprintf(stderr, "heappages: out of memory\n");
                    exit(1);
                }
                pg = g;
            }
            /* the low bit says "born in an earlier wave" */
            pg[n++] = q << 1 | (uint64_t)older(c, mark);
        }
    }
    qsort(pg, n, sizeof(*pg), cmp_u64);
    uint64_t pages = 0, old = 0;
    for (uint64_t i = 0; i < n; i++) {
        bool first_of_page = i == 0 || (pg[i] >> 1) != (pg[i - 1] >> 1);
        if (first_of_page)
            pages++;
        if ((pg[i] & 1) && (i + 1 == n || (pg[i + 1] >> 1) != (pg[i] >> 1)))
            old++; /* sorted: the flagged entry of a page comes last */
    }
    printf("mark %d: live %" PRIu64 " chunks, %" PRIu64 " KiB; pages %" PRIu64 " (%" PRIu64
           " KiB), of which with a chunk from an earlier wave %" PRIu64 "\n",
           mark, chunks, live >> 10, pages, pages * 4, old);
    fflush(stdout);
    free(pg);
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 5) {
        fprintf(stderr,
                "usage: %s RAW MARKS [N OUT]\n"
                "  RAW    heaptrack's raw output (before heaptrack_interpret)\n"
                "  MARKS  lines \"LABEL OFFSET\": report when RAW has been read up to "
                "OFFSET bytes\n"
                "  N OUT  also write to OUT every heap chunk live at mark N (\"TRACE SIZE PTR\"\n"
                "         in hex, TRACE indexing RAW's \"t\" lines from 1, then BORN: the marks\n"
                "         passed when it was allocated)\n",
                argv[0]);
        return 2;
    }
    FILE *raw = fopen(argv[1], "r"), *mf = fopen(argv[2], "r");
    if (!raw || !mf) {
        fprintf(stderr, "heappages: cannot open %s\n", raw ? argv[2] : argv[1]);
        return 1;
    }
    static long long marks[MAX_MARKS];
    int nm = 0;
    char line[8192];
    while (nm < MAX_MARKS && fgets(line, sizeof(line), mf))
        if (sscanf(line, "%*s %lld", &marks[nm]) == 1)
            nm++;
    fclose(mf);

    int dump_at = argc == 5 ? atoi(argv[3]) : 0;
    FILE *dump = argc == 5 ? fopen(argv[4], "w") : NULL;
    if (argc == 5 && !dump) {
        fprintf(stderr, "heappages: cannot write %s\n", argv[4]);
        return 1;
    }

    struct table t = {0};
    long long pos = 0;
    int passed = 0;
    while (fgets(line, sizeof(line), raw)) {
        pos += (long long)strlen(line);
        uint64_t size, trace, ptr;
        if (line[0] == '+' &&
            sscanf(line + 1, "%" SCNx64 " %" SCNx64 " %" SCNx64, &size, &trace, &ptr) == 3)
            put(&t, ptr, size, trace, passed);
        else if (line[0] == '-' && sscanf(line + 1, "%" SCNx64, &ptr) == 1)
            del(&t, ptr);
        while (passed < nm && pos >= marks[passed]) {
            report(&t, ++passed);
            if (dump && passed == dump_at)
                dump_live(&t, dump);
        }
    }
    if (dump)
        fclose(dump);
    fclose(raw);
    free(t.s);
    return 0;
}
