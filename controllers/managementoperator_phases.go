package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/opgen"
	"github.com/clusterstack-io/clusterstack-operator/internal/opstatus"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/requirements"
)

// collectReleases gathers the releases that require the operator and, while spec.version
// differs from the delivered version (the only time opstatus.Decide consults them), the releases
// Clusters use (as the ClusterStack's garbage collection decides it: a Cluster's ClusterClass, a
// ClusterAddon's applied release, a cluster's Flux objects still referring to it). In the steady
// state a reconcile thus costs two cached Lists, not a walk over every stack's Clusters.
func (r *ManagementOperatorReconciler) collectReleases(ctx context.Context, s *opScope) (ctrl.Result, error) {
	var rels csv1.ClusterStackReleaseList
	if err := r.List(ctx, &rels); err != nil {
		return ctrl.Result{}, fmt.Errorf("list ClusterStackReleases: %w", err)
	}
	used := map[string]bool{} // "<namespace>/<release>"
	if s.op.Spec.Version != s.op.DeliveredVersion() {
		if err := r.releasesInUse(ctx, rels.Items, used); err != nil {
			return ctrl.Result{}, err
		}
	}
	all, inUse := stackReleases(rels.Items, used)
	s.inUse = inUse
	s.requiredBy = requirements.Requiring(s.op.Spec.Component, all)
	return ctrl.Result{}, nil
}

// releasesInUse marks in used ("<namespace>/<release>") the releases that Clusters use.
func (r *ManagementOperatorReconciler) releasesInUse(ctx context.Context, rels []csv1.ClusterStackRelease, used map[string]bool) error {
	var stacks csv1.ClusterStackList
	if err := r.List(ctx, &stacks); err != nil {
		return fmt.Errorf("list ClusterStacks: %w", err)
	}
	for i := range stacks.Items {
		cs := &stacks.Items[i]
		u, err := cachedReleaseUses(ctx, r.Cache, r.Client, cs)
		if err != nil {
			return fmt.Errorf("ClusterStack %s/%s: %w", cs.Namespace, cs.Name, err)
		}
		for j := range rels {
			rel := &rels[j]
			if rel.Namespace == cs.Namespace && rel.Spec.ClusterStack == cs.Name && len(u.reasons(rel.Name)) > 0 {
				used[rel.Namespace+"/"+rel.Name] = true
			}
		}
	}
	return nil
}

// stackReleases turns releases into requirements.Releases named "<namespace>/<name>": all of
// them, and those used says are in use, both sorted by name.
func stackReleases(rels []csv1.ClusterStackRelease, used map[string]bool) (all, inUse []requirements.Release) {
	for i := range rels {
		rel := requirements.Release{Name: rels[i].Namespace + "/" + rels[i].Name, Requirements: rels[i].Status.Requirements}
		all = append(all, rel)
		if used[rel.Name] {
			inUse = append(inUse, rel)
		}
	}
	byName := func(rs []requirements.Release) {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	}
	byName(all)
	byName(inUse)
	return all, inUse
}

