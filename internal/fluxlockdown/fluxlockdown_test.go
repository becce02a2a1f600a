package fluxlockdown

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

func deployment(name string, args ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Args: args}}
	return d
}

// Flux's own install: the lockdown is set by a kustomize patch adding these two arguments.
var lockedArgs = []string{"--watch-all-namespaces=true", "--no-cross-namespace-refs=true", "--default-service-account=default"}

func TestJudge(t *testing.T) {
	locked := func(name string) *appsv1.Deployment { return deployment(name, lockedArgs...) }
	tests := []struct {
		name       string
		deps       map[string]*appsv1.Deployment
		wantStatus metav1.ConditionStatus
		wantReason string
		wantDetail []string
	}{{
		name:       "both controllers locked down",
		deps:       map[string]*appsv1.Deployment{"kustomize-controller": locked("kustomize-controller"), "helm-controller": locked("helm-controller")},
		wantStatus: metav1.ConditionTrue, wantReason: csv1.ReasonFluxLockedDown,
		wantDetail: []string{"--default-service-account=default"},
	}, {
		name: "the flags as separate words, and a bare boolean",
		deps: map[string]*appsv1.Deployment{
			"kustomize-controller": deployment("kustomize-controller", "--no-cross-namespace-refs", "--default-service-account", "flux-tenant"),
			"helm-controller":      deployment("helm-controller", "-no-cross-namespace-refs=true", "-default-service-account=flux-tenant"),
		},
		wantStatus: metav1.ConditionTrue, wantReason: csv1.ReasonFluxLockedDown, wantDetail: []string{"=flux-tenant"},
	}, {
		name: "Flux's default install: no lockdown",
		deps: map[string]*appsv1.Deployment{
			"kustomize-controller": deployment("kustomize-controller", "--watch-all-namespaces=true"),
			"helm-controller":      locked("helm-controller"),
		},
		wantStatus: metav1.ConditionFalse, wantReason: csv1.ReasonFluxNotLockedDown,
		wantDetail: []string{"kustomize-controller runs without --no-cross-namespace-refs=true and --default-service-account", "Flux's own identity"},
	}, {
		name: "cross-namespace references turned off explicitly, no default account",
		deps: map[string]*appsv1.Deployment{
			"kustomize-controller": locked("kustomize-controller"),
			"helm-controller":      deployment("helm-controller", "--no-cross-namespace-refs=false", "--default-service-account="),
		},
		wantStatus: metav1.ConditionFalse, wantReason: csv1.ReasonFluxNotLockedDown,
		wantDetail: []string{"helm-controller runs without --no-cross-namespace-refs=true and --default-service-account"},
	}, {
		name:       "a controller not found: unknown",
		deps:       map[string]*appsv1.Deployment{"kustomize-controller": locked("kustomize-controller")},
		wantStatus: metav1.ConditionUnknown, wantReason: csv1.ReasonFluxLockdownUnknown,
		wantDetail: []string{"no Deployment helm-controller in namespace flux-system", "--flux-namespace", "--flux-lockdown=assumed"},
	}, {
		name:       "one found unlocked and one missing: unlocked",
		deps:       map[string]*appsv1.Deployment{"helm-controller": deployment("helm-controller")},
		wantStatus: metav1.ConditionFalse, wantReason: csv1.ReasonFluxNotLockedDown,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Judge("flux-system", tt.deps)
			if s.Status != tt.wantStatus || s.Reason != tt.wantReason {
				t.Errorf("Judge = %+v, want %s %s", s, tt.wantStatus, tt.wantReason)
			}
			for _, w := range tt.wantDetail {
				if !strings.Contains(s.Detail, w) {
					t.Errorf("detail %q lacks %q", s.Detail, w)
				}
			}
		})
	}
}

// TestDeliversAndConditions: only ModeRequired refuses, and only without a confirmed lockdown;
// the condition names the stack's identity and the refusal says what to do.
func TestDeliversAndConditions(t *testing.T) {
	locked := State{Status: metav1.ConditionTrue, Reason: csv1.ReasonFluxLockedDown, Detail: "Flux runs locked down"}
	unlocked := State{Status: metav1.ConditionFalse, Reason: csv1.ReasonFluxNotLockedDown, Detail: "Flux runs without its multi-tenancy lockdown"}
	unknown := Unknown("flux-system", "forbidden")
	for _, tc := range []struct {
		mode  string
		state State
		want  bool
	}{
		{ModeDetect, unlocked, true}, {ModeDetect, unknown, true}, {ModeAssumed, Assumed(), true},
		{ModeRequired, locked, true}, {ModeRequired, Assumed(), true}, {ModeRequired, unlocked, false}, {ModeRequired, unknown, false},
	} {
		if got := Delivers(tc.mode, tc.state); got != tc.want {
			t.Errorf("Delivers(%s, %s) = %v, want %v", tc.mode, tc.state.Reason, got, tc.want)
		}
	}
	c := Condition(unlocked, "aws-base", "")
	if c.Type != csv1.FluxLockdownCondition || c.Status != metav1.ConditionFalse || c.Reason != csv1.ReasonFluxNotLockedDown ||
		!strings.Contains(c.Message, "ClusterStack aws-base name no ServiceAccount") || !strings.Contains(c.Message, "its own identity") {
		t.Errorf("Condition, unlocked, no account: %+v", c)
	}
	if c := Condition(unlocked, "aws-base", "clusterstack-flux"); !strings.Contains(c.Message, "name ServiceAccount clusterstack-flux") {
		t.Errorf("Condition, unlocked, with an account: %+v", c)
	}
	r := Refused(unlocked, "aws-base")
	if r.Type != csv1.ReleasesResolvedCondition || r.Status != metav1.ConditionFalse || r.Reason != csv1.ReasonFluxLockdownRequired ||
		!strings.Contains(r.Message, "--flux-lockdown=required and Flux runs without") {
		t.Errorf("Refused: %+v", r)
	}
	for _, m := range []string{"detect", "required", "assumed"} {
		if _, err := ParseMode(m); err != nil {
			t.Errorf("ParseMode(%s): %v", m, err)
		}
	}
	if _, err := ParseMode("on"); err == nil {
		t.Error("ParseMode(on): no error")
	}
}
