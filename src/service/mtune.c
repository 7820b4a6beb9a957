/* mtune: glibc malloc's per-thread caches off for `serve` (see mtune.h). */
#include "mtune.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define TCACHE_KEY "glibc.malloc.tcache_count"

/* Whether the colon-separated list sets key (as "key=..."). */
static bool sets(const char *list, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

char *vs_mtune_tunables(const char *current)
{
    if (sets(current, TCACHE_KEY))
        return NULL;
    const char *add = TCACHE_KEY "=0";
    size_t n = (current ? strlen(current) : 0) + strlen(add) + 2;
    char *v = malloc(n);
    if (!v)
        return NULL;
    if (current && *current)
        snprintf(v, n, "%s:%s", current, add);
    else
        snprintf(v, n, "%s", add);
    return v;
}

void vs_mtune_exec(char **argv)
{
    /* Secure execution (file capabilities, as the image's `scheduler` command has to bind port
     * 443 unprivileged; or set-user-ID): glibc drops GLIBC_TUNABLES from the environment, so
     * every re-execution would see it unset and re-execute again. Run with the caches on. */
    if (getauxval(AT_SECURE))
        return;
    const char *cur = getenv("GLIBC_TUNABLES");
    char *was = cur ? strdup(cur) : NULL, *v = vs_mtune_tunables(cur);
    if (v && (!cur || was) && setenv("GLIBC_TUNABLES", v, 1) == 0) {
        /* By the program's own path: a process exec'd as /proc/self/exe is named "exe" in ps,
         * top and /proc/PID/comm. */
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n > 0) {
            self[n] = '\0';
            execv(self, argv); /* returns only on failure (e.g. the file was replaced) */
        }
        execv("/proc/self/exe", argv);
        /* not re-executed: the environment must not claim a setting glibc never read */
        if (was)
            setenv("GLIBC_TUNABLES", was, 1);
        else
            unsetenv("GLIBC_TUNABLES");
    }
    free(was);
    free(v);
}
