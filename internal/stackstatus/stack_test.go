package stackstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

const (
	ssStack = "aws-base"
	ssRelV1 = "aws-base-1-33-v1"
	ssRelV2 = "aws-base-1-33-v2"
	ssSubj  = "ClusterStack aws-base: "
)

func ssCond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

// ssHealthyConds are the conditions of a Ready subject.
func ssHealthyConds(subject string) []metav1.Condition {
	return []metav1.Condition{
		ssCond("Available", metav1.ConditionTrue, "AsExpected", subject+": available"),
		ssCond("Progressing", metav1.ConditionFalse, "AsExpected", subject+": applied"),
		ssCond("Degraded", metav1.ConditionFalse, "AsExpected", subject+": fine"),
		ssCond("Ready", metav1.ConditionTrue, "AsExpected", subject+": available"),
	}
}

func ssRelease(name, version string, conds ...metav1.Condition) csv1.ClusterStackRelease {
	return csv1.ClusterStackRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
		Spec:       csv1.ClusterStackReleaseSpec{ClusterStack: ssStack, Provider: "aws", StackName: "base", KubernetesVersion: "1.33", Version: version},
		Status:     csv1.ClusterStackReleaseStatus{Conditions: conds},
	}
}

func ssAvailableRelease(name, version string) csv1.ClusterStackRelease {
	return ssRelease(name, version, ssHealthyConds("release "+name)...)
}

func ssAddon(cluster, desired, applied string, conds ...metav1.Condition) csv1.ClusterAddon {
	return csv1.ClusterAddon{
		ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: "tenant"},
		Spec:       csv1.ClusterAddonSpec{ClusterName: cluster},
		Status:     csv1.ClusterAddonStatus{ClusterStack: ssStack, DesiredRelease: desired, LastAppliedRelease: applied, Conditions: conds},
	}
}

func ssUpToDateAddon(cluster, release string) csv1.ClusterAddon {
	return ssAddon(cluster, release, release, ssHealthyConds("cluster tenant/"+cluster)...)
}

// ssUpgradingAddon is a cluster rolling out desired while applied still works.
func ssUpgradingAddon(cluster, desired, applied string) csv1.ClusterAddon {
	s := "cluster tenant/" + cluster
	return ssAddon(cluster, desired, applied,
		ssCond("Available", metav1.ConditionTrue, "AsExpected", s+": "+applied+" is available"),
		ssCond("Progressing", metav1.ConditionTrue, "Upgrading", s+": upgrading from "+applied+" to "+desired),
		ssCond("Degraded", metav1.ConditionFalse, "AsExpected", s+": converging"),
	)
}

func ssDegradedAddon(cluster, applied, msg string) csv1.ClusterAddon {
	return ssAddon(cluster, ssRelV1, applied,
		ssCond("Available", metav1.ConditionFalse, "FluxObjectNotReady", msg),
		ssCond("Progressing", metav1.ConditionTrue, "Reconciling", "cluster tenant/"+cluster+": reconciling"),
		ssCond("Degraded", metav1.ConditionTrue, "FluxObjectNotReady", msg),
	)
}

// ssC is a condition without times and generation.
type ssC struct{ Status, Reason, Message string }

func ssProj(c metav1.Condition) ssC { return ssC{string(c.Status), c.Reason, c.Message} }

type ssWant struct {
	AvailableVersion                        string
	Clusters                                csv1.ClusterCounts
	ReleaseAvailable                        map[string]bool
	ReleaseClusters                         map[string]csv1.ClusterCounts
	Available, Progressing, Degraded, Ready ssC
	Healthy                                 bool
}

