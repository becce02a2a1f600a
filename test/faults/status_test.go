package faults

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// statusSample is the status of one object at one moment.
type statusSample struct {
	At                                time.Time
	Kind, Name                        string
	Available, Progressing, Degraded  metav1.ConditionStatus
	AvailableMsg, ProgressingMsg, Msg string
	// Resolved is the operator's own check of the object's source while it is not True, else
	// "": a ClusterStack's ReleasesResolved (its tags cannot be listed), a release's TagVerified
	// (where its tag points cannot be checked).
	Resolved string
}

func (s statusSample) String() string {
	return fmt.Sprintf("%s %s/%s at %s: Available=%s Progressing=%s Degraded=%s %q",
		s.Kind, ns, s.Name, s.At.Format("15:04:05.000"), s.Available, s.Progressing, s.Degraded, s.Msg)
}

// statusSampler lists the fleet's ClusterAddons, ClusterStackReleases and ClusterStack every
// interval (straight from the API server, not through the operator's fault proxy) and keeps
// their conditions. A sample that fails (the API server is down) is skipped. It also watches
// the Flux objects of the fleet's namespace (fluxWatch), whose errors Degraded messages name.
type statusSampler struct {
	mu      sync.Mutex
	samples []statusSample
	flux    *fluxWatch
	cancel  context.CancelFunc
	done    chan struct{}
}

func startSampler(ctx context.Context, interval time.Duration) *statusSampler {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(ctx)
	s := &statusSampler{cancel: cancel, done: make(chan struct{}), flux: startFluxWatch(ctx)}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.take(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *statusSampler) take(ctx context.Context) {
	at := time.Now()
	var out []statusSample
	add := func(kind, name string, conds []metav1.Condition) {
		smp := statusSample{At: at, Kind: kind, Name: name}
		for t, dst := range map[string]*metav1.ConditionStatus{csv1.AvailableCondition: &smp.Available, csv1.ProgressingCondition: &smp.Progressing, csv1.DegradedCondition: &smp.Degraded} {
			*dst = metav1.ConditionUnknown
			if c := apimeta.FindStatusCondition(conds, t); c != nil {
				*dst = c.Status
				switch t {
				case csv1.DegradedCondition:
					smp.Msg = c.Message
				case csv1.AvailableCondition:
					smp.AvailableMsg = c.Message
				case csv1.ProgressingCondition:
					smp.ProgressingMsg = c.Message
				}
			}
		}
		if c := apimeta.FindStatusCondition(conds, csv1.ReleasesResolvedCondition); c != nil && c.Status == metav1.ConditionFalse {
			smp.Resolved = c.Message
		}
		if c := apimeta.FindStatusCondition(conds, csv1.TagVerifiedCondition); c != nil && c.Status != metav1.ConditionTrue {
			smp.Resolved = c.Message
		}
		out = append(out, smp)
	}
	addons := &csv1.ClusterAddonList{}
	rels := &csv1.ClusterStackReleaseList{}
	stacks := &csv1.ClusterStackList{}
	if k8s.List(ctx, addons, client.InNamespace(ns)) != nil || k8s.List(ctx, rels, client.InNamespace(ns)) != nil ||
		k8s.List(ctx, stacks, client.InNamespace(ns)) != nil {
		return
	}
	for _, a := range addons.Items {
		add("ClusterAddon", a.Name, a.Status.Conditions)
	}
	for _, r := range rels.Items {
		add("ClusterStackRelease", r.Name, r.Status.Conditions)
	}
	for _, cs := range stacks.Items {
		add("ClusterStack", cs.Name, cs.Status.Conditions)
	}
	s.mu.Lock()
	s.samples = append(s.samples, out...)
	s.mu.Unlock()
}

// Since returns the samples taken at or after t.
func (s *statusSampler) Since(t time.Time) []statusSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []statusSample
	for _, smp := range s.samples {
		if !smp.At.Before(t) {
			out = append(out, smp)
		}
	}
	return out
}

// Stop stops sampling.
func (s *statusSampler) Stop() {
	s.cancel()
	<-s.done
}

// fluxObject is what the suite saw of one Flux object of the fleet's namespace.
type fluxObject struct {
	// cluster and component are its Cluster's and component's labels ("" on a release's
	// GitRepository or HelmChart).
	cluster, component string
	// errors are what Flux reported while the object was not Ready, each with when it was first
	// seen: the messages of its False conditions (Ready, Released, ...), of Stalled True, and of
	// Ready Unknown (the action it is running, "Running 'upgrade' action with timeout of 1m0s").
	errors map[string]time.Time
}

