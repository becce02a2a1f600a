package localinfra

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func rawJSON(t *testing.T, v any) apiextensionsv1.JSON {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return apiextensionsv1.JSON{Raw: b}
}

func testCluster(t *testing.T, vars map[string]any) *clusterv1.Cluster {
	c := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns", UID: "uid-1"},
		Spec: clusterv1.ClusterSpec{
			Topology: clusterv1.Topology{
				ClassRef: clusterv1.ClusterClassRef{Name: "aws-base-1-36-v1"},
				Version:  "v1.36.0",
			},
		},
	}
	for k, v := range vars {
		c.Spec.Topology.Variables = append(c.Spec.Topology.Variables, clusterv1.ClusterVariable{Name: k, Value: rawJSON(t, v)})
	}
	return c
}

func awsClusterTemplate() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
		"kind":       "AWSClusterTemplate",
		"metadata":   map[string]any{"name": "aws-cluster", "namespace": "ns"},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"from-template": "yes"}},
			"spec":     map[string]any{"region": "eu-central-1"},
		}},
	}}
}

func kcpTemplate() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
		"kind":       "KubeadmControlPlaneTemplate",
		"metadata":   map[string]any{"name": "kcp", "namespace": "ns"},
		"spec": map[string]any{"template": map[string]any{
			"spec": map[string]any{"kubeadmConfigSpec": map[string]any{}},
		}},
	}}
}

func awsMachineTemplate() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
		"kind":       "AWSMachineTemplate",
		"metadata":   map[string]any{"name": "cp-machines", "namespace": "ns"},
		"spec": map[string]any{"template": map[string]any{
			"spec": map[string]any{"instanceType": "t3.large"},
		}},
	}}
}

func patchDef(apiVersion, kind string, infra, cp bool, patches ...clusterv1.JSONPatch) clusterv1.PatchDefinition {
	d := clusterv1.PatchDefinition{
		Selector:    clusterv1.PatchSelector{APIVersion: apiVersion, Kind: kind},
		JSONPatches: patches,
	}
	if infra {
		d.Selector.MatchResources.InfrastructureCluster = ptr.To(true)
	}
	if cp {
		d.Selector.MatchResources.ControlPlane = ptr.To(true)
	}
	return d
}

func nested(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !found {
		t.Fatalf("%s %s: %s not found (err %v) in %v", u.GetKind(), u.GetName(), strings.Join(path, "."), err, u.Object)
	}
	return v
}

