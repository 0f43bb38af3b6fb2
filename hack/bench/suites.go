package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// suite is one workload put through a scale-up, a rolling update and a
// scale-down, as one implementation runs it under one kubelet profile.
type suite struct {
	name           string
	implementation string // Kubernetes, Lifeline or OpenKruise
	workload       string // Deployment, StatefulSet, CloneSet, AdvancedStatefulSet, DaemonSet or AdvancedDaemonSet
	inPlace, gate  bool   // InPlaceIfPossible; the template declares InPlaceUpdateReady
	// ordered: a StatefulSet's OrderedReady pod management (Parallel
	// otherwise), one pod at a time in every step.
	ordered   bool
	noWebhook bool // Lifeline without its pod binding webhook
	profile   cluster.Profile
	// narrow: a rollout bound by the kubelets' latency, not by the client
	// rate limit: narrowPods pods, narrowWindow at a time.
	narrow bool
	// many: manySets workloads of manyPods pods in one namespace, the
	// first manyBudgets of them under a budget (a PodDisruptionBudget for
	// the native kinds, a PodUnavailableBudget for Lifeline's).
	many bool
}

// The many-small-workloads shape of issue 43: where the per-workload
// writes (status, budgets, Events) weigh more per pod than in one large
// workload.
const (
	manySets    = 50
	manyPods    = 20
	manyDown    = 10
	manyBudgets = 20
)

// The narrow rollouts: 10 pods in flight need 20–30 requests a second, half
// the client QPS, so each pod's own latency (a start against a restart)
// decides the time, which 200 pods in flight at maxUnavailable 20% never
// show: there, both kinds of rollout wait on the rate limit.
const (
	narrowPods   = 200
	narrowWindow = 10
)

func (s suite) label() string {
	l := s.implementation + " " + s.workload
	switch s.workload {
	case "AdvancedStatefulSet":
		l = s.implementation + " Advanced StatefulSet"
	case "AdvancedDaemonSet":
		l = s.implementation + " Advanced DaemonSet"
	}
	var how []string
	switch {
	case s.workload == "StatefulSet" || s.workload == "AdvancedStatefulSet":
		if s.ordered {
			how = append(how, "OrderedReady")
		} else {
			how = append(how, "Parallel")
		}
	}
	if s.workload == "CloneSet" || s.workload == "AdvancedStatefulSet" || s.workload == "AdvancedDaemonSet" {
		if s.inPlace {
			how = append(how, "in-place")
		} else {
			how = append(how, "ReCreate")
		}
	}
	if s.gate {
		how = append(how, "gate declared")
	}
	if s.noWebhook {
		how = append(how, "no binding webhook")
	}
	if s.narrow {
		how = append(how, fmt.Sprintf("%d pods, %d at a time", narrowPods, narrowWindow))
	}
	if s.many {
		how = append(how, fmt.Sprintf("%d × %d pods, %d budgets", manySets, manyPods, manyBudgets))
	}
	if len(how) > 0 {
		l += " (" + strings.Join(how, ", ") + ")"
	}
	return l
}

// groups are the tables and charts of rollouts, in print order, with the
// suite each is measured against.
var groups = []struct{ name, anchor, about string }{
	{"instant", "deployment", "instant kubelets"},
	{"realistic", "realistic-deployment", "realistic kubelets"},
	{"realistic-narrow", "realistic-deployment-narrow", fmt.Sprintf("realistic kubelets, %d at a time", narrowWindow)},
	{"instant-many", "many-deployment", fmt.Sprintf("instant kubelets, %d workloads of %d pods, %d under a budget", manySets, manyPods, manyBudgets)},
}

func (s suite) group() string {
	switch {
	case s.narrow:
		return string(s.profile) + "-narrow"
	case s.many:
		return string(s.profile) + "-many"
	}
	return string(s.profile)
}

func (s suite) phase() phase {
	switch {
	case s.implementation == "OpenKruise" && s.profile == cluster.Realistic:
		return kruiseRealistic
	case s.implementation == "OpenKruise":
		return kruiseInstant
	case s.noWebhook:
		return lifelineNoWebhook
	case s.profile == cluster.Realistic:
		return lifelineRealistic
	}
	return lifelineInstant
}