// fluxWatch records every state the Flux objects of the fleet's namespace pass through (a
// watch, so that a message Flux reported for less than a sampling interval is seen too).
type fluxWatch struct {
	// sourceURL is the Git repository the fleet's ClusterStack is published to.
	sourceURL string
	mu        sync.Mutex
	objs      map[string]*fluxObject // by "<Kind>/<name>"
}

func startFluxWatch(ctx context.Context) *fluxWatch {
	GinkgoHelper()
	w := &fluxWatch{objs: map[string]*fluxObject{}, sourceURL: pl.Git().RepoURL(stacksRepo)}
	c, err := cache.New(pl.Config(), cache.Options{Scheme: pl.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	Expect(err).NotTo(HaveOccurred())
	for _, o := range []client.Object{&helmv2.HelmRelease{}, &kustomizev1.Kustomization{}, &sourcev1.GitRepository{}, &sourcev1.HelmChart{}} {
		inf, err := c.GetInformer(ctx, o)
		Expect(err).NotTo(HaveOccurred())
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    w.observe,
			UpdateFunc: func(_, o any) { w.observe(o) },
		})
		Expect(err).NotTo(HaveOccurred())
	}
	go func() { _ = c.Start(ctx) }()
	Expect(c.WaitForCacheSync(ctx)).To(BeTrue(), "watch the Flux objects of namespace %s", ns)
	return w
}

func (w *fluxWatch) observe(o any) {
	var kind string
	var conds []metav1.Condition
	switch t := o.(type) {
	case *helmv2.HelmRelease:
		kind, conds = helmv2.HelmReleaseKind, t.Status.Conditions
	case *kustomizev1.Kustomization:
		kind, conds = kustomizev1.KustomizationKind, t.Status.Conditions
	case *sourcev1.GitRepository:
		kind, conds = sourcev1.GitRepositoryKind, t.Status.Conditions
	case *sourcev1.HelmChart:
		kind, conds = sourcev1.HelmChartKind, t.Status.Conditions
	default:
		return
	}
	obj := o.(client.Object)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	key := kind + "/" + obj.GetName()
	f := w.objs[key]
	if f == nil {
		f = &fluxObject{errors: map[string]time.Time{}}
		w.objs[key] = f
	}
	f.cluster, f.component = obj.GetLabels()[csv1.ClusterNameLabel], obj.GetLabels()[csv1.ComponentLabel]
	for _, c := range conds {
		failed := c.Status == metav1.ConditionFalse || (c.Type == "Stalled" && c.Status == metav1.ConditionTrue) ||
			(c.Type == "Ready" && c.Status == metav1.ConditionUnknown)
		if failed && c.Message != "" {
			if _, ok := f.errors[c.Message]; !ok {
				f.errors[c.Message] = now
			}
		}
	}
}

// fluxRef matches a Flux object named in a message, after the component it delivers when there
// is one: "component cni: HelmRelease/f01-cni".
var fluxRef = regexp.MustCompile(`(?:component ([A-Za-z0-9._-]+): )?(HelmRelease|Kustomization|GitRepository|HelmChart)/([A-Za-z0-9._-]+)`)

// notObserved is how a Degraded message says that a Flux controller has not acted on the object.
func notObserved(controller string) string {
	return " has not observed its latest generation yet (waiting for " + controller + ")"
}

// errorHead is how much of Flux's message a Degraded message must repeat: its start, up to the
// first quoted string (long quoted object dumps are elided in status messages), at most 40 bytes.
func errorHead(msg string) string {
	msg = strings.TrimSpace(msg)
	if i := strings.Index(msg, `"`); i >= 10 {
		msg = msg[:i]
	}
	if len(msg) > 40 {
		msg = msg[:40]
	}
	return msg
}

// controllerOf names the Flux controller that reconciles objects of kind.
func controllerOf(kind string) string {
	switch kind {
	case helmv2.HelmReleaseKind:
		return "helm-controller"
	case kustomizev1.KustomizationKind:
		return "kustomize-controller"
	}
	return "source-controller"
}

