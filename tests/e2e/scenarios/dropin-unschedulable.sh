# shellcheck shell=bash
# dropin-unschedulable: the unschedulable scenario (unschedulable.sh) with vgpu-sched as a
# drop-in for HAMi v2.10's scheduler extender (VS_E2E_HAMI=1; see dropin-webhook.sh).

# shellcheck source=unschedulable.sh
. "$E2E_DIR/scenarios/unschedulable.sh"

scenario_dropin_unschedulable_pre_up() {
    export VS_E2E_HAMI=1
    vs_pre_up
}

scenario_dropin_unschedulable() { scenario_unschedulable; }
