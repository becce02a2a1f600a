package faults

import (
	"context"
	"fmt"
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

// found records, per scenario, the failures the suite found in the product and that were fixed
// (the last column of the reliability table).
var found = map[int]string{
	1: "none",
	2: "Available turned False for every upgrading Cluster (and the ClusterStack) once a stalled rollout passed the grace period, although the delivered version kept running: Available now stays True unless a Flux object failed while applying to the cluster (status.unhealthy[].lastFailureReason keeps the reason through retries)",
	3: "none",
	4: "none",
	5: "none",
	6: "none",
	7: "none",
}

// laterFleet is how many Clusters the scenarios after the first keep (FAULTS_LATER_CLUSTERS):
// fewer workload clusters to keep running and roll out, so that the suite fits CI's time.
var laterFleet = envInt("FAULTS_LATER_CLUSTERS", 8)

// fluxOutage is how long each Flux controller is stopped in the middle of a rollout.
const fluxOutage = 2 * time.Minute

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
		row := scenarioRow{Scenario: "1. operator killed (SIGKILL, all replicas) at random points of an upgrade", Runs: 5, Found: found[1]}
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
			row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt})
		}
		row.Injected = fmt.Sprintf("%d SIGKILLs of both replicas, each restarted after a random pause of up to 6 s", kills)
		row.Converge = "≤ " + worst.Round(time.Second).String() + " per rollout, kills included"
		report.Add(row)

		By(fmt.Sprintf("the other scenarios run on %d of the Clusters (the others are deleted: every generated object goes)", laterFleet))
		fl.shrink(ctx, laterFleet)
	})

	It("2. keeps the delivered state and reports Progressing while each Flux controller is stopped for two minutes in the middle of a rollout", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "2. Flux controllers stopped for 2 min each, mid-rollout", Runs: 3, Found: found[2]}
		var worst time.Duration
		var msgs []string
		for i, ctl := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
			r := rng(200 + uint64(i))
			from, to := fl.version, fl.nextVersion()
			fl.addVersion(ctx, to)
			start := time.Now()
			var down time.Time
			fl.moveAll(ctx, to, r, func() {
				Expect(pl.StopFlux(ctl)).To(Succeed())
				down = time.Now()
			})
			wait(ctx, fluxOutage-time.Since(down))
			during := fl.status.Since(down)
			Expect(seenProgressing(during, all)).To(BeTrue(), "ClusterAddons are Progressing while %s is down", ctl)
			deg := expectDegradedSeen(during, down, "ClusterAddon", all, fluxHint[ctl]...)
			msgs = append(msgs, fmt.Sprintf("%s: %q", ctl, deg.Msg))
			Expect(pl.StartFlux(ctx, ctl)).To(Succeed())
			up := time.Now()
			took := fl.waitConverged(ctx, 8*time.Minute)
			fmt.Fprintf(GinkgoWriter, "%s down for %s; converged %s after it was back\n", ctl, up.Sub(down).Round(time.Second), took.Round(time.Second))
			worst = max(worst, took)
			if ctl == "helm-controller" {
				fmt.Fprintf(GinkgoWriter, "Helm upgrades run again after helm-controller was stopped in them: %d\n", fl.acceptInterruptedUpgrades(ctx))
			}
			fl.dropVersion(ctx, from)
			row.add(fl.check(ctx))
			row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt})
		}
		fmt.Fprintf(GinkgoWriter, "Degraded after the grace period: %s\n", strings.Join(msgs, "; "))
		row.Injected = "source-, kustomize-, helm-controller each stopped (SIGTERM) for 2 min after half the fleet moved"
		row.Converge = "≤ " + worst.Round(time.Second).String() + " after the controller returned"
		report.Add(row)
	})

	It("3. keeps releases and delivered state while the Git server is down during discovery and during a rollout, and recovers", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "3. Git server down during discovery and during a rollout", Runs: 1, Found: found[3]}
		r := rng(300)
		from, to := fl.version, fl.nextVersion()
		gitAddr := strings.TrimPrefix(pl.Git().URL(), "http://")

		By("discovery: a new version is added while the Git server is down")
		start := time.Now()
		Expect(pl.StopGit()).To(Succeed())
		pin(ctx, from, to)
		var deg statusSample
		Eventually(ctx, func(g Gomega) {
			for _, kind := range []string{"ClusterStack", "ClusterStackRelease"} {
				if s, ok := findDegraded(fl.status.Since(start), start, kind, gitAddr); ok {
					deg = s
					return
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
		row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt})

		By("rollout: the Git server goes down after half the fleet moved")
		start = time.Now()
		var down time.Time
		fl.moveAll(ctx, to, r, func() {
			Expect(pl.StopGit()).To(Succeed())
			down = time.Now()
		})
		took := fl.waitConverged(ctx, 8*time.Minute)
		Eventually(ctx, func() (ok bool) {
			deg, ok = findDegraded(fl.status.Since(down), down, "ClusterStackRelease", gitAddr)
			return ok
		}).WithTimeout(grace+3*time.Minute).Should(BeTrue(), "release %s is Degraded naming the Git server after the grace period", releaseOf(to))
		fmt.Fprintf(GinkgoWriter, "while Git was down during the rollout: %s\n", deg)
		Expect(fl.getRelease(ctx, to).DeletionTimestamp).To(BeNil())
		row.add(fl.check(ctx))
		Expect(pl.StartGit()).To(Succeed())
		fl.waitRelease(ctx, to)
		fl.dropVersion(ctx, from)
		fl.waitReleasesReady(ctx)
		row.add(fl.check(ctx))
		row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt})
		row.Injected = "Git server stopped (connections refused) while a version was added, and after half the fleet moved"
		row.Converge = took.Round(time.Second).String() + " (rollout converged with Git down); releases Ready again once it returned"
		report.Add(row)
	})

	It("6. hands over to the other replica when the leader is killed mid-rollout, and the webhook keeps answering", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "6. two replicas, leader killed mid-rollout", Runs: 1, Found: found[6]}
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
		ok, failed := probe.Stop()
		// A call in flight on a connection to the replica at the instant it is killed fails, as
		// it would through a Service; every later one must be answered by the other replica.
		var late []string
		for _, f := range failed {
			if f.at.After(killed.Add(2 * time.Second)) {
				late = append(late, f.String())
			}
		}
		Expect(late).To(BeEmpty(), "the webhook answered every request after the leader's death (%d probes failed at the kill itself)", len(failed)-len(late))
		Expect(ok).To(BeNumerically(">", 0))
		takeover := acquired.Sub(lastRenew)
		fmt.Fprintf(GinkgoWriter, "leader replica %d killed %s after its last renewal; replica %d acquired the lease %s after that renewal (lease duration %s); webhook answered %d probes\n",
			leader, killed.Sub(lastRenew).Round(time.Millisecond), newLeader, takeover.Round(time.Millisecond), leaseDuration, ok)
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
		row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt})
		row.Injected = fmt.Sprintf("leader SIGKILLed after half the fleet moved; takeover %s after its last renewal (lease %s); %d webhook probes, 0 failed", takeover.Round(100*time.Millisecond), leaseDuration, ok)
		row.Converge = took.Round(time.Second).String()
		report.Add(row)
	})

	It("7. backs off and converges while its API answers slowly and with 5xx and 429", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "7. slow and flaky API (fault proxy)", Runs: 1, Found: found[7]}
		r := rng(700)
		from, to := fl.version, fl.nextVersion()
		fl.addVersion(ctx, to)
		proxy := pl.APIProxy()
		proxy.ResetCounts()
		faults := faultproxy.Faults{Latency: 50 * time.Millisecond, Jitter: 250 * time.Millisecond, ErrorRate: 0.25, Codes: []int{500, 503, 429}, Seed: int64(seed % (1 << 62))}
		start := time.Now()
		proxy.Inject(faults)
		fl.moveAll(ctx, to, r, nil)
		wait(ctx, time.Minute-time.Since(start))
		proxy.Clear()
		counts := proxy.Counts()
		took := fl.waitConverged(ctx, 8*time.Minute)
		fmt.Fprintf(GinkgoWriter, "fault window: %d requests, %d answered with an injected error; converged %s after the faults ended\n", counts.Total, counts.Injected, took.Round(time.Second))
		Expect(counts.Injected).To(BeNumerically(">", 0))
		fl.dropVersion(ctx, from)
		row.add(fl.check(ctx))
		row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt})
		row.Injected = fmt.Sprintf("1 min of 50-300 ms latency and 25%% errors (500/503/429): %d of %d requests failed", counts.Injected, counts.Total)
		row.Converge = took.Round(time.Second).String() + " after the faults ended"
		report.Add(row)
	})

	It("5. reconnects without a write storm after the management API server restarts", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "5. management API server restarted (etcd kept)", Runs: 1, Found: found[5]}
		fl.waitConverged(ctx, time.Minute)
		proxy := pl.APIProxy()
		start := time.Now()
		Expect(pl.RestartAPIServer(ctx)).To(Succeed())
		up := time.Now()
		// Reconnected: the leader renews its lease through the restarted API server.
		Eventually(ctx, func(g Gomega) {
			l := &coordinationv1.Lease{}
			g.Expect(k8s.Get(ctx, leaseKey, l)).To(Succeed())
			g.Expect(l.Spec.RenewTime.Time).To(BeTemporally(">", up))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		reconnected := time.Now()
		proxy.ResetCounts()
		wait(ctx, time.Minute)
		counts := proxy.Counts()
		writes := counts.Writes() - counts.ByVerbResource["update leases"] - counts.ByVerbResource["create leases"] -
			counts.ByVerbResource["create events"] - counts.ByVerbResource["patch events"]
		fmt.Fprintf(GinkgoWriter, "API server down %s; operator reconnected %s later; in the minute after: %d writes besides its lease (%v)\n",
			up.Sub(start).Round(time.Millisecond), reconnected.Sub(up).Round(time.Millisecond), writes, counts.ByVerbResource)
		Expect(writes).To(BeNumerically("<", len(fl.clusters)), "no write storm: fewer writes than Clusters after reconnecting")
		row.add(fl.check(ctx))
		row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt})
		row.Injected = fmt.Sprintf("kube-apiserver stopped and started again (down %s)", up.Sub(start).Round(time.Second))
		row.Converge = fmt.Sprintf("reconnected %s after; %d writes (besides the lease) in the minute after", reconnected.Sub(up).Round(time.Second), writes)
		report.Add(row)
	})

	It("4. keeps the rest of the fleet converging while one workload API server is down, and deletes that Cluster without hanging", func(ctx SpecContext) {
		row := scenarioRow{Scenario: "4. one workload API server down, then its Cluster deleted", Runs: 1, Found: found[4]}
		r := rng(400)
		from, to := fl.version, fl.nextVersion()
		fl.addVersion(ctx, to)
		victim := fl.clusters[r.IntN(len(fl.clusters))]
		others := slices.DeleteFunc(slices.Clone(fl.clusters), func(c string) bool { return c == victim })
		start := time.Now()
		Expect(pl.StopWorkloadAPIServer(ns, victim)).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "workload API server of Cluster %s stopped\n", victim)
		fl.moveAll(ctx, to, r, nil)
		took := fl.waitConvergedOf(ctx, others, 8*time.Minute)
		Eventually(ctx, func() bool {
			_, ok := findDegraded(fl.status.Since(start), start, "ClusterAddon", victim)
			return ok
		}).WithTimeout(grace+3*time.Minute).Should(BeTrue(), "ClusterAddon %s is Degraded after the grace period", victim)
		deg := expectDegradedSeen(fl.status.Since(start), start, "ClusterAddon", func(n string) bool { return n == victim }, victim)
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
		row.Samples += expectHonest(fl.status.Since(start), honesty{start: start, movedAt: fl.movedAt, unavailable: map[string]bool{victim: true}})
		fl.dropVersion(ctx, from)
		row.add(fl.check(ctx))
		row.Injected = "one workload kube-apiserver stopped during a rollout; that Cluster deleted while it was down"
		row.Converge = fmt.Sprintf("%s for the other %d Clusters; deletion done in %s", took.Round(time.Second), len(fl.clusters), deleteTook.Round(time.Second))
		report.Add(row)
	})
})

// fluxHint is what a ClusterAddon's Degraded message names while each Flux controller is down.
var fluxHint = map[string][]string{
	"source-controller":    {"component "},
	"kustomize-controller": {"Kustomization/"},
	"helm-controller":      {"HelmRelease/"},
}

// findDegraded returns a sample of kind, named name or containing it in its message, that was
// Degraded grace after start with a message containing part.
func findDegraded(samples []statusSample, start time.Time, kind, part string) (statusSample, bool) {
	for _, s := range samples {
		if s.Kind == kind && s.Degraded == metav1.ConditionTrue && s.At.Sub(start) >= grace &&
			(strings.Contains(s.Msg, part) || s.Name == part) {
			return s, true
		}
	}
	return statusSample{}, false
}

// killer kills every operator replica with SIGKILL at random moments and starts them again
// after a random pause.
type killer struct {
	kills       int
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
// last restarted.
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
				p.ok++
			default:
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

// Stop stops probing and returns how many answers came from the webhook and what else came.
func (p *webhookProbe) Stop() (int, []probeFailure) {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ok, p.failed
}
