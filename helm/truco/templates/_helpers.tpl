{{/*
Chart name, overridable with nameOverride (63 characters at most: a DNS label).
*/}}
{{- define "truco.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of the release's objects: fullnameOverride, or "<release>-<chart name>" (just the
release name when it already contains the chart name).
*/}}
{{- define "truco.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "truco.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Name of the metrics Service: the full name (shortened to leave room) plus "-metrics".
*/}}
{{- define "truco.metricsName" -}}
{{- printf "%s-metrics" (include "truco.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{/*
"chart-version" for the helm.sh/chart label.
*/}}
{{- define "truco.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels that select the worker pods (never change them on upgrade: Deployment selectors
are immutable).
*/}}
{{- define "truco.selectorLabels" -}}
app.kubernetes.io/name: {{ include "truco.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
Labels of every object.
*/}}
{{- define "truco.labels" -}}
helm.sh/chart: {{ include "truco.chart" . }}
{{ include "truco.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: truco
{{- end -}}

{{/*
The worker image: repository@digest, or repository:tag (tag defaults to appVersion).
*/}}
{{- define "truco.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/*
Environment variables the chart sets itself; extraEnv may not repeat them.
*/}}
{{- define "truco.reservedEnv" -}}
REDIS_URL TRUCO_API_KEYS TRUCO_API_KEYS_FILE TRUCO_HOST TRUCO_GRPC_PORT TRUCO_HTTP_PORT TRUCO_METRICS_PORT TRUCO_LOG_LEVEL TRUCO_SHUTDOWN_GRACE_SECONDS TRUCO_SHUTDOWN_DRAIN_SECONDS
{{- end -}}

{{/*
Refuse values that would deploy a broken or unsafe cluster. Renders nothing.
*/}}
{{- define "truco.validate" -}}
{{- if and .Values.redis.url .Values.redis.existingSecret -}}
{{- fail "set only one of redis.url and redis.existingSecret" -}}
{{- end -}}
{{- if not (or .Values.redis.url .Values.redis.existingSecret) -}}
{{- fail "set redis.url or redis.existingSecret: workers keep every match in Redis (without it each pod would have its own in-memory store)" -}}
{{- end -}}
{{- if not (or .Values.apiKeys.existingSecret .Values.apiKeys.allowOpenAccess) -}}
{{- fail "set apiKeys.existingSecret (a Secret holding TRUCO_API_KEYS), or apiKeys.allowOpenAccess=true on a development cluster" -}}
{{- end -}}
{{- $shutdown := add (ceil .Values.shutdown.graceSeconds) (ceil .Values.shutdown.drainSeconds) -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $shutdown) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be larger than shutdown.graceSeconds + shutdown.drainSeconds (%d)" (int .Values.terminationGracePeriodSeconds) (int $shutdown)) -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- $reserved := splitList " " (include "truco.reservedEnv" .) -}}
{{- range .Values.extraEnv -}}
{{- if has .name $reserved -}}
{{- fail (printf "extraEnv: %s is set by the chart from its own value (see values.yaml)" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
