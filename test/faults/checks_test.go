package faults

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The suite's checks are only as good as their ability to fail: these tests feed them what a
// dishonest or lossy operator would produce, without a plane (go test ./test/faults -run Test
// minus TestFaults).

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func testWatch() *fluxWatch {
	return &fluxWatch{
		sourceURL: "http://127.0.0.1:9999/stacks.git",
		objs: map[string]*fluxObject{
			"HelmRelease/f01-cni": {cluster: "f01", component: "cni", errors: map[string]time.Time{
				"Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded": t0,
			}},
			"HelmRelease/f02-cni":       {cluster: "f02", component: "cni", errors: map[string]time.Time{}},
			"Kustomization/f01-info":    {cluster: "f01", component: "cluster-info", errors: map[string]time.Time{}},
			"GitRepository/aws-base-v3": {component: "source", errors: map[string]time.Time{"failed to checkout and determine revision: unable to clone 'http://127.0.0.1:9999/stacks.git': connection refused": t0}},
		},
	}
}

func degraded(kind, name, msg string, at time.Time) statusSample {
	return statusSample{At: at, Kind: kind, Name: name, Degraded: metav1.ConditionTrue, Available: metav1.ConditionTrue, Msg: msg}
}

func TestDegradedMessagesNameClusterComponentObjectAndError(t *testing.T) {
	g := NewWithT(t)
	w := testWatch()
	later := t0.Add(time.Minute)
	for _, tc := range []struct {
		name, kind, object, msg, stopped string
		ok                               bool
	}{
		{name: "all four", kind: "ClusterAddon", object: "f01", ok: true,
			msg: "cluster faults/f01: component cni: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded (not Ready for more than 1m0s)"},
		{name: "no Flux error", kind: "ClusterAddon", object: "f01",
			msg: "cluster faults/f01: component cni: HelmRelease/f01-cni is not Ready (not Ready for more than 1m0s)"},
		{name: "another cluster's object", kind: "ClusterAddon", object: "f02",
			msg: "cluster faults/f02: component cni: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded"},
		{name: "another component's name", kind: "ClusterAddon", object: "f01",
			msg: "cluster faults/f01: component cluster-info: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded"},
		{name: "no component", kind: "ClusterAddon", object: "f01",
			msg: "cluster faults/f01: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded"},
		{name: "no cluster", kind: "ClusterAddon", object: "f01",
			msg: "component cni: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded"},
		{name: "no Flux object", kind: "ClusterAddon", object: "f01", msg: "cluster faults/f01: rollout not converged (for more than 1m0s)"},
		{name: "the stopped controller", kind: "ClusterAddon", object: "f01", stopped: "kustomize-controller", ok: true,
			msg: "cluster faults/f01: component cluster-info: Kustomization/f01-info has not observed its latest generation yet (waiting for kustomize-controller) (not converged for more than 1m0s)"},
		{name: "its own controller, waiting for the stopped source-controller", kind: "ClusterAddon", object: "f01", stopped: "source-controller", ok: true,
			msg: "cluster faults/f01: component cluster-info: Kustomization/f01-info has not observed its latest generation yet (waiting for kustomize-controller) (not converged for more than 1m0s)"},
		{name: "another controller than the object's or the stopped one", kind: "ClusterAddon", object: "f01", stopped: "source-controller",
			msg: "cluster faults/f01: component cluster-info: Kustomization/f01-info has not observed its latest generation yet (waiting for helm-controller) (not converged for more than 1m0s)"},
		{name: "its own controller, nothing stopped", kind: "ClusterAddon", object: "f01", ok: true,
			msg: "cluster faults/f01: component cluster-info: Kustomization/f01-info has not observed its latest generation yet (waiting for kustomize-controller) (not converged for more than 1m0s)"},
		{name: "another controller, nothing stopped", kind: "ClusterAddon", object: "f01",
			msg: "cluster faults/f01: component cluster-info: Kustomization/f01-info has not observed its latest generation yet (waiting for source-controller) (not converged for more than 1m0s)"},
		{name: "release with Flux's error", kind: "ClusterStackRelease", object: "aws-base-v3", ok: true,
			msg: "release aws-base-v3: component source: GitRepository/aws-base-v3: failed to checkout and determine revision: unable to clone 'http://127.0.0.1:9999/stacks.git': connection refused (not Ready for more than 1m0s)"},
		{name: "release without it", kind: "ClusterStackRelease", object: "aws-base-v3",
			msg: "release aws-base-v3: component source: GitRepository/aws-base-v3 is not Ready (not Ready for more than 1m0s)"},
		{name: "release naming a Cluster's object", kind: "ClusterStackRelease", object: "aws-base-v3",
			msg: "release aws-base-v3: component cni: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded"},
	} {
		p := w.degradedProblem(degraded(tc.kind, tc.object, tc.msg, later), nil, tc.stopped)
		if tc.ok {
			g.Expect(p).To(BeEmpty(), tc.name)
		} else {
			g.Expect(p).NotTo(BeEmpty(), tc.name)
		}
	}

	// A release's own check of its tag names the source and the error.
	tag := degraded("ClusterStackRelease", "aws-base-v3", "release aws-base-v3: cannot check where tag aws-base-v3 points: list tags of http://127.0.0.1:9999/stacks.git: connection refused (for more than 1m0s)", later)
	tag.Resolved = "cannot check where tag aws-base-v3 points: list tags of http://127.0.0.1:9999/stacks.git: connection refused"
	g.Expect(w.degradedProblem(tag, nil, "")).To(BeEmpty())
	tag.Resolved = ""
	g.Expect(w.degradedProblem(tag, nil, "")).To(BeEmpty(), "TagVerified True again before Degraded follows")
	tag.Msg = "release aws-base-v3: cannot check where tag aws-base-v3 points: connection refused (for more than 1m0s)"
	g.Expect(w.degradedProblem(tag, nil, "")).NotTo(BeEmpty(), "not naming the source")

	// Flux's error must have been seen before the Degraded message quoting it.
	early := degraded("ClusterAddon", "f01", "cluster faults/f01: component cni: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded", t0.Add(-time.Second))
	g.Expect(w.degradedProblem(early, nil, "")).NotTo(BeEmpty(), "an error Flux reported only later")

	// The ClusterStack rolls up what its members say.
	member := degraded("ClusterAddon", "f01", "cluster faults/f01: component cni: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded", later)
	stack := degraded("ClusterStack", stackName, "ClusterStack aws-base-1-36: "+member.Msg, later)
	g.Expect(w.degradedProblem(stack, []statusSample{member}, "")).To(BeEmpty())
	g.Expect(w.degradedProblem(stack, nil, "")).To(BeEmpty(), "a member's message no sample caught, checked as the member's")
	vague := degraded("ClusterStack", stackName, "ClusterStack aws-base-1-36: cluster faults/f01: rollout not converged", later)
	g.Expect(w.degradedProblem(vague, nil, "")).NotTo(BeEmpty(), "a roll-up of a member message that says nothing")
	g.Expect(w.degradedProblem(degraded("ClusterStack", stackName, "ClusterStack aws-base-1-36: something", later), nil, "")).NotTo(BeEmpty())
	own := stack
	own.Msg, own.Resolved = "ClusterStack faults/aws-base-1-36: cannot list tags of http://127.0.0.1:9999/stacks.git: connection refused", "cannot list tags of http://127.0.0.1:9999/stacks.git: connection refused"
	g.Expect(w.degradedProblem(own, nil, "")).To(BeEmpty())
}

