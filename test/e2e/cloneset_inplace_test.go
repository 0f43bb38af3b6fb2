package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// TestCloneSetUpdatesImagesInPlace: an image change under InPlaceIfPossible
// keeps each pod (UID, name, IP, node), restarts its container with the new
// image, and holds the pod NotReady through InPlaceUpdateReady meanwhile.
func TestCloneSetUpdatesImagesInPlace(t *testing.T) {
	_, cs := newInPlaceCloneSet(t, "inplace", 3, 1)
	before := map[string]corev1.Pod{}
	for _, p := range clonePods(t, cs) {
		if podCondition(&p, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
			t.Fatalf("pod %s: InPlaceUpdateReady %q", p.Name, podCondition(&p, pub.InPlaceUpdateReady))
		}
		// The condition came in the kubelet's first report (the pod
		// status webhook), not in a status write of the controller's.
		for _, m := range p.ManagedFields {
			if m.Manager == "lifeline-manager" && m.Subresource == "status" {
				t.Errorf("pod %s: the controller wrote its status (%s at %v), want InPlaceUpdateReady set in its kubelet's report", p.Name, m.Operation, m.Time)
			}
		}
		before[p.Name] = p
	}

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	if minAvailable := waitSettledWatchingAvailability(t, cs, "every pod updated in place", 3); minAvailable < 2 {
		t.Errorf("availability fell to %d of 3 with maxUnavailable 1", minAvailable)
	}
	for _, p := range clonePods(t, cs) {
		was, ok := before[p.Name]
		if !ok || was.UID != p.UID || was.Status.PodIP != p.Status.PodIP || was.Spec.NodeName != p.Spec.NodeName {
			t.Errorf("pod %s was replaced, not updated in place", p.Name)
			continue
		}
		st := p.Status.ContainerStatuses[0]
		if st.Image != "nginx:1.28" || st.RestartCount != 1 || st.ImageID == was.Status.ContainerStatuses[0].ImageID {
			t.Errorf("pod %s container status %+v", p.Name, st)
		}
		if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || p.Annotations[pub.InPlaceUpdateStateKey] == "" ||
			podCondition(&p, pub.InPlaceUpdateReady) != corev1.ConditionTrue || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
			t.Errorf("pod %s after the update: labels %v conditions %+v", p.Name, p.Labels, p.Status.Conditions)
		}
	}
}

// TestInPlaceUpdateHookWithMarkPodNotReady is seed 001's update: a pod
// picked for update waits in PreparingUpdate, NotReady, until its operator
// removes the hook label; it is then updated in place, waits in Updated
// until the label is back, and ends Normal and Ready on the new image.
func TestInPlaceUpdateHookWithMarkPodNotReady(t *testing.T) {
	ns, cs := newHookedInPlaceCloneSet(t, "hooked-inplace", true)
	pod := clonePods(t, cs)[0]

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitPod(t, ns, pod.Name, "held in PreparingUpdate and NotReady", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) && podCondition(p, corev1.PodReady) == corev1.ConditionFalse &&
			p.Spec.Containers[0].Image == "nginx:1.27"
	})

	// The operator drains the pod and releases it.
	patchPod(t, ns, pod.Name, `{"metadata":{"labels":{"`+blocker+`":"false"}}}`)
	waitPod(t, ns, pod.Name, "updated in place, waiting in Updated", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateUpdated) && p.Status.ContainerStatuses[0].Image == "nginx:1.28" &&
			podCondition(p, pub.KruisePodReadyConditionType) == corev1.ConditionTrue
	})

	// The operator registers the pod again.
	patchPod(t, ns, pod.Name, `{"metadata":{"labels":{"`+blocker+`":"true"}}}`)
	waitCloneSet(t, cs, "Normal and available on the new revision", settled(1))
	after := waitPod(t, ns, pod.Name, "Normal and Ready", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal) && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	if after.UID != pod.UID {
		t.Errorf("the pod was replaced")
	}
}

