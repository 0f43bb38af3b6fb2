package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestRealNodeInPlaceUpdateToTheSameImageUnderAnotherTag: the new tag
// names the image the container runs already. The kubelet restarts the
// container (its spec changed) and reports the same image ID, and may
// report the image by another of its tags; the update must still end,
// with the pod Normal and Ready, once the container was restarted
// (OpenKruise's check of the image ID and image name alone waits forever
// when the runtime names the image by its first tag: openkruise/kruise
// #2297).
func TestRealNodeInPlaceUpdateToTheSameImageUnderAnotherTag(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newRealCloneSet(ns, "same", 1, "app")
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	before := clonePods(t, cs)[0]
	inPlaceReady := conditionTrail(t, ns, pub.InPlaceUpdateReady)

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage(cluster.TestAppAlias)
	})
	waitCloneSet(t, cs, "the pod updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(1)(c) && c.Status.UpdatedAvailableReplicas == 1 && c.Status.UpdatedReplicas == 1
	})
	p := clonePods(t, cs)[0]
	was, app := containerStatus(&before, "app"), containerStatus(&p, "app")
	if p.UID != before.UID {
		t.Fatal("the pod was recreated")
	}
	if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue ||
		podCondition(&p, pub.InPlaceUpdateReady) != corev1.ConditionTrue || p.Labels["controller-revision-hash"] != cs.Status.UpdateRevision {
		t.Errorf("pod: state %s, ready %s, in-place ready %s, revision %s (the set's %s)", p.Labels[pub.LifecycleStateKey],
			podCondition(&p, corev1.PodReady), podCondition(&p, pub.InPlaceUpdateReady), p.Labels["controller-revision-hash"], cs.Status.UpdateRevision)
	}
	if app.ImageID != was.ImageID || app.ContainerID == was.ContainerID || app.RestartCount != was.RestartCount+1 {
		t.Errorf("app container before %+v, after %+v; want the same image ID in a new container", was, app)
	}
	t.Logf("the kubelet reports the updated container's image as %q (spec %q), image ID %s", app.Image, p.Spec.Containers[0].Image, app.ImageID)
	if got := inPlaceReady(p.Name); !hasConditionSeq(got, corev1.ConditionFalse, corev1.ConditionTrue) {
		t.Errorf("InPlaceUpdateReady went %v, want False then True", got)
	}
	if got := lifeLine(lifeOf(t, p.Name, "app")); got != "start v1, sigterm v1, exit v1, start v1" {
		t.Errorf("the app container lived %q, want stopped once and started again on the same image", got)
	}
}

// Images a real node cannot get: from a registry no one answers (on
// loopback, so nothing leaves the machine), and a name the node does not
// hold under imagePullPolicy Never.
const (
	unreachableImage = "127.0.0.1:1/lifeline/testapp:v9"
	missingImage     = "lifeline.test/testapp:missing"
)

