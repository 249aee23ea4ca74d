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

{{/* The gateway's objects (gateway.enabled): <full name>-gateway. */}}
{{- define "proofpipe.gateway.fullname" -}}
{{- printf "%s-gateway" (include "proofpipe.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The namespace of the gateway's objects and of the ProofJobs it creates: the pool's
namespace (gateway.namespace), else the release namespace. */}}
{{- define "proofpipe.gateway.namespace" -}}
{{- default .Release.Namespace .Values.gateway.namespace }}
{{- end }}

{{/* Labels of every gateway object: the common labels with the gateway's component. */}}
{{- define "proofpipe.gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "proofpipe.gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: proofpipe
{{- end }}

{{/* Labels that select the gateway pods (component gateway: never the operator's). */}}
{{- define "proofpipe.gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "proofpipe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end }}

{{/* The gateway image. */}}
{{- define "proofpipe.gateway.image" -}}
{{- printf "%s:%s" .Values.gateway.image.repository (default .Chart.AppVersion .Values.gateway.image.tag) }}
{{- end }}

{{/* The Secret holding the gateway's bearer token: an existing one, or the chart's. */}}
{{- define "proofpipe.gateway.tokenSecretName" -}}
{{- default (printf "%s-token" (include "proofpipe.gateway.fullname" .)) .Values.gateway.auth.token.existingSecret }}
{{- end }}

{{/* Fails the render on gateway values that the schema cannot refuse on its own: those
that depend on each other. Included by gateway-deployment.yaml. */}}
{{- define "proofpipe.gateway.validate" -}}
{{- $g := .Values.gateway }}
{{- if not $g.pool }}
{{- fail "gateway.pool is required: the ProverPool (in the gateway's namespace) that proves the submissions" }}
{{- end }}
{{- if not $g.artifacts }}
{{- fail "gateway.artifacts is required: s3://bucket/prefix (AWS_* env through gateway.envFrom or gateway.extraEnv) or file:///dir on gateway.artifactVolume" }}
{{- end }}
{{- if hasPrefix "file://" $g.artifacts }}
{{- if not $g.artifactVolume.claimName }}
{{- fail "gateway.artifacts is a file:// URL: set gateway.artifactVolume.claimName, the PVC the prover pods mount at the same path (the gateway's root filesystem is read-only)" }}
{{- end }}
{{- $path := trimPrefix "file://" $g.artifacts }}
{{- $mount := trimSuffix "/" $g.artifactVolume.mountPath }}
{{- if not (or (eq $path $mount) (hasPrefix (printf "%s/" $mount) $path)) }}
{{- fail (printf "gateway.artifacts %s is not under gateway.artifactVolume.mountPath %s" $g.artifacts $g.artifactVolume.mountPath) }}
{{- end }}
{{- end }}
{{- if and .Values.operator.watchNamespace (ne .Values.operator.watchNamespace (include "proofpipe.gateway.namespace" .)) }}
{{- fail (printf "the gateway creates ProofJobs in namespace %s, but the operator watches only %s: set gateway.namespace to operator.watchNamespace" (include "proofpipe.gateway.namespace" .) .Values.operator.watchNamespace) }}
{{- end }}
{{- if and $g.auth.allowUnauthenticated $g.networkPolicy.enabled (not $g.networkPolicy.grpcFrom) }}
{{- fail "gateway.auth.allowUnauthenticated: name the callers in gateway.networkPolicy.grpcFrom (curio's namespace, pods or addresses), or set gateway.networkPolicy.enabled=false to let anyone who reaches the Service submit proofs" }}
{{- end }}
{{- end }}

{{/* The namespace of the parameter Job and its claim (paramsFetch.namespace): the
ProverPool's, else the release namespace. */}}
{{- define "proofpipe.paramsFetch.namespace" -}}
{{- default .Release.Namespace .Values.paramsFetch.namespace }}
{{- end }}

{{/* The parameter Job's image: the prover image, the CPU build of the chart's release by
default. */}}
{{- define "proofpipe.paramsFetch.image" -}}
{{- printf "%s:%s" .Values.paramsFetch.image.repository (default .Chart.AppVersion .Values.paramsFetch.image.tag) }}
{{- end }}

{{/* The parameter Job's name: <full name>-params-<hash of what its pod is made from>, so
that changed values make a new Job instead of failing on the immutable pod template of the
old one. */}}
{{- define "proofpipe.paramsFetch.name" -}}
{{- $inputs := dict "paramsFetch" .Values.paramsFetch "runAs" .Values.runAs "imagePullSecrets" .Values.imagePullSecrets "image" (include "proofpipe.paramsFetch.image" .) }}
{{- printf "%s-params" (include "proofpipe.fullname" .) | trunc 54 | trimSuffix "-" }}-{{ $inputs | toJson | sha256sum | trunc 8 }}
{{- end }}

{{/* Labels of the parameter Job, its pod and its claim. */}}
{{- define "proofpipe.paramsFetch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "proofpipe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: params-fetch
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: proofpipe
{{- end }}
