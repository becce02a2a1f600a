package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/clusterstack-io/clusterstack-operator/test/leakscan"
)

// secretWatch collects the values of every Secret of the management cluster from BeforeSuite on,
// so that the end-of-suite scan still looks for the kubeconfigs of Clusters deleted long before.
var secretWatch *leakscan.Watcher

// startSecretWatch starts secretWatch; BeforeSuite calls it once the plane is up.
func startSecretWatch(ctx context.Context) {
	GinkgoHelper()
	var err error
	secretWatch, err = leakscan.Watch(ctx, pl.Config())
	Expect(err).NotTo(HaveOccurred())
}

// expectNoSecretLeaked checks that no Secret value seen so far appears in an object the operator
// generated or owns the status of, in an Event, or (withLog) in the log of any operator process
// of the plane (its replicas and the shards' instances). Without the log it is the check made
// before the Clusters of a finished container are deleted, with their generated objects; the
// logs are scanned at the end of the suite, for every value seen during it.
func expectNoSecretLeaked(ctx context.Context, withLog bool) {
	GinkgoHelper()
	var logs []string
	if withLog {
		logs = pl.OperatorLogFiles()
		Expect(logs).NotTo(BeEmpty(), "the plane lists no operator log")
	}
	needles := secretWatch.Needles()
	if sc, _ := GinkgoConfiguration(); len(needles) == 0 && (len(sc.FocusStrings) > 0 || len(sc.FocusFiles) > 0 || sc.LabelFilter != "") {
		// A focused run's specs may make no Secret at all; the whole suite always makes some,
		// and an empty scan of it fails (leakscan.Scan).
		GinkgoWriter.Println("leak scan: the focused specs made no Secret, so there is nothing to look for")
		return
	}
	r, err := leakscan.Scan(ctx, needles, k8s, logs)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Println(r.Summary())
	Expect(r.Leaks).To(BeEmpty(), r.Summary())
}
