{{/* Prefix of every object name: the ClusterClass name, i.e. the release tag. From an OCI
registry, helm-controller versions the chart <semver>+<digest> (docs/oci.md): "+" is no name
character. */}}
{{- define "cluster-class.name" -}}
{{ .Release.Name }}-{{ .Chart.Version | replace "+" "-" }}
{{- end }}

{{/* kubelet arguments of every node: the AWS cloud controller manager runs out of tree. */}}
{{- define "cluster-class.kubeletExtraArgs" -}}
kubeletExtraArgs:
  - name: cloud-provider
    value: external
{{- end }}
