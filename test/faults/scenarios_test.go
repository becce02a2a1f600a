package faults

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/bootstrap/faultproxy"
	"github.com/clusterstack-io/clusterstack-operator/bootstrap/plane"
)

// fluxOutageBound bounds how long each Flux controller stays stopped in scenario 2: it is
// started again once a ClusterAddon was Degraded after the grace period.
const fluxOutageBound = grace + 3*time.Minute

// faultWindow is how long scenario 7 injects latency and errors.
const faultWindow = time.Minute

// quietWindow is how long scenario 5 watches for writes after the operator reconnected: a
// minute, and at least twice the longest period the operator acts on by itself here (the
// ClusterStack's interval, which also paces each release's tag check; its other requeues
// follow grace periods, and nothing is unhealthy).
var quietWindow = max(time.Minute, 2*stackInterval)

// wait blocks for d (the length of an injected fault: nothing to poll for), or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func all(string) bool { return true }

var _ = Describe("Faults", Ordered, func() {
	It("1. survives the operator killed with SIGKILL at random points of an upgrade of the fleet, five seeds", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "1. operator killed (SIGKILL, all replicas) at random points of an upgrade", Runs: 5}
		began := time.Now()
		var kills int
		var worst time.Duration
		for run := range 5 {
			r := rng(100 + uint64(run))
			from, to := fl.version, fl.nextVersion()
			start := time.Now()
			fmt.Fprintf(GinkgoWriter, "run %d (stream %d of seed %d): %s -> %s\n", run+1, 100+run, seed, from, to)
			k := startKiller(ctx, r, 3, 45*time.Second, 6*time.Second)
			fl.addVersion(ctx, to)
			fl.moveAll(ctx, to, r, nil)
			fl.waitConverged(ctx, 10*time.Minute)
			fl.dropVersion(ctx, from)
			k.Wait()
			kills += k.kills
			fl.waitConverged(ctx, 10*time.Minute)
			took := time.Since(start)
			fmt.Fprintf(GinkgoWriter, "run %d: rollout with %d kills converged in %s\n", run+1, k.kills, took.Round(time.Second))
			worst = max(worst, took)
			row.add(fl.check(ctx))
			row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: k.firstKill, movedAt: fl.movedAt}))
		}
		row.Injected = fmt.Sprintf("%d SIGKILLs of both replicas, each restarted after a random pause of up to 6 s", kills)
		row.Converge = "≤ " + worst.Round(time.Second).String() + " per rollout, kills included"

		By(fmt.Sprintf("the other scenarios run on %d of the Clusters (the others are deleted: every generated object goes)", laterFleet))
		fl.shrink(ctx, laterFleet)
		row.Took = time.Since(began)
		report.Add(row)
	})

	It("2. keeps the delivered state and reports Progressing while each Flux controller is stopped in the middle of a rollout", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "2. Flux controllers stopped one at a time, mid-rollout, until a Cluster is Degraded", Runs: 3}
		began := time.Now()
		var worst time.Duration
		var msgs, outages []string
		for i, ctl := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
			r := rng(200 + uint64(i))
			from, to := fl.version, fl.nextVersion()
			fl.addVersion(ctx, to)
			start := time.Now()
			var down time.Time
			var inFlight map[string]bool
			fl.moveAll(ctx, to, r, func() {
				Expect(pl.StopFlux(ctl)).To(Succeed())
				down = time.Now()
				if ctl == "helm-controller" {
					inFlight = fl.upgradesInFlight(ctx)
					fmt.Fprintf(GinkgoWriter, "Helm upgrades in flight when helm-controller stopped: %v\n", slices.Sorted(maps.Keys(inFlight)))
				}
			})
			// Stopped until a ClusterAddon is Degraded, which it may be only a grace period after
			// the controller stopped.
			var deg statusSample
			Eventually(ctx, func() (ok bool) {
				deg, ok = findDegraded(fl.status.Since(down), down, "ClusterAddon", all)
				return ok
			}).WithTimeout(fluxOutageBound).Should(BeTrue(), "a ClusterAddon is Degraded after the grace period while %s is stopped", ctl)
			Expect(seenProgressing(fl.status.Since(down), all)).To(BeTrue(), "ClusterAddons are Progressing while %s is down", ctl)
			msgs = append(msgs, fmt.Sprintf("%s: %q", ctl, deg.Msg))
			Expect(pl.StartFlux(ctx, ctl)).To(Succeed())
			up := time.Now()
			outages = append(outages, up.Sub(down).Round(time.Second).String())
			took := fl.waitConverged(ctx, 8*time.Minute)
			fmt.Fprintf(GinkgoWriter, "%s down for %s; converged %s after it was back\n", ctl, up.Sub(down).Round(time.Second), took.Round(time.Second))
			worst = max(worst, took)
			if ctl == "helm-controller" {
				fmt.Fprintf(GinkgoWriter, "Helm upgrades run again after helm-controller was stopped in them: %v\n", fl.acceptInterruptedUpgrades(ctx, inFlight))
			}
			fl.dropVersion(ctx, from)
			row.add(fl.check(ctx))
			row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: down, movedAt: fl.movedAt, stopped: ctl}))
		}
		fmt.Fprintf(GinkgoWriter, "Degraded after the grace period: %s\n", strings.Join(msgs, "; "))
		row.Injected = fmt.Sprintf("source-, kustomize-, helm-controller each stopped (SIGTERM) after half the fleet moved, started again once a ClusterAddon was Degraded (down %s)", strings.Join(outages, ", "))
		row.Converge = "≤ " + worst.Round(time.Second).String() + " after the controller returned"
		row.Took = time.Since(began)
		report.Add(row)
	})

	It("3. keeps releases and delivered state while the Git server is down during discovery and during a rollout, and recovers", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "3. Git server down during discovery and during a rollout", Runs: 1}
		began := time.Now()
		r := rng(300)
		from, to := fl.version, fl.nextVersion()
		gitAddr := strings.TrimPrefix(pl.Git().URL(), "http://")
		namesGit := func(s statusSample) bool { return strings.Contains(s.Msg, gitAddr) }

		By("discovery: a new version is added while the Git server is down")
		start := time.Now()
		Expect(pl.StopGit()).To(Succeed())
		down := time.Now()
		pin(ctx, from, to)
		var deg statusSample
		Eventually(ctx, func(g Gomega) {
			for _, kind := range []string{"ClusterStack", "ClusterStackRelease"} {
				for _, s := range fl.status.Since(down) {
					if s.Kind == kind && s.Degraded == metav1.ConditionTrue && s.At.Sub(down) >= grace && namesGit(s) {
						deg = s
						return
					}
				}
			}
			g.Expect(false).To(BeTrue(), "the ClusterStack or the new release is Degraded, naming the Git server %s, after the grace period", gitAddr)
		}).WithTimeout(grace + 3*time.Minute).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "while Git was down: %s\n", deg)
		Expect(fl.getRelease(ctx, from).DeletionTimestamp).To(BeNil(), "release %s is kept", releaseOf(from))
		Expect(pl.StartGit()).To(Succeed())
		// Recovers by itself: the new release, and the fleet's, whose GitRepository failed its
		// interval fetches meanwhile.
		fl.waitRelease(ctx, to)
		fl.waitReleasesReady(ctx)
		fl.waitStackSettled(ctx)
		row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: down, movedAt: fl.movedAt}))

		By("rollout: the Git server goes down after half the fleet moved")
		start = time.Now()
		fl.moveAll(ctx, to, r, func() {
			Expect(pl.StopGit()).To(Succeed())
			down = time.Now()
		})
		took := fl.waitConverged(ctx, 8*time.Minute)
		Eventually(ctx, func() (ok bool) {
			for _, s := range fl.status.Since(down) {
				if s.Kind == "ClusterStackRelease" && s.Degraded == metav1.ConditionTrue && s.At.Sub(down) >= grace && namesGit(s) {
					deg, ok = s, true
					return ok
				}
			}
			return false
		}).WithTimeout(grace+3*time.Minute).Should(BeTrue(), "release %s is Degraded naming the Git server after the grace period", releaseOf(to))
		fmt.Fprintf(GinkgoWriter, "while Git was down during the rollout: %s\n", deg)
		Expect(fl.getRelease(ctx, to).DeletionTimestamp).To(BeNil())
		row.add(fl.check(ctx))
		Expect(pl.StartGit()).To(Succeed())
		fl.waitRelease(ctx, to)
		fl.dropVersion(ctx, from)
		fl.waitReleasesReady(ctx)
		row.add(fl.check(ctx))
		row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: down, movedAt: fl.movedAt}))
		row.Injected = "Git server stopped (connections refused) while a version was added, and after half the fleet moved"
		row.Converge = took.Round(time.Second).String() + " (rollout converged with Git down); releases Ready again once it returned"
		row.Took = time.Since(began)
		report.Add(row)
	})

	It("6. hands over to the other replica when the leader is killed mid-rollout, and the webhook keeps answering", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "6. two replicas, leader killed mid-rollout", Runs: 1}
		began := time.Now()
		r := rng(600)
		from, to := fl.version, fl.nextVersion()
		fl.addVersion(ctx, to)
		lease := leaderLease(ctx)
		leader, err := pl.OperatorLeader(ctx)
		Expect(err).NotTo(HaveOccurred())
		probe := startWebhookProbe(ctx, fl.clusters[0])
		start := time.Now()
		var killed time.Time
		fl.moveAll(ctx, to, r, func() {
			Expect(pl.KillOperatorReplica(leader)).To(Succeed())
			killed = time.Now()
		})
		// The killed leader's last renewal is the RenewTime the lease keeps once it is dead (read
		// after the kill: a renewal between a read before it and the kill would lengthen the
		// measured takeover by a retry period), raised if a renewal still in flight at the kill
		// lands later.
		lastRenew := leaderLease(ctx).Spec.RenewTime.Time
		var acquired time.Time
		Eventually(ctx, func(g Gomega) {
			l := leaderLease(ctx)
			if *l.Spec.HolderIdentity == *lease.Spec.HolderIdentity {
				if t := l.Spec.RenewTime.Time; t.After(lastRenew) {
					lastRenew = t
				}
			}
			g.Expect(*l.Spec.HolderIdentity).NotTo(Equal(*lease.Spec.HolderIdentity), "a new leader holds the lease")
			acquired = l.Spec.AcquireTime.Time
		}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		newLeader, err := pl.OperatorLeader(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(newLeader).NotTo(Equal(leader))
		took := fl.waitConverged(ctx, 8*time.Minute)
		total, ok, failed := probe.Stop()
		// A call in flight on a connection to the replica at the instant it is killed fails, as
		// it would through a Service; every later one must be answered by the other replica.
		late := failuresAfter(failed, killed.Add(2*time.Second))
		Expect(late).To(BeEmpty(), "the webhook answered every request after the leader's death (%d probes failed at the kill itself)", len(failed)-len(late))
		Expect(ok).To(BeNumerically(">", 0))
		takeover := acquired.Sub(lastRenew)
		fmt.Fprintf(GinkgoWriter, "leader replica %d killed %s after its last renewal; replica %d acquired the lease %s after that renewal (lease duration %s); webhook probes: %d, answered by the webhook %d, failed %d (%v)\n",
			leader, killed.Sub(lastRenew).Round(time.Millisecond), newLeader, takeover.Round(time.Millisecond), leaseDuration, total, ok, len(failed), failed)
		// Never two leaders: the standby acquires only once the lease has expired, counted from
		// the moment it saw the last renewal (which is after that renewal; a millisecond for the
		// lease's microsecond times).
		Expect(acquired).To(BeTemporally(">=", lastRenew.Add(leaseDuration-time.Millisecond)), "the other replica acquired the lease only after it expired")
		// client-go polls the lease every retry period stretched by up to JitterFactor (1.2): the
		// standby sees the last renewal up to one such period after it, and acquires up to one
		// such period after the lease expired; 2 s more for the API round trips on a busy machine.
		jittered := time.Duration(float64(retryPeriod) * (1 + leaderelection.JitterFactor))
		Expect(takeover).To(BeNumerically("<=", leaseDuration+2*jittered+2*time.Second), "the other replica takes over within the lease duration (and its jittered retry period)")
		Expect(pl.StartOperatorReplica(ctx, leader)).To(Succeed())
		fl.dropVersion(ctx, from)
		row.add(fl.check(ctx))
		row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: killed, movedAt: fl.movedAt}))
		row.Injected = fmt.Sprintf("leader SIGKILLed after half the fleet moved; takeover %s after its last renewal (lease %s); %d webhook probes, %d failed within 2 s of the kill, %d after",
			takeover.Round(100*time.Millisecond), leaseDuration, total, len(failed)-len(late), len(late))
		row.Converge = took.Round(time.Second).String()
		row.Took = time.Since(began)
		report.Add(row)
	})

	It("7. backs off and converges while its API answers slowly and with 5xx and 429", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "7. slow and flaky API (fault proxy)", Runs: 1}
		began := time.Now()
		r := rng(700)
		from, to := fl.version, fl.nextVersion()
		fl.addVersion(ctx, to)
		proxy := pl.APIProxy()
		proxy.ResetCounts()
		faults := faultproxy.Faults{Latency: 50 * time.Millisecond, Jitter: 250 * time.Millisecond, ErrorRate: 0.25, Codes: []int{500, 503, 429}, Seed: int64(seed % (1 << 62))}
		start := time.Now()
		proxy.Inject(faults)
		fl.moveAll(ctx, to, r, nil)
		wait(ctx, faultWindow-time.Since(start))
		proxy.Clear()
		counts := proxy.Counts()
		took := fl.waitConverged(ctx, 8*time.Minute)
		fmt.Fprintf(GinkgoWriter, "fault window: %d requests, %d answered with an injected error; converged %s after the faults ended\n", counts.Total, counts.Injected, took.Round(time.Second))
		Expect(counts.Injected).To(BeNumerically(">", 0))
		fl.dropVersion(ctx, from)
		row.add(fl.check(ctx))
		row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: start, movedAt: fl.movedAt}))
		row.Injected = fmt.Sprintf("%s of 50-300 ms latency and 25%% errors (500/503/429): %d of %d requests failed", faultWindow, counts.Injected, counts.Total)
		row.Converge = took.Round(time.Second).String() + " after the faults ended"
		row.Took = time.Since(began)
		report.Add(row)
	})

	It("5. reconnects without writing anything after the management API server restarts, and starts again without writing anything", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "5. management API server restarted (etcd kept), then the operator killed and started", Runs: 1}
		began := time.Now()
		fl.waitConverged(ctx, time.Minute)
		before := fl.valuesData(ctx)
		start := time.Now()
		Expect(pl.RestartAPIServer(ctx)).To(Succeed())
		up := time.Now()
		// A process that starts with everything converged reads it all (its caches are new: every
		// object passes the cache's transforms on the first list) and must find nothing to write.
		Expect(pl.StopOperator(true)).To(Succeed())
		Expect(pl.StartOperator(ctx)).To(Succeed())
		restarted := time.Now()
		// Reconnected: a new process holds the lease, acquired after the restart, and has renewed
		// it since.
		var holder string
		Eventually(ctx, func(g Gomega) {
			l := &coordinationv1.Lease{}
			g.Expect(k8s.Get(ctx, leaseKey, l)).To(Succeed())
			g.Expect(l.Spec.AcquireTime.Time).To(BeTemporally(">", restarted.Add(-2*time.Second)))
			g.Expect(l.Spec.RenewTime.Time).To(BeTemporally(">", l.Spec.AcquireTime.Add(2*retryPeriod)))
			holder = *l.Spec.HolderIdentity
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		reconnected := time.Now()
		// The API server's audit log records every write of the operator's ServiceAccount, with
		// the object: besides its lease (and the Event leader election records on taking it), the
		// operator writes nothing (no status, no Flux object, no ConfigMap, no Event) when nothing
		// changed, from the moment the API server is back, through the new process's start.
		var writes []plane.AuditedWrite
		Consistently(ctx, func(g Gomega) {
			got, err := pl.AuditedWrites(up)
			g.Expect(err).NotTo(HaveOccurred())
			if writes = slices.DeleteFunc(got, isLeaderElection); len(writes) == 0 {
				return
			}
			// Each status write names what it changed since the write before it.
			all, err := pl.AuditedWrites(time.Time{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(writes).To(BeEmpty(), "the operator's writes (besides its lease) since the API server was back at %s:\n%s",
				up.Format("15:04:05.000"), plane.DescribeWrites(slices.DeleteFunc(all, isLeaderElection), up))
		}).WithTimeout(quietWindow).WithPolling(2 * time.Second).Should(Succeed())
		renewals, err := pl.AuditedWrites(reconnected)
		Expect(err).NotTo(HaveOccurred())
		Expect(slices.ContainsFunc(renewals, isLeaseRenewal)).To(BeTrue(), "the audit log records the operator's lease renewals (the witness works)")
		fmt.Fprintf(GinkgoWriter, "API server down %s; operator (%s) started again and leading %s later; in the %s after: %d writes besides its lease\n",
			up.Sub(start).Round(time.Millisecond), holder, reconnected.Sub(up).Round(time.Millisecond), quietWindow, len(writes))
		Expect(fl.valuesData(ctx)).To(Equal(before), "the values ConfigMaps' data did not change")
		row.add(fl.check(ctx))
		row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: start, movedAt: fl.movedAt}))
		row.Injected = fmt.Sprintf("kube-apiserver stopped and started again (down %s); then every operator replica killed (SIGKILL) and started", up.Sub(start).Round(time.Second))
		row.Converge = fmt.Sprintf("a new leader %s after; 0 writes but its lease from the API server's return through the %s after (audit log)", reconnected.Sub(up).Round(time.Second), quietWindow)
		row.Took = time.Since(began)
		report.Add(row)
	})

	It("4. keeps the rest of the fleet converging while one workload API server is down, and deletes that Cluster without hanging", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "4. one workload API server down, then its Cluster deleted", Runs: 1}
		began := time.Now()
		r := rng(400)
		from, to := fl.version, fl.nextVersion()
		fl.addVersion(ctx, to)
		victim := fl.clusters[r.IntN(len(fl.clusters))]
		others := slices.DeleteFunc(slices.Clone(fl.clusters), func(c string) bool { return c == victim })
		start := time.Now()
		Expect(pl.StopWorkloadAPIServer(ns, victim)).To(Succeed())
		down := time.Now()
		fmt.Fprintf(GinkgoWriter, "workload API server of Cluster %s stopped\n", victim)
		fl.moveAll(ctx, to, r, nil)
		took := fl.waitConvergedOf(ctx, others, 8*time.Minute)
		Eventually(ctx, func() bool {
			_, ok := findDegraded(fl.status.Since(down), down, "ClusterAddon", is(victim))
			return ok
		}).WithTimeout(grace+3*time.Minute).Should(BeTrue(), "ClusterAddon %s is Degraded after the grace period", victim)
		deg := expectDegradedSeen(fl.status.Since(down), down, "ClusterAddon", is(victim))
		fmt.Fprintf(GinkgoWriter, "the down Cluster: %s\n", deg)
		for _, s := range fl.status.Since(start) {
			if s.Kind == "ClusterAddon" && s.Name != victim {
				Expect(s.Degraded).NotTo(Equal(metav1.ConditionTrue), "only the down Cluster's ClusterAddon goes Degraded: %s", s)
			}
		}

		By("deleting the Cluster whose API server is down")
		deleted := time.Now()
		Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: objectMeta(victim)})).To(Succeed())
		expectClusterGone(ctx, victim, 4*time.Minute)
		deleteTook := time.Since(deleted)
		fmt.Fprintf(GinkgoWriter, "Cluster %s deleted %s after the request, its API server down\n", victim, deleteTook.Round(time.Second))
		fl.remove(victim)
		row.Status.add(expectHonest(fl.status.Since(start), honesty{start: start, fault: down, movedAt: fl.movedAt, unavailable: map[string]bool{victim: true}}))
		fl.dropVersion(ctx, from)
		row.add(fl.check(ctx))
		row.Injected = "one workload kube-apiserver stopped during a rollout; that Cluster deleted while it was down"
		row.Converge = fmt.Sprintf("%s for the other %d Clusters; deletion done in %s", took.Round(time.Second), len(fl.clusters), deleteTook.Round(time.Second))
		row.Took = time.Since(began)
		report.Add(row)
	})
})