// namesFluxError checks that what follows the Flux object ref at the start of rest is what Flux
// reported for that object, seen at or before at, or that the object's own controller (or the
// stopped one, stopped) has not acted on its latest generation yet: Flux reports nothing then
// (an object just changed, or a controller waiting for a stopped source-controller's artifacts,
// which retries inside one reconcile and writes nothing until it ends).
func (w *fluxWatch) namesFluxError(ref, rest string, at time.Time, stopped string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.objs[ref]
	if f == nil {
		return false
	}
	kind, _, _ := strings.Cut(ref, "/")
	if strings.HasPrefix(rest, notObserved(controllerOf(kind))) || (stopped != "" && strings.HasPrefix(rest, notObserved(stopped))) {
		return true
	}
	for msg, seen := range f.errors {
		if !seen.After(at) && strings.Contains(rest, errorHead(msg)) {
			return true
		}
	}
	return false
}

// object returns what the watch saw of the Flux object ref, and whether it saw it.
func (w *fluxWatch) object(ref string) (fluxObject, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.objs[ref]
	if !ok {
		return fluxObject{}, false
	}
	return *f, true
}

// degradedProblem returns what a Degraded sample's message fails to say, or "" when it says
// everything: for a ClusterAddon the cluster, a component of the release, that component's Flux
// object of that Cluster and what Flux reported for it (namesFluxError); for a release the
// release, a component, a Flux object of the release (none of a Cluster) and what Flux reported
// for it, or its own TagVerified problem naming the stack's source; for the ClusterStack a
// Degraded message of one of its releases or Clusters (checked as such) or its own
// ReleasesResolved problem, naming the stack's source. stopped is the Flux
// controller stopped at the time ("" for none).
func (w *fluxWatch) degradedProblem(s statusSample, members []statusSample, stopped string) string {
	var subject, cluster string
	switch s.Kind {
	case "ClusterAddon":
		subject, cluster = "cluster "+ns+"/"+s.Name+": ", s.Name
	case "ClusterStackRelease":
		subject = "release " + s.Name + ": "
		// Its own problem with its tag (TagVerified, which may be True again a moment before
		// Degraded follows; or the tag not fetched and validated yet): it names the tag, the
		// stack's source and what is wrong.
		own := s.Resolved
		if own == "" {
			own = s.Msg
		}
		if strings.HasPrefix(s.Msg, subject) && strings.Contains(s.Msg, own) && strings.Contains(own, "tag "+s.Name+" ") {
			if !strings.Contains(own, w.sourceURL) {
				return "its own problem (TagVerified, or its tag not validated yet) does not name the stack's source " + w.sourceURL
			}
			return ""
		}
	case "ClusterStack":
		if s.Resolved != "" && strings.Contains(s.Msg, s.Resolved) {
			if !strings.Contains(s.Resolved, w.sourceURL) {
				return "its own problem (ReleasesResolved) does not name the stack's source " + w.sourceURL
			}
			return ""
		}
		for _, m := range members {
			if m.Kind != "ClusterStack" && m.Degraded == metav1.ConditionTrue && !m.At.After(s.At) && strings.Contains(s.Msg, m.Msg) {
				return ""
			}
		}
		// The roll-up may repeat a member's message that no sample caught (it lasted less than a
		// sampling interval): check it as that member's.
		rest := strings.TrimPrefix(s.Msg, "ClusterStack "+s.Name+": ")
		if m := memberSubject.FindStringSubmatch(rest); m != nil {
			member := statusSample{At: s.At, Kind: "ClusterAddon", Name: m[1], Msg: rest}
			if m[1] == "" {
				member.Kind, member.Name = "ClusterStackRelease", m[2]
				for _, r := range members {
					if r.Kind == member.Kind && r.Name == member.Name && r.Resolved != "" && !r.At.After(s.At) {
						member.Resolved = r.Resolved
					}
				}
			}
			if p := w.degradedProblem(member, nil, stopped); p != "" {
				return "the " + member.Kind + " message it repeats: " + p
			}
			return ""
		}
		return "contains no Degraded message of its releases or Clusters, nor its own ReleasesResolved problem"
	default:
		return "unknown kind"
	}
	if !strings.HasPrefix(s.Msg, subject) {
		return fmt.Sprintf("does not begin with %q", subject)
	}
	var tried []string
	for _, m := range fluxRef.FindAllStringSubmatchIndex(s.Msg, -1) {
		comp, kind, name := submatch(s.Msg, m, 1), submatch(s.Msg, m, 2), submatch(s.Msg, m, 3)
		ref := kind + "/" + name
		obj, seen := w.object(ref)
		switch {
		case comp == "":
			tried = append(tried, ref+": no component named before it")
		case !seen:
			tried = append(tried, ref+": no such Flux object was seen")
		case obj.cluster != cluster || (obj.component != comp && (cluster != "" || obj.component != "")):
			tried = append(tried, fmt.Sprintf("%s is of cluster %q component %q, not of cluster %q component %q", ref, obj.cluster, obj.component, cluster, comp))
		case !w.namesFluxError(ref, s.Msg[m[1]:], s.At, stopped):
			tried = append(tried, ref+": what Flux reported for it is not in the message")
		default:
			return ""
		}
	}
	if len(tried) == 0 {
		return "names no component and Flux object"
	}
	return strings.Join(tried, "; ")
}

