{{/*
The chart's name (nameOverride).
*/}}
{{- define "clusterstack-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: fullnameOverride, else the release name, followed by the
chart's name unless the release name contains it. At most 47 characters, so that the longest
suffix ("-leader-election") keeps names within 63.
*/}}
{{- define "clusterstack-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 47 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 47 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 47 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "clusterstack-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The labels that select the manager Pods.
*/}}
{{- define "clusterstack-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "clusterstack-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The labels of every object.
*/}}
{{- define "clusterstack-operator.labels" -}}
helm.sh/chart: {{ include "clusterstack-operator.chart" . }}
{{ include "clusterstack-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: clusterstack-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The ServiceAccount the manager runs as.
*/}}
{{- define "clusterstack-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "clusterstack-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The webhook's Service; the serving certificate is for its DNS names.
*/}}
{{- define "clusterstack-operator.webhookServiceName" -}}
{{- printf "%s-webhook" (include "clusterstack-operator.fullname" .) }}
{{- end }}

{{/*
The cert-manager Certificate of the webhook server.
*/}}
{{- define "clusterstack-operator.certificateName" -}}
{{- printf "%s-serving-cert" (include "clusterstack-operator.fullname" .) }}
{{- end }}

{{/*
The Secret holding the webhook server's certificate: the one cert-manager writes, or
webhook.certificate.secretName.
*/}}
{{- define "clusterstack-operator.webhookSecretName" -}}
{{- if .Values.webhook.certManager.enabled }}
{{- printf "%s-webhook-server-cert" (include "clusterstack-operator.fullname" .) }}
{{- else }}
{{- required "webhook.certificate.secretName is required when webhook.certManager.enabled is false: a kubernetes.io/tls Secret with the webhook's serving certificate" .Values.webhook.certificate.secretName }}
{{- end }}
{{- end }}

{{/*
The CA bundle of the webhook's certificate when cert-manager does not inject it.
*/}}
{{- define "clusterstack-operator.caBundle" -}}
{{- required "webhook.certificate.caBundle is required when webhook.certManager.enabled is false: the base64-encoded PEM of the CA that signed the webhook's certificate" .Values.webhook.certificate.caBundle }}
{{- end }}

{{/*
The rules of the first object of the given kind in one of the chart's files/ (copies of
config/rbac and config/tenant, kept in sync by `make chart`). Arguments: (list . "file" "Kind").
*/}}
{{- define "clusterstack-operator.rulesFrom" -}}
{{- $ctx := index . 0 }}
{{- $file := index . 1 }}
{{- $kind := index . 2 }}
{{- $rules := list }}
{{- $found := false }}
{{- range splitList "\n---" ($ctx.Files.Get $file) }}
{{- $doc := fromYaml . }}
{{- if and (not $found) (eq (get $doc "kind" | toString) $kind) }}
{{- $rules = get $doc "rules" }}
{{- $found = true }}
{{- end }}
{{- end }}
{{- if not $found }}
{{- fail (printf "%s has no %s: run make chart" $file $kind) }}
{{- end }}
{{- toYaml $rules }}
{{- end }}