// isLeaseRenewal tells the operator's renewals of its leader-election Lease.
func isLeaseRenewal(w plane.AuditedWrite) bool {
	return w.Verb == "update" && w.APIGroup == coordinationv1.GroupName && w.Resource == "leases" &&
		w.Namespace == plane.OperatorNamespace && w.Name == plane.OperatorLeaseName
}

// isLeaderElection is a write of leader election: the operator's Lease (taken or renewed) and
// the Event it records on taking it (named after the Lease).
func isLeaderElection(w plane.AuditedWrite) bool {
	if w.APIGroup == coordinationv1.GroupName && w.Resource == "leases" {
		return w.Namespace == leaseKey.Namespace && w.Name == leaseKey.Name
	}
	return w.Verb == "create" && w.APIGroup == "" && w.Resource == "events" && w.Namespace == leaseKey.Namespace &&
		strings.HasPrefix(w.Name, leaseKey.Name+".")
}

// killer kills every operator replica with SIGKILL at random moments and starts them again
// after a random pause.
type killer struct {
	kills       int
	firstKill   time.Time
	lastRestart time.Time
	done        chan struct{}
}

// startKiller kills the operator n times, at moments drawn from [0, within) after now, each
// time restarting it after a pause drawn from [0, maxPause).
func startKiller(ctx context.Context, r *rand.Rand, n int, within, maxPause time.Duration) *killer {
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(r.Int64N(int64(within)))
	}
	slices.Sort(at)
	pauses := make([]time.Duration, n)
	for i := range pauses {
		pauses[i] = time.Duration(r.Int64N(int64(maxPause)))
	}
	k := &killer{done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer GinkgoRecover()
		defer close(k.done)
		for i := range at {
			wait(ctx, at[i]-time.Since(start))
			if ctx.Err() != nil {
				return
			}
			Expect(pl.StopOperator(true)).To(Succeed())
			if i == 0 {
				k.firstKill = time.Now()
			}
			fmt.Fprintf(GinkgoWriter, "  operator killed at +%s, restarted after %s\n", time.Since(start).Round(time.Millisecond), pauses[i].Round(time.Millisecond))
			wait(ctx, pauses[i])
			Expect(pl.StartOperator(ctx)).To(Succeed())
			k.kills++
			k.lastRestart = time.Now()
		}
	}()
	return k
}