// memberSubject matches the start of a ClusterAddon's ("cluster <ns>/<name>: ") or a release's
// ("release <name>: ") message.
var memberSubject = regexp.MustCompile(`^(?:cluster ` + ns + `/([A-Za-z0-9.-]+)|release ([A-Za-z0-9.-]+)): `)

func submatch(s string, m []int, i int) string {
	if m[2*i] < 0 {
		return ""
	}
	return s[m[2*i]:m[2*i+1]]
}

// honesty says what status is honest during one scenario.
type honesty struct {
	// start is when the scenario began (before its first fault or rollout step): Clusters moved
	// since are in this scenario's rollout.
	start time.Time
	// fault is when the scenario's fault was injected: the grace period of a release, and of a
	// ClusterAddon that was not moved in this scenario, counts from it.
	fault time.Time
	// movedAt: a ClusterAddon moved in this scenario stopped being healthy when its Cluster
	// moved, and may be Degraded grace after that; the fleet records the moves.
	movedAt map[string]time.Time
	// unavailable are the Clusters whose delivered state may really be unavailable (their
	// workload API server is down): no other ClusterAddon may be Available=False.
	unavailable map[string]bool
	// stopped is the Flux controller stopped during the scenario, if any: a Degraded message
	// may say that it has not acted on an object instead of quoting Flux's error.
	stopped string
	// releases are the scenario's samples of each ClusterStackRelease, in time order (set by
	// honestyLies): a release not healthy since before the fault counts from the start of that
	// streak, and the ClusterStack, which rolls its releases up, from the earliest such start.
	releases map[string][]statusSample
}

// honestyCheck is what expectHonest checked.
type honestyCheck struct {
	// samples is the number of status samples checked; degraded the number of Degraded ones,
	// whose timing and message were checked.
	samples, degraded int
}

func (c *honestyCheck) add(o honestyCheck) { c.samples += o.samples; c.degraded += o.degraded }

// since is when s's object may have stopped being healthy in this scenario: for a ClusterAddon
// moved in it, its move; for the ClusterStack, which rolls up its releases and Clusters, the
// earliest of theirs; else the fault.
func (h honesty) since(s statusSample) time.Time {
	switch s.Kind {
	case "ClusterAddon":
		if m := h.movedAt[s.Name]; m.After(h.start) {
			return m
		}
	case "ClusterStack":
		t := h.fault
		for _, m := range h.movedAt {
			if m.After(h.start) && m.Before(t) {
				t = m
			}
		}
		for name := range h.releases {
			if u := h.unhealthySince(name, s.At); !u.IsZero() && u.Before(t) {
				t = u
			}
		}
		return t
	case "ClusterStackRelease":
		if u := h.unhealthySince(s.Name, s.At); !u.IsZero() && u.Before(h.fault) {
			return u
		}
	}
	return h.fault
}

// unhealthySince is the start of the streak of samples of release name, up to at, that were
// not healthy (not Available, Progressing or Degraded); zero when its last sample up to at was
// healthy. A release discovered in the scenario converges on its own clock from then.
func (h honesty) unhealthySince(name string, at time.Time) time.Time {
	var since time.Time
	for _, s := range h.releases[name] {
		if s.At.After(at) {
			break
		}
		switch {
		case s.Available == metav1.ConditionTrue && s.Progressing != metav1.ConditionTrue && s.Degraded != metav1.ConditionTrue:
			since = time.Time{}
		case since.IsZero():
			since = s.At
		}
	}
	return since
}

