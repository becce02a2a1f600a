package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/forge"
)

// ownPR is a pull request the operator opened for wave "remaining", with its marker.
func ownPR(number int64, prefix, state string) forge.PullRequest {
	const wave = "remaining"
	return forge.PullRequest{Number: number, URL: "https://forge/pulls/" + string(rune('0'+number)), Head: prefix + "/" + wave, State: state,
		Author: "fleet-bot", FromBase: true, HeadRepo: "fleet-admin/fleet",
		Body: "text\n" + marker{target: "aws-base-1-36-v2", wave: wave, clusters: []string{"c1"}}.String()}
}

func TestOwnPullRequests(t *testing.T) {
	const prefix = "clusterstack/demo/aws-base-1-36"
	mine := ownPR(1, prefix, forge.StateOpen)
	fork := mine
	fork.Number, fork.FromBase, fork.HeadRepo, fork.Author = 2, false, "mallory/fleet", "mallory"
	forkAsBot := mine // a fork's branch, even if the forge said the bot opened it
	forkAsBot.Number, forkAsBot.FromBase, forkAsBot.HeadRepo = 3, false, "mallory/fleet"
	otherAuthor := mine // a collaborator's branch in the base repository
	otherAuthor.Number, otherAuthor.Author = 4, "alice"
	deeper := mine // another stack's branch below this one's prefix
	deeper.Number, deeper.Head = 5, prefix+"/canary/other-ns/other-stack/canary"
	noMarker := mine
	noMarker.Number, noMarker.Body = 6, "hand-written"
	wrongWave := mine
	wrongWave.Number, wrongWave.Head = 7, prefix+"/canary"
	upper := mine
	upper.Number, upper.Author = 8, "Fleet-Bot"

	own, lookalikes := ownPullRequests([]forge.PullRequest{mine, fork, forkAsBot, otherAuthor, deeper, noMarker, wrongWave, upper}, "fleet-bot", prefix)
	var ownN, lookN []int64
	for _, p := range own {
		ownN = append(ownN, p.Number)
	}
	for _, p := range lookalikes {
		lookN = append(lookN, p.Number)
	}
	if len(ownN) != 2 || ownN[0] != 1 || ownN[1] != 8 {
		t.Errorf("own = %v, want [1 8]", ownN)
	}
	if len(lookN) != 6 {
		t.Errorf("look-alikes = %v, want the other six", lookN)
	}
	if own, _ := ownPullRequests([]forge.PullRequest{mine}, "", prefix); len(own) != 0 {
		t.Error("without a known forge user nothing is the operator's")
	}
	repo := forge.Repository{Owner: "fleet-admin", Name: "fleet"}
	for pr, want := range map[*forge.PullRequest]string{
		&fork:        "its branch is in mallory/fleet, not in fleet-admin/fleet",
		&otherAuthor: "it was opened by alice, not by the operator's forge user fleet-bot",
		&deeper:      "its branch is not " + prefix + "/<wave>",
		&noMarker:    "no marker",
	} {
		if got := lookalikeReason(*pr, "fleet-bot", prefix, repo); !strings.Contains(got, want) {
			t.Errorf("lookalikeReason(#%d) = %q, want %q", pr.Number, got, want)
		}
	}
}

// Two ClusterStacks of one fleet repository, in two namespaces, with the same name and the
// same bot: neither takes the other's pull requests as its own, whatever their state.
func TestStacksSharingAFleetNeverShareProposals(t *testing.T) {
	a := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "aws-base-1-36"}, Spec: csv1.ClusterStackSpec{Updates: &csv1.UpdatePolicy{Proposals: &csv1.ProposalPolicy{}}}}
	b := a.DeepCopy()
	b.Namespace = "team-b"
	var prs []forge.PullRequest
	for i, cs := range []*csv1.ClusterStack{a, b} {
		for j, st := range []string{forge.StateOpen, forge.StateClosed, forge.StateMerged} {
			prs = append(prs, ownPR(int64(10*i+j), branchPrefix(cs), st))
		}
	}
	for _, cs := range []*csv1.ClusterStack{a, b} {
		var listed []forge.PullRequest // what the forge listing returns for the stack's prefix
		for _, p := range prs {
			if strings.HasPrefix(p.Head, branchPrefix(cs)+"/") {
				listed = append(listed, p)
			}
		}
		own, _ := ownPullRequests(listed, "fleet-bot", branchPrefix(cs))
		if len(own) != 3 {
			t.Fatalf("%s: %d own pull requests, want its 3", cs.Namespace, len(own))
		}
		for _, p := range own {
			if !strings.HasPrefix(p.Head, "clusterstack/"+cs.Namespace+"/") {
				t.Errorf("%s took %s as its own", cs.Namespace, p.Head)
			}
		}
	}
}

func TestHostBudget(t *testing.T) {
	b := newHostBudget(2)
	for i := range 2 {
		if !b.acquire("https://a:443") {
			t.Fatalf("no room for stack %d of two", i+1)
		}
	}
	if b.acquire("https://a:443") {
		t.Error("a third stack on the same host waits")
	}
	if !b.acquire("https://b:443") {
		t.Error("another host has its own room")
	}
	b.release("https://a:443")
	if !b.acquire("https://a:443") {
		t.Error("room given back")
	}
}

func updatesScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{csv1.AddToScheme, kustomizev1.AddToScheme, sourcev1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// fleetObjects are a proposing ClusterStack applied by Kustomization flux-system/fleet from
// GitRepository flux-system/fleet at url, and its token Secret.
func fleetObjects(ns, name, url string) (*csv1.ClusterStack, []client.Object) {
	cs := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{kustomizeNameLabel: "fleet-" + ns, kustomizeNamespaceLabelKey: "flux-system"}},
		Spec: csv1.ClusterStackSpec{Updates: &csv1.UpdatePolicy{Proposals: &csv1.ProposalPolicy{Provider: csv1.ForgeGitea, SecretRef: meta.LocalObjectReference{Name: "bot"}}}}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "fleet-" + ns},
		Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "fleet-" + ns}}}
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: ns + "_" + name + "_" + csv1.GroupVersion.Group + "_ClusterStack"}}}
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "fleet-" + ns},
		Spec: sourcev1.GitRepositorySpec{URL: url, Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bot"}, Data: map[string][]byte{"token": []byte("s3cr3t-token")}}
	return cs, []client.Object{cs, ks, repo, sec}
}

// A change of one fleet's GitRepository or Kustomization wakes the stacks of that fleet only.
func TestStacksOfFleet(t *testing.T) {
	csA, objsA := fleetObjects("team-a", "s", "https://forge/a/fleet")
	_, objsB := fleetObjects("team-b", "s", "https://forge/b/fleet")
	quiet := &csv1.ClusterStack{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "quiet", Labels: csA.Labels}}
	c := fake.NewClientBuilder().WithScheme(updatesScheme(t)).WithIndex(&kustomizev1.Kustomization{}, fleetSourceIndex, kustomizationSource).
		WithObjects(append(append(objsA, objsB...), quiet)...).Build()
	r := &ClusterStackUpdatesReconciler{Client: c}
	want := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(csA)}}
	for _, o := range []client.Object{objsA[1], objsA[2]} {
		if got := r.stacksOfFleet(context.Background(), o); len(got) != 1 || got[0] != want[0] {
			t.Errorf("%T %s wakes %v, want %v", o, o.GetName(), got, want)
		}
	}
	other := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "unrelated"}}
	if got := r.stacksOfFleet(context.Background(), other); len(got) != 0 {
		t.Errorf("an unrelated GitRepository wakes %v", got)
	}
}

// fakeForge is a forge whose pull requests are given.
type fakeForge struct {
	me   string
	prs  []forge.PullRequest
	mes  int
	edit int
}

func (f *fakeForge) Me(context.Context) (string, error) { f.mes++; return f.me, nil }
func (f *fakeForge) PullRequests(context.Context, string) ([]forge.PullRequest, error) {
	return f.prs, nil
}
func (f *fakeForge) Create(context.Context, string, string, string, string) (forge.PullRequest, error) {
	f.edit++
	return forge.PullRequest{}, nil
}
func (f *fakeForge) Update(context.Context, int64, string, string) (forge.PullRequest, error) {
	f.edit++
	return forge.PullRequest{}, nil
}

