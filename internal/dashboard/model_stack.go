package dashboard

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/plugin"
)

// Problem is one failure a page lists first.
type Problem struct {
	// Bucket is Degraded or Progressing (how serious it is).
	Bucket string
	// Text says what is wrong, naming the object.
	Text string
	// Link is a page of the dashboard with more, if any.
	Link string
}

// StackView is the stack page.
type StackView struct {
	Namespace, Name string
	State, Message  string
	// Provider, StackName and KubernetesVersion are the stack's spec.
	Provider, StackName, KubernetesVersion string
	AvailableVersion, DesiredVersion       string
	LatestRelease                          string
	Counts                                 Counts
	// Problems come first on the page: a halted wave, missing or failing releases, Degraded
	// Clusters, an UpdatesProposed condition that is False.
	Problems []Problem
	Releases []ReleaseRow
	// Updates is the stack's `updates` (available and conditional updates, rollout).
	Updates  plugin.StackUpdates
	Rollout  *RolloutView
	Clusters ClusterList
}

// ReleaseRow is one release on the stack page.
type ReleaseRow struct {
	plugin.ReleaseNode
	Counts Counts
	// Requirements are the release's status.requirements, as text.
	Requirements []string
	// RequirementsMessage is the RequirementsMet condition's message when it is False.
	RequirementsMessage string
}

// RolloutView is the rollout of the stack's newest update, wave by wave.
type RolloutView struct {
	Target          string
	OpenPullRequest string
	Waves           []WaveView
}

// WaveView is one wave of a rollout.
type WaveView struct {
	Name    string
	Phase   string
	Message string
	// Updated of Total Clusters are Available on the target release.
	Updated, Total int
	PullRequest    *csv1.PullRequestRef
	// SoakingSince is when the wave's last Cluster became Available; SoakTime the wave's
	// spec.updates.waves[].soakTime; SoakEnds their sum (zero when not soaking).
	SoakingSince time.Time
	SoakTime     time.Duration
	SoakEnds     time.Time
	// Clusters are the first maxWaveClusters of the wave's Clusters; More counts the others.
	Clusters []string
	More     int
}

// maxWaveClusters bounds the Clusters a wave names on the page.
const maxWaveClusters = 20