// Wait waits until every kill is done and the operator runs again, and returns when it was
// last restarted. k.firstKill is set then.
func (k *killer) Wait() time.Time {
	<-k.done
	return k.lastRestart
}

// leaseKey is the operator's leader election Lease.
var leaseKey = client.ObjectKey{Namespace: plane.OperatorNamespace, Name: "clusterstack-operator.clusterstack.io"}

func leaderLease(ctx context.Context) *coordinationv1.Lease {
	GinkgoHelper()
	l := &coordinationv1.Lease{}
	Expect(k8s.Get(ctx, leaseKey, l)).To(Succeed())
	Expect(l.Spec.HolderIdentity).NotTo(BeNil())
	return l
}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }

// webhookProbe asks the operator's validating webhook about a Cluster change every 250 ms (a
// server-side dry run the webhook refuses) and records every answer that did not come from it.
type webhookProbe struct {
	mu     sync.Mutex
	total  int
	ok     int
	failed []probeFailure
	stop   context.CancelFunc
	done   chan struct{}
}

func startWebhookProbe(ctx context.Context, cluster string) *webhookProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &webhookProbe{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			c := &clusterv1.Cluster{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, c); err != nil {
				continue
			}
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.Topology.Version = "v1.36.4"
			err := k8s.Patch(ctx, c, patch, client.DryRunAll)
			p.mu.Lock()
			switch {
			case ctx.Err() != nil:
			case err != nil && strings.Contains(err.Error(), "was validated with Kubernetes"):
				p.total++
				p.ok++
			default:
				p.total++
				p.failed = append(p.failed, probeFailure{at: time.Now(), err: err})
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// probeFailure is a probe that the webhook did not answer.
type probeFailure struct {
	at  time.Time
	err error
}

func (f probeFailure) String() string {
	return fmt.Sprintf("%s: %v", f.at.Format("15:04:05.000"), f.err)
}

// failuresAfter lists the probe failures after t.
func failuresAfter(failed []probeFailure, t time.Time) []string {
	var out []string
	for _, f := range failed {
		if f.at.After(t) {
			out = append(out, f.String())
		}
	}
	return out
}

// Stop stops probing and returns how many probes were made, how many the webhook answered and
// what came instead for the others.
func (p *webhookProbe) Stop() (total, ok int, failed []probeFailure) {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, p.ok, p.failed
}