// TestRollbackDuringInPlaceUpdate: a rollback while a pod is held for an
// in-place update returns it to Normal and Ready on its image, untouched.
func TestRollbackDuringInPlaceUpdate(t *testing.T) {
	ns, cs := newHookedInPlaceCloneSet(t, "rollback", true)
	firstRevision := cs.Status.UpdateRevision
	pod := clonePods(t, cs)[0]

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitPod(t, ns, pod.Name, "held in PreparingUpdate", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) && podCondition(p, corev1.PodReady) == corev1.ConditionFalse
	})
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.27" })
	waitCloneSet(t, cs, "back on the first revision", func(c *appsv1alpha1.CloneSet) bool {
		return settled(1)(c) && c.Status.UpdateRevision == firstRevision
	})
	after := waitPod(t, ns, pod.Name, "Normal and Ready", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal) && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	if after.UID != pod.UID || after.Spec.Containers[0].Image != "nginx:1.27" || after.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod was touched: uid %s→%s, image %s, restarts %d", pod.UID, after.UID, after.Spec.Containers[0].Image, after.Status.ContainerStatuses[0].RestartCount)
	}
}

// TestInPlaceGracePeriod: with gracePeriodSeconds the pod is NotReady first
// and its image changes only once the grace period is over.
func TestInPlaceGracePeriod(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newCloneSet(ns, "grace", 1)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 3}
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	pod := clonePods(t, cs)[0]

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waiting := waitPod(t, ns, pod.Name, "NotReady with its image held back", func(p *corev1.Pod) bool {
		return podCondition(p, pub.InPlaceUpdateReady) == corev1.ConditionFalse && p.Annotations[pub.InPlaceUpdateGraceKey] != ""
	})
	if waiting.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatalf("image changed during the grace period: %s", waiting.Spec.Containers[0].Image)
	}
	var notReadyAt time.Time
	for _, c := range waiting.Status.Conditions {
		if c.Type == pub.InPlaceUpdateReady {
			notReadyAt = c.LastTransitionTime.Time
		}
	}
	waitCloneSet(t, cs, "updated", settled(1))
	after := waitPod(t, ns, pod.Name, "running the new image", func(p *corev1.Pod) bool {
		return p.Status.ContainerStatuses[0].Image == "nginx:1.28" && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	started := after.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	// Timestamps are whole seconds: allow one for rounding.
	if started.Sub(notReadyAt) < 2*time.Second {
		t.Errorf("the container restarted %v after the pod went NotReady; the grace period is 3s", started.Sub(notReadyAt))
	}
	if after.UID != pod.UID || after.Annotations[pub.InPlaceUpdateGraceKey] != "" {
		t.Errorf("uid %s→%s, grace annotation %q", pod.UID, after.UID, after.Annotations[pub.InPlaceUpdateGraceKey])
	}
}

// TestNewerRevisionRehooksAnUpdatedPod: a newer revision arriving while a pod
// waits in Updated puts the hook's handler back and holds the pod in
// PreparingUpdate again, so the operator's hook runs for that update too.
func TestNewerRevisionRehooksAnUpdatedPod(t *testing.T) {
	ns, cs := newHookedInPlaceCloneSet(t, "rehook", false)
	pod := clonePods(t, cs)[0]
	release := func() { patchPod(t, ns, pod.Name, `{"metadata":{"labels":{"`+blocker+`":"false"}}}`) }
	inState := func(s pub.LifecycleStateType, image string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			return p.Labels[pub.LifecycleStateKey] == string(s) && p.Spec.Containers[0].Image == image
		}
	}

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitPod(t, ns, pod.Name, "held for 1.28", inState(pub.LifecycleStatePreparingUpdate, "nginx:1.27"))
	release()
	waitPod(t, ns, pod.Name, "Updated on 1.28", inState(pub.LifecycleStateUpdated, "nginx:1.28"))

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.29" })
	held := waitPod(t, ns, pod.Name, "held again for 1.29", inState(pub.LifecycleStatePreparingUpdate, "nginx:1.28"))
	if held.Labels[blocker] != "true" {
		t.Fatalf("the handler was not put back: %v", held.Labels)
	}
	release()
	waitPod(t, ns, pod.Name, "Updated on 1.29", inState(pub.LifecycleStateUpdated, "nginx:1.29"))
	patchPod(t, ns, pod.Name, `{"metadata":{"labels":{"`+blocker+`":"true"}}}`)
	waitCloneSet(t, cs, "settled on 1.29", settled(1))
	waitPod(t, ns, pod.Name, "Normal on 1.29", inState(pub.LifecycleStateNormal, "nginx:1.29"))
}

