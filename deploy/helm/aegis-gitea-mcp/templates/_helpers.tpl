{{/*
Names and labels.
*/}}
{{- define "aegis-gitea-mcp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "aegis-gitea-mcp.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "aegis-gitea-mcp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "aegis-gitea-mcp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "aegis-gitea-mcp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aegis-gitea-mcp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The gateway's pods (not the migration Job's). */}}
{{- define "aegis-gitea-mcp.gatewaySelectorLabels" -}}
{{ include "aegis-gitea-mcp.selectorLabels" . }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "aegis-gitea-mcp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "aegis-gitea-mcp.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "aegis-gitea-mcp.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The number of replicas: SQLite exactly one, PostgreSQL replicaCount (2 when empty).
*/}}
{{- define "aegis-gitea-mcp.replicas" -}}
{{- if eq .Values.store.backend "sqlite" }}1{{ else }}{{ .Values.replicaCount | default 2 | int }}{{ end }}
{{- end }}

{{/*
terminationGracePeriodSeconds: the preStop sleep, then the drain
(SHUTDOWN_DRAIN_SECONDS), then GITEA_TIMEOUT_SECONDS + 5 s for calls in
flight, and a second to spare (docs/configuration.md, SHUTDOWN_DRAIN_SECONDS).
A value given in terminationGracePeriodSeconds must cover it.
*/}}
{{- define "aegis-gitea-mcp.minimumGrace" -}}
{{- add (int .Values.preStopSleepSeconds) (int .Values.shutdownDrainSeconds) (int .Values.gitea.timeoutSeconds) 5 1 }}
{{- end }}

{{- define "aegis-gitea-mcp.terminationGracePeriodSeconds" -}}
{{- $minimum := include "aegis-gitea-mcp.minimumGrace" . | int }}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- $minimum }}
{{- else if lt (int .Values.terminationGracePeriodSeconds) $minimum }}
{{- fail (printf "terminationGracePeriodSeconds %d is below preStopSleepSeconds + shutdownDrainSeconds + gitea.timeoutSeconds + 5 + 1 = %d: calls in flight would be killed" (int .Values.terminationGracePeriodSeconds) $minimum) }}
{{- else }}
{{- int .Values.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/*
Settings the chart sets itself (config cannot), and the keys read from
existingSecret (config must not hold them).
*/}}
{{- define "aegis-gitea-mcp.ownedSettings" -}}
GITEA_URL GITEA_TIMEOUT_SECONDS GITEA_OPENAPI PUBLIC_BASE_URL ALLOWED_HOSTS FORWARDED_ALLOW_IPS IDLE_CONNECTION_TIMEOUT_SECONDS SHUTDOWN_DRAIN_SECONDS MCP_HOST MCP_PORT DATA_DIR METRICS_BIND STORE_MIGRATE REPLICA_ID AUDIT_FORWARD_URL AUDIT_FORWARD_MAX_LAG_MINUTES AUDIT_KEEP_FILES AUDIT_MAX_BYTES RUST_LOG LOG_FORMAT AEGIS_ENV_FILE
{{- end }}

{{- define "aegis-gitea-mcp.secretKeys" -}}
AUDIT_HMAC_KEY DATABASE_URL GITEA_TOKEN MCP_BEARER_TOKEN GITEA_OAUTH_CLIENT_ID GITEA_OAUTH_CLIENT_SECRET GITEA_OAUTH_READ_CLIENT_ID GITEA_OAUTH_READ_CLIENT_SECRET TOKEN_ENCRYPTION_KEY AUDIT_FORWARD_AUTHORIZATION
{{- end }}

