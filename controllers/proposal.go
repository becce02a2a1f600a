package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fleetedit"
	"github.com/clusterstack-io/clusterstack-operator/internal/forge"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// errFleetFile: an object to edit has no manifest in the fleet repository.
var errFleetFile = errors.New("manifest not found in the fleet repository")

// errAlreadyOnBase: the fleet repository's branch already holds the change (Flux has not
// applied it yet).
var errAlreadyOnBase = errors.New("the fleet repository already holds the change")

// Label kustomize-controller sets on what it applies, next to kustomizeNameLabel.
const kustomizeNamespaceLabelKey = "kustomize.toolkit.fluxcd.io/namespace"

// fleetSource is where Flux applies a ClusterStack from.
type fleetSource struct {
	// URL and Branch of the GitRepository the Kustomization applies.
	URL, Branch string
	// Repo is the GitRepository.
	Repo client.ObjectKey
	// Token is the proposal token (never logged or written); TokenFrom names its Secret.
	Token, TokenFrom string
	// Stack is the Kustomization that applied the ClusterStack.
	Stack *kustomizev1.Kustomization
}

// fluxOwner returns the Kustomization that applied obj, checked against its inventory (labels
// can be set by anyone; the inventory is what kustomize-controller applied).
func fluxOwner(ctx context.Context, c client.Reader, obj client.Object, group, kind string) (*kustomizev1.Kustomization, error) {
	what := fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
	name, ns := obj.GetLabels()[kustomizeNameLabel], obj.GetLabels()[kustomizeNamespaceLabelKey]
	if name == "" || ns == "" {
		return nil, fmt.Errorf("%s was not applied by a Flux Kustomization (no %s label): commit it to a fleet repository that Flux applies to get pull requests", what, kustomizeNameLabel)
	}
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ks); err != nil {
		return nil, fmt.Errorf("%s: Kustomization %s/%s that applied it: %s", what, ns, name, oneLine(err))
	}
	id := fmt.Sprintf("%s_%s_%s_%s", obj.GetNamespace(), obj.GetName(), group, kind)
	if ks.Status.Inventory == nil || !slices.ContainsFunc(ks.Status.Inventory.Entries, func(e kustomizev1.ResourceRef) bool { return e.ID == id }) {
		return nil, fmt.Errorf("%s names Kustomization %s/%s in its labels, but that Kustomization's inventory does not list it", what, ns, name)
	}
	return ks, nil
}

// findFleetSource finds the Kustomization that applied cs and the Git branch it applies.
func findFleetSource(ctx context.Context, c client.Reader, cs *csv1.ClusterStack) (*fleetSource, error) {
	ks, err := fluxOwner(ctx, c, cs, csv1.GroupVersion.Group, "ClusterStack")
	if err != nil {
		return nil, err
	}
	repo, err := gitRepositoryOf(ctx, c, ks)
	if err != nil {
		return nil, err
	}
	ref := repo.Spec.Reference
	branch := "master" // Flux's default when no reference is set
	if ref != nil {
		if ref.Tag != "" || ref.SemVer != "" || ref.Commit != "" || ref.Name != "" {
			return nil, fmt.Errorf("GitRepository %s/%s follows a tag, a semver range, a commit or a ref name: proposals need a branch to open pull requests against", repo.Namespace, repo.Name)
		}
		if ref.Branch != "" {
			branch = ref.Branch
		}
	}
	return &fleetSource{URL: repo.Spec.URL, Branch: branch, Repo: client.ObjectKeyFromObject(repo), Stack: ks}, nil
}

// gitRepositoryOf returns the GitRepository a Kustomization applies.
func gitRepositoryOf(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization) (*sourcev1.GitRepository, error) {
	src := ks.Spec.SourceRef
	if src.Kind != sourcev1.GitRepositoryKind {
		return nil, fmt.Errorf("the Kustomization %s/%s applies a %s, not a GitRepository: pull requests need a Git repository", ks.Namespace, ks.Name, src.Kind)
	}
	ns := src.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	repo := &sourcev1.GitRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.Name}, repo); err != nil {
		return nil, fmt.Errorf("GitRepository %s/%s of Kustomization %s/%s: %s", ns, src.Name, ks.Namespace, ks.Name, oneLine(err))
	}
	return repo, nil
}

// marker is what the operator writes into a pull request's description to recognise it later
// (from the forge alone, across restarts).
type marker struct {
	target, wave string
	clusters     []string
}

var markerRE = regexp.MustCompile(`<!-- clusterstack-operator target=(\S+) wave=(\S+) clusters=(\S*) -->`)

