/* report: simulation output. JSON is built with jansson (keys in the pinned order); the table
 * and the SVG are plain text. Totals are computed from the model after all placements. */
#include "report.h"

#include "buf.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vs_format_float(float f, char *out, size_t len)
{
    int p = 1;
    for (; p < 9; p++) {
        snprintf(out, len, "%.*g", p, (double)f);
        if (strtof(out, NULL) == f)
            break;
    }
    snprintf(out, len, "%.*g", p, (double)f);
    /* %g writes 10 as 1e+01 when one digit is enough: plain decimals in [1e-4, 1e21), as Go's
     * %v does, with the same significant digits. */
    double a = fabs((double)f);
    char *e = strchr(out, 'e');
    if (e && a >= 1e-4 && a < 1e21) {
        int exp10 = atoi(e + 1), dec = p - 1 - exp10;
        snprintf(out, len, "%.*f", dec > 0 ? dec : 0, (double)f);
    }
}

void vs_sim_pod_cleanup(struct vs_sim_pod *p)
{
    free(p->pod);
    free(p->node);
    free(p->devices);
    free(p->other_devices);
    json_decref(p->annotations);
    free(p->error);
    vs_kv_cleanup(&p->reasons);
    for (size_t i = 0; i < p->n_victims; i++)
        free(p->victims[i]);
    free(p->victims);
    memset(p, 0, sizeof(*p));
}

/* A card's cores as every output reports them: percent of the card (its devcore) for NVIDIA and
 * the backends that count cores in percent; for a backend whose devcore counts compute units
 * (vs_device.cores_percent: AMD) the units used as a percentage of the card, rounded up, of 100,
 * as the metrics report them, so totals over a mixed cluster add like units. */
static void card_cores(const struct vs_sim_report *r, const struct vs_card *c, long long *used,
                       long long *total)
{
    const struct vs_devices *set = vs_model_devices(r->model);
    if (set && c->dev < set->n && set->dev[c->dev]->cores_percent && c->devcore > 0) {
        *used = (c->usedcores * 100 + c->devcore - 1) / c->devcore;
        *total = 100;
    } else {
        *used = c->usedcores;
        *total = c->devcore;
    }
}

struct totals {
    long long mem_total, mem_used, cores_total, cores_used, cards_used, cards_idle, scheduled;
};

static void totals_of(const struct vs_sim_report *r, struct totals *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < r->n_nodes; i++) {
        const struct vs_node *n = vs_model_node(r->model, r->nodes[i]);
        for (size_t k = 0; n && k < n->n_cards; k++) {
            const struct vs_card *c = &n->cards[k];
            t->mem_total += c->devmem;
            t->mem_used += c->usedmem;
            long long cu, ct;
            card_cores(r, c, &cu, &ct);
            t->cores_total += ct;
            t->cores_used += cu;
            if (c->used > 0)
                t->cards_used++;
            else
                t->cards_idle++;
        }
    }
    for (size_t i = 0; i < r->n_pods; i++)
        t->scheduled += r->pods[i].node != NULL;
}

static json_t *score_json(float f)
{
    char s[32];
    vs_format_float(f, s, sizeof(s));
    return json_real(strtod(s, NULL));
}

#define JSON_FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15) | JSON_COMPACT)

