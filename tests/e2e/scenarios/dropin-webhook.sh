# shellcheck shell=bash
# dropin-webhook: the webhook scenario (webhook.sh) with vgpu-sched as a drop-in for HAMi v2.10's
# scheduler extender (VS_E2E_HAMI=1, lib/vgpu.sh): HAMi's RBAC, the container's command and
# arguments, its device-config.yaml and Lease, HAMi's webhook registration (AdmissionReview
# v1beta1, failurePolicy Ignore) and kube-scheduler's extender stanza (filter and bind only,
# tlsConfig insecure). vs_setup also checks that only filter-mode preemption is reported
# missing (one log line, vgpu_sched_optional_api_available 0, /readyz 200 naming it) and that the
# scheduler pod gets the label HAMi's Service selects.

# shellcheck source=webhook.sh
. "$E2E_DIR/scenarios/webhook.sh"

scenario_dropin_webhook_pre_up() {
    export VS_E2E_HAMI=1
    vs_pre_up
}

scenario_dropin_webhook() { scenario_webhook; }
