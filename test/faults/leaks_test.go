package faults

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/clusterstack-io/clusterstack-operator/test/leakscan"
)

// secretWatch collects the values of every Secret of the management cluster from BeforeSuite on
// (the API server restarts in between are survived: the watch lists again).
var secretWatch *leakscan.Watcher

// startSecretWatch starts secretWatch; BeforeSuite calls it once the plane is up.
func startSecretWatch(ctx context.Context) {
	GinkgoHelper()
	var err error
	secretWatch, err = leakscan.Watch(ctx, pl.Config())
	Expect(err).NotTo(HaveOccurred())
}

// secretLeaks looks for every Secret value seen during the suite in the objects the operator
// generated or reports status on, in Events and in the logs of its replicas, and stops the watch.
// AfterSuite calls it before the plane stops, and checks the result after.
func secretLeaks() (leakscan.Report, error) {
	if secretWatch == nil {
		return leakscan.Report{}, nil // BeforeSuite failed before the watch started
	}
	defer secretWatch.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := leakscan.Scan(ctx, secretWatch.Needles(), k8s, pl.OperatorLogFiles())
	GinkgoWriter.Println(r.Summary())
	return r, err
}
