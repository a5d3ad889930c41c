{{/* Names ------------------------------------------------------------------- */}}

{{- define "kpysched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* "<release>-kpysched", or just the release name when it already contains the chart name. */}}
{{- define "kpysched.fullname" -}}
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

{{/* ClusterRole and ClusterRoleBinding are shared by the whole cluster: their names
     carry the release namespace, so same-named releases in two namespaces coexist. */}}
{{- define "kpysched.clusterScopedName" -}}
{{- printf "%s:%s" .Release.Namespace (include "kpysched.fullname" .) -}}
{{- end -}}

{{- define "kpysched.serviceAccountName" -}}
{{- default (include "kpysched.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "kpysched.metricsServiceName" -}}
{{- printf "%s-metrics" (include "kpysched.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Lease kpysched holds: its own, never the default scheduler's. */}}
{{- define "kpysched.leaseName" -}}
{{- $name := default (include "kpysched.fullname" .) .Values.leaderElection.resourceName -}}
{{- if eq $name "kube-scheduler" -}}
{{- fail "leaderElection.resourceName must not be \"kube-scheduler\": that Lease belongs to the default scheduler, and sharing it makes the two schedulers take turns" -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* The scheduler names pods select, one per profile, comma-separated (a lone profile
     without a name is "kpysched", as kpysched defaults it). */}}
{{- define "kpysched.schedulerNames" -}}
{{- $names := list -}}
{{- range .Values.profiles -}}
{{- $names = append $names (default "kpysched" .schedulerName) -}}
{{- end -}}
{{- join ", " $names -}}
{{- end -}}

{{- define "kpysched.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.resourceNamespace -}}
{{- end -}}

{{/* Labels ------------------------------------------------------------------ */}}

{{- define "kpysched.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kpysched.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kpysched.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kpysched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/part-of: kpysched
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "kpysched.image" -}}
{{- if not .Values.image.repository -}}
{{- fail "image.repository is required: kpysched publishes no image. Build it (scripts/build-image.sh or `docker build .`), push it where the cluster pulls from, and set --set image.repository=REGISTRY/kpysched (docs/install.md)" -}}
{{- end -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The PromQL label matchers that pick this release's series (prometheus-operator
     sets job to the scraped Service's name). */}}
{{- define "kpysched.promSelector" -}}
job="{{ include "kpysched.metricsServiceName" . }}",namespace="{{ .Release.Namespace }}"
{{- end -}}

{{/* The KubeSchedulerConfiguration the scheduler reads. */}}
{{- define "kpysched.schedulerConfig" -}}
{{- $election := .Values.leaderElection -}}
{{- if and (not $election.leaderElect) (gt (int .Values.replicas) 1) -}}
{{- fail "leaderElection.leaderElect must be true when replicas > 1: without it every replica schedules and they race for the same nodes" -}}
{{- end -}}
{{- if not .Values.profiles -}}
{{- fail "profiles must name at least one schedulerName" -}}
{{- end -}}
{{- $profiles := .Values.profiles -}}
{{- if .Values.coscheduling.enabled -}}
{{- /* Every profile shares one queue, so every profile gets Coscheduling's queueSort. */ -}}
{{- $profiles = list -}}
{{- range $profile := .Values.profiles -}}
{{- $copy := deepCopy $profile -}}
{{- $plugins := default (dict) $copy.plugins -}}
{{- $multiPoint := default (dict) $plugins.multiPoint -}}
{{- $_ := set $multiPoint "enabled" (append (default (list) $multiPoint.enabled) (dict "name" "Coscheduling")) -}}
{{- $_ := set $plugins "multiPoint" $multiPoint -}}
{{- $_ := set $plugins "queueSort" (dict "enabled" (list (dict "name" "Coscheduling")) "disabled" (list (dict "name" "*"))) -}}
{{- $_ := set $copy "plugins" $plugins -}}
{{- if $.Values.coscheduling.args -}}
{{- $_ := set $copy "pluginConfig" (append (default (list) $copy.pluginConfig) (dict "name" "Coscheduling" "args" $.Values.coscheduling.args)) -}}
{{- end -}}
{{- $profiles = append $profiles $copy -}}
{{- end -}}
{{- end -}}
{{- $config := dict
  "apiVersion" "kubescheduler.config.k8s.io/v1"
  "kind" "KubeSchedulerConfiguration"
  "leaderElection" (dict
    "leaderElect" $election.leaderElect
    "resourceLock" "leases"
    "resourceName" (include "kpysched.leaseName" .)
    "resourceNamespace" (include "kpysched.leaseNamespace" .)
    "leaseDuration" $election.leaseDuration
    "renewDeadline" $election.renewDeadline
    "retryPeriod" $election.retryPeriod)
  "profiles" $profiles -}}
{{- toYaml (merge $config (deepCopy .Values.extraConfig)) -}}
{{- end -}}

{{/* The decisions API's serving certificate: the operator's, or one the chart made. */}}
{{- define "kpysched.decisionsTlsSecret" -}}
{{- default (printf "%s-decisions-tls" (include "kpysched.fullname" .) | trunc 63 | trimSuffix "-") .Values.decisions.tls.secretName -}}
{{- end -}}

{{/*
"true" when some profile runs the DynamicResources plugin (it is in every profile unless
disabled at multiPoint, by name or with "*"). Its writes to ResourceClaims are granted
only then: with DRAExtendedResource (beta and on in v1.36, as kpysched keeps it) it
creates the claim for a pod's extended resources a DeviceClass backs, deletes one an
attempt left unbound, and patches the claims it allocates.
*/}}
{{- define "kpysched.dynamicResources" -}}
{{- $on := false -}}
{{- range .Values.profiles -}}
{{- $multiPoint := default (dict) (default (dict) .plugins).multiPoint -}}
{{- $off := false -}}
{{- range (default (list) $multiPoint.disabled) -}}
{{- if has .name (list "DynamicResources" "*") }}{{ $off = true }}{{ end -}}
{{- end -}}
{{- range (default (list) $multiPoint.enabled) -}}
{{- if eq .name "DynamicResources" }}{{ $off = false }}{{ end -}}
{{- end -}}
{{- if not $off }}{{ $on = true }}{{ end -}}
{{- end -}}
{{- $on -}}
{{- end -}}