// releaseSamples are the samples of each ClusterStackRelease since start, in time order.
func releaseSamples(samples []statusSample, start time.Time) map[string][]statusSample {
	out := map[string][]statusSample{}
	for _, s := range samples {
		if s.Kind == "ClusterStackRelease" && !s.At.Before(start) {
			out[s.Name] = append(out[s.Name], s)
		}
	}
	for _, ss := range out {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].At.Before(ss[j].At) })
	}
	return out
}

// expectHonest checks the samples of a scenario: no ClusterAddon or ClusterStack Available=False
// while the delivered version kept working (it always does here, except for the Clusters the
// scenario takes down), nothing Degraded before the grace period ran out since it stopped being
// healthy (h.since), and every Degraded message saying what is wrong (degradedProblem). It
// returns what it checked.
func expectHonest(samples []statusSample, h honesty) honestyCheck {
	GinkgoHelper()
	Expect(h.fault).NotTo(BeZero(), "the fault's injection time")
	lies, checked := honestyLies(samples, h, fl.status.flux)
	if len(lies) > 10 {
		lies = append(lies[:10], fmt.Sprintf("and %d more", len(lies)-10))
	}
	Expect(lies).To(BeEmpty(), "status was not honest (%d samples)", len(samples))
	return checked
}

// honestyLies returns what was dishonest in the samples (see expectHonest) and what it checked.
func honestyLies(samples []statusSample, h honesty, flux *fluxWatch) (lies []string, checked honestyCheck) {
	h.releases = releaseSamples(samples, h.start)
	for _, s := range samples {
		checked.samples++
		// A ClusterStack is Available only when its version is available on every Cluster: with
		// a Cluster really unavailable, it is not.
		stackOfUnavailable := s.Kind == "ClusterStack" && len(h.unavailable) > 0
		if s.Available == metav1.ConditionFalse && s.Kind != "ClusterStackRelease" && !h.unavailable[s.Name] && !stackOfUnavailable {
			lies = append(lies, "Available=False while the delivered version works: "+s.String()+" ("+s.AvailableMsg+")")
		}
		if s.Degraded != metav1.ConditionTrue {
			continue
		}
		checked.degraded++
		since := h.since(s)
		// Condition times have the API's resolution of one second, so the operator's clock of
		// the grace period can start up to a second before the moment measured here.
		if s.At.Sub(since) < grace-time.Second {
			lies = append(lies, fmt.Sprintf("Degraded %s after it stopped being healthy, before the grace period of %s: %s", s.At.Sub(since).Round(time.Millisecond), grace, s))
		}
		if p := flux.degradedProblem(s, samples, h.stopped); p != "" {
			lies = append(lies, fmt.Sprintf("Degraded message does not say what is wrong (%s): %s", p, s))
		}
	}
	return lies, checked
}

// expectDegradedSeen checks that some sample of kind whose name satisfies match was Degraded at
// least grace after the fault, and returns the first (expectHonest checks its message).
func expectDegradedSeen(samples []statusSample, fault time.Time, kind string, match func(string) bool) statusSample {
	GinkgoHelper()
	if s, ok := findDegraded(samples, fault, kind, match); ok {
		return s
	}
	var degraded []string
	for _, s := range samples {
		if s.Kind == kind && s.Degraded == metav1.ConditionTrue {
			degraded = append(degraded, s.String())
		}
	}
	Fail(fmt.Sprintf("no %s was Degraded after the grace period (%d samples); Degraded samples: %v", kind, len(samples), degraded))
	return statusSample{}
}

// findDegraded returns the first sample of kind whose name satisfies match that was Degraded
// grace after the fault.
func findDegraded(samples []statusSample, fault time.Time, kind string, match func(string) bool) (statusSample, bool) {
	for _, s := range samples {
		if s.Kind == kind && match(s.Name) && s.Degraded == metav1.ConditionTrue && s.At.Sub(fault) >= grace {
			return s, true
		}
	}
	return statusSample{}, false
}

// seenProgressing reports whether some ClusterAddon sample matching was Progressing=True.
func seenProgressing(samples []statusSample, match func(string) bool) bool {
	for _, s := range samples {
		if s.Kind == "ClusterAddon" && match(s.Name) && s.Progressing == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// is matches exactly one name.
func is(name string) func(string) bool { return func(n string) bool { return n == name } }