char *vs_report_json(const struct vs_sim_report *r)
{
    /* Results are dumped one at a time into `res` (a refused pod may carry a reason per node:
     * the whole tree of a large run would not fit in memory) and spliced into the dump of the
     * rest, whose "results" is left empty; with JSON_COMPACT the text is the same. */
    struct vs_buf res;
    vs_buf_init(&res);
    vs_buf_puts(&res, "[");
    json_t *root = json_object(), *results = json_array(), *nodes = json_array();
    if (!root || !results || !nodes)
        goto oom;
    json_object_set_new(root, "results", results);
    json_object_set_new(root, "nodes", nodes);
    for (size_t i = 0; i < r->n_pods; i++) {
        const struct vs_sim_pod *p = &r->pods[i];
        json_t *o = json_object();
        if (!o)
            goto oom;
        json_object_set_new(o, "pod", json_string(p->pod));
        json_object_set_new(o, "node", p->node ? json_string(p->node) : json_null());
        if (p->node && !p->gpu) {
            json_object_set_new(o, "devices", json_null());
        } else if (p->node) {
            json_object_set_new(o, "devices", p->devices ? json_string(p->devices) : json_null());
            json_object_set_new(o, "score", score_json(p->score));
            if (p->annotations)
                json_object_set(o, "annotations", p->annotations);
            if (p->n_victims) {
                json_t *pr = json_object(), *vs = json_array();
                if (!pr || !vs || json_object_set_new(o, "preempt", pr)) {
                    json_decref(vs);
                    goto oom;
                }
                json_object_set_new(pr, "node", json_string(p->node));
                json_object_set_new(pr, "victims", vs);
                for (size_t k = 0; k < p->n_victims; k++)
                    if (json_array_append_new(vs, json_string(p->victims[k])))
                        goto oom;
            }
        } else if (p->error) {
            json_object_set_new(o, "error", json_string(p->error));
        } else {
            json_t *rs = json_object();
            json_object_set_new(o, "reasons", rs);
            for (size_t k = 0; rs && k < p->reasons.n; k++) {
                const char *v = p->reasons.items[k].val;
                json_object_set_new(rs, p->reasons.items[k].key,
                                    p->reasons_summary ? json_integer(strtoll(v, NULL, 10))
                                                       : json_string(v));
            }
        }
        char *one = json_dumps(o, JSON_FLAGS);
        json_decref(o);
        if (!one)
            goto oom;
        if (i)
            vs_buf_puts(&res, ",");
        vs_buf_puts(&res, one);
        free(one);
    }
    vs_buf_puts(&res, "]");
    for (size_t i = 0; i < r->n_nodes; i++) {
        const struct vs_node *n = vs_model_node(r->model, r->nodes[i]);
        json_t *o = json_object(), *cards = json_array();
        if (!o || !cards || json_array_append_new(nodes, o)) {
            json_decref(cards);
            goto oom;
        }
        json_object_set_new(o, "name", json_string(r->nodes[i]));
        json_object_set_new(o, "cards", cards);
        for (size_t k = 0; n && k < n->n_cards; k++) {
            const struct vs_card *c = &n->cards[k];
            long long cu, ct;
            card_cores(r, c, &cu, &ct);
            json_t *co = json_pack("{s:s, s:s, s:I, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I}",
                                   "uuid", c->uuid, "type", c->type, "index", (json_int_t)c->index,
                                   "numa", (json_int_t)c->numa, "health", (int)c->health, "count",
                                   (json_int_t)c->count, "used", (json_int_t)c->used, "memTotal",
                                   (json_int_t)c->devmem, "memUsed", (json_int_t)c->usedmem,
                                   "coresTotal", (json_int_t)ct, "coresUsed", (json_int_t)cu);
            if (!co || json_array_append_new(cards, co))
                goto oom;
        }
    }
    struct totals t;
    totals_of(r, &t);
    json_t *sum = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "pods", (json_int_t)r->n_pods, "scheduled",
        (json_int_t)t.scheduled, "unschedulable", (json_int_t)(r->n_pods - (size_t)t.scheduled),
        "memTotal", (json_int_t)t.mem_total, "memUsed", (json_int_t)t.mem_used, "coresTotal",
        (json_int_t)t.cores_total, "coresUsed", (json_int_t)t.cores_used, "cardsUsed",
        (json_int_t)t.cards_used, "cardsIdle", (json_int_t)t.cards_idle);
    if (!sum)
        goto oom;
    json_object_set_new(root, "summary", sum);
    char *rest = json_dumps(root, JSON_FLAGS);
    json_decref(root);
    static const char head[] = "{\"results\":[]";
    char *list = vs_buf_steal(&res);
    char *out = NULL;
    if (rest && list && strncmp(rest, head, sizeof(head) - 1) == 0) {
        struct vs_buf b;
        vs_buf_init(&b);
        vs_buf_puts(&b, "{\"results\":");
        vs_buf_puts(&b, list);
        vs_buf_puts(&b, rest + sizeof(head) - 1);
        out = vs_buf_steal(&b);
    }
    free(rest);
    free(list);
    return out;
