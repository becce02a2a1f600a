package webhooks

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// ClusterPath is the path the Cluster webhook is served on (controller-runtime's
// /validate-<group>-<version>-<kind>).
const ClusterPath = "/validate-cluster-x-k8s-io-v1beta2-cluster"

// The failure policy is Fail, and config/webhook adds matchConditions so that the API server
// only calls the webhook for requests the rules are about: creating a Cluster whose ClusterClass
// name has the shape of a release tag, or changing such a Cluster's ClusterClass or
// spec.topology.version. While the operator is down those requests are refused; every other
// write to a Cluster (of any Cluster, with or without a stack: CAPI's controllers, finalizers,
// deletion) never reaches the webhook. See docs/webhook.md.
//
// +kubebuilder:webhook:path=/validate-cluster-x-k8s-io-v1beta2-cluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=cluster.x-k8s.io,resources=clusters,verbs=create;update,versions=v1beta2,name=vcluster.clusterstack.io,admissionReviewVersions=v1,serviceName=clusterstack-webhook-service,serviceNamespace=clusterstack-system,timeoutSeconds=10
// +kubebuilder:webhookconfiguration:mutating=false,name=clusterstack-validating-webhook-configuration
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstackreleases,verbs=get;list;watch
// +kubebuilder:rbac:groups=clusterstack.io,resources=clusterstacks,verbs=get;list;watch

// ClusterValidator validates CAPI Clusters against the ClusterStackReleases their
// ClusterClasses are (see the package documentation for the rules).
type ClusterValidator struct {
	// Client reads ClusterStackReleases: the manager's cached client.
	Client client.Reader
	// APIReader, when set, is asked for a release the Client does not find, since the cache
	// may not have seen a release created a moment ago.
	APIReader client.Reader
	// Tags, when set, lists a stack repository's tags, to refuse a Cluster that uses a
	// release-shaped ClusterClass whose tag is not published.
	Tags TagLister
	// Now is the clock of the maintenance windows (tests); nil means time.Now.
	Now func() time.Time
}

// TagLister lists the release tags of a ClusterStack's repository (the operator's cached lister).
type TagLister interface {
	ReleaseTags(ctx context.Context, cs *csv1.ClusterStack, maxAge time.Duration) ([]string, error)
}

// tagListTimeout bounds the tag listing during admission (the webhook's own timeout is 10s).
const tagListTimeout = 5 * time.Second

var _ admission.Validator[*clusterv1.Cluster] = &ClusterValidator{}

// SetupClusterWebhookWithManager registers the Cluster webhook with the manager's webhook
// server, reading releases through the manager's cache.
func SetupClusterWebhookWithManager(mgr ctrl.Manager, tags TagLister) error {
	return ctrl.NewWebhookManagedBy(mgr, &clusterv1.Cluster{}).
		WithValidator(&ClusterValidator{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Tags: tags}).
		WithValidatorCustomPath(ClusterPath).
		Complete()
}