// newInPlaceCloneSet creates an InPlaceIfPossible CloneSet and waits until
// its pods are available.
func newInPlaceCloneSet(t *testing.T, name string, replicas, maxUnavailable int32) (string, *appsv1alpha1.CloneSet) {
	t.Helper()
	ns := newNamespace(t)
	cs := newCloneSet(ns, name, replicas)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(maxUnavailable))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, fmt.Sprintf("%d pods available", replicas), settled(replicas))
	return ns, cs
}

// blocker is the inPlaceUpdate hook label of seed 001.
const blocker = "example.com/unready-blocker-inplace"

// newHookedInPlaceCloneSet creates a one-pod InPlaceIfPossible CloneSet whose
// inPlaceUpdate hook is the blocker label, put on its pods by the template,
// and waits until the pod is available.
func newHookedInPlaceCloneSet(t *testing.T, name string, markPodNotReady bool) (string, *appsv1alpha1.CloneSet) {
	t.Helper()
	ns := newNamespace(t)
	cs := newCloneSet(ns, name, 1)
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{blocker: "true"}, MarkPodNotReady: markPodNotReady}}
	cs.Spec.Template.Labels[blocker] = "true"
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	return ns, cs
}

// TestInPlaceRolloutAcrossControllerRestarts: the manager is stopped and
// started three times during an in-place rollout, cutting writes short at
// random. Judged from a watch of every pod write: no moment has more pods
// out of service than maxUnavailable, every pod is updated in place (same
// UID) through Updating, and all end Normal and Ready.
func TestInPlaceRolloutAcrossControllerRestarts(t *testing.T) {
	ns, cs := newInPlaceCloneSet(t, "inplace-restart", 20, 2)
	updatedInPlace := trackInPlace(t, ns, cs)
	outOfService := watchOutOfService(t, ns)

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	for _, n := range []int{2, 8, 14} {
		eventually(t, time.Minute, fmt.Sprintf("%d pods on the new image", n), func(context.Context) (bool, string, error) {
			updated := podsOnImage(t, cs, "nginx:1.28")
			return updated >= n, fmt.Sprintf("%d updated", updated), nil
		})
		if err := restartManager(); err != nil {
			t.Fatal(err)
		}
	}
	waitCloneSet(t, cs, "every pod updated and available", settled(20))
	updatedInPlace(t)
	t.Logf("at most %d out of service", outOfService())
	if most := outOfService(); most > 2 {
		t.Errorf("%d pods out of service at once with maxUnavailable 2", most)
	}
}

// trackInPlace records the CloneSet's pods and their lifecycle states from
// now on; the check it returns fails for a pod recreated rather than
// updated in place, never Updating, or not ending Normal, Ready and
// InPlaceUpdateReady.
func trackInPlace(t *testing.T, ns string, cs *appsv1alpha1.CloneSet) func(*testing.T) {
	t.Helper()
	before := map[string]types.UID{}
	for _, p := range clonePods(t, cs) {
		before[p.Name] = p.UID
	}
	states := recordStates(t, ns)
	return func(t *testing.T) {
		t.Helper()
		for _, p := range clonePods(t, cs) {
			if before[p.Name] != p.UID {
				t.Errorf("pod %s was recreated", p.Name)
			}
			if podCondition(&p, pub.InPlaceUpdateReady) != corev1.ConditionTrue || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue ||
				p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
				t.Errorf("pod %s ends %s with conditions %+v", p.Name, p.Labels[pub.LifecycleStateKey], p.Status.Conditions)
			}
			if got := states(p.Name); !slices.Contains(got, string(pub.LifecycleStateUpdating)) {
				t.Errorf("pod %s states %v: never Updating", p.Name, got)
			}
		}
	}
}

