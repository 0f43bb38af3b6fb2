package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// recordPlacement watches the pods of ns matching selector and returns, per
// pod, the (node?, state) pairs its writes went through, consecutive
// repeats folded: "-PreparingNormal" unscheduled, "+Normal" on a node.
func recordPlacement(t *testing.T, ns, selector string) func(pod string) []string {
	t.Helper()
	return recordPods(t, ns, selector, func(_ watch.EventType, pod *corev1.Pod) string {
		if pod.Spec.NodeName != "" {
			return "+" + pod.Labels[pub.LifecycleStateKey]
		}
		return "-" + pod.Labels[pub.LifecycleStateKey]
	})
}

// TestNewPodsGoNormalInTheirBind: pods start PreparingNormal (OpenKruise
// v1.9) and the binding webhook makes them Normal in the bind itself, so no
// write ever shows a scheduled pod still PreparingNormal.
func TestNewPodsGoNormalInTheirBind(t *testing.T) {
	ns := newNamespace(t)
	before := counter("lifeline_cloneset_binding_state_total", map[string]string{"result": "normal"})
	placement := recordPlacement(t, ns, "app=bound")
	cs := newCloneSet(ns, "bound", 5)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "5 pods available", settled(5))
	for _, p := range clonePods(t, cs) {
		if got, want := placement(p.Name), []string{"-PreparingNormal", "+Normal"}; !slices.Equal(got, want) {
			t.Errorf("pod %s went through %v, want %v", p.Name, got, want)
		}
	}
	if n := counter("lifeline_cloneset_binding_state_total", map[string]string{"result": "normal"}) - before; n < 5 {
		t.Errorf("the binding webhook made %v binds Normal, want 5", n)
	}
}

// TestPodsGoNormalWithoutTheBindingWebhook: where the webhook does not
// answer (here kube-system, which its namespaceSelector leaves out, as it
// would a cluster before 1.35 or a webhook that is down), the controller
// moves a scheduled pod from PreparingNormal to Normal itself.
func TestPodsGoNormalWithoutTheBindingWebhook(t *testing.T) {
	const ns, name = metav1.NamespaceSystem, "lifeline-e2e-unbound"
	placement := recordPlacement(t, ns, "app="+name)
	cs := newCloneSet(ns, name, 3)
	createCloneSet(t, cs)
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), cs, ctrlclient.PropagationPolicy(metav1.DeletePropagationForeground))
	})
	waitCloneSet(t, cs, "3 pods available", settled(3))
	for _, p := range clonePods(t, cs) {
		if got, want := placement(p.Name), []string{"-PreparingNormal", "+PreparingNormal", "+Normal"}; !slices.Equal(got, want) {
			t.Errorf("pod %s went through %v, want %v", p.Name, got, want)
		}
	}
}

// OpenKruise's "creates with unschedulable scheduler": a pod nobody
// schedules stays PreparingNormal and the rollout times out; once the
// template names a real scheduler, its pod runs and goes Normal.
func TestUnscheduledPodStaysPreparingNormal(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newCloneSet(ns, "unschedulable", 1)
	cs.Spec.Template.Spec.SchedulerName = "no-such-scheduler"
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](4)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "the deadline passes", func(c *appsv1alpha1.CloneSet) bool {
		p := condition(c, appsv1alpha1.CloneSetConditionTypeProgressing)
		return c.Status.Replicas == 1 && p != nil && p.Reason == appsv1alpha1.CloneSetProgressDeadlineExceeded
	})
	// Consistently PreparingNormal for a while after the deadline, not
	// merely not yet moved.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		pods := clonePods(t, cs)
		if len(pods) != 1 || pods[0].Spec.NodeName != "" || pods[0].Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingNormal) {
			t.Fatalf("unscheduled pod: %+v", pods)
		}
		time.Sleep(200 * time.Millisecond)
	}
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.SchedulerName = corev1.DefaultSchedulerName })
	waitCloneSet(t, cs, "available once schedulable", func(c *appsv1alpha1.CloneSet) bool {
		p := condition(c, appsv1alpha1.CloneSetConditionTypeProgressing)
		return settled(1)(c) && p != nil && p.Reason == appsv1alpha1.CloneSetAvailable
	})
	if pods := clonePods(t, cs); len(pods) != 1 || pods[0].Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
		t.Errorf("pods after the fix: %+v", pods)
	}
}