{{/*
Checks of the values that the schema cannot express. Included by every
template that is always rendered, so `helm template` and `helm install`
stop with the reason.
*/}}
{{- define "aegis-gitea-mcp.validate" -}}
{{- $backend := .Values.store.backend }}
{{- if not (has $backend (list "sqlite" "postgres")) }}
{{- fail (printf "store.backend must be sqlite or postgres, not %q" $backend) }}
{{- end }}
{{- if not .Values.gitea.url }}
{{- fail "gitea.url is required: Gitea's base URL (GITEA_URL)" }}
{{- end }}
{{- if not (regexMatch "^https?://[^/?#@]+(/[^?#]*)?$" .Values.gitea.url) }}
{{- fail (printf "gitea.url %q must be an http:// or https:// URL without credentials, query or fragment" .Values.gitea.url) }}
{{- end }}
{{- if not .Values.publicBaseUrl }}
{{- fail "publicBaseUrl is required: the gateway's external https:// URL (PUBLIC_BASE_URL)" }}
{{- end }}
{{- $public := urlParse .Values.publicBaseUrl }}
{{- if not (or (eq $public.scheme "https") (and (eq $public.scheme "http") (regexMatch "^(localhost|127\\.[0-9.]+|\\[::1\\])(:[0-9]+)?$" $public.host))) }}
{{- fail (printf "publicBaseUrl %q must be https:// (http only on a loopback host, for tests)" .Values.publicBaseUrl) }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.forwardedAllowIps) }}
{{- fail "ingress.enabled needs forwardedAllowIps (the ingress controller's pod network): the gateway keeps only a listed proxy's idle connections for idleConnectionTimeoutSeconds, and closes any other's after 10 s, before the controller does" }}
{{- end }}
{{- if not .Values.existingSecret }}
{{- fail "existingSecret is required: the name of the Secret holding AUDIT_HMAC_KEY and the other secrets (kubectl create secret generic NAME --from-env-file=aegis.env)" }}
{{- end }}
{{- if eq $backend "sqlite" }}
{{- if and (not (kindIs "invalid" .Values.replicaCount)) (gt (int .Values.replicaCount) 1) }}
{{- fail (printf "replicaCount %d with store.backend=sqlite: SQLite is one process's file; run one replica, or store.backend=postgres for more" (int .Values.replicaCount)) }}
{{- end }}
{{- else }}
{{- if not (has .Values.store.migration.mode (list "job" "initContainer")) }}
{{- fail (printf "store.migration.mode must be job or initContainer, not %q" .Values.store.migration.mode) }}
{{- end }}
{{- if and (gt (include "aegis-gitea-mcp.replicas" . | int) 1) (eq .Values.gitea.openapi "live") }}
{{- fail "gitea.openapi=live with several replicas: a replica that fell back to the bundled catalog would serve another tool list; use bundled or live-strict" }}
{{- end }}
{{- if not (or .Values.audit.forwardUrl .Values.auditVolume.ephemeralAuditAcknowledged) }}
{{- fail "store.backend=postgres keeps each replica's audit log on an emptyDir, lost with its pod: set audit.forwardUrl to ship it off, or auditVolume.ephemeralAuditAcknowledged=true" }}
{{- end }}
{{- end }}
{{- $owned := splitList " " (include "aegis-gitea-mcp.ownedSettings" .) }}
{{- $secret := splitList " " (include "aegis-gitea-mcp.secretKeys" .) }}
{{- range $name, $value := .Values.config }}
{{- if has $name $secret }}
{{- fail (printf "config.%s is a secret: put it in the Secret named by existingSecret" $name) }}
{{- end }}
{{- if or (has $name $owned) (hasSuffix "_SECRET" $name) }}
{{- fail (printf "config.%s: the chart sets this one itself (see values.yaml), or it is a secret" $name) }}
{{- end }}
{{- if not (regexMatch "^[A-Z][A-Z0-9_]*$" $name) }}
{{- fail (printf "config.%s: a setting's name is upper case (docs/configuration.md)" $name) }}
{{- end }}
{{- if or (kindIs "map" $value) (kindIs "slice" $value) }}
{{- fail (printf "config.%s: a setting is one value (a list is comma-separated text)" $name) }}
{{- end }}
{{- end }}
{{- $_ := include "aegis-gitea-mcp.terminationGracePeriodSeconds" . }}
{{- end }}

