package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

func condition(cs *appsv1alpha1.CloneSet, t appsv1alpha1.CloneSetConditionType) *appsv1alpha1.CloneSetCondition {
	for i := range cs.Status.Conditions {
		if cs.Status.Conditions[i].Type == t {
			return &cs.Status.Conditions[i]
		}
	}
	return nil
}

// TestPreNormalHoldsNewPodsAndTheRollout is seed 002: with a preNormal hook,
// maxSurge 1 and maxUnavailable 0, no old pod goes until the new pod's
// handler is present; a rollout held too long says so in its Progressing
// condition.
func TestPreNormalHoldsNewPodsAndTheRollout(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "prenormal", 3)
	const online = "example.com/traffic-online"
	cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{online: "true"}}}
	cs.Spec.Template.Labels[online] = "false"
	cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
	createCloneSet(t, cs)

	// Ready but held: not available, and the deadline passes.
	waitCloneSet(t, cs, "3 ready pods held in PreparingNormal past the deadline", func(c *appsv1alpha1.CloneSet) bool {
		p := condition(c, appsv1alpha1.CloneSetConditionTypeProgressing)
		return c.Status.ReadyReplicas == 3 && c.Status.AvailableReplicas == 0 && p != nil &&
			p.Reason == appsv1alpha1.CloneSetProgressDeadlineExceeded && p.Status == corev1.ConditionFalse
	})
	for _, p := range clonePods(t, cs) {
		if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingNormal) {
			t.Errorf("pod %s is %s before its hook was released", p.Name, p.Labels[pub.LifecycleStateKey])
		}
		patchPod(t, ns, p.Name, fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, online))
	}
	waitCloneSet(t, cs, "available once released", func(c *appsv1alpha1.CloneSet) bool {
		p := condition(c, appsv1alpha1.CloneSetConditionTypeProgressing)
		return settled(3)(c) && p != nil && p.Reason == appsv1alpha1.CloneSetAvailable
	})
	old := podNames(clonePods(t, cs))

	// Steps 1-3: the update creates one new pod; it is Ready but held, so
	// no old pod goes.
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	var fresh string
	waitCloneSet(t, cs, "the surge pod ready and held", func(c *appsv1alpha1.CloneSet) bool {
		for _, p := range clonePods(t, c) {
			if p.Spec.Containers[0].Image == "nginx:1.28" {
				fresh = p.Name
			}
		}
		return c.Status.ObservedGeneration == c.Generation && c.Status.UpdatedReadyReplicas == 1 && c.Status.Replicas == 4
	})
	// The controller has seen the new pod Ready (status says so); had it
	// counted the held pod as available, an old pod would be gone by now.
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: fresh}, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingNormal) || len(clonePods(t, cs)) != 4 {
		t.Fatalf("held surge pod %s in %s with %d pods", fresh, pod.Labels[pub.LifecycleStateKey], len(clonePods(t, cs)))
	}
	for _, name := range old {
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, pod); err != nil || pod.DeletionTimestamp != nil {
			t.Fatalf("old pod %s went while the new pod was held: %v", name, err)
		}
	}

	// Steps 4-6: an operator releases each new pod; the rollout goes on
	// one pod at a time.
	eventually(t, 2*time.Minute, "rollout finished with every new pod released", func(ctx context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			if p.Labels[online] != "true" && p.Status.Phase == corev1.PodRunning {
				patchPod(t, ns, p.Name, fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, online))
			}
		}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), cs); err != nil {
			return false, err.Error(), nil
		}
		if cs.Status.AvailableReplicas < 3 && cs.Status.ObservedGeneration == cs.Generation && cs.Status.Replicas >= 3 {
			return false, "", fmt.Errorf("availability fell to %d with maxUnavailable 0", cs.Status.AvailableReplicas)
		}
		return settled(3)(cs), fmt.Sprintf("status %+v", cs.Status), nil
	})
}

