{{/* Names, labels and derived values shared by the vgpu-sched templates. */}}

{{- define "vgpu-sched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu-sched.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vgpu-sched.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vgpu-sched.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vgpu-sched.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "vgpu-sched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "vgpu-sched.serviceAccountName" -}}
{{- default (include "vgpu-sched.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The Service's in-cluster DNS name, which the serving certificate must carry. */}}
{{- define "vgpu-sched.serviceHost" -}}
{{- printf "%s.%s.svc" (include "vgpu-sched.fullname" .) .Release.Namespace -}}
{{- end -}}

{{- define "vgpu-sched.tlsSecretName" -}}
{{- if eq .Values.certs.mode "existingSecret" -}}
{{- required "certs.existingSecret.name is required when certs.mode is existingSecret" .Values.certs.existingSecret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "vgpu-sched.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "vgpu-sched.leaderElect" -}}
{{- if gt (int .Values.replicas) 1 -}}true{{- else -}}false{{- end -}}
{{- end -}}

{{/* A Go duration of the form [Nh][Nm][Ns] in whole seconds; fails on anything else. */}}
{{- define "vgpu-sched.seconds" -}}
{{- $d := toString . -}}
{{- if not (regexMatch "^([0-9]+h)?([0-9]+m)?([0-9]+s)?$" $d) -}}
{{- fail (printf "duration %q: use whole hours, minutes and seconds such as 28s or 1m30s" $d) -}}
{{- end -}}
{{- $h := regexFind "[0-9]+h" $d | trimSuffix "h" | default "0" | int -}}
{{- $m := regexFind "[0-9]+m" $d | trimSuffix "m" | default "0" | int -}}
{{- $s := regexFind "[0-9]+s" $d | trimSuffix "s" | default "0" | int -}}
{{- add (mul $h 3600) (mul $m 60) $s -}}
{{- end -}}

{{/* extender.httpTimeout, or node-lock retryTimeout + 2s (at least kube-scheduler's default 5s):
     Bind may wait the whole retry window for a node lock, and kube-scheduler must not give up
     on the call before it ends. */}}
{{- define "vgpu-sched.httpTimeout" -}}
{{- $retry := include "vgpu-sched.seconds" .Values.scheduler.nodeLock.retryTimeout | int -}}
{{- if .Values.extender.httpTimeout -}}
{{- $t := include "vgpu-sched.seconds" .Values.extender.httpTimeout | int -}}
{{- if le $t $retry -}}
{{- fail (printf "extender.httpTimeout (%s) must be longer than scheduler.nodeLock.retryTimeout (%s)" .Values.extender.httpTimeout .Values.scheduler.nodeLock.retryTimeout) -}}
{{- end -}}
{{- .Values.extender.httpTimeout -}}
{{- else -}}
{{- printf "%ds" (max (add $retry 2) 5) -}}
{{- end -}}
{{- end -}}

{{- define "vgpu-sched.kubeSchedulerImage" -}}
{{- $tag := .Values.kubeScheduler.image.tag | default (regexReplaceAll "[-+].*$" .Capabilities.KubeVersion.Version "") -}}
{{- printf "%s:%s" .Values.kubeScheduler.image.repository $tag -}}
{{- end -}}

{{- define "vgpu-sched.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The device-config.yaml content (HAMi keys). */}}
{{- define "vgpu-sched.deviceConfig" -}}
{{- if .Values.devConfig.content -}}
{{ .Values.devConfig.content }}
{{- else -}}
{{- $c := .Values.devConfig -}}
nvidia:
  resourceCountName: {{ $c.resourceCountName | quote }}
  resourceMemoryName: {{ $c.resourceMemoryName | quote }}
  resourceMemoryPercentageName: {{ $c.resourceMemoryPercentageName | quote }}
  resourceCoreName: {{ $c.resourceCoreName | quote }}
  resourcePriorityName: {{ $c.resourcePriorityName | quote }}
  defaultMemory: {{ int $c.defaultMemory }}
  defaultCores: {{ int $c.defaultCores }}
  defaultGPUNum: {{ int $c.defaultGPUNum }}
  memoryFactor: {{ int $c.memoryFactor }}
  overwriteEnv: {{ $c.overwriteEnv }}
  gpuCorePolicy: {{ $c.gpuCorePolicy | quote }}
  runtimeClassName: {{ $c.runtimeClassName | quote }}
  deviceSplitCount: {{ int $c.deviceSplitCount }}
  deviceMemoryScaling: {{ $c.deviceMemoryScaling }}
  deviceCoreScaling: {{ $c.deviceCoreScaling }}
{{- $d := .Values.devices }}
vnpus:
  hamiVnpuCore: {{ $d.ascend.hamiVnpuCore }}
  configs:
    {{- range $d.ascend.configs }}
    - {{- toYaml (merge (dict "runtimeClassName" $d.ascend.runtimeClassName "overwriteEnv" $d.ascend.overwriteEnv) .) | nindent 6 }}
    {{- end }}
{{- range $v := list "hygon" "cambricon" "metax" "mthreads" "enflame" "kunlun" "awsneuron" "amd" "biren" "vastai" }}
{{ $v }}:
  {{- toYaml (omit (get $d $v) "enabled") | nindent 2 }}
{{- end }}
iluvatars:
  {{- range $d.iluvatar.chips }}
  - chipName: {{ . }}
    commonWord: {{ . }}
    resourceCountName: iluvatar.ai/{{ . }}-vgpu
    resourceMemoryName: iluvatar.ai/{{ . }}.vMem
    resourceCoreName: iluvatar.ai/{{ . }}.vCore
  {{- end }}
{{- end -}}
{{- end -}}

{{/* The extender's managedResources: the resources HAMi's chart lists for each vendor that is
enabled (spec/hami-vendors.md §0); kube-scheduler ignores them and leaves them to vgpu-sched. */}}
{{- define "vgpu-sched.managedResources" -}}
{{- $c := .Values.devConfig -}}
{{- $d := .Values.devices -}}
{{- $r := list $c.resourceCountName $c.resourceMemoryName $c.resourceMemoryPercentageName $c.resourceCoreName $c.resourcePriorityName -}}
{{- if $d.ascend.enabled -}}
{{- range $d.ascend.configs -}}
{{- $r = concat $r (list .resourceName .resourceMemoryName .resourceCoreName) -}}
{{- end -}}
{{- end -}}
{{- if $d.hygon.enabled -}}{{- $r = concat $r (list $d.hygon.resourceCountName $d.hygon.resourceMemoryName $d.hygon.resourceCoreName) -}}{{- end -}}
{{- if $d.cambricon.enabled -}}{{- $r = append $r $d.cambricon.resourceCountName -}}{{- end -}}
{{- if $d.metax.enabled -}}{{- $r = concat $r (list $d.metax.resourceCountName $d.metax.resourceVCountName $d.metax.resourceVMemoryName $d.metax.resourceVCoreName) -}}{{- end -}}
{{- if $d.iluvatar.enabled -}}
{{- range $d.iluvatar.chips -}}
{{- $r = concat $r (list (printf "iluvatar.ai/%s-vgpu" .) (printf "iluvatar.ai/%s.vMem" .) (printf "iluvatar.ai/%s.vCore" .)) -}}
{{- end -}}
{{- end -}}
{{- if $d.mthreads.enabled -}}{{- $r = append $r $d.mthreads.resourceCountName -}}{{- end -}}
{{- if $d.enflame.enabled -}}{{- $r = concat $r (list $d.enflame.resourceNameGCU $d.enflame.resourceNameDRSGCU $d.enflame.resourceNameGCUMemory $d.enflame.resourceNameGCUCore) -}}{{- end -}}
{{- if $d.kunlun.enabled -}}{{- $r = concat $r (list $d.kunlun.resourceCountName $d.kunlun.resourceVCountName $d.kunlun.resourceVMemoryName) -}}{{- end -}}
{{- if $d.awsneuron.enabled -}}{{- $r = concat $r (list $d.awsneuron.resourceCountName $d.awsneuron.resourceCoreName) -}}{{- end -}}
{{- if $d.amd.enabled -}}{{- $r = concat $r (list $d.amd.resourceCountName $d.amd.resourceMemoryName $d.amd.resourceCoreName) -}}{{- end -}}
{{- if $d.biren.enabled -}}{{- $r = append $r $d.biren.resourceCountName -}}{{- end -}}
{{- if $d.vastai.enabled -}}{{- $r = append $r $d.vastai.resourceCountName -}}{{- end -}}
{{- range $r }}
{{- if . }}
- name: {{ . }}
  ignoredByScheduler: true
{{- end }}
{{- end }}
{{- end -}}

{{/* scheduler.draMirror.mode as --dra-mirror takes it (an unquoted YAML off is false); fails on
     anything but off, fence or share. */}}
{{- define "vgpu-sched.draMirrorMode" -}}
{{- $m := toString .Values.scheduler.draMirror.mode | lower -}}
{{- if eq $m "false" -}}{{- $m = "off" -}}{{- end -}}
{{- if not (has $m (list "off" "fence" "share")) -}}
{{- fail (printf "scheduler.draMirror.mode %q: want off, fence or share" (toString .Values.scheduler.draMirror.mode)) -}}
{{- end -}}
{{- $m -}}
{{- end -}}

{{/* Where the mirror ResourceClaims live: scheduler.draMirror.namespace or the release's. */}}
{{- define "vgpu-sched.draMirrorNamespace" -}}
{{- default .Release.Namespace .Values.scheduler.draMirror.namespace -}}
{{- end -}}