// OpenKruise's "regard preparing-update pod as update when scaling" (its
// gate PreparingUpdateAsUpdate, always on here): a pod held in
// PreparingUpdate is the one pod partition lets update, so pods rebuilt or
// added meanwhile are created at the current revision, and releasing the
// hook leaves exactly one pod updated.
func TestPreparingUpdatePodCountsAsUpdatedWhenScaling(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newCloneSet(ns, "prepupdate", 2)
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{blocker: "true"}}}
	cs.Spec.Template.Labels[blocker] = "true"
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("99%"))
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("50%"))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods available", settled(2))

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	var held, other string
	eventually(t, time.Minute, "one pod held in PreparingUpdate", func(ctx context.Context) (bool, string, error) {
		held, other = "", ""
		for _, p := range clonePods(t, cs) {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) {
				held = p.Name
			} else {
				other = p.Name
			}
		}
		return held != "" && other != "", fmt.Sprintf("held %q other %q", held, other), nil
	})
	current := cs.Status.CurrentRevision
	atCurrent := func(c *appsv1alpha1.CloneSet) func() (int, string) {
		return func() (int, string) {
			n, seen := 0, ""
			for _, p := range clonePods(t, c) {
				if p.Name != held && p.Labels[appsv1.ControllerRevisionHashLabelKey] == current && p.Status.Phase == corev1.PodRunning {
					n++
				}
				seen += fmt.Sprintf("%s@%s/%s ", p.Name, p.Labels[appsv1.ControllerRevisionHashLabelKey], p.Labels[pub.LifecycleStateKey])
			}
			return n, seen
		}
	}(cs)

	// The other pod deleted: rebuilt at the current revision.
	if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the deleted pod rebuilt at the current revision", func(ctx context.Context) (bool, string, error) {
		n, seen := atCurrent()
		return n == 1 && len(clonePods(t, cs)) == 2, seen, nil
	})
	// Scaled to 3: the new pod at the current revision too.
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](3) })
	eventually(t, time.Minute, "the added pod at the current revision", func(ctx context.Context) (bool, string, error) {
		n, seen := atCurrent()
		return n == 2 && len(clonePods(t, cs)) == 3, seen, nil
	})
	// Released: the held pod is the one updated, in place.
	patchPod(t, ns, held, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, blocker))
	heldPod := waitPod(t, ns, held, "the held pod updated in place, waiting in Updated for its hook", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateUpdated) && p.Spec.Containers[0].Image == "nginx:1.28"
	})
	patchPod(t, ns, held, fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, blocker))
	waitCloneSet(t, cs, "1 updated and 2 current pods, all available", func(c *appsv1alpha1.CloneSet) bool {
		s := c.Status
		return s.ObservedGeneration == c.Generation && s.Replicas == 3 && s.UpdatedReplicas == 1 && s.UpdatedAvailableReplicas == 1 && s.AvailableReplicas == 3
	})
	if n, seen := atCurrent(); n != 2 {
		t.Fatalf("after the release: %s", seen)
	}
	if now := waitPod(t, ns, held, "same pod", func(*corev1.Pod) bool { return true }); now.UID != heldPod.UID {
		t.Fatalf("the held pod was recreated")
	}

	// No partition: the other two wait in PreparingUpdate until released.
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.UpdateStrategy.Partition = nil
		c.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	})
	eventually(t, time.Minute, "the other two released and updated", func(ctx context.Context) (bool, string, error) {
		seen := ""
		for _, p := range clonePods(t, cs) {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) && p.Labels[blocker] == "true" {
				patchPod(t, ns, p.Name, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, blocker))
			}
			seen += p.Name + "/" + p.Labels[pub.LifecycleStateKey] + " "
		}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), cs); err != nil {
			return false, err.Error(), nil
		}
		return cs.Status.UpdatedReplicas == 3 && cs.Status.Replicas == 3, seen, nil
	})
}
