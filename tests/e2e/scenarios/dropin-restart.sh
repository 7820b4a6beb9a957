# shellcheck shell=bash
# dropin-restart: the restart scenario (restart.sh) with vgpu-sched as a drop-in for HAMi v2.10's
# scheduler extender (VS_E2E_HAMI=1; see dropin-webhook.sh; while it is down a pod is admitted
# unmodified, HAMi's failurePolicy being Ignore), and the case of the issue that made readiness
# wait for an optional API: while vgpu-sched is stopped, the binding of HAMi's ServiceAccount to
# system:kube-scheduler (the only grant that lets it read PodDisruptionBudgets) is deleted, as
# where the extender runs with HAMi's ClusterRole alone (it also grants the DeviceClass reads of
# the DRA guard). Restarted, it must be ready all the same, report PodDisruptionBudgets and
# the DRA APIs missing next to pods/eviction (log line, metric, /readyz), pass the rest of the
# restart checks, and once the binding is back see both within a few seconds
# (--optional-api-retry=2s, the one flag added to HAMi's): one optional_api_available line
# each, metric 1.

# shellcheck source=restart.sh
. "$E2E_DIR/scenarios/restart.sh"

scenario_dropin_restart_pre_up() {
    export VS_E2E_HAMI=1 VS_E2E_SERVE_FLAGS=--optional-api-retry=2s
    vs_pre_up
}

dropin_drop_kube_scheduler_binding() {
    e2e_kubectl delete clusterrolebinding hami-scheduler-kube >/dev/null
    e2e_log "deleted ClusterRoleBinding hami-scheduler-kube: no PodDisruptionBudget reads"
}

scenario_dropin_restart() {
    VS_RESTART_WHILE_STOPPED=dropin_drop_kube_scheduler_binding scenario_restart
    vs_hami_expect_optional 0 0 1 1 0
    e2e_kubectl apply -f "$VS_HAMI_FIXTURES/rbac.yaml" >/dev/null
    e2e_wait 20 "PodDisruptionBudgets seen again" \
        bash -c "curl -fsS --max-time 2 '$(vs_metrics_url)' | grep -qxF 'vgpu_sched_optional_api_available{api=\"poddisruptionbudgets.policy\",feature=\"pdb-aware-preemption\"} 1'"
    e2e_wait 20 "DeviceClasses seen again" \
        bash -c "curl -fsS --max-time 2 '$(vs_metrics_url)' | grep -qxF 'vgpu_sched_optional_api_available{api=\"deviceclasses.resource.k8s.io\",feature=\"dra-guard\"} 1'"
    local dra
    for dra in resourceslices resourceclaims; do
        e2e_wait 20 "$dra seen again" \
            bash -c "curl -fsS --max-time 2 '$(vs_metrics_url)' | grep -qxF 'vgpu_sched_optional_api_available{api=\"$dra.resource.k8s.io\",feature=\"dra-ledger\"} 1'"
    done
    e2e_expect_eq "optional_api_available lines" "$(vs_log_since_start 'event=optional_api_available' | sort)" \
        "level=info event=optional_api_available api=deviceclasses.resource.k8s.io feature=dra-guard
level=info event=optional_api_available api=poddisruptionbudgets.policy feature=pdb-aware-preemption
level=info event=optional_api_available api=resourceclaims.resource.k8s.io feature=dra-ledger
level=info event=optional_api_available api=resourceslices.resource.k8s.io feature=dra-ledger"
    e2e_expect_eq "/readyz" "$(vs_ready)" \
        '{"status":"ok","degraded":[{"api":"pods/eviction","feature":"filter-preemption","effect":"filter-mode preemption is off","reason":"forbidden"}]}'
}