// TestFailedScaleIsReportedAndCleared: pod creation that fails shows in a
// FailedScale condition and an event, and the condition goes once scaling
// succeeds again.
func TestFailedScaleIsReportedAndCleared(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	// The quota admission plugin judges by the API server's informer, which
	// may lag behind the quota's status in etcd; until it has the status
	// (hard limits and usage, written at once) it admits every pod. So the
	// quota is in force once a dry-run Service (limit 0, same status) is
	// refused, not once a read shows the status. CI admitted 3 pods of 2
	// while this test waited on the read.
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: mustQuantity("2"), corev1.ResourceServices: mustQuantity("0")}}}
	if err := k8s.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "quota in force", func(ctx context.Context) (bool, string, error) {
		probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota-probe"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		err := k8s.Create(ctx, probe, ctrlclient.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "exceeded quota"), fmt.Sprint(err), nil
	})
	cs := newCloneSet(ns, "quota", 3)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "FailedScale", func(c *appsv1alpha1.CloneSet) bool {
		f := condition(c, appsv1alpha1.CloneSetConditionFailedScale)
		return f != nil && f.Status == corev1.ConditionTrue && strings.Contains(f.Message, "exceeded quota") && c.Status.Replicas == 2
	})
	eventually(t, time.Minute, "a FailedCreate event", func(ctx context.Context) (bool, string, error) {
		events, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && e.Regarding.Name == cs.Name && strings.Contains(e.Note, "exceeded quota") {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items)), nil
	})
	if err := k8s.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	waitCloneSet(t, cs, "scaled, and FailedScale cleared", func(c *appsv1alpha1.CloneSet) bool {
		return settled(3)(c) && condition(c, appsv1alpha1.CloneSetConditionFailedScale) == nil
	})
}