oom:
    json_decref(root);
    free(vs_buf_steal(&res));
    return NULL;
}

static double pct(long long a, long long b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

char *vs_report_table(const struct vs_sim_report *r)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_printf(&b, "%-32s %-20s %-10s %s\n", "POD", "NODE", "SCORE", "DEVICES / REASON");
    for (size_t i = 0; i < r->n_pods; i++) {
        const struct vs_sim_pod *p = &r->pods[i];
        if (p->node && !p->gpu) {
            vs_buf_printf(&b, "%-32s %-20s %-10s %s\n", p->pod, p->node, "-", "(no GPU)");
        } else if (p->node) {
            char s[32];
            vs_format_float(p->score, s, sizeof(s));
            vs_buf_printf(&b, "%-32s %-20s %-10s %s%s%s", p->pod, p->node, s,
                          p->devices ? p->devices : "", p->devices && p->other_devices ? " " : "",
                          p->other_devices ? p->other_devices : "");
            for (size_t k = 0; k < p->n_victims; k++)
                vs_buf_printf(&b, "%s%s", k ? ", " : "  preempting ", p->victims[k]);
            vs_buf_printf(&b, "\n");
        } else if (p->error) {
            vs_buf_printf(&b, "%-32s %-20s %-10s error: %s\n", p->pod, "-", "-", p->error);
        } else if (p->reasons.n == 0) {
            vs_buf_printf(&b, "%-32s %-20s %-10s no candidate node\n", p->pod, "-", "-");
        } else if (p->reasons_summary) {
            /* kube-scheduler's own FailedScheduling wording */
            vs_buf_printf(&b, "%-32s %-20s %-10s 0/%zu nodes are available: ", p->pod, "-", "-",
                          p->n_nodes);
            for (size_t k = 0; k < p->reasons.n; k++)
                vs_buf_printf(&b, "%s%s %s", k ? ", " : "", p->reasons.items[k].val,
                              p->reasons.items[k].key);
            vs_buf_puts(&b, "\n");
        } else {
            for (size_t k = 0; k < p->reasons.n; k++)
                vs_buf_printf(&b, "%-32s %-20s %-10s %s: %s\n", k ? "" : p->pod, k ? "" : "-",
                              k ? "" : "-", p->reasons.items[k].key, p->reasons.items[k].val);
        }
    }
    vs_buf_printf(&b, "\n%-20s %-44s %-22s %5s %6s %15s %11s\n", "NODE", "CARD", "TYPE", "NUMA",
                  "SLOTS", "MEMORY MiB", "CORES %");
    for (size_t i = 0; i < r->n_nodes; i++) {
        const struct vs_node *n = vs_model_node(r->model, r->nodes[i]);
        if (!n || n->n_cards == 0) {
            vs_buf_printf(&b, "%-20s %s\n", r->nodes[i],
                          n && n->error ? n->error : "no GPU registered");
            continue;
        }
        for (size_t k = 0; k < n->n_cards; k++) {
            const struct vs_card *c = &n->cards[k];
            char slots[32], mem[40], cores[32];
            snprintf(slots, sizeof(slots), "%lld/%d", (long long)c->used, c->count);
            snprintf(mem, sizeof(mem), "%lld/%d", (long long)c->usedmem, c->devmem);
            long long cu, ct;
            card_cores(r, c, &cu, &ct);
            snprintf(cores, sizeof(cores), "%lld/%lld", cu, ct);
            vs_buf_printf(&b, "%-20s %-44s %-22.22s %5d %6s %15s %11s%s\n", k ? "" : n->name,
                          c->uuid, c->type, c->numa, slots, mem, cores,
                          c->health ? "" : "  (unhealthy)");
        }
    }
    struct totals t;
    totals_of(r, &t);
    vs_buf_printf(&b,
                  "\nsummary: %zu pods, %lld scheduled, %lld unschedulable; memory %lld/%lld MiB "
                  "(%.1f%%), cores %lld/%lld (%.1f%%), cards used %lld, idle %lld\n",
                  r->n_pods, t.scheduled, (long long)r->n_pods - t.scheduled, t.mem_used,
                  t.mem_total, pct(t.mem_used, t.mem_total), t.cores_used, t.cores_total,
                  pct(t.cores_used, t.cores_total), t.cards_used, t.cards_idle);
    /* Refusals by reason word: count pods whose reasons mention each word. */
    struct vs_kvlist words = {0};
    for (size_t i = 0; i < r->n_pods; i++) {
        const struct vs_sim_pod *p = &r->pods[i];
        if (p->node)
            continue;
        const char *w = p->error ? "error" : (p->reasons.n ? NULL : "no candidate node");
        if (w) {
            const char *cur = vs_kv_get(&words, w);
            char num[24];
            snprintf(num, sizeof(num), "%d", cur ? atoi(cur) + 1 : 1);
            vs_kv_set(&words, w, num);
            continue;
        }
        /* Each distinct reason word of this pod counts once. */
        struct vs_kvlist seen = {0};
        for (size_t k = 0; p->reasons_summary && k < p->reasons.n; k++)
            vs_kv_set(&seen, p->reasons.items[k].key, "1");
        for (size_t k = 0; !p->reasons_summary && k < p->reasons.n; k++) {
            /* The words only: a note naming DRA claims (sched.c dra_named) is left out. */
            char *text = strdup(p->reasons.items[k].val);
            if (!text)
                break;
            char *note = strstr(text, " (held by DRA claim");
            if (note)
                *note = '\0';
            const char *s = text;
            while (*s) {
                const char *sp = strchr(s, ' ');
                const char *comma = strstr(s, ", ");
                const char *word = s;
                size_t wl;
                if (sp && (!comma || sp < comma) && strchr(s, '/') && strchr(s, '/') < sp)
                    word = sp + 1;
                wl = comma ? (size_t)(comma - word) : strlen(word);
                char wbuf[128];
                snprintf(wbuf, sizeof(wbuf), "%.*s", (int)(wl < 127 ? wl : 127), word);
                char *colon = strchr(wbuf, ':');
                if (colon)
                    *colon = '\0';
                vs_kv_set(&seen, wbuf, "1");
                if (!comma)
                    break;
                s = comma + 2;
            }
            free(text);
        }
        for (size_t k = 0; k < seen.n; k++) {
            const char *cur = vs_kv_get(&words, seen.items[k].key);
            char num[24];
            snprintf(num, sizeof(num), "%d", cur ? atoi(cur) + 1 : 1);
            vs_kv_set(&words, seen.items[k].key, num);
        }
        vs_kv_cleanup(&seen);
    }
    if (words.n) {
        vs_buf_puts(&b, "refused pods by reason:\n");
        for (size_t k = 0; k < words.n; k++)
            vs_buf_printf(&b, "  %-40s %s\n", words.items[k].key, words.items[k].val);
    }
    vs_kv_cleanup(&words);
    return vs_buf_steal(&b);
}

