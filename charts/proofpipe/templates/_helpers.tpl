{{/* The chart name, or nameOverride. */}}
{{- define "proofpipe.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the operator's objects: <release>-<name>, or fullnameOverride; the
release name alone when it already contains the chart name. */}}
{{- define "proofpipe.fullname" -}}
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

{{/* Labels of every object. */}}
{{- define "proofpipe.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "proofpipe.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: proofpipe
{{- end }}

{{/* Labels that select the operator pods. The prover pods carry
app.kubernetes.io/name=proofpipe-prover, so they never match these. */}}
{{- define "proofpipe.selectorLabels" -}}
app.kubernetes.io/name: {{ include "proofpipe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator's ServiceAccount. */}}
{{- define "proofpipe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "proofpipe.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The operator image. */}}
{{- define "proofpipe.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The labels of the prover pods the operator creates (operator/src/names.rs, ADR 0003). */}}
{{- define "proofpipe.proverSelectorLabels" -}}
app.kubernetes.io/name: proofpipe-prover
app.kubernetes.io/managed-by: proofpipe-operator
{{- end }}