// TestPreDeleteMarkPodNotReady: a pod held by a preDelete hook with
// markPodNotReady really becomes NotReady (through the KruisePodReady
// readiness gate), and goes once released.
func TestPreDeleteMarkPodNotReady(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "drain", 2)
	const drain = "example.com/drain"
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{drain: "true"}, MarkPodNotReady: true}}
	cs.Spec.Template.Labels[drain] = "true"
	createCloneSet(t, cs)
	// The gate is on every pod and the controller sets its condition, so
	// the pods become Ready.
	waitCloneSet(t, cs, "2 pods available", settled(2))
	for _, p := range clonePods(t, cs) {
		if podCondition(&p, pub.KruisePodReadyConditionType) != corev1.ConditionTrue || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
			t.Fatalf("pod %s: KruisePodReady %q, Ready %q", p.Name, podCondition(&p, pub.KruisePodReadyConditionType), podCondition(&p, corev1.PodReady))
		}
	}

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](1) })
	var held *corev1.Pod
	eventually(t, time.Minute, "the held pod NotReady", func(context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) && podCondition(&p, corev1.PodReady) == corev1.ConditionFalse {
				held = &p
				return true, "", nil
			}
		}
		return false, "no held NotReady pod yet", nil
	})
	for _, c := range held.Status.Conditions {
		if c.Type == pub.KruisePodReadyConditionType && (c.Status != corev1.ConditionFalse || c.Message != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`) {
			t.Errorf("KruisePodReady: %+v", c)
		}
	}
	patchPod(t, ns, held.Name, fmt.Sprintf(`{"metadata":{"labels":{%q:"false"}}}`, drain))
	waitCloneSet(t, cs, "released pod deleted", func(c *appsv1alpha1.CloneSet) bool {
		pod := &corev1.Pod{}
		err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(held), pod)
		return settled(1)(c) && (err != nil || pod.DeletionTimestamp != nil)
	})
}

// TestPreparingDeleteIsRevivedOrReplaced: replicas going back up take a
// held pod back (PreparingDelete → PreparingNormal → Normal) instead of
// creating one; with the exclude-preparing-delete label, and for a pod
// named in podsToDelete, a new pod is created instead (reference e2e 10).
func TestPreparingDeleteIsRevivedOrReplaced(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "revive", 3)
	const drain = "example.com/drain"
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{drain: "true"}}}
	cs.Spec.Template.Labels[drain] = "true"
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "3 pods available", settled(3))
	original := podNames(clonePods(t, cs))

	held := func() string {
		for _, p := range clonePods(t, cs) {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) {
				return p.Name
			}
		}
		return ""
	}
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](2) })
	waitCloneSet(t, cs, "one pod held, still counted", func(c *appsv1alpha1.CloneSet) bool {
		return held() != "" && c.Status.ObservedGeneration == c.Generation && c.Status.Replicas == 3
	})
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](3) })
	waitCloneSet(t, cs, "the held pod revived", func(c *appsv1alpha1.CloneSet) bool { return settled(3)(c) && held() == "" })
	if got := podNames(clonePods(t, cs)); !slices.Equal(got, original) {
		t.Errorf("pods %v after the revival, want the original %v", got, original)
	}

	// Excluded from the count, a held pod named in podsToDelete is
	// replaced when replicas go back up.
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Labels = map[string]string{appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey: "true"}
		c.Spec.Replicas = ptr.To[int32](2)
		c.Spec.ScaleStrategy.PodsToDelete = []string{original[0]}
	})
	waitCloneSet(t, cs, "the named pod held", func(c *appsv1alpha1.CloneSet) bool {
		return held() == original[0] && c.Status.ObservedGeneration == c.Generation && c.Status.Replicas == 3
	})
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](3) })
	waitCloneSet(t, cs, "a new pod next to the held one", func(c *appsv1alpha1.CloneSet) bool {
		return c.Status.ObservedGeneration == c.Generation && c.Status.Replicas == 4 && held() == original[0]
	})
	patchPod(t, ns, original[0], fmt.Sprintf(`{"metadata":{"labels":{%q:"false"}}}`, drain))
	waitCloneSet(t, cs, "the held pod gone", func(c *appsv1alpha1.CloneSet) bool {
		return settled(3)(c) && !slices.Contains(podNames(clonePods(t, c)), original[0])
	})
}

// TestPreDeleteHoldsPodsPickedByARecreateUpdate: under ReCreate, a pod picked
// for update with a preDelete hook waits in PreparingDelete, NotReady with
// markPodNotReady, and is neither deleted nor replaced until its operator
// releases it; maxUnavailable 1 keeps the other pod serving meanwhile.
func TestPreDeleteHoldsPodsPickedByARecreateUpdate(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "recreate-held", 2)
	const drain = "example.com/drain"
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{drain: "true"}, MarkPodNotReady: true}}
	cs.Spec.Template.Labels[drain] = "true"
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods available", settled(2))
	original := podNames(clonePods(t, cs))

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	for round := 0; round < 2; round++ {
		var held *corev1.Pod
		eventually(t, time.Minute, fmt.Sprintf("round %d: an old pod held in PreparingDelete and NotReady", round), func(context.Context) (bool, string, error) {
			for _, p := range clonePods(t, cs) {
				if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) && podCondition(&p, corev1.PodReady) == corev1.ConditionFalse {
					held = &p
					return true, "", nil
				}
			}
			return false, fmt.Sprint(podNames(clonePods(t, cs))), nil
		})
		if !slices.Contains(original, held.Name) || held.Spec.Containers[0].Image != "nginx:1.27" {
			t.Fatalf("held pod %s on %s is not an original", held.Name, held.Spec.Containers[0].Image)
		}
		// Held, it is neither deleted nor replaced: two pods, the other
		// one serving.
		waitCloneSet(t, cs, "the held pod counted, the other available", func(c *appsv1alpha1.CloneSet) bool {
			return c.Status.ObservedGeneration == c.Generation && c.Status.Replicas == 2 && c.Status.AvailableReplicas == 1
		})
		if pods := clonePods(t, cs); len(pods) != 2 || !slices.Contains(podNames(pods), held.Name) {
			t.Fatalf("pods %v while %s is held", podNames(pods), held.Name)
		}
		patchPod(t, ns, held.Name, fmt.Sprintf(`{"metadata":{"labels":{%q:"false"}}}`, drain))
		eventually(t, time.Minute, "the released pod replaced", func(context.Context) (bool, string, error) {
			names := podNames(clonePods(t, cs))
			return !slices.Contains(names, held.Name) && len(names) == 2, fmt.Sprint(names), nil
		})
	}
	waitCloneSet(t, cs, "both pods recreated on the new image", settled(2))
	for _, p := range clonePods(t, cs) {
		if slices.Contains(original, p.Name) || p.Spec.Containers[0].Image != "nginx:1.28" {
			t.Errorf("pod %s on %s after the rollout", p.Name, p.Spec.Containers[0].Image)
		}
	}
}

// TestMarkPodNotReadyOnAPodWithoutTheGate: markPodNotReady turned on after
// a pod was created cannot make that pod NotReady (readiness gates are
// fixed at creation); the CloneSet says so when the hook holds the pod.
func TestMarkPodNotReadyOnAPodWithoutTheGate(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "late-mark", 1)
	const drain = "example.com/drain"
	cs.Spec.Template.Labels[drain] = "true"
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	pod := clonePods(t, cs)[0]

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{drain: "true"}, MarkPodNotReady: true}}
		c.Spec.Replicas = ptr.To[int32](0)
	})
	waitPod(t, ns, pod.Name, "held in PreparingDelete", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete)
	})
	eventually(t, time.Minute, "a MarkPodNotReadyUnavailable warning", func(ctx context.Context) (bool, string, error) {
		events, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, e := range events.Items {
			if e.Reason == "MarkPodNotReadyUnavailable" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, pod.Name) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items)), nil
	})
	patchPod(t, ns, pod.Name, fmt.Sprintf(`{"metadata":{"labels":{%q:"false"}}}`, drain))
	waitCloneSet(t, cs, "scaled to 0", settled(0))
}

// availableWithPreDeleteHook creates cs, its pods held by a preDelete
// labelsHandler (lifecycle-hook=true) and a progress deadline, as
// OpenKruise's specs set them up, waits until it is available, and returns
// the name of a pod to take away.
func availableWithPreDeleteHook(t *testing.T, cs *appsv1alpha1.CloneSet) string {
	t.Helper()
	cs.Spec.Template.Labels["lifecycle-hook"] = "true"
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"lifecycle-hook": "true"}}}
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "available", func(c *appsv1alpha1.CloneSet) bool {
		p := condition(c, appsv1alpha1.CloneSetConditionTypeProgressing)
		return settled(*cs.Spec.Replicas)(c) && p != nil && p.Reason == appsv1alpha1.CloneSetAvailable
	})
	return clonePods(t, cs)[0].Name
}

// TestSpecifiedDeleteHeldByPreDeleteIsProgressing is OpenKruise's e2e spec
// "specific delete a Pod, when scalingExcludePreparingDelete is disabled":
// a pod labelled for deletion and held in PreparingDelete by its hook is no
// longer available, so the CloneSet is progressing (CloneSetUpdated), not
// available, while the hook holds it; no replacement is made meanwhile.
func TestSpecifiedDeleteHeldByPreDeleteIsProgressing(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "held", 3)
	victim := availableWithPreDeleteHook(t, cs)
	patchPod(t, ns, victim, fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, appsv1alpha1.SpecifiedDeleteKey))
	waitCloneSet(t, cs, "progressing while the hook holds "+victim, func(c *appsv1alpha1.CloneSet) bool {
		p := condition(c, appsv1alpha1.CloneSetConditionTypeProgressing)
		return p != nil && p.Reason == appsv1alpha1.CloneSetProgressUpdated && p.Message == "CloneSet is progressing" &&
			p.Status == corev1.ConditionTrue
	})
	pods := clonePods(t, cs)
	if len(pods) != 3 {
		t.Errorf("%d pods while %s is held, want 3 (no replacement yet)", len(pods), victim)
	}
	for _, p := range pods {
		if p.Name == victim && p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingDelete) {
			t.Errorf("%s is %s, want PreparingDelete", victim, p.Labels[pub.LifecycleStateKey])
		}
	}
	patchPod(t, ns, victim, `{"metadata":{"labels":{"lifecycle-hook":null}}}`)
	waitCloneSet(t, cs, "available again with a replacement", func(c *appsv1alpha1.CloneSet) bool {
		p := condition(c, appsv1alpha1.CloneSetConditionTypeProgressing)
		return settled(3)(c) && p != nil && p.Reason == appsv1alpha1.CloneSetAvailable && !slices.Contains(podNames(clonePods(t, c)), victim)
	})
}

// TestScaleDownHeldByPreDeleteIsProgressing is OpenKruise's e2e spec
// "specific scale down with lifecycle and then scale up, when
// scalingExcludePreparingDelete is enabled": as soon as the removed pod is
// seen in PreparingDelete, the status counts it (replicas 3) and says the
// CloneSet is progressing; a scale-up back to 3 then makes a new pod rather
// than reviving the held one (replicas 4).
func TestScaleDownHeldByPreDeleteIsProgressing(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "scaled", 3)
	cs.Labels = map[string]string{appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey: "true"}
	victim := availableWithPreDeleteHook(t, cs)
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Replicas = ptr.To[int32](2)
		c.Spec.ScaleStrategy.PodsToDelete = []string{victim}
	})
	eventually(t, 10*time.Second, victim+" in PreparingDelete", func(ctx context.Context) (bool, string, error) {
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: victim}, pod); err != nil {
			return false, "", err
		}
		state := pod.Labels[pub.LifecycleStateKey]
		return state == string(pub.LifecycleStatePreparingDelete), state, nil
	})
	// One read, as OpenKruise's spec does: the status written with the
	// transition already says so.
	if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), cs); err != nil {
		t.Fatal(err)
	}
	p := condition(cs, appsv1alpha1.CloneSetConditionTypeProgressing)
	if cs.Status.Replicas != 3 || p == nil || p.Reason != appsv1alpha1.CloneSetProgressUpdated || p.Message != "CloneSet is progressing" {
		t.Errorf("right after %s went PreparingDelete: replicas %d, Progressing %+v; want 3 and CloneSetUpdated", victim, cs.Status.Replicas, p)
	}
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](3) })
	waitCloneSet(t, cs, "a new pod beside the held one", func(c *appsv1alpha1.CloneSet) bool { return c.Status.Replicas == 4 })
}
