package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// applySource applies the release's one source, the GitRepository (or OCIRepository), and waits
// until Flux has fetched the release's tag: the source's watch brings the reconcile back; the
// status aggregation reports what Flux says meanwhile.
func (r *ClusterStackReleaseReconciler) applySource(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	if _, err := r.Applier.Apply(ctx, s.rel, fluxgen.ReleaseSource(s.rel)); err != nil {
		return ctrl.Result{}, err
	}
	repo := fluxgen.NewReleaseSource(s.rel)
	if err := r.Get(ctx, client.ObjectKey{Namespace: s.rel.Namespace, Name: fluxgen.GitRepositoryName(s.rel.Name)}, repo); err != nil {
		return ctrl.Result{}, err
	}
	if !artifactOfRelease(s.rel, repo) {
		return ctrl.Result{}, errPhasesDone
	}
	s.repo = repo
	return ctrl.Result{}, nil
}

// validate reads the stack at the tag and checks it is the one the release names. An invalid
// stack stops the phases: nothing already delivered is touched; a new tag or revision brings
// the reconcile back. An artifact that cannot be read is an error (retried with back-off).
func (r *ClusterStackReleaseReconciler) validate(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	st, err := r.Stacks.Get(ctx, s.repo, s.rel.Spec.Source.Path)
	if err == nil {
		err = validateStack(s.rel, st)
	}
	if err == nil && s.rel.Spec.Source.IsOCI() {
		s.charts, err = chartDigests(s.repo.GetArtifact(), st)
	}
	if err != nil {
		var artErr *ArtifactError
		if errors.As(err, &artErr) {
			s.stackValid = &metav1.Condition{Type: csv1.StackValidCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonArtifactUnavailable, Message: err.Error()}
			return ctrl.Result{}, err
		}
		s.stackValid = &metav1.Condition{Type: csv1.StackValidCondition, Status: metav1.ConditionFalse, Reason: csv1.ReasonInvalidStack,
			Message: fmt.Sprintf("stack %q at tag %s is invalid: %s", stackPath(s.rel), s.rel.Name, oneLine(err))}
		return ctrl.Result{}, errPhasesDone
	}
	s.stack = st
	s.stackValid = &metav1.Condition{Type: csv1.StackValidCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fmt.Sprintf("stack %q at %s is valid", stackPath(s.rel), s.repo.GetArtifact().Revision)}
	// What the status write records is what the next phases act on (the commit the release is
	// pinned to, once it is first validated).
	view := s.rel.DeepCopy()
	s.withStackFacts(view)
	s.rel = view
	return ctrl.Result{}, nil
}

