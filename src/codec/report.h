/* report: renders a simulation (design.md §2.2) as the pinned JSON object, an aligned text
 * table for people, or an SVG of per-card memory and core allocation. */
#ifndef VS_REPORT_H
#define VS_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kobj.h"
#include "model.h"

struct vs_sim_pod {
    char *pod;                /* "ns/name" */
    char *node;               /* chosen node, NULL when not scheduled */
    char *devices;            /* hami.io/vgpu-devices-allocated value when scheduled; NULL when
                               * the pod holds no NVIDIA card (printed as "devices":null) */
    bool gpu;                 /* placed by the extender's path (it asks for some device) */
    char *other_devices;      /* the other backends' picks for the table: "WORD list ..." */
    json_t *annotations;      /* every annotation the decision writes (gpu pods), timestamps
                               * left out */
    float score;              /* node score of the chosen node */
    char *error;              /* pod-level error, NULL otherwise */
    struct vs_kvlist reasons; /* node -> why it did not fit (when not scheduled) */
    /* --reasons summary: reasons maps each reason word to a node count (decimal text), and
     * n_nodes is how many nodes were considered. */
    bool reasons_summary;
    size_t n_nodes;
    char **victims; /* "ns/name" of the pods preempted to place it (node set) */
    size_t n_victims;
};

struct vs_sim_report {
    struct vs_sim_pod *pods;
    size_t n_pods;
    const struct vs_model *model;
    const char *const *nodes; /* node names in input order */
    size_t n_nodes;
    const char *title; /* for the SVG, e.g. "binpack / spread" */
};

/* Each returns a new string (free with free()), NULL on OOM. */
char *vs_report_json(const struct vs_sim_report *r);
char *vs_report_table(const struct vs_sim_report *r);
/* Several reports side by side (e.g. binpack and spread) in one SVG document. */
char *vs_report_svg(const struct vs_sim_report *const *r, size_t n);

void vs_sim_pod_cleanup(struct vs_sim_pod *p);

/* Shortest decimal text that reads back as the same float (e.g. 7.5, 3, 0.1). */
void vs_format_float(float f, char *out, size_t len);

#endif
