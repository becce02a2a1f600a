package upgradediff

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// Redaction: what a diff shows of credentials. Nothing of a Secret's data is shown, as
// `kubectl diff` does: each value of a rendered Secret's data and stringData is "***", or
// "*** (before)" and "*** (after)" where it changes. A rendered value whose key names a
// credential (redact.SensitiveKey: password, token, apiKey, tls.key, ...) is masked the same way
// in the values diff. Every such value, and every value a rendered Secret holds, is then hidden
// wherever else it appears in the diff (a values key that feeds a Secret, an environment
// variable), and URL credentials are dropped (redact.Scrubber).

// registerSecrets adds the credentials of one release's render to scrub: the values of its
// Secrets (decoded) and the values under sensitive keys.
func registerSecrets(scrub *redact.Scrubber, r rendered) {
	for _, objs := range r.objects {
		for _, o := range objs {
			if !isSecret(o.Object) {
				continue
			}
			for _, v := range secretValues(o.Object) {
				scrub.Add(v)
			}
		}
	}
	for k, v := range r.base {
		if redact.SensitiveKey(k) {
			scrub.Add(v)
		}
	}
	for _, values := range r.values {
		for k, v := range plainLeaves(values, "") {
			if redact.SensitiveKey(k) {
				scrub.Add(v)
			}
		}
	}
}

// secretValues are a Secret's values: data decoded from base64, and stringData.
func secretValues(o map[string]any) []string {
	var out []string
	if data, ok := o["data"].(map[string]any); ok {
		for _, v := range data {
			s, _ := v.(string)
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
				out = append(out, string(dec))
			}
			out = append(out, s)
		}
	}
	if data, ok := o["stringData"].(map[string]any); ok {
		for _, v := range data {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func isSecret(o map[string]any) bool {
	kind, _ := o["kind"].(string)
	return kind == "Secret" && apiGroup(o) == ""
}

// plainLeaves flattens values into "a.b[0].c" keys and their scalars.
func plainLeaves(v any, prefix string) map[string]string {
	out := map[string]string{}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			maps.Copy(out, plainLeaves(e, key))
		}
	case []any:
		for i, e := range t {
			maps.Copy(out, plainLeaves(e, fmt.Sprintf("%s[%d]", prefix, i)))
		}
	default:
		out[prefix] = render.FormatScalar(t)
	}
	return out
}

// maskFlat returns vars with the values of sensitive keys masked: redact.Mask where other has
// the same value (or not the key), changed where it differs.
func maskFlat(vars, other map[string]string, changed string) map[string]string {
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		if !redact.SensitiveKey(k) {
			out[k] = v
			continue
		}
		out[k] = redact.Mask
		if o, ok := other[k]; ok && o != v {
			out[k] = changed
		}
	}
	return out
}

// maskTree returns a copy of values with the scalars under sensitive keys masked as maskFlat
// does, other being the other release's values at the same place.
func maskTree(values, other any, changed string) map[string]any {
	out, _ := maskValue(values, other, "", changed).(map[string]any)
	return out
}

func maskValue(v, other any, key, changed string) any {
	switch t := v.(type) {
	case map[string]any:
		om, _ := other.(map[string]any)
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = maskValue(e, om[k], k, changed)
		}
		return out
	case []any:
		ol, _ := other.([]any)
		out := make([]any, len(t))
		for i, e := range t {
			var o any
			if i < len(ol) {
				o = ol[i]
			}
			out[i] = maskValue(e, o, key, changed)
		}
		return out
	}
	if !redact.SensitiveKey(key) || v == nil {
		return v
	}
	if other != nil && render.FormatScalar(other) != render.FormatScalar(v) {
		return changed
	}
	return redact.Mask
}

// maskSecret returns a copy of Secret o with every value of data and stringData masked: "***",
// or changed where other (the other release's Secret, or nil) has a different value.
func maskSecret(o, other map[string]any, changed string) map[string]any {
	out := render.DeepCopyValue(o).(map[string]any)
	for _, field := range []string{"data", "stringData"} {
		data, ok := out[field].(map[string]any)
		if !ok {
			continue
		}
		od, _ := other[field].(map[string]any)
		for k, v := range data {
			data[k] = redact.Mask
			if ov, ok := od[k]; ok && fmt.Sprint(ov) != fmt.Sprint(v) {
				data[k] = changed
			}
		}
	}
	return out
}

// objectKey identifies an object in the workload cluster.
type objectKey struct{ group, kind, namespace, name string }

// keyedObject is a rendered object with its key.
type keyedObject struct {
	key           objectKey
	obj           map[string]any
	helmCRD       bool
	clusterScoped bool
}

// builtinClusterScoped are the cluster-scoped kinds of Kubernetes itself (group/kind); other
// kinds are cluster-scoped when a CustomResourceDefinition of either release says so.
var builtinClusterScoped = map[string]bool{
	"/Namespace": true, "/Node": true, "/PersistentVolume": true, "/ComponentStatus": true,
	"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
	"apiextensions.k8s.io/CustomResourceDefinition": true, "apiregistration.k8s.io/APIService": true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": true, "admissionregistration.k8s.io/MutatingWebhookConfiguration": true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy": true, "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": true,
	"admissionregistration.k8s.io/MutatingAdmissionPolicy": true, "admissionregistration.k8s.io/MutatingAdmissionPolicyBinding": true,
	"storage.k8s.io/StorageClass": true, "storage.k8s.io/CSIDriver": true, "storage.k8s.io/CSINode": true,
	"storage.k8s.io/VolumeAttachment": true, "storage.k8s.io/VolumeAttributesClass": true,
	"scheduling.k8s.io/PriorityClass": true, "node.k8s.io/RuntimeClass": true, "networking.k8s.io/IngressClass": true,
	"networking.k8s.io/IPAddress": true, "networking.k8s.io/ServiceCIDR": true,
	"certificates.k8s.io/CertificateSigningRequest": true, "certificates.k8s.io/ClusterTrustBundle": true,
	"flowcontrol.apiserver.k8s.io/FlowSchema": true, "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration": true,
	"resource.k8s.io/DeviceClass": true, "resource.k8s.io/ResourceSlice": true,
	"policy/PodSecurityPolicy": true, "authentication.k8s.io/SelfSubjectReview": true,
}

