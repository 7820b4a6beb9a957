# shellcheck shell=bash
# dropin-burst: the burst scenario (burst.sh: 200 pods at once on 10 nodes, every pod bound or
# refused, no card over-committed, metrics equal to the pods' usage, no Bind failed for lock
# contention) with vgpu-sched as a drop-in for HAMi v2.10's scheduler extender (VS_E2E_HAMI=1;
# see dropin-webhook.sh), HAMi's --debug -v=4 included.

# shellcheck source=burst.sh
. "$E2E_DIR/scenarios/burst.sh"

scenario_dropin_burst_pre_up() {
    export VS_E2E_HAMI=1
    vs_pre_up
}

scenario_dropin_burst() { scenario_burst; }