// podsOnImage counts the CloneSet's pods whose first container runs image.
func podsOnImage(t *testing.T, cs *appsv1alpha1.CloneSet, image string) int {
	n := 0
	for _, p := range clonePods(t, cs) {
		if p.Spec.Containers[0].Image == image {
			n++
		}
	}
	return n
}

// watchOutOfService follows the pods of ns and returns the most that were
// ever out of service at once: not Ready, InPlaceUpdateReady not True, or in
// a lifecycle state other than Normal (a CloneSet counts all of those as
// unavailable).
func watchOutOfService(t *testing.T, ns string) func() int {
	t.Helper()
	_, most := followPods(t, ns, "", func(pod *corev1.Pod) bool {
		return podCondition(pod, corev1.PodReady) != corev1.ConditionTrue ||
			podCondition(pod, pub.InPlaceUpdateReady) != corev1.ConditionTrue || pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal)
	})
	return most
}

// TestInPlaceUpdateByContainerPriority is OpenKruise's e2e 13: redis, with
// KRUISE_CONTAINER_PRIORITY 10, is updated first; nginx, without one, only
// once redis runs its new image and is Ready. Checked on every watched
// write of the pod, not just at the end.
func TestInPlaceUpdateByContainerPriority(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "priority", 1)
	cs.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "nginx", Image: "nginx:1.27"},
		{Name: "redis", Image: "redis:7.2", Env: []corev1.EnvVar{{Name: "KRUISE_CONTAINER_PRIORITY", Value: "10"}}},
	}
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	pod := clonePods(t, cs)[0]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: pod.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var early []string
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.Spec.Containers[0].Image != "nginx:1.28" {
				continue
			}
			for _, st := range p.Status.ContainerStatuses {
				if st.Name == "redis" && (st.Image != "redis:7.4" || !st.Ready) {
					mu.Lock()
					early = append(early, fmt.Sprintf("rv %s: nginx's image changed while redis ran %s (ready %v)", p.ResourceVersion, st.Image, st.Ready))
					mu.Unlock()
				}
			}
		}
	}()

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		c.Spec.Template.Spec.Containers[1].Image = "redis:7.4"
	})
	waitCloneSet(t, cs, "updated in place and available", settled(1))
	after := waitPod(t, ns, pod.Name, "Normal and Ready on both new images", func(p *corev1.Pod) bool {
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal) && podCondition(p, corev1.PodReady) == corev1.ConditionTrue &&
			p.Status.ContainerStatuses[0].Image == "nginx:1.28" && p.Status.ContainerStatuses[1].Image == "redis:7.4"
	})
	if after.UID != pod.UID {
		t.Error("the pod was recreated")
	}
	for _, st := range after.Status.ContainerStatuses {
		if st.RestartCount != 1 {
			t.Errorf("container %s restarted %d times, want once", st.Name, st.RestartCount)
		}
	}
	var state pub.InPlaceUpdateState
	if err := json.Unmarshal([]byte(after.Annotations[pub.InPlaceUpdateStateKey]), &state); err != nil {
		t.Fatal(err)
	}
	var batches [][]string
	for _, b := range state.ContainerBatchesRecord {
		batches = append(batches, b.Containers)
	}
	if fmt.Sprint(batches) != "[[redis] [nginx]]" || len(state.NextContainerImages) != 0 {
		t.Errorf("batches %v, next %v; want [[redis] [nginx]] and none left", batches, state.NextContainerImages)
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	for _, e := range early {
		t.Error(e)
	}
}