// A fork's pull request, on the stack's own branch name and with the operator's marker, is
// never the proposal: it does not decline the release it names when closed, and it is reported
// once in an Event.
func TestOpenForgeIgnoresLookalikes(t *testing.T) {
	cs, objs := fleetObjects("demo", "aws-base-1-36", "https://forge.example.com/fleet-admin/fleet.git")
	c := fake.NewClientBuilder().WithScheme(updatesScheme(t)).WithObjects(objs...).Build()
	prefix := branchPrefix(cs)
	fork := ownPR(7, prefix, forge.StateClosed)
	fork.FromBase, fork.HeadRepo, fork.Author = false, "mallory/fleet", "mallory"
	mine := ownPR(8, prefix, forge.StateOpen)
	ff := &fakeForge{me: "fleet-bot", prs: []forge.PullRequest{fork, mine}}
	rec := record.NewFakeRecorder(10)
	r := &ClusterStackUpdatesReconciler{Client: c, writer: newStatusWriter(c, nil), APIReader: c, Recorder: rec,
		NewForge: func(csv1.ForgeProvider, forge.Repository, string) (forge.Client, error) { return ff, nil }}
	for range 2 {
		s := &updatesScope{cs: cs}
		if _, err := r.openForge(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		s.release()
		if s.fleet == nil || len(s.prs) != 1 || s.prs[0].Number != 8 {
			t.Fatalf("own pull requests %+v (condition %+v), want #8 only", s.prs, s.cond)
		}
		if d := r.declinedReleases(s); len(d) != 0 {
			t.Errorf("the fork's closed pull request declined %v", d)
		}
	}
	if ff.mes != 1 {
		t.Errorf("the forge was asked %d times who the token is, want once", ff.mes)
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d Events, want one", len(rec.Events))
	}
	if e := <-rec.Events; !strings.Contains(e, EventLookalikeIgnored) || !strings.Contains(e, "#7") || !strings.Contains(e, "its branch is in mallory/fleet") {
		t.Errorf("Event %q", e)
	}
}

func TestOpenForgeRefusesWhereTheTokenMustNotGo(t *testing.T) {
	for _, tc := range []struct {
		name, url, apiURL string
		policy            forge.Policy
		want              string
	}{
		{"plain http", "http://forge.example.com/fleet-admin/fleet.git", "", forge.Policy{},
			"GitRepository flux-system/fleet-demo (http://forge.example.com/fleet-admin/fleet.git): fleet repository URL: refusing to send credentials (from Secret demo/bot) over plain http"},
		{"plain http on loopback, not allowed", "http://127.0.0.1:3000/fleet-admin/fleet.git", "", forge.Policy{}, "over plain http"},
		{"apiURL elsewhere", "https://forge.example.com/fleet-admin/fleet.git", "https://10.0.0.1", forge.Policy{},
			"spec.updates.proposals.apiURL names host 10.0.0.1, which is neither the fleet repository's host forge.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, objs := fleetObjects("demo", "aws-base-1-36", tc.url)
			cs.Spec.Updates.Proposals.APIURL = tc.apiURL
			c := fake.NewClientBuilder().WithScheme(updatesScheme(t)).WithObjects(objs...).Build()
			r := &ClusterStackUpdatesReconciler{Client: c, writer: newStatusWriter(c, nil), APIReader: c, Recorder: record.NewFakeRecorder(10), ForgePolicy: tc.policy,
				NewForge: func(csv1.ForgeProvider, forge.Repository, string) (forge.Client, error) {
					t.Error("a forge client was built")
					return nil, nil
				}}
			s := &updatesScope{cs: cs}
			if _, err := r.openForge(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if s.cond.Reason != csv1.ReasonInvalidProposalConfig || !strings.Contains(s.cond.Message, tc.want) {
				t.Errorf("condition %s: %s; want %s containing %q", s.cond.Reason, s.cond.Message, csv1.ReasonInvalidProposalConfig, tc.want)
			}
		})
	}
}

// A forge host with no room left: the stack keeps its UpdatesProposed condition and its
// rollout, and tries again shortly; the room is given back after each reconcile.
func TestOpenForgeWaitsForItsHost(t *testing.T) {
	cs, objs := fleetObjects("demo", "aws-base-1-36", "https://forge.example.com/fleet-admin/fleet.git")
	prev := metav1.Condition{Type: csv1.UpdatesProposedCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonForgeError, Message: "no answer within 30s"}
	apimeta.SetStatusCondition(&cs.Status.Conditions, prev)
	c := fake.NewClientBuilder().WithScheme(updatesScheme(t)).WithObjects(objs...).Build()
	ff := &fakeForge{me: "fleet-bot"}
	r := &ClusterStackUpdatesReconciler{Client: c, writer: newStatusWriter(c, nil), APIReader: c, Recorder: record.NewFakeRecorder(10), ForgeHostConcurrency: 1,
		NewForge: func(csv1.ForgeProvider, forge.Repository, string) (forge.Client, error) { return ff, nil }}
	r.caches()
	host := forge.HostKey("https://forge.example.com/fleet-admin/fleet.git")
	if !r.hosts.acquire(host) {
		t.Fatal("room")
	}
	s := &updatesScope{cs: cs}
	if _, err := r.openForge(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if !s.forgeBusy || s.cond.Reason != csv1.ReasonForgeError || s.requeue != forgeBusyRetry || ff.mes != 0 {
		t.Errorf("busy %v, condition %+v, requeue %s, forge asked %d times", s.forgeBusy, s.cond, s.requeue, ff.mes)
	}
	r.hosts.release(host)
	s = &updatesScope{cs: cs}
	if _, err := r.openForge(context.Background(), s); err != nil || s.forgeBusy || s.fleet == nil {
		t.Fatalf("with room: busy %v, err %v, condition %+v", s.forgeBusy, err, s.cond)
	}
	s.release()
	if !r.hosts.acquire(host) {
		t.Error("the room was not given back")
	}
}

// What the status, the Events and the log say of a forge error carries neither URL
// credentials nor the token, nor more than one line.
func TestForgeText(t *testing.T) {
	err := errors.New("push branch b to https://bot:s3cr3t-token@forge.example.com/o/fleet.git: remote: token s3cr3t-token refused\nsecond line")
	got := forgeText(err, "s3cr3t-token")
	if strings.Contains(got, "s3cr3t-token") || strings.Contains(got, "bot:") || strings.Contains(got, "\n") {
		t.Errorf("forgeText = %q", got)
	}
	if !strings.Contains(got, "https://forge.example.com/o/fleet.git") || !strings.Contains(got, "token *** refused") {
		t.Errorf("forgeText = %q, want the URL without credentials and the token hidden", got)
	}
}