func TestGraceCountsFromTheFault(t *testing.T) {
	g := NewWithT(t)
	w := testWatch()
	start := t0
	fault := start.Add(2 * grace) // the scenario began long before its fault
	msg := "release aws-base-v3: component source: GitRepository/aws-base-v3: failed to checkout and determine revision: unable to clone 'http://127.0.0.1:9999/stacks.git': connection refused"
	h := honesty{start: start, fault: fault, movedAt: map[string]time.Time{}}

	lies, checked := honestyLies([]statusSample{degraded("ClusterStackRelease", "aws-base-v3", msg, fault.Add(grace/2))}, h, w)
	g.Expect(lies).To(ContainElement(ContainSubstring("before the grace period")), "Degraded half a grace period after the fault")
	g.Expect(checked).To(Equal(honestyCheck{samples: 1, degraded: 1}))

	lies, _ = honestyLies([]statusSample{degraded("ClusterStackRelease", "aws-base-v3", msg, fault.Add(grace))}, h, w)
	g.Expect(lies).To(BeEmpty(), "Degraded a grace period after the fault")

	// A ClusterAddon moved in the scenario counts from its move, one not moved from the fault.
	addonMsg := "cluster faults/f01: component cni: HelmRelease/f01-cni: Helm upgrade failed for release kube-system/cni with chart cni@1.0.0: context deadline exceeded"
	h.movedAt["f01"] = fault.Add(time.Minute)
	lies, _ = honestyLies([]statusSample{degraded("ClusterAddon", "f01", addonMsg, fault.Add(grace+time.Second))}, h, w)
	g.Expect(lies).To(ContainElement(ContainSubstring("before the grace period")), "Degraded a grace period after the fault but not after its move")
	h.movedAt["f01"] = start.Add(-time.Minute)
	lies, _ = honestyLies([]statusSample{degraded("ClusterAddon", "f01", addonMsg, fault.Add(grace/2))}, h, w)
	g.Expect(lies).To(ContainElement(ContainSubstring("before the grace period")), "not moved in the scenario: counts from the fault")

	// The ClusterStack rolls up a release discovered in the scenario, whose clock runs from
	// when it was first seen not healthy, before the fault.
	relMsg := "release aws-base-1-36-v10: component cluster-class: HelmRelease/aws-base-1-36-v10-cluster-class: Helm install failed: context deadline exceeded (not converged for more than 1m0s)"
	stack := degraded("ClusterStack", stackName, "ClusterStack aws-base-1-36: "+relMsg, fault.Add(grace/2))
	rel := degraded("ClusterStackRelease", "aws-base-1-36-v10", relMsg, fault.Add(grace/2))
	progressing := rel
	progressing.At, progressing.Degraded, progressing.Progressing = fault.Add(grace/2-grace), metav1.ConditionFalse, metav1.ConditionTrue
	lies, _ = honestyLies([]statusSample{stack, rel}, h, w)
	early := ContainSubstring("before the grace period")
	g.Expect(lies).To(ContainElements(And(early, ContainSubstring("ClusterStack ")), And(early, ContainSubstring("ClusterStackRelease "))),
		"the release was healthy until it was Degraded: it and the stack count from the fault")
	lies, _ = honestyLies([]statusSample{progressing, stack, rel}, h, w)
	g.Expect(lies).NotTo(ContainElement(early), "the release was progressing a grace period before: it and the stack's roll-up count from then")
	healthy := progressing
	healthy.At, healthy.Progressing = fault.Add(-time.Second), metav1.ConditionFalse
	lies, _ = honestyLies([]statusSample{progressing, healthy, stack, rel}, h, w)
	g.Expect(lies).To(ContainElements(And(early, ContainSubstring("ClusterStack ")), And(early, ContainSubstring("ClusterStackRelease "))),
		"the release was healthy again before the fault: its earlier streak does not count")
}

