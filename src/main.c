/* main: the vgpu-sched command line — subcommands `serve` (the default when the first argument
 * is a flag), `simulate`, `version` and `dra-mirror-sweep`. Each command's flags and --help come
 * from its own flag table (serve.c, simulate.c); `vgpu-sched --help` prints all of them. */
#include "mirrors.h"
#include "mtune.h"
#include "serve.h"
#include "simulate.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define VS_HAMI_PROTOCOL "v2.10"

static void version_usage(FILE *f)
{
    fprintf(f, "usage: vgpu-sched version\n"
               "\n"
               "Prints the version and the HAMi protocol version it speaks. Also --version.\n"
               "\n"
               "flags:\n"
               "  -h, --help  print this help and exit\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: vgpu-sched [serve] [flags]\n"
               "       vgpu-sched simulate --cluster FILE [flags]\n"
               "       vgpu-sched version\n"
               "       vgpu-sched dra-mirror-sweep [flags]\n"
               "\n"
               "A GPU-sharing scheduler extender for Kubernetes, a drop-in for HAMi's\n"
               "hami-scheduler. Commands:\n"
               "  serve     the extender and admission webhook (the default when the first\n"
               "            argument is a flag)\n"
               "  simulate  what-if scheduling of pods from files, with the same code as serve\n"
               "  version   print the version\n"
               "  dra-mirror-sweep  delete the mirror ResourceClaims of one namespace\n"
               "`vgpu-sched COMMAND --help` prints one command's part of what follows.\n"
               "\n");
    vs_serve_usage(f);
    fprintf(f, "\n");
    vs_simulate_usage(f);
    fprintf(f, "\n");
    version_usage(f);
    fprintf(f, "\n");
    vs_mirrors_sweep_usage(f);
}

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "-help") == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || is_help(cmd)) {
        usage(stdout);
        return 0;
    }
    bool flag_first = cmd[0] == '-' && strcmp(cmd, "--version") != 0;
    if (flag_first || strcmp(cmd, "serve") == 0) {
        int sub = flag_first ? 1 : 2;
        vs_mtune_exec(argv); /* a long-running service: malloc's per-thread caches off */
        return vs_serve_main(argc - sub, argv + sub);
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2 && is_help(argv[2])) {
            version_usage(stdout);
            return 0;
        }
        if (argc > 2) {
            fprintf(stderr, "vgpu-sched: version takes no arguments (\"%s\")\n", argv[2]);
            return 2;
        }
        printf("vgpu-sched %s (HAMi protocol %s)\n", VS_VERSION, VS_HAMI_PROTOCOL);
        return 0;
    }
    if (strcmp(cmd, "dra-mirror-sweep") == 0)
        return vs_mirrors_sweep_main(argc - 2, argv + 2, stdout, stderr);
    if (strcmp(cmd, "simulate") == 0)
        return vs_simulate_main(argc - 2, argv + 2, stdout, stderr);
    fprintf(stderr, "vgpu-sched: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return 2;
}