func (m marker) String() string {
	return fmt.Sprintf("<!-- clusterstack-operator target=%s wave=%s clusters=%s -->", m.target, m.wave, strings.Join(m.clusters, ","))
}

// parseMarker reads the last marker of a description: the operator writes its own last, after
// the rendered diff, whose text comes from the stacks and could hold one.
func parseMarker(body string) (marker, bool) {
	all := markerRE.FindAllStringSubmatch(body, -1)
	if all == nil {
		return marker{}, false
	}
	sub := all[len(all)-1]
	m := marker{target: sub[1], wave: sub[2]}
	if sub[3] != "" {
		m.clusters = strings.Split(sub[3], ",")
	}
	return m, true
}

// ownPullRequests splits the pull requests listed under the stack's branch prefix into the
// operator's own and look-alikes. The operator's own pull request has what nobody else can
// forge: its head branch is in the base repository itself (not in a fork), and it was opened
// by the forge user the token belongs to (me); besides, its head is exactly
// <prefix>/<wave> (one path element after the stack's prefix, so that no other stack's
// branches, which all have the same depth, can match) and its description carries the
// operator's marker for that wave. Everything else is a look-alike: never edited, never the
// proposal, never a declined release.
func ownPullRequests(prs []forge.PullRequest, me, prefix string) (own, lookalikes []forge.PullRequest) {
	for _, pr := range prs {
		if ownPullRequest(pr, me, prefix) {
			own = append(own, pr)
		} else {
			lookalikes = append(lookalikes, pr)
		}
	}
	return own, lookalikes
}

func ownPullRequest(pr forge.PullRequest, me, prefix string) bool {
	wave, ok := strings.CutPrefix(pr.Head, prefix+"/")
	if !ok || wave == "" || strings.Contains(wave, "/") || !pr.FromBase || me == "" || !strings.EqualFold(pr.Author, me) {
		return false
	}
	m, ok := parseMarker(pr.Body)
	return ok && m.wave == wave
}

// lookalikeReason says why a pull request is not the operator's, for people.
func lookalikeReason(pr forge.PullRequest, me, prefix string, repo forge.Repository) string {
	switch {
	case !pr.FromBase:
		from := "a fork"
		if pr.HeadRepo != "" {
			from = pr.HeadRepo
		}
		return fmt.Sprintf("its branch is in %s, not in %s", shortName(from), repo.FullName())
	case !strings.EqualFold(pr.Author, me):
		return fmt.Sprintf("it was opened by %s, not by the operator's forge user %s", shortName(pr.Author), me)
	case strings.Contains(strings.TrimPrefix(pr.Head, prefix+"/"), "/"):
		return fmt.Sprintf("its branch is not %s/<wave>", prefix)
	}
	return "its description has no marker of the operator for its branch's wave"
}

// shortName bounds a name a forge user chose (a login, a repository) for a message.
func shortName(s string) string {
	const maxLen = 100
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return s
}

// reportLookalikes records a Warning Event, once per pull request (for lookalikeTTL), naming
// each look-alike pull request the operator ignores.
func (r *ClusterStackUpdatesReconciler) reportLookalikes(cs *csv1.ClusterStack, prs []forge.PullRequest, me string, repo forge.Repository) {
	prefix := branchPrefix(cs)
	for _, pr := range prs {
		key := client.ObjectKeyFromObject(cs).String() + "#" + pr.URL
		if _, seen := r.lookalikes.Get(key); seen {
			continue
		}
		r.lookalikes.Add(key, true, lookalikeTTL)
		r.Recorder.Eventf(cs, corev1.EventTypeWarning, EventLookalikeIgnored,
			"ignoring pull request #%d %s (branch %s, opened by %s): %s; the operator's own pull requests come from branches of %s and are opened by %s",
			pr.Number, pr.URL, shortName(pr.Head), shortName(pr.Author), lookalikeReason(pr, me, prefix, repo), repo.FullName(), me)
	}
}

// EventLookalikeIgnored is the reason of the Event naming a pull request that looks like one of
// the operator's but is not (from a fork, by another user): the operator ignores it.
const EventLookalikeIgnored = "LookalikePullRequestIgnored"

// proposeResult is the pull request in place after proposeWave, and the Event to record.
type proposeResult struct {
	pr    forge.PullRequest
	event string
}

// checkoutMemo is what the last checkout of a stack's fleet repository found: on these heads
// (of the branch Flux follows and of the proposal branch), the proposal with this fingerprint
// changed files (and the branch holds it) or not, or failed with err. The same proposal on the
// same heads needs no clone: the answer would be the same.
type checkoutMemo struct {
	fingerprint  string
	base, branch plumbing.Hash
	changed      bool
	err          error
}

