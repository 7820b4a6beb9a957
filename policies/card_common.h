/* card_common: what the card policies share. The score and NUMA keys of §5.2 are core
 * comparisons (policy.h), since numa-bind orders by NUMA whatever the policy. */
#ifndef VS_CARD_COMMON_H
#define VS_CARD_COMMON_H

#include "policy.h"

#endif