static void svg_text(struct vs_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            vs_buf_puts(b, "&lt;");
            break;
        case '>':
            vs_buf_puts(b, "&gt;");
            break;
        case '&':
            vs_buf_puts(b, "&amp;");
            break;
        case '"':
            vs_buf_puts(b, "&quot;");
            break;
        default:
            vs_buf_append(b, s, 1);
        }
    }
}

#define SVG_COL_W 520
#define SVG_ROW_H 34
#define SVG_BAR_W 300

char *vs_report_svg(const struct vs_sim_report *const *rs, size_t n)
{
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) {
        size_t cards = 0;
        for (size_t k = 0; k < rs[i]->n_nodes; k++) {
            const struct vs_node *nd = vs_model_node(rs[i]->model, rs[i]->nodes[k]);
            cards += (nd ? nd->n_cards : 0) + 1;
        }
        if (cards > rows)
            rows = cards;
    }
    int width = (int)(n * SVG_COL_W + 20), height = (int)(rows * SVG_ROW_H + 110);
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_printf(&b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                  width, height, width, height);
    for (size_t i = 0; i < n; i++) {
        const struct vs_sim_report *r = rs[i];
        int x0 = (int)(i * SVG_COL_W + 10), y = 24;
        struct totals t;
        totals_of(r, &t);
        vs_buf_printf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"16\" font-weight=\"bold\">", x0, y);
        svg_text(&b, r->title ? r->title : "allocation");
        vs_buf_printf(&b,
                      "</text>\n<text x=\"%d\" y=\"%d\">%lld/%zu pods scheduled, memory "
                      "%.1f%%, cores %.1f%%, %lld cards idle</text>\n",
                      x0, y + 18, t.scheduled, r->n_pods, pct(t.mem_used, t.mem_total),
                      pct(t.cores_used, t.cores_total), t.cards_idle);
        y += 44;
        vs_buf_printf(&b,
                      "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"#4e79a7\"/>"
                      "<text x=\"%d\" y=\"%d\">memory</text>"
                      "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"#f28e2b\"/>"
                      "<text x=\"%d\" y=\"%d\">cores</text>\n",
                      x0, y - 9, x0 + 14, y, x0 + 80, y - 9, x0 + 94, y);
        y += 14;
        for (size_t k = 0; k < r->n_nodes; k++) {
            const struct vs_node *nd = vs_model_node(r->model, r->nodes[k]);
            vs_buf_printf(&b, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">", x0, y + 14);
            svg_text(&b, r->nodes[k]);
            vs_buf_puts(&b, "</text>\n");
            y += SVG_ROW_H - 10;
            for (size_t c = 0; nd && c < nd->n_cards; c++) {
                const struct vs_card *cd = &nd->cards[c];
                double mp = cd->devmem ? (double)cd->usedmem / cd->devmem : 0;
                long long cu, ct;
                card_cores(r, cd, &cu, &ct);
                double cp = ct ? (double)cu / (double)ct : 0;
                if (mp > 1)
                    mp = 1;
                if (cp > 1)
                    cp = 1;
                vs_buf_printf(&b, "<text x=\"%d\" y=\"%d\">%u</text>\n", x0 + 4, y + 14, cd->index);
                vs_buf_printf(&b,
                              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"#eee\"/>"
                              "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"12\" "
                              "fill=\"#4e79a7\"/>\n",
                              x0 + 24, y + 2, SVG_BAR_W, x0 + 24, y + 2, mp * SVG_BAR_W);
                vs_buf_printf(&b,
                              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"#eee\"/>"
                              "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"12\" "
                              "fill=\"#f28e2b\"/>\n",
                              x0 + 24, y + 16, SVG_BAR_W, x0 + 24, y + 16, cp * SVG_BAR_W);
                vs_buf_printf(&b,
                              "<text x=\"%d\" y=\"%d\">%lld/%d MiB</text>"
                              "<text x=\"%d\" y=\"%d\">%lld/%lld%% · %lld/%d slots</text>\n",
                              x0 + 30 + SVG_BAR_W, y + 12, (long long)cd->usedmem, cd->devmem,
                              x0 + 30 + SVG_BAR_W, y + 26, cu, ct, (long long)cd->used, cd->count);
                y += SVG_ROW_H;
            }
        }
    }
    vs_buf_puts(&b, "</svg>\n");
    return vs_buf_steal(&b);
}
