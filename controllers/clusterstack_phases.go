package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/lifecycle"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// resolveWanted: the pinned versions, and the newest published one with autoSubscribe.
func (r *ClusterStackReconciler) resolveWanted(ctx context.Context, s *stackScope) (ctrl.Result, error) {
	cs := s.cs
	wanted := map[string][]string{}
	latest := ""
	for _, v := range cs.Spec.Versions {
		wanted[r.releaseName(cs, v)] = append(wanted[r.releaseName(cs, v)], KeepPinned)
		if latest == "" || releasename.CompareVersions(v, latest) > 0 {
			latest = v
		}
	}
	s.wanted, s.latest = wanted, latest
	if c := candidate(cs); c != "" {
		wanted[c] = append(wanted[c], lifecycle.Candidate)
	}
	if !cs.Spec.AutoSubscribe {
		return ctrl.Result{}, nil
	}
	tags, err := r.Tags.Tags(ctx, cs.Namespace, cs.Spec.Source, StackTags(cs), interval(cs))
	if err != nil {
		s.resolveErr = err        // ReleasesResolved reports it; the other steps still run
		return ctrl.Result{}, nil //nolint:nilerr // recorded in the scope, reported as a condition, retried on the interval
	}
	rel, ok := releasename.Latest(tags, cs.Spec.Provider, cs.Spec.Name, cs.Spec.KubernetesVersion, false)
	if !ok {
		s.resolveErr = fmt.Errorf("no tag in %s matches %s-*: publish a release tag or pin spec.versions",
			cs.Spec.Source.Location(), stackKey(cs))
		return ctrl.Result{}, nil
	}
	name := r.releaseName(cs, rel.Version)
	wanted[name] = append(wanted[name], KeepLatest)
	if latest == "" || releasename.CompareVersions(rel.Version, latest) > 0 {
		s.latest = rel.Version
	}
	return ctrl.Result{}, nil
}