// ValidateCreate checks a new Cluster.
func (v *ClusterValidator) ValidateCreate(ctx context.Context, c *clusterv1.Cluster) (admission.Warnings, error) {
	ns, name := ClassRef(c)
	rel, err := v.release(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	errs, warnings := ValidateClusterCreate(c, rel)
	if rel == nil {
		e, w := v.unpublished(ctx, c)
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	return warnings, invalid(c, errs)
}

// unpublished checks a Cluster whose ClusterClass is a release-shaped name with no release: if
// a ClusterStack of the Cluster's namespace would deliver it, its tag must be published.
func (v *ClusterValidator) unpublished(ctx context.Context, c *clusterv1.Cluster) (field.ErrorList, []string) {
	ns, name := ClassRef(c)
	parsed, err := releasename.Parse(name)
	if v.Tags == nil || ns != c.Namespace || err != nil {
		return nil, nil
	}
	var stacks csv1.ClusterStackList
	if err := v.Client.List(ctx, &stacks, client.InNamespace(ns)); err != nil {
		return nil, []string{fmt.Sprintf("cannot check that release %s is published: list ClusterStacks: %v", name, err)}
	}
	for i := range stacks.Items {
		cs := &stacks.Items[i]
		if cs.Spec.Provider != parsed.Provider || cs.Spec.Name != parsed.Name || cs.Spec.KubernetesVersion != parsed.KubernetesMinor() {
			continue
		}
		maxAge := 5 * time.Minute
		if cs.Spec.Interval != nil && cs.Spec.Interval.Duration > 0 {
			maxAge = cs.Spec.Interval.Duration
		}
		tctx, cancel := context.WithTimeout(ctx, tagListTimeout)
		tags, err := v.Tags.ReleaseTags(tctx, cs, maxAge)
		cancel()
		if err != nil {
			return nil, []string{fmt.Sprintf("cannot check that tag %s of ClusterStack %s is published (%s); the Cluster is admitted and its ClusterAddon reports what it finds", name, cs.Name, redact.URLs(err.Error()))}
		}
		if errs := ValidateUnpublishedRelease(c, cs, tags); len(errs) > 0 {
			// The tag may have been pushed a moment ago: list again once before refusing.
			if f, ok := v.Tags.(interface {
				Forget(string, csv1.StackSource)
			}); ok {
				f.Forget(ns, cs.Spec.Source)
				tctx, cancel := context.WithTimeout(ctx, tagListTimeout)
				tags, err = v.Tags.ReleaseTags(tctx, cs, maxAge)
				cancel()
				if err == nil {
					errs = ValidateUnpublishedRelease(c, cs, tags)
				}
			}
			return errs, nil
		}
	}
	return nil, nil
}

// ValidateUpdate checks an update of a Cluster; only updates of its ClusterClass or
// spec.topology.version read anything.
func (v *ClusterValidator) ValidateUpdate(ctx context.Context, old, updated *clusterv1.Cluster) (admission.Warnings, error) {
	if !ClassOrVersionChanged(old, updated) {
		return nil, nil
	}
	ns, name := ClassRef(updated)
	newRel, err := v.release(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	var oldRel *csv1.ClusterStackRelease
	// The old release matters only for a move between two releases of the Cluster's namespace.
	if oldNS, oldName := ClassRef(old); newRel != nil && ns == updated.Namespace && oldNS == old.Namespace && oldName != name {
		if oldRel, err = v.release(ctx, oldNS, oldName); err != nil {
			return nil, err
		}
	}
	errs, warnings := ValidateClusterUpdate(old, updated, oldRel, newRel)
	if len(errs) == 0 && oldRel != nil && newRel != nil && oldRel.Name != newRel.Name && newRel.Spec.ClusterStack != "" {
		cs := &csv1.ClusterStack{}
		if err := v.Client.Get(ctx, client.ObjectKey{Namespace: newRel.Namespace, Name: newRel.Spec.ClusterStack}, cs); client.IgnoreNotFound(err) != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("read ClusterStack %s/%s: %w", newRel.Namespace, newRel.Spec.ClusterStack, err))
		} else if err == nil {
			now := time.Now
			if v.Now != nil {
				now = v.Now
			}
			errs = append(errs, ValidateMoveTiming(updated, oldRel, newRel, cs, now())...)
		}
	}
	if newRel == nil {
		if oldNS, oldName := ClassRef(old); oldNS != ns || oldName != name {
			e, w := v.unpublished(ctx, updated)
			errs, warnings = append(errs, e...), append(warnings, w...)
		}
	}
	return warnings, invalid(updated, errs)
}

// ValidateDelete allows every deletion (the webhook is not registered for it).
func (v *ClusterValidator) ValidateDelete(context.Context, *clusterv1.Cluster) (admission.Warnings, error) {
	return nil, nil
}

// release returns the ClusterStackRelease namespace/name, nil when there is none.
func (v *ClusterValidator) release(ctx context.Context, namespace, name string) (*csv1.ClusterStackRelease, error) {
	if name == "" {
		return nil, nil
	}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	rel := &csv1.ClusterStackRelease{}
	err := v.Client.Get(ctx, key, rel)
	if apierrors.IsNotFound(err) && v.APIReader != nil {
		err = v.APIReader.Get(ctx, key, rel)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("read ClusterStackRelease %s: %w", key, err))
	}
	return rel, nil
}

func invalid(c *clusterv1.Cluster, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(clusterv1.GroupVersion.WithKind("Cluster").GroupKind(), c.Name, errs)
}
