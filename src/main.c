/* main: the vgpu-sched command line — subcommands `serve` (the default when the first argument
 * is a flag), `simulate` and `version`. */
#include "mtune.h"
#include "serve.h"
#include "simulate.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define VS_HAMI_PROTOCOL "v2.10"

static void usage(FILE *f)
{
    fprintf(f, "usage: vgpu-sched <command> [flags]\n"
               "commands:\n"
               "  serve [flags]   (default; HAMi's hami-scheduler flags, see README)\n"
               "  simulate --cluster FILE [--pods FILE] [--node-scheduler-policy P]\n"
               "           [--gpu-scheduler-policy P] [--device-config-file FILE]\n"
               "           [--output table|json] [--svg FILE]\n"
               "  version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    bool flag_first = cmd[0] == '-' && strcmp(cmd, "--help") != 0 && strcmp(cmd, "-h") != 0 &&
                      strcmp(cmd, "--version") != 0;
    if (flag_first || strcmp(cmd, "serve") == 0) {
        vs_mtune_exec(argv); /* a long-running service: malloc's per-thread caches off */
        return flag_first ? vs_serve_main(argc - 1, argv + 1) : vs_serve_main(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("vgpu-sched %s (HAMi protocol %s)\n", VS_VERSION, VS_HAMI_PROTOCOL);
        return 0;
    }
    if (strcmp(cmd, "simulate") == 0)
        return vs_simulate_main(argc - 2, argv + 2, stdout, stderr);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "vgpu-sched: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return 2;
}
