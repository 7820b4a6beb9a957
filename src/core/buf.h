/* buf: a growable byte buffer for formatting annotation values. Always NUL-terminated. */
#ifndef VS_BUF_H
#define VS_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct vs_buf {
    char *data; /* NUL-terminated, owned */
    size_t len;
    size_t cap;
    bool oom; /* sticky: once an append failed, the content is incomplete */
};

void vs_buf_init(struct vs_buf *b);
void vs_buf_cleanup(struct vs_buf *b);
bool vs_buf_append(struct vs_buf *b, const char *s, size_t n);
bool vs_buf_puts(struct vs_buf *b, const char *s);
bool vs_buf_printf(struct vs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends v as printf("%.2f", v) would (fast path for finite values below 1e15). */
bool vs_buf_put_fixed2(struct vs_buf *b, double v);
/* Shortens the content to len bytes (no-op when it is not longer). */
void vs_buf_truncate(struct vs_buf *b, size_t len);
/* Takes the content out: returns it (free with free()) and resets b; NULL if b.oom. */
char *vs_buf_steal(struct vs_buf *b);

/* Grows the array *arr of n elements of size elem (capacity *cap) so that one more fits,
 * doubling; false when out of memory (the array is left as it was). */
bool vs_grow_one(void **arr, size_t n, size_t *cap, size_t elem);

#endif