// decideKeep gathers, from the cache, what uses each release and decides what is kept.
func (r *ClusterStackReconciler) decideKeep(ctx context.Context, s *stackScope) (ctrl.Result, error) {
	existing, err := r.releasesOf(ctx, s.cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.existing = existing
	uses, err := cachedReleaseUses(ctx, r.Cache, r.Client, s.cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	facts := lifecycle.Facts{Wanted: s.wanted, ClassUsers: uses.classUsers, Applied: uses.applied, Referenced: map[string][]string{}, RollbackReleases: rollbackReleases(s.cs)}
	// Flux objects name their release by label value; that is the name unless it is too long.
	for value, refs := range uses.referenced {
		facts.Referenced[value] = refs
	}
	for _, rel := range existing {
		if refs := uses.referencing(rel.Name); len(refs) > 0 {
			facts.Referenced[rel.Name] = refs
		}
		facts.Existing = append(facts.Existing, lifecycle.Release{Name: rel.Name, Version: rel.Spec.Version,
			Works: apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.StackValidCondition) &&
				apimeta.IsStatusConditionTrue(rel.Status.Conditions, csv1.AvailableCondition)})
	}
	s.keep = lifecycle.Keep(facts)
	return ctrl.Result{}, nil
}

func rollbackReleases(cs *csv1.ClusterStack) int {
	if cs.Spec.RollbackReleases == nil {
		return DefaultRollbackReleases
	}
	return int(*cs.Spec.RollbackReleases)
}

// ensureReleases creates or updates every kept release. A release only something uses (not
// pinned or latest) that does not exist is created only when its tag is published.
func (r *ClusterStackReconciler) ensureReleases(ctx context.Context, s *stackScope) (ctrl.Result, error) {
	if s.refused != nil {
		return ctrl.Result{}, nil // checkIdentity refused the stack: nothing is created or changed
	}
	exists := map[string]bool{}
	for _, rel := range s.existing {
		exists[rel.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(s.keep)) {
		parsed, err := releasename.Parse(name)
		if err != nil {
			continue
		}
		if !exists[name] && len(s.wanted[name]) == 0 {
			ok, missing := r.tagPublished(ctx, s.cs, name)
			if !ok {
				s.missing = append(s.missing, missing)
				s.requeue = true // tags cannot be watched: look again after the interval
				continue
			}
		}
		if err := r.ensureRelease(ctx, s.cs, parsed.Version); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// tagPublished checks that a release's tag exists in the stack's repository.
func (r *ClusterStackReconciler) tagPublished(ctx context.Context, cs *csv1.ClusterStack, name string) (bool, csv1.MissingRelease) {
	has, err := r.Tags.Has(ctx, cs.Namespace, cs.Spec.Source, StackTags(cs), interval(cs), name)
	if err != nil {
		return false, csv1.MissingRelease{Name: name, Reason: tagListReason(err),
			Message: fmt.Sprintf("cannot tell whether tag %s of ClusterStack %s exists: %s", name, cs.Name, oneLine(err))}
	}
	if has {
		return true, csv1.MissingRelease{}
	}
	return false, csv1.MissingRelease{Name: name, Reason: csv1.ReasonTagNotFound,
		Message: fmt.Sprintf("tag %s of ClusterStack %s does not exist in %s: publish it, or move the Cluster to a published release", name, cs.Name, redact.URL(cs.Spec.Source.Location()))}
}

func (r *ClusterStackReconciler) releasesOf(ctx context.Context, cs *csv1.ClusterStack) ([]csv1.ClusterStackRelease, error) {
	var list csv1.ClusterStackReleaseList
	if err := r.List(ctx, &list, client.InNamespace(cs.Namespace), client.MatchingFields{releaseStackIndex: cs.Name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// removeUnused deletes the releases nothing keeps, each after a live read confirms that nothing
// uses it. When the wanted set could not be resolved, nothing is deleted.
func (r *ClusterStackReconciler) removeUnused(ctx context.Context, s *stackScope) (ctrl.Result, error) {
	if s.resolveErr != nil {
		return ctrl.Result{}, nil //nolint:nilerr // nothing is deleted while the wanted set is unknown; ReleasesResolved says why
	}
	var live *uses
	for i := range s.existing {
		rel := &s.existing[i]
		if _, keep := s.keep[rel.Name]; keep || !rel.DeletionTimestamp.IsZero() {
			continue
		}
		if live == nil {
			u, err := releaseUses(ctx, r.APIReader, s.cs)
			if err != nil {
				return ctrl.Result{}, fmt.Errorf("confirm release %s is unused: %w", rel.Name, err)
			}
			live = &u
		}
		if users := live.of(rel.Name); len(users) > 0 {
			log.FromContext(ctx).V(1).Info("release still used on a live read; kept", "release", rel.Name, "users", users)
			s.keep[rel.Name] = live.reasons(rel.Name)
			continue
		}
		if err := r.Delete(ctx, rel, client.Preconditions{ResourceVersion: &rel.ResourceVersion}); err != nil && !apierrors.IsNotFound(err) {
			if apierrors.IsConflict(err) {
				s.requeue = true
				continue
			}
			return ctrl.Result{}, fmt.Errorf("delete unused release %s: %w", rel.Name, err)
		}
		r.Recorder.Eventf(s.cs, corev1.EventTypeNormal, "ReleaseRemoved", "release %s is not pinned, latest, a rollback target or used by any Cluster or Flux object: removed", rel.Name)
	}
	return ctrl.Result{}, nil
}

// schedule is when the stack is looked at again: after its interval while it subscribes to new
// tags or waits for something that is not watched, and when the Flux lockdown is to be checked
// again.
func (r *ClusterStackReconciler) schedule(_ context.Context, s *stackScope) (ctrl.Result, error) {
	var after time.Duration
	if s.cs.Spec.AutoSubscribe || s.requeue {
		after = interval(s.cs)
	}
	return requeueIn(soonest(after, r.Lockdown.recheck())), nil
}

// ensureRelease creates the release of a version, or updates its spec from the ClusterStack.
func (r *ClusterStackReconciler) ensureRelease(ctx context.Context, cs *csv1.ClusterStack, version string) error {
	name := r.releaseName(cs, version)
	rel := &csv1.ClusterStackRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cs.Namespace}}
	err := r.Get(ctx, client.ObjectKeyFromObject(rel), rel)
	if err == nil && rel.Spec.ClusterStack != cs.Name {
		return reconcile.TerminalError(fmt.Errorf("release %s belongs to ClusterStack %s; two ClusterStacks in one namespace cannot deliver the same stack", name, rel.Spec.ClusterStack))
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	op, err := controllerutil.CreateOrPatch(ctx, r.Client, rel, func() error {
		if rel.Labels == nil {
			rel.Labels = map[string]string{}
		}
		maps.Copy(rel.Labels, fluxgen.StackReleaseLabels(cs.Name, name))
		rel.Spec = csv1.ClusterStackReleaseSpec{
			ClusterStack:       cs.Name,
			Provider:           cs.Spec.Provider,
			StackName:          cs.Spec.Name,
			KubernetesVersion:  cs.Spec.KubernetesVersion,
			Version:            version,
			Source:             cs.Spec.Source,
			Interval:           metav1.Duration{Duration: interval(cs)},
			FollowMovedTags:    cs.Spec.FollowMovedTags,
			ServiceAccountName: serviceAccountOf(cs, r.DefaultServiceAccount),
		}
		// Owned, but not as controller of its lifecycle: an in-use release outlives edits to
		// the ClusterStack; its own finalizer keeps it while anything uses it.
		return controllerutil.SetOwnerReference(cs, rel, r.Scheme())
	})
	if err != nil {
		return fmt.Errorf("create or update release %s: %w", name, err)
	}
	if op == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(cs, corev1.EventTypeNormal, "ReleaseCreated", "release %s created", name)
	}
	return nil
}