// proposalTarget is an object to edit, with the Kustomization that applied it.
type proposalTarget struct {
	ks   *kustomizev1.Kustomization
	edit fleetedit.Edit
}

// proposeWave makes the proposal branch hold exactly the plan's change on top of the branch
// Flux follows, and a pull request from it exist with the plan's title and description. It
// lists the fleet repository's heads first, and clones only when they, or the proposal, changed
// since its last checkout.
func (r *ClusterStackUpdatesReconciler) proposeWave(ctx context.Context, s *updatesScope, rel *csv1.ClusterStackRelease) (proposeResult, error) {
	cs, wave, clusters := s.cs, s.plan.Propose.Wave, s.plan.Propose.Clusters
	branch := branchPrefix(cs) + "/" + wave
	targets, err := proposalTargets(ctx, r.Client, s, rel, clusters)
	if err != nil {
		return proposeResult{}, err
	}
	me := author(cs)
	diff := r.proposalDiff(ctx, s, rel, wave, clusters)
	title, body := proposalText(s, rel, wave, clusters, diff.section)
	fp := proposalFingerprint(s, branch, me, title, body+"\n"+diff.full, targets)

	fleet := forge.Fleet{URL: s.fleet.URL, Token: s.fleet.Token, TokenFrom: s.fleet.TokenFrom, Limits: r.ForgeLimits, Policy: r.ForgePolicy}
	heads, err := fleet.Heads(ctx, s.fleet.Branch, branch)
	if err != nil {
		return proposeResult{}, err
	}
	key := client.ObjectKeyFromObject(cs).String()
	var changed, pushed bool
	if v, ok := r.checkouts.Get(key); ok && v.(checkoutMemo).fingerprint == fp && v.(checkoutMemo).base == heads.BaseHead && v.(checkoutMemo).branch == heads.BranchHead {
		m := v.(checkoutMemo)
		if m.err != nil {
			return proposeResult{}, m.err
		}
		changed = m.changed
	} else {
		m, res, err := r.commitProposal(ctx, s, fleet, heads, targets, diffFile(cs, wave), diff.full, me, title+"\n\n"+proposalSummary(body))
		if err != nil {
			return proposeResult{}, err
		}
		m.fingerprint = fp
		r.checkouts.Add(key, m, checkoutTTL)
		if m.err != nil {
			return proposeResult{}, m.err
		}
		changed, pushed = res.Changed, res.Pushed
	}

	var open *forge.PullRequest
	for i := range s.prs {
		if s.prs[i].Head == branch && s.prs[i].State == forge.StateOpen {
			open = &s.prs[i]
			break
		}
	}
	if !changed {
		// The branch Flux follows already moves these Clusters: Flux has not applied it yet.
		if open != nil {
			return proposeResult{pr: *open}, nil
		}
		return proposeResult{}, fmt.Errorf("%w: branch %s of %s already moves wave %s to %s; waiting for Flux to apply it", errAlreadyOnBase, s.fleet.Branch, redact.URL(s.fleet.URL), wave, s.target)
	}
	if open != nil {
		if open.Title == title && open.Body == body {
			ev := ""
			if pushed {
				ev = "ProposalUpdated"
			}
			return proposeResult{pr: *open, event: ev}, nil
		}
		pr, err := s.client.Update(ctx, open.Number, title, body)
		if err != nil {
			return proposeResult{}, err
		}
		return proposeResult{pr: pr, event: "ProposalUpdated"}, nil
	}
	pr, err := s.client.Create(ctx, title, body, branch, s.fleet.Branch)
	if err != nil {
		return proposeResult{}, err
	}
	return proposeResult{pr: pr, event: "ProposalOpened"}, nil
}