// BuildStack builds the page of ClusterStack ns/name; false when it is not among objs.
func BuildStack(objs Objects, ns, name string, q Query) (StackView, bool) {
	var cs *csv1.ClusterStack
	for i := range objs.Stacks {
		if s := &objs.Stacks[i]; s.Namespace == ns && s.Name == name {
			cs = s
			break
		}
	}
	if cs == nil {
		return StackView{}, false
	}
	st, msg := plugin.ObjectState(cs.Status.Conditions)
	v := StackView{Namespace: ns, Name: name, State: st, Message: msg,
		Provider: cs.Spec.Provider, StackName: cs.Spec.Name, KubernetesVersion: cs.Spec.KubernetesVersion,
		AvailableVersion: cs.Status.Versions.Available, DesiredVersion: cs.Status.Versions.Desired, LatestRelease: cs.Status.LatestRelease}

	var mine []ClusterRow
	for _, r := range rows(objs) {
		if r.Namespace == ns && r.Stack == name {
			mine = append(mine, r)
		}
	}
	perRelease := map[string]*Counts{}
	for _, r := range mine {
		v.Counts.add(r.Bucket)
		if perRelease[r.Release] == nil {
			perRelease[r.Release] = &Counts{}
		}
		perRelease[r.Release].add(r.Bucket)
	}
	q.Stack = ""
	v.Clusters = listClusters(mine, q)

	releases := map[string]*csv1.ClusterStackRelease{}
	for i := range objs.Releases {
		if r := &objs.Releases[i]; r.Namespace == ns {
			releases[r.Name] = r
		}
	}
	for _, rn := range releaseNodes(cs, objs.Releases) {
		row := ReleaseRow{ReleaseNode: rn}
		if c := perRelease[rn.Name]; c != nil {
			row.Counts = *c
		}
		if rel := releases[rn.Name]; rel != nil {
			for _, req := range rel.Status.Requirements {
				row.Requirements = append(row.Requirements, requirementText(req))
			}
			if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.RequirementsMetCondition); c != nil && c.Status == "False" {
				row.RequirementsMessage = c.Message
			}
		}
		v.Releases = append(v.Releases, row)
	}

	v.Updates = plugin.BuildUpdates([]csv1.ClusterStack{*cs}, nil).Stacks[0]
	if ro := cs.Status.Rollout; ro != nil {
		v.Rollout = rolloutView(cs, ro)
	}

	// Failures first.
	if v.Rollout != nil {
		for _, w := range v.Rollout.Waves {
			if w.Phase == string(csv1.WaveHalted) {
				v.Problems = append(v.Problems, Problem{Bucket: BucketDegraded, Text: fmt.Sprintf("Rollout of %s halted in wave %s: %s", v.Rollout.Target, w.Name, w.Message)})
			}
		}
	}
	for _, m := range cs.Status.MissingReleases {
		v.Problems = append(v.Problems, Problem{Bucket: BucketDegraded, Text: fmt.Sprintf("Release %s does not exist (%s): %s", m.Name, m.Reason, m.Message)})
	}
	for _, r := range v.Releases {
		switch {
		case r.State == plugin.StateDegraded:
			v.Problems = append(v.Problems, Problem{Bucket: BucketDegraded, Text: fmt.Sprintf("Release %s is Degraded: %s", r.Name, r.Message)})
		case r.RequirementsMessage != "":
			v.Problems = append(v.Problems, Problem{Bucket: BucketProgressing, Text: fmt.Sprintf("Release %s: requirements not met: %s", r.Name, r.RequirementsMessage)})
		}
	}
	if v.Counts.Degraded > 0 {
		v.Problems = append(v.Problems, Problem{Bucket: BucketDegraded, Text: fmt.Sprintf("%d of %d Clusters are Degraded", v.Counts.Degraded, v.Counts.Total)})
	}
	if c := v.Updates.UpdatesProposed; c != nil && c.Status == "False" {
		v.Problems = append(v.Problems, Problem{Bucket: BucketProgressing, Text: fmt.Sprintf("Updates are not proposed (%s): %s", c.Reason, c.Message)})
	}
	return v, true
}

func rolloutView(cs *csv1.ClusterStack, ro *csv1.RolloutStatus) *RolloutView {
	soak := map[string]time.Duration{}
	if cs.Spec.Updates != nil {
		for _, w := range cs.Spec.Updates.Waves {
			if w.SoakTime != nil {
				soak[w.Name] = w.SoakTime.Duration
			}
		}
	}
	rv := &RolloutView{Target: ro.Target, OpenPullRequest: ro.OpenPullRequest}
	for _, w := range ro.Waves {
		wv := WaveView{Name: w.Name, Phase: string(w.Phase), Message: w.Message, Updated: int(w.Updated), Total: len(w.Clusters),
			PullRequest: w.PullRequest, SoakTime: soak[w.Name]}
		if w.SoakingSince != nil {
			wv.SoakingSince = w.SoakingSince.Time
			wv.SoakEnds = w.SoakingSince.Add(wv.SoakTime)
		}
		wv.Clusters = w.Clusters[:min(len(w.Clusters), maxWaveClusters)]
		wv.More = len(w.Clusters) - len(wv.Clusters)
		rv.Waves = append(rv.Waves, wv)
	}
	return rv
}

func requirementText(r csv1.StackRequirement) string {
	if r.CAPIContract != "" {
		return "Cluster API contract " + r.CAPIContract
	}
	if r.Versions == "" {
		return r.Operator + " (any version)"
	}
	return r.Operator + " " + r.Versions
}