func TestObjectsAreCountedOnce(t *testing.T) {
	g := NewWithT(t)
	objs := objectSet{}
	// A Kustomization's inventory entry is checked to exist and, again, to keep its UID.
	for _, k := range []string{"HelmRelease/f01-cni faults", "workload cluster f01: /ConfigMap kube-system/cluster-info", "workload cluster f01: /ConfigMap kube-system/cluster-info", "workload cluster f01: apps/Deployment kube-system/info"} {
		objs.add(k)
	}
	g.Expect(objs).To(HaveLen(3))
}

func TestWebhookProbeFailuresAfterTheKill(t *testing.T) {
	g := NewWithT(t)
	killed := t0
	failed := []probeFailure{{at: killed.Add(time.Second)}, {at: killed.Add(3 * time.Second)}}
	g.Expect(failuresAfter(failed, killed.Add(2*time.Second))).To(HaveLen(1))
	g.Expect(failuresAfter(failed[:1], killed.Add(2*time.Second))).To(BeEmpty())
}

func TestExtraHelmRevisionOnlyForUpgradesInFlight(t *testing.T) {
	g := NewWithT(t)
	inFlight := map[string]bool{"f01/cni": true}
	g.Expect(acceptsExtraRevision(inFlight, "f01/cni", 5, 4)).To(BeTrue())
	g.Expect(acceptsExtraRevision(inFlight, "f01/cni", 6, 4)).To(BeFalse(), "two extra revisions")
	g.Expect(acceptsExtraRevision(inFlight, "f02/cni", 5, 4)).To(BeFalse(), "not in flight at the stop")

	running := &metav1.Condition{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Progressing", Message: "Running 'upgrade' action with timeout of 1m0s"}
	ready := &metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "UpgradeSucceeded"}
	g.Expect(helmActionInFlight(4, 4, running)).To(BeTrue(), "announced")
	g.Expect(helmActionInFlight(4, 5, ready)).To(BeTrue(), "ran, not recorded")
	g.Expect(helmActionInFlight(4, 4, ready)).To(BeFalse(), "done and recorded")
	g.Expect(helmActionInFlight(3, 3, nil)).To(BeFalse(), "not started")
}

func TestReportSaysWhatRanAndOnlyWhatWasAsserted(t *testing.T) {
	g := NewWithT(t)
	r := &scenarioReport{start: time.Now().Add(-time.Minute), fleet: 10, later: 8}
	r.Add(scenarioRow{Scenario: "1. x", Runs: 5, Injected: "kills", Converge: "≤ 1m", Objects: 70, HelmRevisions: 20, Status: honestyCheck{samples: 100, degraded: 2}, Took: time.Minute})
	md := r.Markdown()
	for _, want := range []string{"at commit ", "machine: ", " cores, ", "seed ", "fleet: 10 Clusters in scenario 1, 8 in the others", "plane: without Cluster API", "wall time: "} {
		g.Expect(md).To(ContainSubstring(want))
	}
	var header string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| scenario") {
			header = l
		}
	}
	g.Expect(header).To(Equal("| scenario | runs | injected | time to converge | objects checked | Helm revisions checked | status samples checked | Degraded samples checked | scenario time |"))
	g.Expect(md).To(ContainSubstring("| 1. x | 5 | kills | ≤ 1m | 70 | 20 | 100 | 2 | 1m0s |"))
}