// proposalTargets are the objects the proposal edits: the ClusterStack (when its versions
// need the release pinned) and the wave's Clusters, each with the Kustomization that applied it.
func proposalTargets(ctx context.Context, c client.Reader, s *updatesScope, rel *csv1.ClusterStackRelease, clusters []string) ([]proposalTarget, error) {
	cs := s.cs
	var targets []proposalTarget
	if versions, ok := pinnedVersions(cs, rel.Spec.Version); ok {
		targets = append(targets, proposalTarget{s.fleet.Stack, fleetedit.Edit{Key: fleetedit.ObjectKey{Kind: "ClusterStack", Namespace: cs.Namespace, Name: cs.Name}, Versions: versions}})
	}
	for _, name := range clusters {
		cl := s.clusters[name]
		if cl == nil {
			continue
		}
		ks, err := fluxOwner(ctx, c, cl, "cluster.x-k8s.io", "Cluster")
		if err != nil {
			return nil, fmt.Errorf("%w: %s", errFleetFile, err.Error())
		}
		if repo, err := gitRepositoryOf(ctx, c, ks); err != nil || client.ObjectKeyFromObject(repo) != s.fleet.Repo {
			return nil, fmt.Errorf("%w: Cluster %s/%s is applied by Kustomization %s/%s from another repository than ClusterStack %s (GitRepository %s): one pull request cannot move it",
				errFleetFile, cl.Namespace, cl.Name, ks.Namespace, ks.Name, cs.Name, s.fleet.Repo)
		}
		targets = append(targets, proposalTarget{ks, fleetedit.Edit{Key: fleetedit.ObjectKey{Kind: "Cluster", Namespace: cl.Namespace, Name: cl.Name}, Class: rel.Name, KubernetesVersion: rel.Status.KubernetesVersion}})
	}
	return targets, nil
}

// proposalSummary is the description without its rendered diff, for the commit message.
func proposalSummary(body string) string {
	if i := strings.Index(body, "### Rendered diff"); i >= 0 {
		return strings.TrimSpace(body[:i]) + "\n"
	}
	return body
}