func TestBuildTopologyObjects(t *testing.T) {
	c := testCluster(t, nil)
	c.Spec.Topology.ControlPlane.Replicas = ptr.To[int32](3)
	class := &clusterv1.ClusterClass{ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36-v1", Namespace: "ns"}}
	got, err := BuildTopology(TopologyInput{
		Cluster:                       c,
		Class:                         class,
		InfrastructureTemplate:        awsClusterTemplate(),
		ControlPlaneTemplate:          kcpTemplate(),
		MachineInfrastructureTemplate: awsMachineTemplate(),
		ControlPlaneEndpoint:          clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443},
	})
	if err != nil {
		t.Fatalf("BuildTopology: %v", err)
	}

	infra := got.InfrastructureCluster
	if infra.GetKind() != "AWSCluster" || infra.GetName() != "c1" || infra.GetNamespace() != "ns" ||
		infra.GetAPIVersion() != "infrastructure.cluster.x-k8s.io/v1beta2" {
		t.Fatalf("infrastructure cluster = %s %s/%s (%s)", infra.GetKind(), infra.GetNamespace(), infra.GetName(), infra.GetAPIVersion())
	}
	wantSpec := map[string]any{
		"region":               "eu-central-1",
		"controlPlaneEndpoint": map[string]any{"host": "127.0.0.1", "port": int64(6443)},
	}
	if !reflect.DeepEqual(infra.Object["spec"], wantSpec) {
		t.Fatalf("AWSCluster spec = %v, want %v", infra.Object["spec"], wantSpec)
	}
	wantLabels := map[string]string{clusterv1.ClusterNameLabel: "c1", TopologyOwnedLabel: "", "from-template": "yes"}
	if !reflect.DeepEqual(infra.GetLabels(), wantLabels) {
		t.Fatalf("AWSCluster labels = %v, want %v", infra.GetLabels(), wantLabels)
	}
	if refs := infra.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Cluster" || refs[0].UID != "uid-1" || !ptr.Deref(refs[0].Controller, false) {
		t.Fatalf("AWSCluster owner references = %v", refs)
	}

	mt := got.ControlPlaneMachineTemplate
	if mt.GetKind() != "AWSMachineTemplate" || mt.GetName() != "c1-control-plane" {
		t.Fatalf("machine template = %s %s", mt.GetKind(), mt.GetName())
	}
	if v := nested(t, mt, "spec", "template", "spec", "instanceType"); v != "t3.large" {
		t.Fatalf("machine template instanceType = %v", v)
	}

	cp := got.ControlPlane
	if cp.GetKind() != "KubeadmControlPlane" || cp.GetName() != "c1" {
		t.Fatalf("control plane = %s %s", cp.GetKind(), cp.GetName())
	}
	if v := nested(t, cp, "spec", "version"); v != "v1.36.0" {
		t.Fatalf("control plane version = %v", v)
	}
	if v := nested(t, cp, "spec", "replicas"); v != int64(3) {
		t.Fatalf("control plane replicas = %v", v)
	}
	wantRef := map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachineTemplate", "name": "c1-control-plane"}
	if v := nested(t, cp, "spec", "machineTemplate", "spec", "infrastructureRef"); !reflect.DeepEqual(v, wantRef) {
		t.Fatalf("control plane infrastructureRef = %v, want %v", v, wantRef)
	}
	if n := len(got.Objects()); n != 3 {
		t.Fatalf("Objects() has %d objects, want 3", n)
	}
}

