/* node policy `binpack` (HAMi's default): the most-used fitting node wins, so whole nodes stay
 * free for large jobs. */
#include "policy.h"

static bool better(float a, float b)
{
    return a > b;
}

const struct vs_node_policy vs_node_policy_binpack = {.name = "binpack", .better = better};
