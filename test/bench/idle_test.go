package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
)

const (
	// idleClusters is the fleet of TestIdleWrites.
	idleClusters = 20
	// idleStackInterval is the ClusterStack's interval in TestIdleWrites: the operator lists the
	// stack's tags and looks at its releases this often, and source-controller fetches the
	// stack's repository, so the idle window sees each of them several times.
	idleStackInterval = 20 * time.Second
	// idleWindow is how long TestIdleWrites watches for writes: over three of the stack's
	// intervals, and over a minute.
	idleWindow = 75 * time.Second
	// idleSettle is how long the operator must have written nothing before the window starts:
	// the last reactions to the convergence (status roll-ups, paced progress) are over by then.
	idleSettle = 15 * time.Second
)

// TestIdleWrites: once a fleet has converged and nothing changes, the operator writes nothing
// but its Lease renewals. idleClusters Clusters converge on a real API server with the stand-in
// for Flux at work (fakeFlux: it reports Ready on what the operator writes, as helm- and
// kustomize-controller would; no workload clusters) and the real source-controller; the
// operator runs as shipped (config/manager's --leader-elect, the identity of its ServiceAccount
// with exactly config/rbac's roles). For idleWindow the API server's audit log of that
// identity's writes must show only Lease updates; every other write (Events included) is listed
// when it fails. Lease renewals must be there: they show the audit log sees the operator.
func TestIdleWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an API server, source-controller and the operator")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wd, err := os.Getwd()
	must(t, err)
	root, err := plane.FindRepoRoot(wd)
	must(t, err)
	e := startEnv(ctx, t, root, benchConfig{logLevel: "info", shipped: true, keep: *flagKeep, manager: *flagManager})
	logFile, err := os.Create(filepath.Join(e.logDir, "test-controllers.log"))
	must(t, err)
	t.Cleanup(func() { _ = logFile.Close() })
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))

	publishStack(ctx, t, e, root, "stack")
	for _, ns := range []string{benchNS, "flux-system"} {
		must(t, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	must(t, e.c.Create(ctx, &csv1.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Name: stackName, Namespace: benchNS},
		Spec: csv1.ClusterStackSpec{
			Provider: "aws", Name: "base", KubernetesVersion: "1.36",
			Source: csv1.StackSource{URL: e.git.RepoURL(repoName), Path: "aws/base/1-36"},
			// Pinned, and subscribed to the newest tag (the same one): the operator lists the
			// tags every interval.
			Versions:      []string{"v1"},
			AutoSubscribe: true,
			Interval:      &metav1.Duration{Duration: idleStackInterval},
		},
	}))
	stopFlux, err := startFakeFlux(e.cfg, e.scheme, benchNS, "")
	must(t, err)
	t.Cleanup(func() { _ = stopFlux() })
	createClusters(ctx, t, e, idleClusters)

	want := fmt.Sprintf("%d/%d", idleClusters, idleClusters)
	waitFor(ctx, t, e, 5*time.Minute, "every ClusterAddon Ready and the ClusterStack Ready with "+want, func() (bool, string, error) {
		var addons csv1.ClusterAddonList
		if err := e.c.List(ctx, &addons, client.InNamespace(benchNS)); err != nil {
			return false, "", err
		}
		ready := 0
		for _, a := range addons.Items {
			if apimeta.IsStatusConditionTrue(a.Status.Conditions, csv1.ReadyCondition) {
				ready++
			}
		}
		cs := &csv1.ClusterStack{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: stackName}, cs); err != nil {
			return false, "", err
		}
		msg := fmt.Sprintf("%d of %d ClusterAddons Ready; ClusterStack %s", ready, idleClusters, cs.Status.ClustersSummary)
		return ready == idleClusters && cs.Status.ClustersSummary == want &&
			apimeta.IsStatusConditionTrue(cs.Status.Conditions, csv1.ReadyCondition), msg, nil
	})

	// The last reactions to the convergence (status roll-ups, paced progress) are over once the
	// operator has written nothing but Lease renewals for idleSettle.
	settleBound := time.Now().Add(3 * time.Minute)
	quietSince := time.Now()
	for since := time.Now(); time.Since(quietSince) < idleSettle; {
		if time.Now().After(settleBound) {
			writes, _ := idleWrites(t, e, since)
			t.Fatalf("the operator kept writing for 3 minutes after the fleet converged:\n%s", strings.Join(writes, "\n"))
		}
		time.Sleep(time.Second)
		if writes, _ := idleWrites(t, e, quietSince); len(writes) > 0 {
			quietSince = time.Now()
		}
		must(t, e.alive())
	}

	windowStart := time.Now()
	t.Logf("idle window of %s starts", idleWindow)
	time.Sleep(idleWindow)
	must(t, e.alive())
	writes, renewals := idleWrites(t, e, windowStart)
	t.Logf("idle window: %d Lease renewals, %d other writes by %s", renewals, len(writes), plane.OperatorUser)
	if renewals == 0 {
		t.Fatalf("no Lease renewal by %s in %s: the audit log %s does not see the operator (leader election on?)", plane.OperatorUser, idleWindow, e.auditLog)
	}
	if len(writes) > 0 {
		// Each status write names what it changed since the write before it.
		all, err := plane.ReadAuditedWrites(e.auditLog, time.Time{})
		must(t, err)
		all = slices.DeleteFunc(all, func(w plane.AuditedWrite) bool { return w.User != plane.OperatorUser || w.Resource == "leases" })
		t.Fatalf("the operator wrote %d times in %s while nothing changed (besides %d Lease renewals):\n%s\nlogs in %s",
			len(writes), idleWindow, renewals, plane.DescribeWrites(all, windowStart), e.logDir)
	}
}

// idleWrites returns the operator's writes the API server recorded since since, but for Lease
// updates (its leader election's renewals), which it counts.
func idleWrites(t testing.TB, e *benchEnv, since time.Time) (writes []string, renewals int) {
	t.Helper()
	all, err := plane.ReadAuditedWrites(e.auditLog, since)
	must(t, err)
	for _, w := range all {
		if w.User != plane.OperatorUser {
			continue
		}
		if w.Resource == "leases" && w.Verb == "update" {
			renewals++
			continue
		}
		writes = append(writes, "  "+w.String())
	}
	return writes, renewals
}
