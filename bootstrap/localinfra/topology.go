package localinfra

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"
)

const (
	// TopologyOwnedLabel marks objects created by the topology step, as CAPI's topology
	// controller does.
	TopologyOwnedLabel = "topology.cluster.x-k8s.io/owned"
	// ControlPlaneMachineTemplateSuffix names the copy of the control plane's machine
	// infrastructure template: "<cluster>-control-plane".
	ControlPlaneMachineTemplateSuffix = "-control-plane"
)

// TopologyInput is what BuildTopology turns into provider objects.
type TopologyInput struct {
	// Cluster is the Cluster with spec.topology set.
	Cluster *clusterv1.Cluster
	// Class is the ClusterClass that Cluster.spec.topology.classRef names.
	Class *clusterv1.ClusterClass
	// InfrastructureTemplate is the object that Class.spec.infrastructure.templateRef names
	// (nil when the class has none).
	InfrastructureTemplate *unstructured.Unstructured
	// ControlPlaneTemplate is the object that Class.spec.controlPlane.templateRef names.
	ControlPlaneTemplate *unstructured.Unstructured
	// MachineInfrastructureTemplate is the object that
	// Class.spec.controlPlane.machineInfrastructure.templateRef names (nil when none).
	MachineInfrastructureTemplate *unstructured.Unstructured
	// ControlPlaneEndpoint, when valid, is written to the infrastructure cluster object's
	// spec.controlPlaneEndpoint; leave it zero for kinds without that field.
	ControlPlaneEndpoint clusterv1.APIEndpoint
}

// Topology is the set of provider objects for a Cluster.
type Topology struct {
	// InfrastructureCluster is, e.g., an AWSCluster named like the Cluster (nil when the class
	// has no infrastructure template).
	InfrastructureCluster *unstructured.Unstructured
	// ControlPlane is, e.g., a KubeadmControlPlane named like the Cluster.
	ControlPlane *unstructured.Unstructured
	// ControlPlaneMachineTemplate is a copy of the class's control plane machine
	// infrastructure template, named "<cluster>-control-plane" (nil when the class has none).
	ControlPlaneMachineTemplate *unstructured.Unstructured
}

// Objects returns the non-nil objects of t in creation order.
func (t *Topology) Objects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range []*unstructured.Unstructured{t.InfrastructureCluster, t.ControlPlaneMachineTemplate, t.ControlPlane} {
		if o != nil {
			out = append(out, o)
		}
	}
	return out
}

