package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// graceSampling is how often a graceWatch reads the Degraded condition.
const graceSampling = 250 * time.Millisecond

// graceMaxGap is the longest a graceWatch may go without a sample of the fault within the grace
// period: a longer gap (a slow API server) leaves part of the window unwatched.
const graceMaxGap = 5 * time.Second

// degradedSample is one reading of a subject's Degraded condition.
type degradedSample struct {
	at time.Time
	// ofFault: the status read describes the fault (e.g. it names the release the spec moved the
	// Cluster to); a status from before the fault may still be Degraded for another reason.
	ofFault bool
	status  metav1.ConditionStatus
	message string
}

// graceWatch checks that a subject becomes Degraded only once the grace period passed after a
// fault the spec caused: it reads the subject's Degraded condition from the API server every
// graceSampling, from before the fault until Check.
type graceWatch struct {
	what string
	stop func() []degradedSample
}

// watchGrace starts sampling what's Degraded condition, read by read; call it before causing the
// fault. read returns the condition (nil when there is none yet), whether the status it was read
// from describes the fault, and an error when the subject could not be read (no sample then).
func watchGrace(ctx context.Context, what string, read func(context.Context) (*metav1.Condition, bool, error)) *graceWatch {
	return &graceWatch{what: what, stop: sampleEvery(ctx, graceSampling, func() (degradedSample, bool) {
		c, ofFault, err := read(ctx)
		if err != nil {
			return degradedSample{}, false
		}
		s := degradedSample{at: time.Now(), ofFault: ofFault, status: metav1.ConditionUnknown}
		if c != nil {
			s.status, s.message = c.Status, c.Message
		}
		return s, true
	})}
}

// Check stops the sampling and fails the spec when the subject was Degraded before fault + grace
// − 1 s (a condition's time keeps whole seconds, so the operator's clock may start up to a second
// early), or when the samples of the fault do not cover that window: none before its end, a gap
// longer than graceMaxGap, or none after it. fault is when the request that caused the fault was
// sent. Call Check once the spec saw the subject Degraded.
func (w *graceWatch) Check(fault time.Time) {
	GinkgoHelper()
	end := fault.Add(grace - time.Second)
	var prev time.Time
	within, after := 0, 0
	for _, s := range w.stop() {
		if !s.ofFault || s.at.Before(fault) {
			continue
		}
		if !s.at.Before(end) {
			after++
			if !prev.IsZero() && prev.Before(end) {
				Expect(end.Sub(prev)).To(BeNumerically("<=", graceMaxGap), "%s: no sample from %s to the end of the grace period", w.what, prev.Sub(fault).Round(time.Millisecond))
			}
			prev = s.at
			continue
		}
		within++
		Expect(s.status).NotTo(Equal(metav1.ConditionTrue), "%s was Degraded %s after the fault, within the grace period of %s: %s",
			w.what, s.at.Sub(fault).Round(time.Millisecond), grace, s.message)
		if !prev.IsZero() {
			Expect(s.at.Sub(prev)).To(BeNumerically("<=", graceMaxGap), "%s: no sample from %s to %s after the fault",
				w.what, prev.Sub(fault).Round(time.Millisecond), s.at.Sub(fault).Round(time.Millisecond))
		}
		prev = s.at
	}
	Expect(within).To(BeNumerically(">", 0), "%s: no sample of the fault within the grace period", w.what)
	Expect(after).To(BeNumerically(">", 0), "%s: no sample of the fault after the grace period (Check comes once Degraded was seen)", w.what)
	GinkgoWriter.Printf("%s: not Degraded in %d samples within the grace period after the fault\n", w.what, within)
}

// addonDegraded reads the Degraded condition of ClusterAddon ns/name; the status describes the
// fault once it names release (the desired release, tagPrefix+v) when v is not empty.
func addonDegraded(ns, name, v string) func(context.Context) (*metav1.Condition, bool, error) {
	return func(ctx context.Context) (*metav1.Condition, bool, error) {
		a := &csv1.ClusterAddon{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
			return nil, false, err
		}
		return apimeta.FindStatusCondition(a.Status.Conditions, csv1.DegradedCondition), v == "" || a.Status.DesiredRelease == tagPrefix+v, nil
	}
}