// users are the API users whose requests count as the suite's controller's:
// kube-controller-manager runs each controller under its own service
// account.
func (s suite) users() []string {
	switch {
	case s.implementation == "OpenKruise":
		return []string{cluster.KruiseUser}
	case s.workload == "Deployment" && s.many:
		// The disruption controller keeps the budgets' status, as
		// Lifeline's manager keeps its budgets'.
		return []string{"system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:replicaset-controller",
			"system:serviceaccount:kube-system:disruption-controller"}
	case s.workload == "Deployment":
		return []string{"system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:replicaset-controller"}
	case s.workload == "StatefulSet":
		return []string{"system:serviceaccount:kube-system:statefulset-controller"}
	case s.workload == "DaemonSet":
		return []string{"system:serviceaccount:kube-system:daemon-set-controller"}
	}
	return []string{"lifeline-manager"}
}

// process is the controller's process name in the cluster.
func (s suite) process(b *bench) string {
	switch s.implementation {
	case "OpenKruise":
		return b.kruise.Name
	case "Kubernetes":
		return "kube-controller-manager"
	}
	return b.l.Name
}

var suites = func() []suite {
	k := func(name, workload string, p cluster.Profile) suite {
		return suite{name: name, implementation: "Kubernetes", workload: workload, profile: p}
	}
	c := func(name, impl string, inPlace, gate bool, p cluster.Profile) suite {
		return suite{name: name, implementation: impl, workload: "CloneSet", inPlace: inPlace, gate: gate, profile: p}
	}
	i, r := cluster.Instant, cluster.Realistic
	a := func(name, impl string, inPlace bool) suite {
		return suite{name: name, implementation: impl, workload: "AdvancedStatefulSet", inPlace: inPlace, gate: inPlace, profile: i}
	}
	d := func(name string, inPlace bool) suite {
		return suite{name: name, implementation: "Lifeline", workload: "AdvancedDaemonSet", inPlace: inPlace, profile: i}
	}
	noWebhook := func(s suite) suite { s.noWebhook = true; return s }
	narrow := func(s suite) suite { s.narrow = true; return s }
	ordered := func(s suite) suite { s.ordered = true; return s }
	many := func(s suite) suite { s.many = true; return s }
	return []suite{
		k("deployment", "Deployment", i),
		k("statefulset", "StatefulSet", i),
		ordered(k("statefulset-ordered", "StatefulSet", i)),
		a("advanced-statefulset", "Lifeline", false),
		ordered(a("advanced-statefulset-ordered", "Lifeline", false)),
		a("advanced-statefulset-inplace", "Lifeline", true),
		a("openkruise-advanced-statefulset", "OpenKruise", false),
		a("openkruise-advanced-statefulset-inplace", "OpenKruise", true),
		k("daemonset", "DaemonSet", i),
		d("advanced-daemonset", false),
		d("advanced-daemonset-inplace", true),
		c("cloneset", "Lifeline", false, false, i),
		c("cloneset-inplace", "Lifeline", true, false, i),
		c("cloneset-gate", "Lifeline", false, true, i),
		c("cloneset-inplace-gate", "Lifeline", true, true, i),
		noWebhook(k("nowebhook-deployment", "Deployment", i)),
		noWebhook(c("nowebhook-cloneset", "Lifeline", false, false, i)),
		k("realistic-deployment", "Deployment", r),
		k("realistic-statefulset", "StatefulSet", r),
		c("realistic-cloneset", "Lifeline", false, false, r),
		c("realistic-cloneset-inplace", "Lifeline", true, false, r),
		narrow(k("realistic-deployment-narrow", "Deployment", r)),
		narrow(c("realistic-cloneset-narrow", "Lifeline", false, false, r)),
		narrow(c("realistic-cloneset-inplace-narrow", "Lifeline", true, false, r)),
		c("realistic-openkruise-cloneset", "OpenKruise", false, false, r),
		c("realistic-openkruise-cloneset-inplace", "OpenKruise", true, false, r),
		narrow(c("realistic-openkruise-cloneset-narrow", "OpenKruise", false, false, r)),
		narrow(c("realistic-openkruise-cloneset-inplace-narrow", "OpenKruise", true, false, r)),
		c("openkruise-cloneset", "OpenKruise", false, false, i),
		c("openkruise-cloneset-inplace", "OpenKruise", true, false, i),
		many(k("many-deployment", "Deployment", i)),
		many(c("many-cloneset", "Lifeline", false, false, i)),
		many(c("many-cloneset-inplace", "Lifeline", true, false, i)),
	}
}()