func TestCompute(t *testing.T) {
	notDegraded := ssC{"False", "AsExpected", ssSubj + "no release or cluster is degraded"}
	notProgressing := ssC{"False", "AsExpected", ssSubj + "nothing is rolling out"}
	tests := []struct {
		name string
		f    Facts
		want ssWant
	}{
		{
			name: "no releases: Available False NoReleases",
			f:    Facts{},
			want: ssWant{
				ReleaseAvailable: map[string]bool{}, ReleaseClusters: map[string]csv1.ClusterCounts{},
				Available: ssC{"False", "NoReleases", ssSubj + "no release yet"}, Progressing: notProgressing, Degraded: notDegraded,
				Ready: ssC{"False", "NoReleases", ssSubj + "no release yet"},
			},
		},
		{
			name: "one Available release, no clusters",
			f:    Facts{Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1")}},
			want: ssWant{
				AvailableVersion: "v1",
				ReleaseAvailable: map[string]bool{ssRelV1: true}, ReleaseClusters: map[string]csv1.ClusterCounts{},
				Available: ssC{"True", "AsExpected", ssSubj + "v1 is available on 0/0 clusters"}, Progressing: notProgressing, Degraded: notDegraded,
				Ready: ssC{"True", "AsExpected", ssSubj + "v1 is available on 0/0 clusters"}, Healthy: true,
			},
		},
		{
			name: "new release still reconciling: progressing, available stays at v1",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{
					ssAvailableRelease(ssRelV1, "v1"),
					ssRelease(ssRelV2, "v2", ssCond("Available", metav1.ConditionFalse, "Reconciling", "release "+ssRelV2+": reconciling"),
						ssCond("Progressing", metav1.ConditionTrue, "Reconciling", "release "+ssRelV2+": component source: GitRepository/"+ssRelV2+" does not exist yet")),
				},
				Fleet: Summarize([]csv1.ClusterAddon{ssUpToDateAddon("c1", ssRelV1)}),
			},
			want: ssWant{
				AvailableVersion: "v1",
				Clusters:         csv1.ClusterCounts{Total: 1, UpToDate: 1, Available: 1},
				ReleaseAvailable: map[string]bool{ssRelV1: true, ssRelV2: false},
				ReleaseClusters:  map[string]csv1.ClusterCounts{ssRelV1: {Total: 1, UpToDate: 1, Available: 1}},
				Available:        ssC{"True", "AsExpected", ssSubj + "v1 is available on 1/1 clusters"},
				Progressing:      ssC{"True", "Reconciling", ssSubj + "release " + ssRelV2 + ": component source: GitRepository/" + ssRelV2 + " does not exist yet"},
				Degraded:         notDegraded,
				Ready:            ssC{"False", "Reconciling", ssSubj + "release " + ssRelV2 + ": component source: GitRepository/" + ssRelV2 + " does not exist yet"},
			},
		},
		{
			name: "release without conditions counts as being reconciled",
			f:    Facts{Releases: []csv1.ClusterStackRelease{ssRelease(ssRelV1, "v1")}},
			want: ssWant{
				ReleaseAvailable: map[string]bool{ssRelV1: false}, ReleaseClusters: map[string]csv1.ClusterCounts{},
				Available:   ssC{"False", "Reconciling", ssSubj + "no version is fully available yet"},
				Progressing: ssC{"True", "Reconciling", ssSubj + "release " + ssRelV1 + " is being reconciled"},
				Degraded:    notDegraded,
				Ready:       ssC{"False", "Reconciling", ssSubj + "release " + ssRelV1 + " is being reconciled"},
			},
		},
		{
			name: "rollout to v2 under way: one cluster still has v1 applied, available stays v1",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1"), ssAvailableRelease(ssRelV2, "v2")},
				Fleet:    Summarize([]csv1.ClusterAddon{ssUpToDateAddon("c1", ssRelV2), ssUpgradingAddon("c2", ssRelV2, ssRelV1)}),
			},
			want: ssWant{
				AvailableVersion: "v1",
				Clusters:         csv1.ClusterCounts{Total: 2, UpToDate: 1, Available: 2},
				ReleaseAvailable: map[string]bool{ssRelV1: true, ssRelV2: true},
				ReleaseClusters:  map[string]csv1.ClusterCounts{ssRelV2: {Total: 2, UpToDate: 1, Available: 2}},
				Available:        ssC{"True", "AsExpected", ssSubj + "v1 is available on 1/2 clusters, v2 on 1; all 2 are available"},
				Progressing:      ssC{"True", "Reconciling", ssSubj + "cluster tenant/c2: upgrading from " + ssRelV1 + " to " + ssRelV2},
				Degraded:         notDegraded,
				Ready:            ssC{"False", "Reconciling", ssSubj + "cluster tenant/c2: upgrading from " + ssRelV1 + " to " + ssRelV2},
			},
		},
		{
			name: "v2 applied everywhere but one cluster not Available: available stays v1",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1"), ssAvailableRelease(ssRelV2, "v2")},
				Fleet: Summarize([]csv1.ClusterAddon{
					ssUpToDateAddon("c1", ssRelV2),
					ssAddon("c2", ssRelV2, ssRelV2,
						ssCond("Available", metav1.ConditionFalse, "Reconciling", "cluster tenant/c2: reconciling"),
						ssCond("Progressing", metav1.ConditionTrue, "Reconciling", "cluster tenant/c2: component cni: HelmRelease/c2-cni is not Ready"),
						ssCond("Degraded", metav1.ConditionFalse, "AsExpected", "cluster tenant/c2: converging")),
				}),
				PreviousAvailable: "v1",
			},
			want: ssWant{
				AvailableVersion: "v1",
				Clusters:         csv1.ClusterCounts{Total: 2, UpToDate: 2, Available: 1},
				ReleaseAvailable: map[string]bool{ssRelV1: true, ssRelV2: true},
				ReleaseClusters:  map[string]csv1.ClusterCounts{ssRelV2: {Total: 2, UpToDate: 2, Available: 1}},
				Available:        ssC{"False", "FluxObjectNotReady", ssSubj + "v1 is available, but only 1/2 clusters are"},
				Progressing:      ssC{"True", "Reconciling", ssSubj + "cluster tenant/c2: component cni: HelmRelease/c2-cni is not Ready"},
				Degraded:         notDegraded,
				Ready:            ssC{"False", "Reconciling", ssSubj + "cluster tenant/c2: component cni: HelmRelease/c2-cni is not Ready"},
			},
		},
		{
			name: "rollout complete: available moves to v2",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1"), ssAvailableRelease(ssRelV2, "v2")},
				Fleet:    Summarize([]csv1.ClusterAddon{ssUpToDateAddon("c1", ssRelV2), ssUpToDateAddon("c2", ssRelV2)}),
			},
			want: ssWant{
				AvailableVersion: "v2",
				Clusters:         csv1.ClusterCounts{Total: 2, UpToDate: 2, Available: 2},
				ReleaseAvailable: map[string]bool{ssRelV1: true, ssRelV2: true},
				ReleaseClusters:  map[string]csv1.ClusterCounts{ssRelV2: {Total: 2, UpToDate: 2, Available: 2}},
				Available:        ssC{"True", "AsExpected", ssSubj + "v2 is available on 2/2 clusters"},
				Progressing:      notProgressing,
				Degraded:         notDegraded,
				Ready:            ssC{"True", "AsExpected", ssSubj + "v2 is available on 2/2 clusters"},
				Healthy:          true,
			},
		},
		{
			name: "clusters on two versions, both done: the newer is available",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV2, "v2"), ssAvailableRelease(ssRelV1, "v1")},
				Fleet:    Summarize([]csv1.ClusterAddon{ssUpToDateAddon("c1", ssRelV1), ssUpToDateAddon("c2", ssRelV2)}),
			},
			want: ssWant{
				AvailableVersion: "v2",
				Clusters:         csv1.ClusterCounts{Total: 2, UpToDate: 2, Available: 2},
				ReleaseAvailable: map[string]bool{ssRelV1: true, ssRelV2: true},
				ReleaseClusters:  map[string]csv1.ClusterCounts{ssRelV1: {Total: 1, UpToDate: 1, Available: 1}, ssRelV2: {Total: 1, UpToDate: 1, Available: 1}},
				Available:        ssC{"True", "AsExpected", ssSubj + "v2 is available on 1/2 clusters, v1 on 1; all 2 are available"},
				Progressing:      notProgressing,
				Degraded:         notDegraded,
				Ready:            ssC{"True", "AsExpected", ssSubj + "v2 is available on 1/2 clusters, v1 on 1; all 2 are available"},
				Healthy:          true,
			},
		},
		{
			name: "versions compare numerically: v10 is newer than v9",
			f: Facts{Releases: []csv1.ClusterStackRelease{
				ssAvailableRelease("aws-base-1-33-v9", "v9"), ssAvailableRelease("aws-base-1-33-v10", "v10"), ssAvailableRelease("aws-base-1-33-v10-rc.1", "v10-rc.1"),
			}},
			want: ssWant{
				AvailableVersion: "v10",
				ReleaseAvailable: map[string]bool{"aws-base-1-33-v9": true, "aws-base-1-33-v10": true, "aws-base-1-33-v10-rc.1": true},
				ReleaseClusters:  map[string]csv1.ClusterCounts{},
				Available:        ssC{"True", "AsExpected", ssSubj + "v10 is available on 0/0 clusters"},
				Progressing:      notProgressing, Degraded: notDegraded,
				Ready:   ssC{"True", "AsExpected", ssSubj + "v10 is available on 0/0 clusters"},
				Healthy: true,
			},
		},
		{
			name: "degraded release and addons are listed, at most three",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{
					ssAvailableRelease(ssRelV1, "v1"),
					ssRelease(ssRelV2, "v2", ssCond("Available", metav1.ConditionFalse, "InvalidStack", "release "+ssRelV2+": stack is invalid"),
						ssCond("Progressing", metav1.ConditionFalse, "InvalidStack", "release "+ssRelV2+": not progressing"),
						ssCond("Degraded", metav1.ConditionTrue, "InvalidStack", "release "+ssRelV2+": stack is invalid")),
				},
				Fleet: Summarize([]csv1.ClusterAddon{
					ssDegradedAddon("c1", ssRelV1, "cluster tenant/c1: component cni: HelmRelease/c1-cni stalled: boom"),
					ssUpToDateAddon("c2", ssRelV1),
					ssDegradedAddon("c3", "", "cluster tenant/c3: waiting for Secret c3-kubeconfig (for more than 10m0s)"),
					ssDegradedAddon("c4", ssRelV1, "cluster tenant/c4: x"),
				}),
			},
			want: ssWant{
				Clusters:         csv1.ClusterCounts{Total: 4, UpToDate: 3, Available: 1, Degraded: 3},
				ReleaseAvailable: map[string]bool{ssRelV1: true, ssRelV2: false},
				ReleaseClusters:  map[string]csv1.ClusterCounts{ssRelV1: {Total: 4, UpToDate: 3, Available: 1, Degraded: 3}},
				Available:        ssC{"False", "Reconciling", ssSubj + "no version is fully available yet"},
				Progressing:      notProgressing,
				Degraded: ssC{"True", "InvalidStack", ssSubj + "release " + ssRelV2 + ": stack is invalid; cluster tenant/c1: component cni: HelmRelease/c1-cni stalled: boom; " +
					"cluster tenant/c3: waiting for Secret c3-kubeconfig (for more than 10m0s); and 1 more"},
				Ready: ssC{"False", "InvalidStack", ssSubj + "release " + ssRelV2 + ": stack is invalid; cluster tenant/c1: component cni: HelmRelease/c1-cni stalled: boom; " +
					"cluster tenant/c3: waiting for Secret c3-kubeconfig (for more than 10m0s); and 1 more"},
			},
		},
		{
			name: "ReleasesResolved False because a release is in use: Progressing, not Degraded",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1")},
				Fleet:    Summarize([]csv1.ClusterAddon{ssUpToDateAddon("c1", ssRelV1)}),
				Resolved: &metav1.Condition{Type: "ReleasesResolved", Status: metav1.ConditionFalse, Reason: "InUse", Message: "release " + ssRelV1 + " is no longer wanted but 1 Cluster uses it"},
			},
			want: ssWant{
				AvailableVersion: "v1",
				Clusters:         csv1.ClusterCounts{Total: 1, UpToDate: 1, Available: 1},
				ReleaseAvailable: map[string]bool{ssRelV1: true},
				ReleaseClusters:  map[string]csv1.ClusterCounts{ssRelV1: {Total: 1, UpToDate: 1, Available: 1}},
				Available:        ssC{"True", "AsExpected", ssSubj + "v1 is available on 1/1 clusters"},
				Progressing:      ssC{"True", "Reconciling", ssSubj + "release " + ssRelV1 + " is no longer wanted but 1 Cluster uses it"},
				Degraded:         notDegraded,
				Ready:            ssC{"False", "Reconciling", ssSubj + "release " + ssRelV1 + " is no longer wanted but 1 Cluster uses it"},
			},
		},
		{
			name: "ReleasesResolved False for another reason: Degraded",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1")},
				Resolved: &metav1.Condition{Type: "ReleasesResolved", Status: metav1.ConditionFalse, Reason: "TagListFailed", Message: "listing tags of https://github.com/org/stacks: authentication required"},
			},
			want: ssWant{
				AvailableVersion: "v1",
				ReleaseAvailable: map[string]bool{ssRelV1: true}, ReleaseClusters: map[string]csv1.ClusterCounts{},
				Available:   ssC{"True", "AsExpected", ssSubj + "v1 is available on 0/0 clusters"},
				Progressing: notProgressing,
				Degraded:    ssC{"True", "TagListFailed", ssSubj + "listing tags of https://github.com/org/stacks: authentication required"},
				Ready:       ssC{"False", "TagListFailed", ssSubj + "listing tags of https://github.com/org/stacks: authentication required"},
			},
		},
		{
			name: "ReleasesResolved True changes nothing",
			f: Facts{
				Releases: []csv1.ClusterStackRelease{ssAvailableRelease(ssRelV1, "v1")},
				Resolved: &metav1.Condition{Type: "ReleasesResolved", Status: metav1.ConditionTrue, Reason: "AsExpected", Message: "resolved"},
			},
			want: ssWant{
				AvailableVersion: "v1",
				ReleaseAvailable: map[string]bool{ssRelV1: true}, ReleaseClusters: map[string]csv1.ClusterCounts{},
				Available:   ssC{"True", "AsExpected", ssSubj + "v1 is available on 0/0 clusters"},
				Progressing: notProgressing, Degraded: notDegraded,
				Ready:   ssC{"True", "AsExpected", ssSubj + "v1 is available on 0/0 clusters"},
				Healthy: true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Compute(ssStack, tt.f)
			got := ssWant{
				AvailableVersion: res.AvailableVersion,
				Clusters:         res.Clusters,
				ReleaseAvailable: res.ReleaseAvailable,
				ReleaseClusters:  res.ReleaseClusters,
				Available:        ssProj(res.Available),
				Progressing:      ssProj(res.Progressing),
				Degraded:         ssProj(res.Degraded),
				Ready:            ssProj(res.Ready),
				Healthy:          res.Healthy,
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compute() mismatch (-want +got):\n%s", diff)
			}
			for typ, c := range map[string]metav1.Condition{"Available": res.Available, "Progressing": res.Progressing, "Degraded": res.Degraded, "Ready": res.Ready} {
				if c.Type != typ {
					t.Errorf("condition type %q, want %q", c.Type, typ)
				}
			}
		})
	}
}
