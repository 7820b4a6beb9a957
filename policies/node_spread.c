/* node policy `spread`: the least-used fitting node wins, spreading load across nodes. */
#include "policy.h"

static bool better(float a, float b)
{
    return a < b;
}

const struct vs_node_policy vs_node_policy_spread = {.name = "spread", .better = better};