// applyObjects applies, as the validation leaves the release: its source (pinned to the validated
// commit from the first validation on: in this reconcile, not in one that the objects created
// here set off and that may read the release from a cache without this reconcile's status
// write), the objects that apply the cluster-class into the management cluster, and the shared
// sources of the addon components.
func (r *ClusterStackReleaseReconciler) applyObjects(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	if _, err := r.Applier.Apply(ctx, s.rel, fluxgen.ReleaseSource(s.rel)); err != nil {
		return ctrl.Result{}, err
	}
	cc := releaseClusterClass(s.stack, s.charts)
	for _, obj := range fluxgen.ClusterClassObjects(s.rel, cc) {
		if _, err := r.Applier.Apply(ctx, s.rel, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	components := releaseComponents(s.rel, s.stack, s.charts)
	for _, chart := range fluxgen.AddonCharts(s.rel, components) {
		if _, err := r.Applier.Apply(ctx, s.rel, chart); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.deleteOtherSourceKind(ctx, s.rel, cc, components)
}

// deleteOtherSourceKind deletes the sources the release generated while its stack was read from
// the other kind of source (the ClusterStack moved between a Git repository and an OCI
// registry, e.g. to a registry mirror): the other kind's release source and chart sources, once
// the new ones are applied. Only objects the release controls are deleted; the Clusters' Flux
// objects move to the new sources with the release's new status.
func (r *ClusterStackReleaseReconciler) deleteOtherSourceKind(ctx context.Context, rel *csv1.ClusterStackRelease, cc csv1.ReleaseComponent, components []csv1.ReleaseComponent) error {
	charts := []string{}
	if cc.Kind == csv1.ComponentKindHelm {
		charts = append(charts, fluxgen.ClusterClassObjectName(rel.Name))
	}
	for _, c := range components {
		if c.Kind == csv1.ComponentKindHelm {
			charts = append(charts, fluxgen.AddonChartName(rel.Name, c.Name))
		}
	}
	var stale []client.Object
	if rel.Spec.Source.IsOCI() {
		stale = append(stale, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: fluxgen.GitRepositoryName(rel.Name)}})
		for _, name := range charts {
			stale = append(stale, &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	} else {
		stale = append(stale, &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: fluxgen.GitRepositoryName(rel.Name)}})
		for _, name := range charts {
			stale = append(stale, &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	}
	for _, o := range stale {
		if err := r.Get(ctx, client.ObjectKey{Namespace: rel.Namespace, Name: o.GetName()}, o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if !metav1.IsControlledBy(o, rel) {
			continue
		}
		if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// artifactOfRelease is true when the source's artifact is the release's: at the validated
// commit (digest) once the release is pinned, else at the release tag.
func artifactOfRelease(rel *csv1.ClusterStackRelease, repo fluxgen.SourceObject) bool {
	art := repo.GetArtifact()
	if art == nil {
		return false
	}
	rev := art.Revision
	if fluxgen.Pinned(rel) {
		return pinOf(fluxstatus.CommitOf(rev)) == rel.Status.Commit
	}
	return strings.HasPrefix(rev, rel.Name+"@")
}

// pinOf is the hex of a revision's commit or digest ("sha1:<hex>", "sha256:<hex>"): what
// status.commit records and the source is pinned to.
func pinOf(digest string) string {
	if _, hex, ok := strings.Cut(digest, ":"); ok {
		return hex
	}
	return digest
}

// pinWord names what a release is pinned to, for messages: a Git commit or an OCI digest.
func pinWord(rel *csv1.ClusterStackRelease) string {
	if rel.Spec.Source.IsOCI() {
		return "digest"
	}
	return "commit"
}

// stackPath is the stack's directory in its source, for messages: "." for an OCI artifact's root.
func stackPath(rel *csv1.ClusterStackRelease) string {
	if rel.Spec.Source.Path == "" {
		return "."
	}
	return rel.Spec.Source.Path
}

// chartDigests reads the digests of the Helm charts a release read from an OCI registry names
// (the annotations of its manifest, which Flux keeps in the artifact's metadata), and checks
// that every Helm component of the stack, the cluster-class included, has one.
func chartDigests(art *meta.Artifact, st *stack.Stack) (map[string]string, error) {
	charts, err := ocistack.ChartDigests(art.Metadata)
	if err != nil {
		return nil, stack.Problems{{File: "(release manifest)", Message: err.Error()}}
	}
	var ps stack.Problems
	need := func(name, file string) {
		if charts[name] == "" {
			ps = append(ps, stack.Problem{File: file, Message: fmt.Sprintf(
				"component %s is a Helm chart, but the release's manifest names no chart artifact for it (annotation %s%s): publish the release with `stackctl push`, which publishes its charts beside it",
				name, ocistack.ChartAnnotationPrefix, name)})
		}
	}
	if st.ClusterClass.Kind == stack.KindHelm {
		need(csv1.ClusterClassComponent, st.ClusterClass.Path+"/")
	}
	for _, c := range st.Components {
		if c.Kind == stack.KindHelm {
			need(c.Name, c.Path+"/")
		}
	}
	return charts, ps.Err()
}

// verifyTag checks, every interval, that a pinned release's tag still points at the validated
// commit (tags cannot be watched). A moved tag is reported and not delivered.
func (r *ClusterStackReleaseReconciler) verifyTag(ctx context.Context, s *releaseScope) (ctrl.Result, error) {
	rel := s.rel
	if !fluxgen.Pinned(rel) || r.Tags == nil {
		// Following the tag: nothing to verify; clear a TagMoved reported before the opt-in.
		if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.TagVerifiedCondition); c != nil && c.Status != metav1.ConditionTrue {
			s.tagVerified = &metav1.Condition{Type: csv1.TagVerifiedCondition, Status: metav1.ConditionTrue,
				Reason: csv1.ReasonAsExpected, Message: fmt.Sprintf("release %s follows its tag (followMovedTags)", rel.Name)}
		}
		return ctrl.Result{}, nil
	}
	every := fluxgen.ReleaseInterval(rel).Duration
	what := pinWord(rel)
	c := metav1.Condition{Type: csv1.TagVerifiedCondition, Status: metav1.ConditionTrue, Reason: csv1.ReasonAsExpected,
		Message: fmt.Sprintf("tag %s points at the validated %s %s", rel.Name, what, rel.Status.Commit)}
	sel := ReleaseTags(rel.Spec.Provider, rel.Spec.StackName, rel.Spec.KubernetesVersion)
	refs, err := r.Tags.Resolve(ctx, rel.Namespace, rel.Spec.Source, sel, every, time.Time{}, rel.Name)
	if err == nil && refs[rel.Name] != rel.Status.Commit {
		// The cached listing may be older than the tag (another ClusterStack of the namespace
		// listed the repository before it was pushed): only a listing that started after the
		// commit was validated can tell that the tag moved since.
		refs, err = r.Tags.Resolve(ctx, rel.Namespace, rel.Spec.Source, sel, every, validatedSince(rel), rel.Name)
	}
	switch {
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, csv1.ReasonTagListFailed,
			fmt.Sprintf("cannot check where tag %s points: %s", rel.Name, redact.URLs(oneLine(err)))
	case refs[rel.Name] == "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, csv1.ReasonTagMoved, fmt.Sprintf(
			"tag %s was validated at %s %s and no longer exists; the release keeps delivering %s. Publish a new version and move the Clusters to it",
			rel.Name, what, rel.Status.Commit, rel.Status.Commit)
	case refs[rel.Name] != rel.Status.Commit:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, csv1.ReasonTagMoved, fmt.Sprintf(
			"tag %s moved from the validated %s %s to %s; the release keeps delivering %s. Publish the change as a new version, move the tag back, or set spec.followMovedTags on ClusterStack %s to deliver %s",
			rel.Name, what, rel.Status.Commit, refs[rel.Name], rel.Status.Commit, rel.Spec.ClusterStack, refs[rel.Name])
	}
	s.tagVerified = &c
	return requeueIn(every), nil
}

// validatedSince is the earliest start of a tag listing that can contradict the release's
// validated commit: the last transition of StackValid (the validation; a Condition's time keeps
// whole seconds, so one is added), and not before the release was created.
func validatedSince(rel *csv1.ClusterStackRelease) time.Time {
	t := rel.CreationTimestamp.Time
	if c := apimeta.FindStatusCondition(rel.Status.Conditions, csv1.StackValidCondition); c != nil && c.LastTransitionTime.After(t) {
		t = c.LastTransitionTime.Time
	}
	return t.Add(time.Second)
}

// validateStack checks that the stack at the tag is the one the release names.
func validateStack(rel *csv1.ClusterStackRelease, st *stack.Stack) error {
	var ps stack.Problems
	if st.Provider != rel.Spec.Provider || st.Name != rel.Spec.StackName {
		ps = append(ps, stack.Problem{File: st.MetadataFile, Message: fmt.Sprintf("stack is %s/%s, but the release is for %s/%s", st.Provider, st.Name, rel.Spec.Provider, rel.Spec.StackName)})
	}
	if st.KubernetesMinor != rel.Spec.KubernetesVersion {
		ps = append(ps, stack.Problem{File: st.MetadataFile, Message: fmt.Sprintf("kubernetesVersion %s is not of the release's Kubernetes minor %s", st.KubernetesVersion, rel.Spec.KubernetesVersion)})
	}
	if st.ClusterClass.Kind == stack.KindHelm && st.ClusterClass.Version != rel.Spec.Version {
		ps = append(ps, stack.Problem{File: st.ClusterClass.Path + "/Chart.yaml", Message: fmt.Sprintf("version %q does not match the release version %q", st.ClusterClass.Version, rel.Spec.Version)})
	}
	return ps.Err()
}
