package localinfra

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/clusterstack-io/clusterstack-operator/internal/fluxstatus"
)

// ImageGVK is the OpenStack Resource Controller's (ORC) Image, the machine image an OpenStack
// stack's cluster-class creates; the plane serves a stand-in CRD for it.
var ImageGVK = schema.GroupVersionKind{Group: "openstack.k-orc.cloud", Version: "v1alpha1", Kind: "Image"}

// Annotations of a stand-in Image that steer the ImageReconciler.
const (
	// ImageReadyAfterAnnotation is how long after its creation the image is uploaded (a Go
	// duration; DefaultImageReadyAfter when absent or invalid).
	ImageReadyAfterAnnotation = "localinfra.clusterstack.io/image-ready-after"
	// ImageFailAnnotation makes the image fail for good, with its value as the message (an
	// upload that cannot succeed: a URL that is not found, say). Removing it lets the image be
	// uploaded.
	ImageFailAnnotation = "localinfra.clusterstack.io/image-fail"
	// DefaultImageReadyAfter is how long an upload takes by default.
	DefaultImageReadyAfter = 3 * time.Second
)

// ImageReconciler plays ORC for stand-in Images, by its status conventions: while the image is
// uploaded, Progressing is True and Available False; once it is, Available is True and
// Progressing False; an upload that fails for good leaves both False with ORC's terminal reason.
// No cloud is called. It is a stand-in, like the rest of localinfra.
type ImageReconciler struct {
	client.Client
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// SetupWithManager registers the reconciler for Images.
func (r *ImageReconciler) SetupWithManager(mgr ctrl.Manager) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ImageGVK)
	return ctrl.NewControllerManagedBy(mgr).For(u).Named("localinfra-image").
		// Several planes may run in one test process.
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// ORC's condition types and reasons.
const (
	imageAvailable   = "Available"
	imageProgressing = "Progressing"
	reasonSuccess    = "Success"
	reasonProgress   = "Progressing"
	reasonInvalid    = "InvalidConfiguration"
)

// Reconcile moves one Image along its upload.
func (r *ImageReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ImageGVK)
	if err := r.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !u.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	readyAfter := DefaultImageReadyAfter
	if d, err := time.ParseDuration(u.GetAnnotations()[ImageReadyAfterAnnotation]); err == nil && d >= 0 {
		readyAfter = d
	}
	url, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "content", "download", "url")
	gen := u.GetGeneration()
	var available, progressing metav1.Condition
	var requeue time.Duration
	switch left := u.GetCreationTimestamp().Add(readyAfter).Sub(now); {
	case u.GetAnnotations()[ImageFailAnnotation] != "":
		msg := u.GetAnnotations()[ImageFailAnnotation]
		available = metav1.Condition{Type: imageAvailable, Status: metav1.ConditionFalse, Reason: reasonInvalid, Message: msg, ObservedGeneration: gen}
		progressing = metav1.Condition{Type: imageProgressing, Status: metav1.ConditionFalse, Reason: reasonInvalid, Message: msg, ObservedGeneration: gen}
	case left > 0:
		available = metav1.Condition{Type: imageAvailable, Status: metav1.ConditionFalse, Reason: reasonProgress, Message: "Waiting for the image to be uploaded", ObservedGeneration: gen}
		progressing = metav1.Condition{Type: imageProgressing, Status: metav1.ConditionTrue, Reason: reasonProgress,
			Message: fmt.Sprintf("Uploading the image from %s", url), ObservedGeneration: gen}
		requeue = left
	default:
		available = metav1.Condition{Type: imageAvailable, Status: metav1.ConditionTrue, Reason: reasonSuccess, Message: "OpenStack resource is available", ObservedGeneration: gen}
		progressing = metav1.Condition{Type: imageProgressing, Status: metav1.ConditionFalse, Reason: reasonSuccess, Message: "OpenStack resource is up to date", ObservedGeneration: gen}
	}
	conds := fluxstatus.ConditionsOf(u)
	before := append([]metav1.Condition(nil), conds...)
	apimeta.SetStatusCondition(&conds, available)
	apimeta.SetStatusCondition(&conds, progressing)
	if !equality.Semantic.DeepEqual(before, conds) {
		raw := make([]any, 0, len(conds))
		for _, c := range conds {
			raw = append(raw, map[string]any{
				"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
				"observedGeneration": c.ObservedGeneration, "lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
			})
		}
		if err := unstructured.SetNestedSlice(u.Object, raw, "status", "conditions"); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Status().Update(ctx, u); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}