// proposalFingerprint identifies a proposal: the repository and branches, the author, the text
// and every edit with where it is looked for.
func proposalFingerprint(s *updatesScope, branch string, me forge.Author, title, body string, targets []proposalTarget) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q\n%q\n%q\n", s.fleet.URL, s.fleet.Branch, branch, me.Name, me.Email, title, body)
	for _, t := range targets {
		fmt.Fprintf(h, "%s/%s %q %q %#v\n", t.ks.Namespace, t.ks.Name, t.ks.Spec.Path, t.ks.Spec.TargetNamespace, t.edit)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// commitProposal checks the fleet repository out on heads, edits the targets' manifests and
// commits and pushes the result (forge.Checkout.Commit). The memo it returns records the
// outcome for these heads: a change or none, or an error that the same heads would give again
// (commits of someone else on the branch, a manifest not found); other errors are returned.
func (r *ClusterStackUpdatesReconciler) commitProposal(ctx context.Context, s *updatesScope, fleet forge.Fleet, heads forge.Heads,
	targets []proposalTarget, file, full string, me forge.Author, message string) (checkoutMemo, forge.CommitResult, error) {
	co, err := fleet.Checkout(ctx, heads)
	if err != nil {
		return checkoutMemo{}, forge.CommitResult{}, err
	}
	defer func() { _ = co.Close() }()
	memo := checkoutMemo{base: co.BaseHead, branch: co.BranchHead}
	foreign, err := co.ForeignCommit(me)
	if err != nil {
		return checkoutMemo{}, forge.CommitResult{}, err
	}
	if foreign != "" {
		memo.err = fmt.Errorf("%w: commit %s on branch %s: the operator does not force-push over it; merge or close the pull request, or delete the branch, and it proposes again", forge.ErrForeignCommits, foreign, heads.Branch)
		return memo, forge.CommitResult{}, nil
	}
	if err := editManifests(co, s, targets); err != nil {
		if errors.Is(err, errFleetFile) {
			memo.err = err
			return memo, forge.CommitResult{}, nil
		}
		return checkoutMemo{}, forge.CommitResult{}, err
	}
	// The whole diff, when the description holds only its start; an earlier proposal's is
	// removed otherwise.
	if full != "" {
		err = co.PutFile(file, []byte(full))
	} else {
		err = co.RemoveFile(file)
	}
	if err != nil {
		// The same heads would give the same answer (a link or a file where the directory is,
		// a diff over the size limit).
		memo.err = fmt.Errorf("%w: the rendered diff's file: %s", errFleetFile, err.Error())
		return memo, forge.CommitResult{}, nil
	}
	res, err := co.Commit(ctx, me, message)
	if err != nil {
		return checkoutMemo{}, forge.CommitResult{}, err
	}
	memo.changed = res.Changed
	if res.Changed {
		memo.branch = plumbing.NewHash(res.Commit)
	}
	return memo, res, nil
}

// editManifests finds each target's manifest under its Kustomization's path in the checkout
// and edits the files in place. No symbolic link is followed: the scan skips them and the
// checkout refuses to read or write a file through one.
func editManifests(co *forge.Checkout, s *updatesScope, targets []proposalTarget) error {
	root := co.FS()
	indexes := map[string]fleetedit.Index{}
	byFile := map[string][]fleetedit.Edit{}
	fileKS := map[string]*kustomizev1.Kustomization{}
	for _, t := range targets {
		dir := path.Clean(strings.TrimPrefix(path.Clean("/"+t.ks.Spec.Path), "/"))
		if dir == "" {
			dir = "."
		}
		key := t.ks.Namespace + "/" + t.ks.Name
		idx, ok := indexes[key]
		if !ok {
			var err error
			if idx, err = fleetedit.Scan(root, dir, "default", t.ks.Spec.TargetNamespace); err != nil {
				return fmt.Errorf("%w: scan %s of %s: %s", errFleetFile, dir, redact.URL(s.fleet.URL), err.Error())
			}
			indexes[key] = idx
		}
		loc, err := idx.Lookup(t.edit.Key)
		if err != nil {
			return fmt.Errorf("%w: %s %s/%s (applied by Kustomization %s from path %q of %s, branch %s): %s",
				errFleetFile, t.edit.Key.Kind, t.edit.Key.Namespace, t.edit.Key.Name, key, t.ks.Spec.Path, redact.URL(s.fleet.URL), s.fleet.Branch, err.Error())
		}
		byFile[loc.Path] = append(byFile[loc.Path], t.edit)
		fileKS[loc.Path] = t.ks
	}
	for _, file := range slices.Sorted(maps.Keys(byFile)) {
		content, err := co.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%w: %s", errFleetFile, err.Error())
		}
		out, changed, err := fleetedit.Apply(content, file, byFile[file], "default", fileKS[file].Spec.TargetNamespace)
		if err != nil {
			return fmt.Errorf("%w: %s", errFleetFile, err.Error())
		}
		if changed {
			if err := co.WriteFile(file, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// pinnedVersions returns the ClusterStack's spec.versions with version added and the older
// versions dropped (releases Clusters still use are kept while they do), and false when the
// stack needs no edit: autoSubscribe, or version already pinned.
func pinnedVersions(cs *csv1.ClusterStack, version string) ([]string, bool) {
	if slices.Contains(cs.Spec.Versions, version) || (cs.Spec.AutoSubscribe && len(cs.Spec.Versions) == 0) {
		return nil, false
	}
	out := []string{version}
	for _, v := range cs.Spec.Versions {
		if releasename.CompareVersions(v, version) > 0 {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return releasename.CompareVersions(out[i], out[j]) < 0 })
	return out, true
}

// author is the identity of the operator's commits.
func author(cs *csv1.ClusterStack) forge.Author {
	a := forge.Author{Name: DefaultAuthorName, Email: DefaultAuthorEmail}
	if p := proposals(cs); p != nil {
		if p.AuthorName != "" {
			a.Name = p.AuthorName
		}
		if p.AuthorEmail != "" {
			a.Email = p.AuthorEmail
		}
	}
	return a
}

// proposalText is the pull request's title and description: deterministic, so that an
// unchanged proposal is never rewritten.
func proposalText(s *updatesScope, rel *csv1.ClusterStackRelease, wave string, clusters []string, diff string) (string, string) {
	cs := s.cs
	plural := "s"
	if len(clusters) == 1 {
		plural = ""
	}
	title := fmt.Sprintf("%s/%s: roll out %s to wave %s (%d Cluster%s)", cs.Namespace, cs.Name, rel.Name, wave, len(clusters), plural)
	var b strings.Builder
	fmt.Fprintf(&b, "The ClusterStack operator proposes release `%s` (stack version %s, Kubernetes %s) for wave `%s` of ClusterStack `%s/%s`.\n\n",
		rel.Name, rel.Spec.Version, rel.Status.KubernetesVersion, wave, cs.Namespace, cs.Name)
	if _, ok := pinnedVersions(cs, rel.Spec.Version); ok {
		fmt.Fprintf(&b, "- ClusterStack `%s`: `spec.versions` pins %s\n", cs.Name, rel.Spec.Version)
	}
	for _, name := range clusters {
		from := ""
		if cl := s.clusters[name]; cl != nil {
			from = cl.Spec.Topology.ClassRef.Name
		}
		fmt.Fprintf(&b, "- Cluster `%s`: %s → %s\n", name, from, rel.Name)
	}
	b.WriteString("\nMerging it lets Flux apply the change; the operator proposes the next wave once these Clusters have been Available on the release for the wave's soak time. ")
	b.WriteString("Closing it without merging skips this version.\n\n")
	if diff != "" {
		b.WriteString(diff)
		b.WriteString("\n")
	}
	b.WriteString(marker{target: rel.Name, wave: wave, clusters: clusters}.String())
	b.WriteString("\n")
	return title, b.String()
}
