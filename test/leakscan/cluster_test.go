package leakscan

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/testenv"
)

// TestWatchAndScanCluster, on a real API server: the Watcher keeps the values of a Secret
// deleted since, and ScanCluster finds them in a status of each of the operator's kinds, a
// generated ConfigMap and an Event, and not in a ConfigMap the operator did not generate.
func TestWatchAndScanCluster(t *testing.T) {
	cfg := testenv.Start(t, testenv.CRDs{Operator: true, Flux: true})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := csv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaks"}}
	must(c.Create(ctx, ns))
	before := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "leaks", Name: "before"}, StringData: map[string]string{"token": "token-that-existed-before"}}
	must(c.Create(ctx, before))

	w, err := Watch(ctx, cfg)
	must(err)
	defer w.Stop()
	if got := w.Needles()["token-that-existed-before"]; got != "leaks/before[token]" {
		t.Errorf("a Secret that existed before the watch: needle from %q, want leaks/before[token]", got)
	}
	gone := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "leaks", Name: "c1-kubeconfig"}, StringData: map[string]string{"value": kubeconfig()}}
	must(c.Create(ctx, gone))
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %v", what, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	waitFor("the Watcher sees the kubeconfig Secret", func() bool { _, ok := w.Needles()[token]; return ok })
	must(c.Delete(ctx, gone))

	// The deleted kubeconfig's token in a ClusterStack's status, a generated ConfigMap and an
	// Event, and in a ConfigMap the operator did not generate (not scanned). Every other kind
	// of ScannedKinds is listed (none exists here).
	leak := "auth failed: " + token
	cs := &csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: "leaks", Name: "aws-base-1-36"},
		Spec: csv1.ClusterStackSpec{Provider: "aws", Name: "base", KubernetesVersion: "1.36",
			Source: csv1.StackSource{URL: "https://git.example.com/stacks.git", Path: "aws/base/1-36"}, Versions: []string{"v1"}},
	}
	must(c.Create(ctx, cs))
	cs.Status.Conditions = []metav1.Condition{{Type: csv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "TagListFailed",
		Message: leak, LastTransitionTime: metav1.Now()}}
	must(c.Status().Update(ctx, cs))
	must(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "leaks", Name: "generated",
		Labels: map[string]string{csv1.ManagedByLabel: csv1.ManagedByValue}}, Data: map[string]string{"values": leak}}))
	must(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "leaks", Name: "not-ours"}, Data: map[string]string{"values": leak}}))
	must(c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "leaks", Name: "e"},
		InvolvedObject: corev1.ObjectReference{Kind: "ClusterStack", Namespace: "leaks", Name: "x"}, Reason: "Failed", Message: leak, Type: corev1.EventTypeWarning}))

	r, err := Scan(ctx, w.Needles(), c, nil)
	must(err)
	var got []string
	for _, l := range r.Leaks {
		got = append(got, l.String())
	}
	const secret = "Secret leaks/c1-kubeconfig[value] user u token appears in "
	want := []string{
		secret + "ClusterStack leaks/aws-base-1-36 at .status.conditions[0].message",
		secret + "ConfigMap leaks/generated at .data.values",
		secret + "Event leaks/e at .message",
	}
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Scan found:\n%s\nwant:\n%s\n(%s)", strings.Join(got, "\n"), strings.Join(want, "\n"), r.Summary())
	}
}