// scopes tells which kinds are cluster-scoped: Kubernetes' own, and those of the
// CustomResourceDefinitions either release renders (spec.scope: Cluster).
type scopes map[string]bool

func newScopes(rs ...rendered) scopes {
	s := scopes{}
	maps.Copy(s, builtinClusterScoped)
	for _, r := range rs {
		for _, objs := range r.objects {
			for _, o := range objs {
				if !isCRD(o.Object) {
					continue
				}
				spec, _ := o.Object["spec"].(map[string]any)
				group, _ := spec["group"].(string)
				names, _ := spec["names"].(map[string]any)
				kind, _ := names["kind"].(string)
				scope, _ := spec["scope"].(string)
				if kind != "" {
					s[group+"/"+kind] = scope == "Cluster"
				}
			}
		}
	}
	return s
}

func (s scopes) clusterScoped(group, kind string) bool { return s[group+"/"+kind] }

func isCRD(o map[string]any) bool {
	kind, _ := o["kind"].(string)
	return kind == "CustomResourceDefinition" && apiGroup(o) == "apiextensions.k8s.io"
}

func apiGroup(o map[string]any) string {
	av, _ := o["apiVersion"].(string)
	if i := strings.Index(av, "/"); i >= 0 {
		return av[:i]
	}
	return ""
}

// keyed keys a component's objects; namespaced objects without a namespace get defaultNS (a
// Helm release's namespace; "" for kustomize, whose objects carry their own).
func keyed(objs []stack.AddonObject, defaultNS string, s scopes) map[objectKey]keyedObject {
	out := map[objectKey]keyedObject{}
	for _, o := range objs {
		md, _ := o.Object["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		kind, _ := o.Object["kind"].(string)
		group := apiGroup(o.Object)
		cs := s.clusterScoped(group, kind)
		if cs {
			ns = ""
		} else if ns == "" && defaultNS != "" {
			ns = defaultNS
			obj := render.DeepCopyValue(o.Object).(map[string]any)
			if m, ok := obj["metadata"].(map[string]any); ok {
				m["namespace"] = ns
			}
			o.Object = obj
		}
		k := objectKey{group: group, kind: kind, namespace: ns, name: name}
		out[k] = keyedObject{key: k, obj: o.Object, helmCRD: o.HelmCRD, clusterScoped: cs}
	}
	return out
}

// helmCRDNote is the note on a CustomResourceDefinition of a chart's crds/ directory.
const helmCRDNote = "from the chart's crds/ directory: Helm installs it with the release's first install only, and Flux skips crds/ on upgrades (HelmRelease spec.upgrade.crds: Skip)"

// diffObjects diffs one component's objects of the two releases.
func diffObjects(component string, old, cur map[objectKey]keyedObject, scrub *redact.Scrubber, context int) []ObjectChange {
	keys := map[objectKey]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range cur {
		keys[k] = true
	}
	var out []ObjectChange
	for k := range keys {
		o, inOld := old[k]
		n, inNew := cur[k]
		ch := ObjectChange{Component: component, Group: k.group, Kind: k.kind, Namespace: k.namespace, Name: k.name,
			ClusterScoped: o.clusterScoped || n.clusterScoped, CRD: k.group == "apiextensions.k8s.io" && k.kind == "CustomResourceDefinition"}
		if n.helmCRD || (!inNew && o.helmCRD) {
			ch.Note = helmCRDNote
		}
		switch {
		case !inOld:
			ch.Change = Added
			ch.Diff = scrub.Text(unified(nil, objectLines(n.obj, nil, redact.MaskAfter), context))
		case !inNew:
			ch.Change = Removed
		default:
			if plainYAML(o.obj) == plainYAML(n.obj) {
				continue
			}
			ch.Change = Changed
			ch.Diff = scrub.Text(unified(objectLines(o.obj, n.obj, redact.MaskBefore), objectLines(n.obj, o.obj, redact.MaskAfter), context))
			if ch.Diff == "" {
				// Only masked values differ, identically masked: say so rather than show nothing.
				ch.Diff = "(only hidden values differ)\n"
			}
		}
		out = append(out, ch)
	}
	return out
}

// objectLines prints an object as YAML lines, a Secret's values masked against other.
func objectLines(o, other map[string]any, changed string) []string {
	if isSecret(o) {
		o = maskSecret(o, other, changed)
	}
	return splitLines(plainYAML(o))
}

func plainYAML(o map[string]any) string {
	out, err := yaml.Marshal(o)
	if err != nil {
		return fmt.Sprintf("# cannot be printed: %v\n", err)
	}
	return string(out)
}

// splitLines splits text into lines that keep their "\n" (the last one gets one).
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n"
	}
	return slices.Clip(lines)
}