// BuildTopology computes the provider objects of a Cluster from its ClusterClass's templates,
// the way CAPI's topology controller does, restricted to this subset:
//
//   - objects: the infrastructure cluster (template kind without the "Template" suffix,
//     spec = template spec.template.spec), the control plane (same, plus spec.version =
//     topology version, spec.replicas = topology controlPlane replicas when set, and
//     spec.machineTemplate.spec.infrastructureRef pointing at the machine template copy), and a
//     copy of the control plane machine infrastructure template. Metadata of
//     spec.template.metadata is carried over. No MachineDeployments or MachinePools: workers
//     are the workload cluster's kwok Nodes.
//   - variables: the Cluster's spec.topology.variables, falling back to each ClusterClass
//     variable's schema default; per-control-plane variable overrides are ignored. Builtins:
//     builtin.cluster.{name,namespace,uid}, builtin.cluster.topology.{version,class,
//     classNamespace}, builtin.cluster.network.{serviceDomain,services,pods},
//     builtin.controlPlane.{version,name,replicas} and
//     builtin.controlPlane.machineTemplate.infrastructureRef.name.
//   - patches: inline spec.patches[].definitions only (external patches are ignored), in
//     order; enabledIf and valueFrom.template are Go templates with sprig's hermetic
//     functions over the variables; selectors matchResources.infrastructureCluster and
//     matchResources.controlPlane (which also matches the machine infrastructure template)
//     with apiVersion and kind; operations add, replace and remove with value,
//     valueFrom.variable (dotted paths into object variables) or valueFrom.template. Missing
//     parents are created on add.
func BuildTopology(in TopologyInput) (*Topology, error) {
	c, class := in.Cluster, in.Class
	if c == nil || class == nil {
		return nil, errors.New("topology: cluster and class are required")
	}
	if in.ControlPlaneTemplate == nil {
		return nil, fmt.Errorf("topology of cluster %s/%s: ClusterClass %s has no control plane template", c.Namespace, c.Name, class.Name)
	}

	cpName := c.Name
	machineTemplateName := c.Name + ControlPlaneMachineTemplateSuffix
	vars, err := topologyVariables(c, class, cpName, machineTemplateName, in.MachineInfrastructureTemplate != nil)
	if err != nil {
		return nil, err
	}

	infraTpl := deepCopyOrNil(in.InfrastructureTemplate)
	cpTpl := in.ControlPlaneTemplate.DeepCopy()
	machineTpl := deepCopyOrNil(in.MachineInfrastructureTemplate)
	if err := applyPatches(class, vars, infraTpl, cpTpl, machineTpl); err != nil {
		return nil, fmt.Errorf("topology of cluster %s/%s: %w", c.Namespace, c.Name, err)
	}

	out := &Topology{}
	if infraTpl != nil {
		infra, err := objectFromTemplate(c, infraTpl, c.Name)
		if err != nil {
			return nil, err
		}
		if in.ControlPlaneEndpoint.IsValid() {
			if err := unstructured.SetNestedMap(infra.Object, map[string]any{
				"host": in.ControlPlaneEndpoint.Host,
				"port": int64(in.ControlPlaneEndpoint.Port),
			}, "spec", "controlPlaneEndpoint"); err != nil {
				return nil, fmt.Errorf("set controlPlaneEndpoint on %s: %w", infra.GetKind(), err)
			}
		}
		out.InfrastructureCluster = infra
	}

	cp, err := objectFromTemplate(c, cpTpl, cpName)
	if err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(cp.Object, c.Spec.Topology.Version, "spec", "version"); err != nil {
		return nil, fmt.Errorf("set version on %s: %w", cp.GetKind(), err)
	}
	if r := c.Spec.Topology.ControlPlane.Replicas; r != nil {
		if err := unstructured.SetNestedField(cp.Object, int64(*r), "spec", "replicas"); err != nil {
			return nil, fmt.Errorf("set replicas on %s: %w", cp.GetKind(), err)
		}
	}
	if machineTpl != nil {
		mt := &unstructured.Unstructured{Object: map[string]any{}}
		mt.SetAPIVersion(machineTpl.GetAPIVersion())
		mt.SetKind(machineTpl.GetKind())
		mt.SetName(machineTemplateName)
		mt.SetNamespace(c.Namespace)
		mt.SetLabels(mergeMaps(machineTpl.GetLabels(), ownedLabels(c)))
		mt.SetAnnotations(machineTpl.GetAnnotations())
		mt.SetOwnerReferences([]metav1.OwnerReference{clusterOwnerRef(c)})
		if spec, ok := machineTpl.Object["spec"]; ok {
			mt.Object["spec"] = spec
		}
		out.ControlPlaneMachineTemplate = mt

		gv, err := schema.ParseGroupVersion(cp.GetAPIVersion())
		if err != nil {
			return nil, fmt.Errorf("control plane apiVersion %q: %w", cp.GetAPIVersion(), err)
		}
		var ref map[string]any
		var path []string
		if gv.Version == "v1beta1" {
			// The v1beta1 control plane contract: an ObjectReference.
			ref = map[string]any{"apiVersion": mt.GetAPIVersion(), "kind": mt.GetKind(), "name": mt.GetName(), "namespace": mt.GetNamespace()}
			path = []string{"spec", "machineTemplate", "infrastructureRef"}
		} else {
			ref = map[string]any{"apiGroup": mt.GroupVersionKind().Group, "kind": mt.GetKind(), "name": mt.GetName()}
			path = []string{"spec", "machineTemplate", "spec", "infrastructureRef"}
		}
		if err := unstructured.SetNestedMap(cp.Object, ref, path...); err != nil {
			return nil, fmt.Errorf("set machine infrastructureRef on %s: %w", cp.GetKind(), err)
		}
	}
	out.ControlPlane = cp
	return out, nil
}

func deepCopyOrNil(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	return u.DeepCopy()
}

