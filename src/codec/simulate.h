/* simulate: `vgpu-sched simulate` (design.md §2.2): load a cluster snapshot, schedule the pending
 * pods one at a time with the same Filter/score/reserve code as `serve`, and report. */
#ifndef VS_SIMULATE_H
#define VS_SIMULATE_H

#include <stdio.h>

/* Runs the subcommand with argv after "simulate". Output to out, diagnostics to err.
 * Returns the process exit code: 0 done (even if pods did not fit) or after -h/--help (usage
 * to out), 2 bad flags or input. */
int vs_simulate_main(int argc, char **argv, FILE *out, FILE *err);
/* Prints `simulate --help`: what it does and every flag from the table the parser reads. */
void vs_simulate_usage(FILE *f);

#endif
