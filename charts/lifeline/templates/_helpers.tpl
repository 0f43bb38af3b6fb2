{{- define "lifeline.labels" -}}
app.kubernetes.io/name: lifeline
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "lifeline.selector" -}}
app.kubernetes.io/name: lifeline
app.kubernetes.io/component: manager
{{- end }}

{{- define "lifeline.bridgeSelector" -}}
app.kubernetes.io/name: lifeline
app.kubernetes.io/component: bridge
{{- end }}

{{/* The generated files name lifeline-system; the release namespace replaces it. */}}
{{- define "lifeline.generated" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- range $doc := splitList "\n---\n" ($root.Files.Get $file | replace "lifeline-system" $root.Release.Namespace) }}
{{- if trim $doc }}
{{- $obj := fromYaml $doc }}
{{- $_ := set $obj.metadata "labels" (merge (default (dict) $obj.metadata.labels) (include "lifeline.labels" $root | fromYaml)) }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}

{{/* webhooks with the pod binding webhook (mpod.lifeline.dev) narrowed to
binding.namespaceSelector, on top of its own, or dropped unless
binding.enabled. */}}
{{- define "lifeline.bindingWebhook" -}}
{{- $out := list }}
{{- range $w := .webhooks }}
{{- if ne $w.name "mpod.lifeline.dev" }}
{{- $out = append $out $w }}
{{- else if $.binding.enabled }}
{{- with $.binding.namespaceSelector }}
{{- $sel := $w.namespaceSelector | default dict }}
{{- $_ := set $sel "matchExpressions" (concat ($sel.matchExpressions | default list) (.matchExpressions | default list)) }}
{{- with .matchLabels }}
{{- $_ := set $sel "matchLabels" . }}
{{- end }}
{{- $_ := set $w "namespaceSelector" $sel }}
{{- end }}
{{- $out = append $out $w }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* The containers' env: the pod's IP to bind to on the host's network,
and the API server's address when apiServer overrides the Service's. */}}
{{- define "lifeline.env" -}}
env:
{{- if .Values.hostNetwork }}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end }}
{{- with .Values.apiServer.host }}
- name: KUBERNETES_SERVICE_HOST
  value: {{ . | quote }}
{{- end }}
{{- with .Values.apiServer.port }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{/* The address a server binds to: every interface, or on the host's
network the pod's own IP (another pod on the same host may use the port). */}}
{{- define "lifeline.bind" -}}
{{- if .root.Values.hostNetwork }}$(POD_IP){{ end }}:{{ .port }}
{{- end }}

{{/* On the host's network a replica's ports are its node's: a surge
replica would find no node with them free and a rollout would never
start, so replicas are replaced one at a time. */}}
{{- define "lifeline.hostNetworkStrategy" -}}
strategy:
  type: RollingUpdate
  rollingUpdate:
    maxSurge: 0
    maxUnavailable: 1
{{- end }}

{{/* Replicas spread over nodes (required: two on one node fail together) and
zones (preferred), counting only the nodes they may run on: a cordoned or
tainted node is no domain, so a drain's evicted replica finds a place. The
argument is the pods' selector labels, rendered. */}}
{{- define "lifeline.spread" -}}
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: DoNotSchedule
  nodeTaintsPolicy: Honor
  labelSelector:
    matchLabels:
      {{- . | nindent 6 }}
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  nodeTaintsPolicy: Honor
  labelSelector:
    matchLabels:
      {{- . | nindent 6 }}
{{- end }}