// objectFromTemplate creates the object that a "<Kind>Template" describes in
// spec.template.
func objectFromTemplate(c *clusterv1.Cluster, tpl *unstructured.Unstructured, name string) (*unstructured.Unstructured, error) {
	kind, ok := strings.CutSuffix(tpl.GetKind(), "Template")
	if !ok || kind == "" {
		return nil, fmt.Errorf("template %s %s: kind does not end in Template", tpl.GetKind(), tpl.GetName())
	}
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion(tpl.GetAPIVersion())
	obj.SetKind(kind)
	obj.SetName(name)
	obj.SetNamespace(c.Namespace)
	labels, _, _ := unstructured.NestedStringMap(tpl.Object, "spec", "template", "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(tpl.Object, "spec", "template", "metadata", "annotations")
	obj.SetLabels(mergeMaps(labels, ownedLabels(c)))
	if len(annotations) > 0 {
		obj.SetAnnotations(annotations)
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{clusterOwnerRef(c)})
	spec, found, err := unstructured.NestedFieldCopy(tpl.Object, "spec", "template", "spec")
	if err != nil {
		return nil, fmt.Errorf("template %s %s: spec.template.spec: %w", tpl.GetKind(), tpl.GetName(), err)
	}
	if !found || spec == nil {
		spec = map[string]any{}
	}
	obj.Object["spec"] = spec
	return obj, nil
}

func ownedLabels(c *clusterv1.Cluster) map[string]string {
	return map[string]string{clusterv1.ClusterNameLabel: c.Name, TopologyOwnedLabel: ""}
}

func clusterOwnerRef(c *clusterv1.Cluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(),
		Kind:       "Cluster",
		Name:       c.Name,
		UID:        c.UID,
		Controller: ptr.To(true),
	}
}