// applyFluxObjects decides what may be delivered and, when something may, applies the Flux
// objects for it, owned by the ManagementOperator, the GitRepository pinned to the commit Flux
// first fetched at the version's tag once that is known (opstatus.PinnedCommit). When
// spec.version is refused or held back nothing is written: the objects keep delivering what
// they delivered.
func (r *ManagementOperatorReconciler) applyFluxObjects(ctx context.Context, s *opScope) (ctrl.Result, error) {
	s.decision = opstatus.Decide(s.op, s.inUse)
	s.pinned = opstatus.PinnedCommit(s.op, s.decision.Target)
	if !s.decision.Apply {
		return ctrl.Result{}, nil
	}
	s.written = map[reflect.Type]client.Object{}
	for _, obj := range opgen.Objects(s.op, r.Namespace, s.decision.Target, s.pinned) {
		if _, err := r.Applier.Apply(ctx, s.op, obj); err != nil {
			return ctrl.Result{}, fmt.Errorf("ManagementOperator %s: apply %s %s/%s: %w", s.op.Name, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		s.written[reflect.TypeOf(obj)] = obj
	}
	return ctrl.Result{}, r.deleteUnusedSources(ctx, s)
}

// deleteUnusedSources deletes the sources of the operator's other source kind (its Git
// repository's GitRepository and HelmChart once it reads from an OCI repository, its
// OCIRepository once it reads from Git again), once the objects reading the new source are
// applied: they are the previous delivery's inputs only, and deleting a source changes nothing
// in the cluster. An object another controls is left alone.
func (r *ManagementOperatorReconciler) deleteUnusedSources(ctx context.Context, s *opScope) error {
	key := client.ObjectKey{Namespace: r.Namespace, Name: opgen.ObjectName(s.op.Name)}
	var unused []client.Object
	if opgen.UsesOCI(s.op) {
		unused = []client.Object{&sourcev1.GitRepository{}, &sourcev1.HelmChart{}}
	} else {
		unused = []client.Object{&sourcev1.OCIRepository{}}
	}
	for _, obj := range unused {
		got, err := getControlled(ctx, r.Client, key, obj, s.op)
		if err != nil {
			return err
		}
		if got == nil || reflect.ValueOf(got).IsNil() {
			continue
		}
		if err := r.Delete(ctx, got); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("ManagementOperator %s: delete the unused %s %s: %w", s.op.Name, kindOf(got), key, err)
		}
		r.Applier.Forget(kindOf(got), key)
	}
	return nil
}

// observeFluxObjects reads the operator's Flux objects back (those it controls; another's
// object of the same name counts as missing) and maps them to states.
func (r *ManagementOperatorReconciler) observeFluxObjects(ctx context.Context, s *opScope) (ctrl.Result, error) {
	key := client.ObjectKey{Namespace: r.Namespace, Name: opgen.ObjectName(s.op.Name)}
	var err error
	if opgen.UsesOCI(s.op) {
		if s.observed.OCIRepository, err = observeControlled(ctx, r.Client, key, &sourcev1.OCIRepository{}, s); err != nil {
			return ctrl.Result{}, err
		}
	} else if s.observed.GitRepository, err = observeControlled(ctx, r.Client, key, &sourcev1.GitRepository{}, s); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case opgen.UsesChart(s.op) && opgen.UsesOCI(s.op):
		if s.observed.HelmRelease, err = observeControlled(ctx, r.Client, key, &helmv2.HelmRelease{}, s); err != nil {
			return ctrl.Result{}, err
		}
	case opgen.UsesChart(s.op):
		if s.observed.HelmChart, err = observeControlled(ctx, r.Client, key, &sourcev1.HelmChart{}, s); err != nil {
			return ctrl.Result{}, err
		}
		if s.observed.HelmRelease, err = observeControlled(ctx, r.Client, key, &helmv2.HelmRelease{}, s); err != nil {
			return ctrl.Result{}, err
		}
	default:
		if s.observed.Kustomization, err = observeControlled(ctx, r.Client, key, &kustomizev1.Kustomization{}, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	s.objects = opstatus.States(s.op, s.decision.Target, s.pinned, s.observed)
	return ctrl.Result{}, nil
}

// observeControlled is getControlled of an object this reconcile may have written: a cached
// copy older than the write is judged at the written generation (atWrittenGeneration), which
// Flux has not observed, so that a Ready for the spec before is not taken for the new spec's.
func observeControlled[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T, s *opScope) (T, error) {
	got, err := getControlled(ctx, c, key, obj, s.op)
	if err != nil || reflect.ValueOf(got).IsNil() {
		return got, err
	}
	if w, ok := s.written[reflect.TypeOf(got)]; ok {
		atWrittenGeneration(got, w)
	}
	return got, nil
}

// getControlled reads an object controlled by owner; nil when it does not exist or another
// controls it.
func getControlled[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T, owner metav1.Object) (T, error) {
	var none T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		return none, fmt.Errorf("get %T %s: %w", obj, key, err)
	}
	if !metav1.IsControlledBy(obj, owner) {
		return none, nil
	}
	return obj, nil
}

// observeDeployments reads the Deployments the manifests created: those the Kustomization's
// inventory lists, or those helm-controller labelled with the HelmRelease in the namespace the
// chart is installed into (opstatus.HelmReleaseNamespace). Flux's labels alone prove nothing:
// anyone may put them on a Deployment of their own namespace, and one that never becomes
// available would hold every upgrade of the operator.
func (r *ManagementOperatorReconciler) observeDeployments(ctx context.Context, s *opScope) (ctrl.Result, error) {
	var deps []appsv1.Deployment
	switch {
	case s.observed.Kustomization != nil:
		for _, key := range opstatus.InventoryDeployments(s.observed.Kustomization) {
			d := appsv1.Deployment{}
			if err := r.Get(ctx, key, &d); err != nil {
				if apierrors.IsNotFound(err) {
					continue // not applied yet (or not labelled by kustomize-controller, so not cached)
				}
				return ctrl.Result{}, fmt.Errorf("get Deployment %s: %w", key, err)
			}
			deps = append(deps, d)
		}
	case s.observed.HelmRelease != nil:
		var reader client.Reader = r.Client
		if r.HelmDeployments != nil {
			reader = r.HelmDeployments
		}
		hr := s.observed.HelmRelease
		var list appsv1.DeploymentList
		if err := reader.List(ctx, &list, client.InNamespace(opstatus.HelmReleaseNamespace(hr)), client.MatchingLabels(opstatus.HelmReleaseSelector(hr))); err != nil {
			return ctrl.Result{}, fmt.Errorf("list Deployments of HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err)
		}
		deps = list.Items
	}
	sort.Slice(deps, func(i, j int) bool {
		return deps[i].Namespace+"/"+deps[i].Name < deps[j].Namespace+"/"+deps[j].Name
	})
	s.deployments = nil
	for i := range deps {
		s.deployments = append(s.deployments, opstatus.FromDeployment(&deps[i]))
	}
	return ctrl.Result{}, nil
}

// tagInterval is how often the source repository's tags are listed: the operator's interval.
func tagInterval(op *csv1.ManagementOperator) time.Duration {
	if op.Spec.Interval != nil && op.Spec.Interval.Duration > 0 {
		return op.Spec.Interval.Duration
	}
	return opgen.DefaultInterval
}

// listTags lists the source repository's version tags (OperatorTags: a listing keeps only
// those), with the credentials Secret of the management namespace, for availableUpdates and the
// check that the desired version's tag still points at its pinned commit. A listing at most one
// interval old is reused, unless it contradicts the pin: then one that started after the
// version's rollout began is asked for (the cache is shared with every ManagementOperator of the
// repository, and may predate the tag). A failure leaves availableUpdates as they were and
// TagVerified Unknown.
func (r *ManagementOperatorReconciler) listTags(ctx context.Context, s *opScope) (ctrl.Result, error) {
	git, oci := s.op.Spec.Source.Git, s.op.Spec.Source.OCI
	if (git == nil && oci == nil) || r.Tags == nil {
		return ctrl.Result{}, nil
	}
	sel, every, tag := OperatorTags(s.op), tagInterval(s.op), s.op.Tag(s.decision.Target)
	listing := func(notBefore time.Time) (TagListing, error) {
		if oci != nil {
			// Only the target's tag is resolved to its digest (a HEAD per tag and listing).
			return r.Tags.OCIListing(ctx, r.Namespace, oci.OCISource, sel, every, notBefore, tag)
		}
		return r.Tags.Listing(ctx, r.Namespace, csv1.StackSource{URL: git.URL, SecretRef: git.SecretRef}, sel, every, notBefore)
	}
	l, err := listing(time.Time{})
	if err == nil && s.pinned != "" && l.Refs[tag] != s.pinned {
		l, err = listing(rolloutStarted(s.op, s.decision.Target))
	}
	if err != nil {
		reason := csv1.ReasonTagListFailed
		if errors.Is(err, gitauth.ErrTooManyRefs) {
			reason = csv1.ReasonTagListTooLarge
		}
		s.tagsErr = &fluxstatus.Problem{Reason: reason, Message: redact.URLs(oneLine(err))}
		log.FromContext(ctx).Info("cannot list the tags of the operator's repository; availableUpdates are kept", "error", s.tagsErr.Message)
		return ctrl.Result{}, nil
	}
	s.tags, s.ignoredTags = l.Refs, l.Ignored
	if s.tags == nil {
		s.tags = map[string]string{} // listed, and there are none
	}
	return ctrl.Result{}, nil
}