// TestRealNodeImageThatCannotBePulledStopsTheRollout: an in-place update
// to an image from an unreachable registry, and a recreate to an image
// the node does not hold, each leave one pod unready with the kubelet's
// pull error; the rollout stops at maxUnavailable, the in-place pod stays
// Updating (its inPlaceUpdate hook is not run again, nor is it counted
// updated), a budget refuses the next disruption, and kubectl lifeline
// status names the pull error.
func TestRealNodeImageThatCannotBePulledStopsTheRollout(t *testing.T) {
	alongside(t)
	for _, c := range []struct {
		name, image string
		policy      corev1.PullPolicy
		strategy    appsv1alpha1.CloneSetUpdateStrategyType
		errors      []string
		blocker     string // the reason kubectl lifeline status gives
	}{
		{"in-place", unreachableImage, corev1.PullIfNotPresent, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
			[]string{"ErrImagePull", "ImagePullBackOff"}, "UpdatingInPlace"},
		{"recreate", missingImage, corev1.PullNever, appsv1alpha1.RecreateCloneSetUpdateStrategyType, []string{"ErrImageNeverPull"}, "NotReady"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := newNamespace(t)
			cs := newRealCloneSet(ns, "pull", 3, "app")
			cs.Spec.Template.Spec.Containers[0].ImagePullPolicy = c.policy
			cs.Spec.UpdateStrategy.Type = c.strategy
			createCloneSet(t, cs)
			waitCloneSet(t, cs, "3 pods available", settled(3))
			healthy := map[string]bool{}
			for _, p := range clonePods(t, cs) {
				healthy[p.Name] = true
			}
			updateCloneSet(t, cs, func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = c.image })
			stuck := waitPullError(t, cs, c.image, c.errors)
			if c.strategy == appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType && !healthy[stuck] {
				t.Errorf("pod %s was recreated, not updated in place", stuck)
			}
			waitPullError(t, cs, c.image, c.errors[len(c.errors)-1:])
			create(t, newBudget(ns, "pull", policyv1alpha1.PodUnavailableBudgetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: cs.Spec.Selector.MatchLabels}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
			waitBudget(t, ns, "pull", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 2, UnavailableAllowed: 0})
			for _, p := range clonePods(t, cs) {
				if p.Name != stuck {
					if err := evictOnce(ns, p.Name); err == nil || !apierrors.IsTooManyRequests(err) {
						t.Errorf("evicting %s with the budget spent: %v, want 429", p.Name, err)
					}
					break
				}
			}
			message, _ := blockerFor(t, ns, "cloneset/"+cs.Name, stuck, c.blocker)
			// The kubelet's status says ErrImagePull or ImagePullBackOff
			// between its restart back-offs (CrashLoopBackOff), when the
			// plugin names its last Warning about the image instead.
			said := append([]string{"pull image", "pulling image"}, c.errors...)
			if !slices.ContainsFunc(said, func(e string) bool { return strings.Contains(message, e) }) {
				t.Errorf("kubectl lifeline status says %q, want the pull error (%v)", message, said)
			}
			// By now the kubelet has failed again and again: nothing else
			// may have moved.
			onBad := 0
			for _, p := range clonePods(t, cs) {
				if p.Spec.Containers[0].Image == c.image {
					onBad++
				}
				if p.Name == stuck {
					if podCondition(&p, corev1.PodReady) == corev1.ConditionTrue {
						t.Errorf("pod %s Ready though its image cannot be pulled", p.Name)
					}
					if c.strategy == appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType && p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateUpdating) {
						t.Errorf("pod %s in %s, want Updating until its container runs", p.Name, p.Labels[pub.LifecycleStateKey])
					}
				}
			}
			if onBad != 1 {
				t.Errorf("%d pods on the image that cannot be pulled, want 1 (maxUnavailable)", onBad)
			}
		})
	}
}

// TestRealNodeUnpullableImageHoldsTheNextContainerBatch: with container
// priorities, the first batch's image cannot be pulled, so the second
// batch's container is never restarted.
func TestRealNodeUnpullableImageHoldsTheNextContainerBatch(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newRealCloneSet(ns, "batches", 1, "second", "first")
	for i := range cs.Spec.Template.Spec.Containers {
		cs.Spec.Template.Spec.Containers[i].ImagePullPolicy = corev1.PullIfNotPresent
	}
	first := &cs.Spec.Template.Spec.Containers[1]
	first.Env = append(first.Env, corev1.EnvVar{Name: "KRUISE_CONTAINER_PRIORITY", Value: "10"})
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	before := clonePods(t, cs)[0]

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2")
		c.Spec.Template.Spec.Containers[1].Image = unreachableImage
	})
	waitPullError(t, cs, unreachableImage, []string{"ImagePullBackOff"})
	p := clonePods(t, cs)[0]
	was, second := containerStatus(&before, "second"), containerStatus(&p, "second")
	if p.UID != before.UID || second.ContainerID != was.ContainerID || second.RestartCount != was.RestartCount || p.Spec.Containers[0].Image != cluster.TestAppImage("v1") {
		t.Errorf("the second batch moved while the first cannot pull its image: spec image %s, container before %+v, after %+v",
			p.Spec.Containers[0].Image, was, second)
	}
	if got := lifeLine(lifeOf(t, p.Name, "second")); got != "start v1" {
		t.Errorf("the second container lived %q, want one start", got)
	}
}

// waitPullError waits until the pod of cs whose spec names image reports
// one of reasons for that container, and returns its name.
func waitPullError(t *testing.T, cs *appsv1alpha1.CloneSet, image string, reasons []string) string {
	t.Helper()
	var name string
	eventually(t, 2*time.Minute, fmt.Sprintf("a pod on %s waiting with %v", image, reasons), func(context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			for _, c := range p.Spec.Containers {
				if c.Image != image {
					continue
				}
				st := containerStatus(&p, c.Name)
				if st.State.Waiting != nil && slices.Contains(reasons, st.State.Waiting.Reason) {
					name = p.Name
					return true, "", nil
				}
				return false, fmt.Sprintf("pod %s container %s: %+v", p.Name, c.Name, st.State), nil
			}
		}
		return false, "no pod on the image yet", nil
	})
	return name
}
