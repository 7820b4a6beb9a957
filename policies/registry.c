/* registry: every policy plug-in of this folder, in the order error messages list them. Adding a
 * policy: its file, one line here, its tests (docs/architecture.md "How to add"). */
#include "policy.h"

extern const struct vs_card_policy vs_card_policy_binpack, vs_card_policy_spread,
    vs_card_policy_topology, vs_card_policy_mutex, vs_card_policy_numa,
    vs_card_policy_fragmentation;
extern const struct vs_node_policy vs_node_policy_binpack, vs_node_policy_spread,
    vs_node_policy_fragmentation;

const struct vs_card_policy *const vs_card_policies[] = {
    &vs_card_policy_binpack, &vs_card_policy_spread, &vs_card_policy_topology,
    &vs_card_policy_mutex,   &vs_card_policy_numa,   &vs_card_policy_fragmentation,
};
const size_t vs_n_card_policies = sizeof(vs_card_policies) / sizeof(vs_card_policies[0]);

const struct vs_node_policy *const vs_node_policies[] = {
    &vs_node_policy_binpack,
    &vs_node_policy_spread,
    &vs_node_policy_fragmentation,
};
const size_t vs_n_node_policies = sizeof(vs_node_policies) / sizeof(vs_node_policies[0]);