func mergeMaps(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// topologyVariables returns the variables patches see: the ClusterClass defaults, overridden
// by the Cluster's values, and the builtins under "builtin".
func topologyVariables(c *clusterv1.Cluster, class *clusterv1.ClusterClass, cpName, machineTemplateName string, hasMachineTemplate bool) (map[string]any, error) {
	vars := map[string]any{}
	for _, v := range class.Spec.Variables {
		if d := v.Schema.OpenAPIV3Schema.Default; d != nil && len(d.Raw) > 0 {
			var val any
			if err := json.Unmarshal(d.Raw, &val); err != nil {
				return nil, fmt.Errorf("default of ClusterClass variable %q: %w", v.Name, err)
			}
			vars[v.Name] = val
		}
	}
	for _, v := range c.Spec.Topology.Variables {
		var val any
		if len(v.Value.Raw) > 0 {
			if err := json.Unmarshal(v.Value.Raw, &val); err != nil {
				return nil, fmt.Errorf("value of Cluster variable %q: %w", v.Name, err)
			}
		}
		vars[v.Name] = val
	}
	classNamespace := c.Spec.Topology.ClassRef.Namespace
	if classNamespace == "" {
		classNamespace = c.Namespace
	}
	cp := map[string]any{
		"version": c.Spec.Topology.Version,
		"name":    cpName,
	}
	if r := c.Spec.Topology.ControlPlane.Replicas; r != nil {
		cp["replicas"] = int64(*r)
	}
	if hasMachineTemplate {
		cp["machineTemplate"] = map[string]any{"infrastructureRef": map[string]any{"name": machineTemplateName}}
	}
	network := map[string]any{}
	if sd := c.Spec.ClusterNetwork.ServiceDomain; sd != "" {
		network["serviceDomain"] = sd
	}
	if s := c.Spec.ClusterNetwork.Services.String(); s != "" {
		network["services"] = s
	}
	if p := c.Spec.ClusterNetwork.Pods.String(); p != "" {
		network["pods"] = p
	}
	vars["builtin"] = map[string]any{
		"cluster": map[string]any{
			"name":      c.Name,
			"namespace": c.Namespace,
			"uid":       string(c.UID),
			"topology": map[string]any{
				"version":        c.Spec.Topology.Version,
				"class":          c.Spec.Topology.ClassRef.Name,
				"classNamespace": classNamespace,
			},
			"network": network,
		},
		"controlPlane": cp,
	}
	return vars, nil
}

// applyPatches applies the class's inline patches, in order, to the templates they select.
func applyPatches(class *clusterv1.ClusterClass, vars map[string]any, infraTpl, cpTpl, machineTpl *unstructured.Unstructured) error {
	for _, p := range class.Spec.Patches {
		if len(p.Definitions) == 0 {
			continue // external patches need a runtime extension: not supported here
		}
		if p.EnabledIf != "" {
			out, err := renderTemplate(p.EnabledIf, vars)
			if err != nil {
				return fmt.Errorf("patch %q: enabledIf: %w", p.Name, err)
			}
			if strings.TrimSpace(out) != "true" {
				continue
			}
		}
		for i, def := range p.Definitions {
			var targets []*unstructured.Unstructured
			m := def.Selector.MatchResources
			if ptr.Deref(m.InfrastructureCluster, false) && selects(def.Selector, infraTpl) {
				targets = append(targets, infraTpl)
			}
			if ptr.Deref(m.ControlPlane, false) {
				for _, t := range []*unstructured.Unstructured{cpTpl, machineTpl} {
					if selects(def.Selector, t) {
						targets = append(targets, t)
					}
				}
			}
			if len(targets) == 0 {
				continue
			}
			ops, err := jsonPatchOps(def.JSONPatches, vars)
			if err != nil {
				return fmt.Errorf("patch %q definition %d: %w", p.Name, i, err)
			}
			for _, t := range targets {
				if err := applyJSONPatch(t, ops); err != nil {
					return fmt.Errorf("patch %q definition %d on %s %s: %w", p.Name, i, t.GetKind(), t.GetName(), err)
				}
			}
		}
	}
	return nil
}

func selects(s clusterv1.PatchSelector, t *unstructured.Unstructured) bool {
	return t != nil && s.APIVersion == t.GetAPIVersion() && s.Kind == t.GetKind()
}

// jsonPatchOps turns the ClusterClass JSON patches into RFC 6902 operations with resolved
// values.
func jsonPatchOps(patches []clusterv1.JSONPatch, vars map[string]any) ([]map[string]any, error) {
	ops := make([]map[string]any, 0, len(patches))
	for _, jp := range patches {
		op := map[string]any{"op": jp.Op, "path": jp.Path}
		switch jp.Op {
		case "remove":
		case "add", "replace":
			val, err := patchValue(jp, vars)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", jp.Op, jp.Path, err)
			}
			op["value"] = val
		default:
			return nil, fmt.Errorf("%s %s: unsupported operation (add, replace or remove)", jp.Op, jp.Path)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func patchValue(jp clusterv1.JSONPatch, vars map[string]any) (any, error) {
	switch {
	case jp.Value != nil:
		var v any
		if err := json.Unmarshal(jp.Value.Raw, &v); err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		return v, nil
	case jp.ValueFrom != nil && jp.ValueFrom.Variable != "":
		return lookupVariable(vars, jp.ValueFrom.Variable)
	case jp.ValueFrom != nil && jp.ValueFrom.Template != "":
		out, err := renderTemplate(jp.ValueFrom.Template, vars)
		if err != nil {
			return nil, fmt.Errorf("valueFrom.template: %w", err)
		}
		var v any
		if err := yaml.Unmarshal([]byte(out), &v); err != nil {
			return nil, fmt.Errorf("valueFrom.template: result is not YAML: %w", err)
		}
		return v, nil
	default:
		return nil, errors.New("neither value nor valueFrom is set")
	}
}

// lookupVariable resolves a variable name with an optional dotted path into object values,
// e.g. "network.vpc.id".
func lookupVariable(vars map[string]any, name string) (any, error) {
	parts := strings.Split(name, ".")
	// A variable's own name may not contain dots, except for "builtin".
	var cur any = vars
	for i, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("variable %q: %q is not an object", name, strings.Join(parts[:i], "."))
		}
		v, ok := m[p]
		if !ok {
			return nil, fmt.Errorf("variable %q is not set", name)
		}
		cur = v
	}
	return cur, nil
}

func renderTemplate(text string, vars map[string]any) (string, error) {
	t, err := template.New("patch").Funcs(sprig.HermeticTxtFuncMap()).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, vars); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func applyJSONPatch(obj *unstructured.Unstructured, ops []map[string]any) error {
	patchJSON, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	opts := jsonpatch.NewApplyOptions()
	opts.EnsurePathExistsOnAdd = true
	patched, err := patch.ApplyWithOptions(doc, opts)
	if err != nil {
		return err
	}
	out := map[string]any{}
	if err := json.Unmarshal(patched, &out); err != nil {
		return err
	}
	obj.Object = out
	return nil
}