func TestBuildTopologyPatches(t *testing.T) {
	const infraAPI, cpAPI = "infrastructure.cluster.x-k8s.io/v1beta2", "controlplane.cluster.x-k8s.io/v1beta2"
	tests := []struct {
		name      string
		vars      map[string]any
		classVars []clusterv1.ClusterClassVariable
		patches   []clusterv1.ClusterClassPatch
		check     func(t *testing.T, got *Topology)
		wantErr   string
	}{
		{
			name: "variable into the infrastructure cluster",
			vars: map[string]any{"region": "us-west-2"},
			patches: []clusterv1.ClusterClassPatch{{Name: "region", Definitions: []clusterv1.PatchDefinition{
				patchDef(infraAPI, "AWSClusterTemplate", true, false, clusterv1.JSONPatch{
					Op: "replace", Path: "/spec/template/spec/region", ValueFrom: &clusterv1.JSONPatchValue{Variable: "region"},
				}),
			}}},
			check: func(t *testing.T, got *Topology) {
				if v := nested(t, got.InfrastructureCluster, "spec", "region"); v != "us-west-2" {
					t.Fatalf("region = %v", v)
				}
			},
		},
		{
			name: "class default when the cluster does not set the variable, nested add",
			classVars: []clusterv1.ClusterClassVariable{{Name: "sshKey", Schema: clusterv1.VariableSchema{
				OpenAPIV3Schema: clusterv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"default-key"`)}},
			}}},
			patches: []clusterv1.ClusterClassPatch{{Name: "ssh", Definitions: []clusterv1.PatchDefinition{
				patchDef(infraAPI, "AWSClusterTemplate", true, false, clusterv1.JSONPatch{
					Op: "add", Path: "/spec/template/spec/sshKeyName", ValueFrom: &clusterv1.JSONPatchValue{Variable: "sshKey"},
				}),
			}}},
			check: func(t *testing.T, got *Topology) {
				if v := nested(t, got.InfrastructureCluster, "spec", "sshKeyName"); v != "default-key" {
					t.Fatalf("sshKeyName = %v", v)
				}
			},
		},
		{
			name: "control plane selector matches the control plane and its machine template; dotted variable; builtin; template",
			vars: map[string]any{"machine": map[string]any{"type": "m5.xlarge"}},
			patches: []clusterv1.ClusterClassPatch{{Name: "cp", Definitions: []clusterv1.PatchDefinition{
				patchDef(infraAPI, "AWSMachineTemplate", false, true, clusterv1.JSONPatch{
					Op: "replace", Path: "/spec/template/spec/instanceType", ValueFrom: &clusterv1.JSONPatchValue{Variable: "machine.type"},
				}),
				patchDef(cpAPI, "KubeadmControlPlaneTemplate", false, true,
					clusterv1.JSONPatch{
						Op: "add", Path: "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/clusterName",
						ValueFrom: &clusterv1.JSONPatchValue{Variable: "builtin.cluster.name"},
					},
					clusterv1.JSONPatch{
						Op: "add", Path: "/spec/template/spec/kubeadmConfigSpec/files",
						ValueFrom: &clusterv1.JSONPatchValue{Template: "- path: /etc/{{ .builtin.cluster.name | upper }}\n  content: {{ .builtin.controlPlane.version }}"},
					},
				),
			}}},
			check: func(t *testing.T, got *Topology) {
				if v := nested(t, got.ControlPlaneMachineTemplate, "spec", "template", "spec", "instanceType"); v != "m5.xlarge" {
					t.Fatalf("instanceType = %v", v)
				}
				if v := nested(t, got.ControlPlane, "spec", "kubeadmConfigSpec", "clusterConfiguration", "clusterName"); v != "c1" {
					t.Fatalf("clusterName = %v", v)
				}
				want := []any{map[string]any{"path": "/etc/C1", "content": "v1.36.0"}}
				if v := nested(t, got.ControlPlane, "spec", "kubeadmConfigSpec", "files"); !reflect.DeepEqual(v, want) {
					t.Fatalf("files = %v, want %v", v, want)
				}
			},
		},
		{
			name: "enabledIf false skips; wrong kind and unselected targets are left alone; remove works",
			vars: map[string]any{"enabled": false},
			patches: []clusterv1.ClusterClassPatch{
				{Name: "off", EnabledIf: "{{ .enabled }}", Definitions: []clusterv1.PatchDefinition{
					patchDef(infraAPI, "AWSClusterTemplate", true, false, clusterv1.JSONPatch{
						Op: "replace", Path: "/spec/template/spec/region", Value: &apiextensionsv1.JSON{Raw: []byte(`"off"`)},
					}),
				}},
				{Name: "wrong-kind", Definitions: []clusterv1.PatchDefinition{
					patchDef(infraAPI, "DockerClusterTemplate", true, false, clusterv1.JSONPatch{
						Op: "replace", Path: "/spec/template/spec/region", Value: &apiextensionsv1.JSON{Raw: []byte(`"docker"`)},
					}),
				}},
				{Name: "not-selected", Definitions: []clusterv1.PatchDefinition{
					patchDef(infraAPI, "AWSClusterTemplate", false, true, clusterv1.JSONPatch{
						Op: "replace", Path: "/spec/template/spec/region", Value: &apiextensionsv1.JSON{Raw: []byte(`"cp"`)},
					}),
				}},
				{Name: "remove", EnabledIf: `{{ if not .enabled }}true{{ end }}`, Definitions: []clusterv1.PatchDefinition{
					patchDef(infraAPI, "AWSMachineTemplate", false, true, clusterv1.JSONPatch{Op: "remove", Path: "/spec/template/spec/instanceType"}),
				}},
			},
			check: func(t *testing.T, got *Topology) {
				if v := nested(t, got.InfrastructureCluster, "spec", "region"); v != "eu-central-1" {
					t.Fatalf("region = %v, want unchanged", v)
				}
				if _, found, _ := unstructured.NestedFieldNoCopy(got.ControlPlaneMachineTemplate.Object, "spec", "template", "spec", "instanceType"); found {
					t.Fatal("instanceType not removed")
				}
			},
		},
		{
			name: "missing variable is an error",
			patches: []clusterv1.ClusterClassPatch{{Name: "region", Definitions: []clusterv1.PatchDefinition{
				patchDef(infraAPI, "AWSClusterTemplate", true, false, clusterv1.JSONPatch{
					Op: "replace", Path: "/spec/template/spec/region", ValueFrom: &clusterv1.JSONPatchValue{Variable: "region"},
				}),
			}}},
			wantErr: `variable "region" is not set`,
		},
		{
			name: "unsupported operation is an error",
			patches: []clusterv1.ClusterClassPatch{{Name: "move", Definitions: []clusterv1.PatchDefinition{
				patchDef(infraAPI, "AWSClusterTemplate", true, false, clusterv1.JSONPatch{Op: "move", Path: "/spec/template/spec/region"}),
			}}},
			wantErr: "unsupported operation",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class := &clusterv1.ClusterClass{
				ObjectMeta: metav1.ObjectMeta{Name: "aws-base-1-36-v1", Namespace: "ns"},
				Spec:       clusterv1.ClusterClassSpec{Variables: tt.classVars, Patches: tt.patches},
			}
			infraTpl, cpTpl, mTpl := awsClusterTemplate(), kcpTemplate(), awsMachineTemplate()
			got, err := BuildTopology(TopologyInput{
				Cluster:                       testCluster(t, tt.vars),
				Class:                         class,
				InfrastructureTemplate:        infraTpl,
				ControlPlaneTemplate:          cpTpl,
				MachineInfrastructureTemplate: mTpl,
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("BuildTopology error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("BuildTopology: %v", err)
			}
			tt.check(t, got)
			// The inputs are not modified.
			if !reflect.DeepEqual(infraTpl, awsClusterTemplate()) || !reflect.DeepEqual(mTpl, awsMachineTemplate()) || !reflect.DeepEqual(cpTpl, kcpTemplate()) {
				t.Fatal("BuildTopology modified its input templates")
			}
		})
	}
}

func TestBuildTopologyWithoutInfrastructureOrMachineTemplate(t *testing.T) {
	got, err := BuildTopology(TopologyInput{
		Cluster:              testCluster(t, nil),
		Class:                &clusterv1.ClusterClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
		ControlPlaneTemplate: kcpTemplate(),
	})
	if err != nil {
		t.Fatalf("BuildTopology: %v", err)
	}
	if got.InfrastructureCluster != nil || got.ControlPlaneMachineTemplate != nil {
		t.Fatalf("unexpected objects: %v", got.Objects())
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.ControlPlane.Object, "spec", "machineTemplate"); found {
		t.Fatal("machineTemplate set without a machine infrastructure template")
	}
	if _, err := BuildTopology(TopologyInput{Cluster: testCluster(t, nil), Class: &clusterv1.ClusterClass{}}); err == nil {
		t.Fatal("BuildTopology without a control plane template succeeded")
	}
}

func TestSetProvisionedStatusIsStable(t *testing.T) {
	c := testCluster(t, nil)
	c.Generation = 3
	ep := clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}
	setProvisionedStatus(c, ep)
	if c.Status.Phase != string(clusterv1.ClusterPhaseProvisioned) ||
		!ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false) ||
		!ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false) {
		t.Fatalf("status = %+v", c.Status)
	}
	for _, typ := range []string{
		clusterv1.ClusterInfrastructureReadyCondition, clusterv1.ClusterControlPlaneInitializedCondition,
		clusterv1.ClusterControlPlaneAvailableCondition, clusterv1.ClusterAvailableCondition,
	} {
		var found bool
		for _, cond := range c.Status.Conditions {
			if cond.Type == typ {
				found = true
				if cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != 3 || !strings.Contains(cond.Message, "127.0.0.1:6443") {
					t.Fatalf("condition %s = %+v", typ, cond)
				}
			}
		}
		if !found {
			t.Fatalf("condition %s missing", typ)
		}
	}
	// A second reconcile with the same facts changes nothing (no status write).
	before := c.DeepCopy()
	setProvisionedStatus(c, ep)
	if !reflect.DeepEqual(before.Status, c.Status) {
		t.Fatalf("status changed on a second call:\n%+v\n%+v", before.Status, c.Status)
	}
}
