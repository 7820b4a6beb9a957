/* json_prune: a jansson tree of only the members a decoder reads. The text is walked at the
 * byte level (json_text.h's skipper) and only the members named by a vs_json_keep table are
 * handed to jansson; everything else is stepped over unread. For decoders that need a few
 * fields of large objects (the requests of every pod in a LIST page). */
#ifndef VS_JSON_PRUNE_H
#define VS_JSON_PRUNE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* One kept member of an object; a table ends with key NULL. members NULL keeps the member's
 * whole value as jansson decodes it. Otherwise, when the value is an object (or, with each,
 * an array: every element that is an object), only the members listed are kept in it; a value
 * of any other type is kept whole, so a decoder sees the same type errors as on the full tree. */
struct vs_json_keep {
    const char *key;
    const struct vs_json_keep *members;
    bool each;
    bool all; /* members NULL: an object is walked here, every member kept whole (a string map
               * costs no jansson parse) */
};

/* A new tree (json_decref) of the object in text[0, len) holding only the members keep names,
 * each decoded by jansson's rules (strings validated as UTF-8, numbers as integer or real,
 * later duplicates replacing earlier ones). The text outside the kept members is checked only
 * for its brackets and string quotes, not validated as JSON. NULL when the text is not an
 * object, its brackets or quotes do not balance, a kept member does not decode, or memory runs
 * out: then decode the whole text with json_loadb for the error. */
json_t *vs_json_load_pruned(const char *text, size_t len, const struct vs_json_keep *keep);

#endif
