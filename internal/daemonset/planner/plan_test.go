package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

func TestPlan(t *testing.T) {
	hooked := func(pod *corev1.Pod) *corev1.Pod { pod.Labels["example.com/drain"] = "true"; return pod }
	preparing := func(pod *corev1.Pod) *corev1.Pod {
		pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingDelete)
		return pod
	}
	withHook := func(set *appsv1beta1.DaemonSet) *appsv1beta1.DaemonSet {
		set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/drain": "true"}}}
		return set
	}
	justReady := func(pod *corev1.Pod) *corev1.Pod {
		pod.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Second))
		return pod
	}
	notReady := func(pod *corev1.Pod) *corev1.Pod { pod.Status.Conditions[0].Status = corev1.ConditionFalse; return pod }
	minReady := func(set *appsv1beta1.DaemonSet) *appsv1beta1.DaemonSet { set.Spec.MinReadySeconds = 30; return set }
	ru := func(set *appsv1beta1.DaemonSet, f func(*appsv1beta1.RollingUpdateDaemonSet)) *appsv1beta1.DaemonSet {
		f(set.Spec.UpdateStrategy.RollingUpdate)
		return set
	}
	ns := nodes(3)
	tainted := nodes(2)
	tainted[0].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	tainted[1].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}
	labelled := nodes(3)
	labelled[1].Labels["canary"] = "true"
	selected := func(set *appsv1beta1.DaemonSet) *appsv1beta1.DaemonSet {
		set.Spec.Template.Spec.NodeSelector = map[string]string{"canary": "true"}
		return set
	}
	cases := []struct {
		name    string
		snap    Snapshot
		want    []string
		waiting string
		// waitingPrefix checks the start of Waiting only (it names a pod).
		waitingPrefix string
		blocked       string
		requeue       time.Duration
		atOnceRun     bool
	}{
		{name: "every node gets a pod at the update revision", snap: snapshot(newSet(0), ns),
			want: []string{"CreatePod node-0 new222", "CreatePod node-1 new222", "CreatePod node-2 new222"}},
		{name: "burstReplicas caps the creations", snap: snapshot(func() *appsv1beta1.DaemonSet {
			s := newSet(3)
			s.Spec.BurstReplicas = ptr.To(intstr.FromString("50%"))
			return s
		}(), ns), want: []string{"CreatePod node-0 new222"}},
		{name: "a node the selector leaves out gets none and loses its pod", snap: snapshot(selected(newSet(1)), labelled,
			runningPod("node-0", newHash)), want: []string{"CreatePod node-1 new222", "DeletePod node-0/new222"}},
		{name: "NoSchedule keeps the pod there, NoExecute takes it away", snap: snapshot(newSet(0), tainted,
			runningPod("node-0", newHash), runningPod("node-1", newHash)), want: []string{"DeletePod node-1/new222"}},
		{name: "a failed pod is replaced once its back-off is over", snap: func() Snapshot {
			pod := runningPod("node-0", newHash)
			pod.Status.Phase = corev1.PodFailed
			s := snapshot(newSet(1), ns[:1], pod)
			s.FailedBackoff = func(string) time.Duration { return 4 * time.Second }
			return s
		}(), requeue: 4 * time.Second},
		{name: "a second pod on a node goes, the oldest stays", snap: snapshot(newSet(1), ns[:1],
			runningPod("node-0", newHash), runningPod("node-0", newHash)), want: []string{"DeletePod node-0/new222"}},
		{name: "maxUnavailable 1: one old pod at a time", snap: snapshot(newSet(3), ns,
			runningPod("node-0", oldHash), runningPod("node-1", oldHash), runningPod("node-2", oldHash)),
			want: []string{"DeletePod node-2/old111"}},
		{name: "a node without its pod uses the budget", snap: snapshot(newSet(3), ns,
			runningPod("node-0", oldHash), runningPod("node-1", oldHash), notReady(runningPod("node-2", newHash))),
			waiting: "1 of at most 1 nodes are without an available pod"},
		{name: "#1323: Ready pods under minReadySeconds go one at a time", snap: snapshot(minReady(newSet(3)), ns,
			justReady(runningPod("node-0", oldHash)), justReady(runningPod("node-1", oldHash)), justReady(runningPod("node-2", oldHash))),
			want: []string{"DeletePod node-2/old111"}, requeue: 29 * time.Second},
		{name: "#1323 with OpenKruise's rule: all of them at once", atOnceRun: true, snap: snapshot(minReady(newSet(3)), ns,
			justReady(runningPod("node-0", oldHash)), justReady(runningPod("node-1", oldHash)), justReady(runningPod("node-2", oldHash))),
			want: []string{"DeletePod node-2/old111", "DeletePod node-1/old111", "DeletePod node-0/old111"}, requeue: 29 * time.Second},
		{name: "broken old pods are replaced first, within the budget", snap: snapshot(newSet(3), ns,
			runningPod("node-0", oldHash), notReady(runningPod("node-1", oldHash)), notReady(runningPod("node-2", oldHash))),
			want: []string{"DeletePod node-2/old111"}},
		{name: "partition keeps nodes old (names descending go first)", snap: snapshot(ru(newSet(3), func(r *appsv1beta1.RollingUpdateDaemonSet) {
			r.Partition, r.MaxUnavailable = ptr.To(intstr.FromInt32(2)), ptr.To(intstr.FromInt32(3))
		}), ns, runningPod("node-0", oldHash), runningPod("node-1", oldHash), runningPod("node-2", oldHash)),
			want: []string{"DeletePod node-2/old111"}},
		{name: "partition reached", snap: snapshot(ru(newSet(3), func(r *appsv1beta1.RollingUpdateDaemonSet) {
			r.Partition, r.MaxUnavailable = ptr.To(intstr.FromString("67%")), ptr.To(intstr.FromInt32(3))
		}), ns, runningPod("node-0", oldHash), runningPod("node-1", oldHash), runningPod("node-2", newHash)),
			waiting: "partition keeps 2 nodes at their old revision", blocked: "Partitioned"},
		{name: "rollingUpdate.selector picks the nodes", snap: snapshot(ru(newSet(3), func(r *appsv1beta1.RollingUpdateDaemonSet) {
			r.Selector, r.MaxUnavailable = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}, ptr.To(intstr.FromInt32(3))
		}), labelled, runningPod("node-0", oldHash), runningPod("node-1", oldHash), runningPod("node-2", oldHash)),
			want: []string{"DeletePod node-1/old111"}},
		{name: "paused", snap: snapshot(ru(newSet(1), func(r *appsv1beta1.RollingUpdateDaemonSet) { r.Paused = ptr.To(true) }), ns[:1],
			runningPod("node-0", oldHash)), waiting: "the rollout is paused", blocked: "Paused"},
		{name: "OnDelete", snap: snapshot(func() *appsv1beta1.DaemonSet {
			s := newSet(1)
			s.Spec.UpdateStrategy = appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.OnDeleteDaemonSetStrategyType}
			return s
		}(), ns[:1], runningPod("node-0", oldHash))},
		{name: "surge: a new pod beside an old one", snap: snapshot(ru(newSet(3), func(r *appsv1beta1.RollingUpdateDaemonSet) {
			r.MaxSurge, r.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
		}), ns, runningPod("node-0", oldHash), runningPod("node-1", oldHash), runningPod("node-2", oldHash)),
			want: []string{"CreatePod node-2 new222"}},
		{name: "surge: the old pod goes once the new one is available", snap: snapshot(ru(newSet(3), func(r *appsv1beta1.RollingUpdateDaemonSet) {
			r.MaxSurge, r.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
		}), ns[:1], runningPod("node-0", oldHash), runningPod("node-0", newHash)), want: []string{"DeletePod node-0/old111"}},
		{name: "preDelete holds the pod the update picks", snap: snapshot(withHook(newSet(1)), ns[:1], hooked(runningPod("node-0", oldHash))),
			want: []string{"SetState node-0/old111 PreparingDelete"}},
		{name: "a held pod waits, and no replacement comes", snap: snapshot(withHook(newSet(1)), ns[:1], preparing(hooked(runningPod("node-0", oldHash)))),
			waitingPrefix: "pod agent-", blocked: "HookWaiting"},
		{name: "a released pod goes", snap: snapshot(withHook(newSet(1)), ns[:1], preparing(runningPod("node-0", oldHash))),
			want: []string{"DeletePod node-0/old111"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.snap.ReplaceUnavailableAtOnce = c.atOnceRun
			p, err := Compute(c.snap)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(p.Actions); !slices.Equal(got, c.want) {
				t.Errorf("actions %q, want %q", got, c.want)
			}
			if c.waitingPrefix != "" && strings.HasPrefix(p.Waiting, c.waitingPrefix) && strings.HasSuffix(p.Waiting, "for its preDelete hook") {
				c.waiting = p.Waiting
			}
			if p.Waiting != c.waiting || p.Blocked != c.blocked {
				t.Errorf("waiting %q (%s), want %q (%s)", p.Waiting, p.Blocked, c.waiting, c.blocked)
			}
			if p.RequeueAfter != c.requeue {
				t.Errorf("requeue after %v, want %v", p.RequeueAfter, c.requeue)
			}
		})
	}
}

// TestSpecifiedDeleteGoesThroughTheHook: a pod the hook guard marked
// specified-delete (a direct delete or eviction it redirected) goes
// through its preDelete hook, then is deleted; the node then gets a new
// pod.
func TestSpecifiedDeleteGoesThroughTheHook(t *testing.T) {
	set := newSet(1)
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/drain": "true"}}}
	pod := runningPod("node-0", newHash)
	pod.Labels["apps.kruise.io/specified-delete"] = "true"
	pod.Labels["example.com/drain"] = "true"
	p, err := Compute(snapshot(set, nodes(1), pod))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(p.Actions); !slices.Equal(got, []string{"SetState node-0/new222 PreparingDelete"}) {
		t.Fatalf("actions %q, want the pod held in PreparingDelete", got)
	}
	delete(pod.Labels, "example.com/drain")
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingDelete)
	if p, err = Compute(snapshot(set, nodes(1), pod)); err != nil {
		t.Fatal(err)
	}
	if got := summary(p.Actions); !slices.Equal(got, []string{"DeletePod node-0/new222"}) {
		t.Fatalf("actions %q, want the released pod deleted", got)
	}
}
