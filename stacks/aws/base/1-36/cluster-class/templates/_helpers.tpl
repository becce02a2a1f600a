{{/* Prefix of every object name: the ClusterClass name, i.e. the release tag. */}}
{{- define "cluster-class.name" -}}
{{ .Release.Name }}-{{ .Chart.Version }}
{{- end }}

{{/* kubelet arguments of every node: the AWS cloud controller manager runs out of tree. */}}
{{- define "cluster-class.kubeletExtraArgs" -}}
kubeletExtraArgs:
  - name: cloud-provider
    value: external
{{- end }}