{{/*
The settings that are not secret, as a map of strings: the ConfigMap's data,
and the migration Job's env (the Job runs before the ConfigMap exists).
*/}}
{{- define "aegis-gitea-mcp.settings" -}}
{{- $s := dict }}
{{- $_ := set $s "GITEA_URL" (.Values.gitea.url | trimSuffix "/") }}
{{- $_ := set $s "GITEA_TIMEOUT_SECONDS" (.Values.gitea.timeoutSeconds | int | toString) }}
{{- $_ := set $s "GITEA_OPENAPI" .Values.gitea.openapi }}
{{- $_ := set $s "PUBLIC_BASE_URL" (.Values.publicBaseUrl | trimSuffix "/") }}
{{- with .Values.allowedHosts }}{{ $_ := set $s "ALLOWED_HOSTS" (join "," .) }}{{ end }}
{{- with .Values.forwardedAllowIps }}{{ $_ := set $s "FORWARDED_ALLOW_IPS" (join "," .) }}{{ end }}
{{- $_ := set $s "IDLE_CONNECTION_TIMEOUT_SECONDS" (.Values.idleConnectionTimeoutSeconds | int | toString) }}
{{- $_ := set $s "SHUTDOWN_DRAIN_SECONDS" (.Values.shutdownDrainSeconds | int | toString) }}
{{- $_ := set $s "MCP_HOST" "0.0.0.0" }}
{{- $_ := set $s "MCP_PORT" "8080" }}
{{- $_ := set $s "DATA_DIR" "/data" }}
{{- if .Values.metrics.enabled }}{{ $_ := set $s "METRICS_BIND" (printf "0.0.0.0:%d" (int .Values.metrics.port)) }}{{ end }}
{{- $_ := set $s "STORE_MIGRATE" (eq .Values.store.backend "postgres" | ternary "never" "auto") }}
{{- with .Values.audit.forwardUrl }}{{ $_ := set $s "AUDIT_FORWARD_URL" . }}{{ end }}
{{- with .Values.audit.forwardMaxLagMinutes }}{{ $_ := set $s "AUDIT_FORWARD_MAX_LAG_MINUTES" (toString .) }}{{ end }}
{{- with .Values.audit.keepFiles }}{{ $_ := set $s "AUDIT_KEEP_FILES" (toString .) }}{{ end }}
{{- with .Values.audit.maxBytes }}{{ $_ := set $s "AUDIT_MAX_BYTES" (toString .) }}{{ end }}
{{- $_ := set $s "RUST_LOG" .Values.log.level }}
{{- $_ := set $s "LOG_FORMAT" .Values.log.format }}
{{- range $name, $value := .Values.config }}{{ $_ := set $s $name (toString $value) }}{{ end }}
{{- toYaml $s }}
{{- end }}

{{/*
The env entries read from existingSecret. Required: AUDIT_HMAC_KEY (the
audit chain's key) and, with PostgreSQL, DATABASE_URL and
TOKEN_ENCRYPTION_KEY (`store migrate` opens the store with it). The rest
are optional, and the gateway says at startup what a configuration lacks.
*/}}
{{- define "aegis-gitea-mcp.secretEnv" -}}
{{- $root := . }}
{{- $postgres := eq .Values.store.backend "postgres" }}
{{- $required := $postgres | ternary (list "AUDIT_HMAC_KEY" "DATABASE_URL" "TOKEN_ENCRYPTION_KEY") (list "AUDIT_HMAC_KEY") }}
{{- range $key := splitList " " (include "aegis-gitea-mcp.secretKeys" .) }}
{{- if or (ne $key "DATABASE_URL") $postgres }}
- name: {{ $key }}
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.existingSecret }}
      key: {{ $key }}
      optional: {{ not (has $key $required) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Pod-level fields the gateway's pods and the migration Job's share. */}}
{{- define "aegis-gitea-mcp.podExtras" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- with .Values.hostAliases }}
hostAliases:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