// Steps of a suite, in the order they run.
const (
	stepUp     = "scale-up"
	stepUpdate = "rolling update"
	stepDown   = "scale-down"
)

// runSuite creates the workload, rolls it out and scales it down, taking
// each step's figures, then deletes it with its namespace.
func (b *bench) runSuite(ctx context.Context, s suite) error {
	if isDaemon(s) {
		return b.runDaemonSuite(ctx, s)
	}
	ns, err := b.namespace(ctx, "bench-"+s.name)
	if err != nil {
		return err
	}
	ws := []workload{{suite: s, ns: ns}}
	pods, down := int32(b.o.pods), int32(b.o.down)
	switch {
	case s.narrow:
		pods, down = narrowPods, min(down, narrowPods/2)
	case s.many:
		pods, down = manyPods, manyDown
		ws = ws[:0]
		for i := range manySets {
			ws = append(ws, workload{suite: s, ns: ns, name: fmt.Sprintf("bench-%02d", i)})
		}
		if err := b.budgets(ctx, ws[:manyBudgets]); err != nil {
			return err
		}
	}
	each := func(f func(workload) error) func(context.Context) error {
		return func(context.Context) error {
			for _, w := range ws {
				if err := f(w); err != nil {
					return err
				}
			}
			return nil
		}
	}
	sets := int32(len(ws))
	for _, st := range []struct {
		step, about string
		change      func(context.Context) error
		replicas    int32
		pods        int
	}{
		{stepUp, fmt.Sprintf("0→%d", pods), each(func(w workload) error { return w.create(ctx, b.k8s, pods) }), pods, int(sets * pods)},
		{stepUpdate, fmt.Sprintf("of %d, maxUnavailable %s", pods, ptr.To(ws[0].maxUnavailable()).String()), each(func(w workload) error { return w.setImage(ctx, b.k8s, "nginx:1.28") }), pods, int(sets * pods)},
		{stepDown, fmt.Sprintf("%d→%d", pods, down), each(func(w workload) error { return w.scale(ctx, b.k8s, down) }), down, int(sets * (pods - down))},
	} {
		if s.many {
			st.about = fmt.Sprintf("%d × %s", sets, st.about)
		}
		fmt.Printf("%s: %s %s\n", s.label(), st.step, st.about)
		r, err := b.measure(ctx, s, ns, st.pods, st.change, func(ctx context.Context) (bool, error) {
			for _, w := range ws {
				if ok, err := w.settled(ctx, b.k8s, st.replicas); !ok || err != nil {
					return false, err
				}
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", st.step, err)
		}
		r.Step, r.StepDetail = st.step, st.about
		b.report.Rollouts = append(b.report.Rollouts, r)
	}
	if b.o.verbose {
		b.printEvents(ctx, ns)
	}
	return b.dropNamespace(ctx, ns)
}

// printEvents prints, under -v, the Events left in ns by reporter, type and
// reason, each with the occurrences it counts.
func (b *bench) printEvents(ctx context.Context, ns string) {
	list := &corev1.EventList{}
	if err := b.k8s.List(ctx, list, ctrlclient.InNamespace(ns)); err != nil {
		return
	}
	objects, counts := map[string]int{}, map[string]int32{}
	for _, e := range list.Items {
		k := fmt.Sprintf("%s %s %s", e.Source.Component, e.Type, e.Reason)
		objects[k]++
		counts[k] += max(e.Count, 1)
	}
	for _, k := range slices.Sorted(maps.Keys(objects)) {
		fmt.Printf("    %6d events (%d occurrences): %s\n", objects[k], counts[k], k)
	}
}
