/* replay: a main() for fuzz targets in plain builds. Runs LLVMFuzzerTestOneInput on every regular
 * file of each directory argument (and on each file argument), so ctest replays the committed
 * corpus under any sanitizer build. A crash is the failure; a missing or empty directory too. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on one file; exact-size buffer so sanitizers see any overread. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    if (!data || fread(data, 1, size, f) != size) {
        fprintf(stderr, "replay: %s: cannot read\n", path);
        free(data);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

/* Runs every regular file of dir in name order; returns how many, or -1. */
static long run_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    long count = 0;
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0)
                count = -1;
            else if (count >= 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    if (count == 0)
        fprintf(stderr, "replay: %s: no inputs\n", dir);
    return count;
}

int main(int argc, char **argv)
{
    long total = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long n;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) == 0 ? 1 : -1);
        if (n <= 0)
            return 1;
        total += n;
    }
    printf("replayed %ld inputs\n", total);
    return 0;
}
