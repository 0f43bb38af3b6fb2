package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// inPlaceSnapshot is what an in-place update of container "app" must
// change, and what it must keep, in each pod of a workload.
type inPlaceSnapshot map[string]corev1.Pod

func snapshotPods(t *testing.T, pods []corev1.Pod) inPlaceSnapshot {
	t.Helper()
	s := inPlaceSnapshot{}
	for _, p := range pods {
		if !realContainerID(containerStatus(&p, "app")) {
			t.Fatalf("pod %s is not running real containers: %+v", p.Name, p.Status.ContainerStatuses)
		}
		s[p.Name] = p
	}
	return s
}

// check says what is wrong with pods after "app" went from v1 to v2 in
// place: each pod the same, app restarted once on a new container and
// image ID, the sidecar untouched, InPlaceUpdateReady and Ready False
// then True again.
func (s inPlaceSnapshot) check(t *testing.T, pods []corev1.Pod, inPlaceReady, ready func(string) []corev1.ConditionStatus) {
	t.Helper()
	if len(pods) != len(s) {
		t.Errorf("%d pods after the update, %d before", len(pods), len(s))
	}
	for _, p := range pods {
		was, ok := s[p.Name]
		if !ok || was.UID != p.UID {
			t.Errorf("pod %s was replaced, not updated in place", p.Name)
			continue
		}
		oldApp, app := containerStatus(&was, "app"), containerStatus(&p, "app")
		if app.Image != cluster.TestAppImage("v2") || app.RestartCount != oldApp.RestartCount+1 || app.ContainerID == oldApp.ContainerID || app.ImageID == oldApp.ImageID {
			t.Errorf("pod %s: app before %+v, after %+v", p.Name, oldApp, app)
		}
		if oldSidecar, sidecar := containerStatus(&was, "sidecar"), containerStatus(&p, "sidecar"); sidecar.ContainerID != oldSidecar.ContainerID || sidecar.RestartCount != oldSidecar.RestartCount {
			t.Errorf("pod %s: the sidecar was restarted: before %+v, after %+v", p.Name, oldSidecar, sidecar)
		}
		if got := lifeLine(lifeOf(t, p.Name, "app")); !strings.HasPrefix(got, "start v1, sigterm v1, exit v1, start v2") {
			t.Errorf("pod %s: app lived %q", p.Name, got)
		}
		if got := inPlaceReady(p.Name); !hasConditionSeq(got, corev1.ConditionFalse, corev1.ConditionTrue) {
			t.Errorf("pod %s: InPlaceUpdateReady went %v, want False then True", p.Name, got)
		}
		if got := ready(p.Name); !hasConditionSeq(got, corev1.ConditionFalse, corev1.ConditionTrue) {
			t.Errorf("pod %s: Ready went %v, want False while it restarted, then True", p.Name, got)
		}
	}
}

// TestRealNodeAdvancedStatefulSetUpdatesInPlace: the in-place update of
// TestRealNodeInPlaceUpdateRestartsOnlyTheChangedContainer for an Advanced
// StatefulSet, registered by lifeline-bridge through the seeds' hooks: each
// pod leaves the registry before its container is told to stop and comes
// back once Ready on the new image.
func TestRealNodeAdvancedStatefulSetUpdatesInPlace(t *testing.T) {
	alongside(t)
	r := etcdUnderTest(t, "real-registry-asts")
	ns := newNamespace(t)
	startKindBridge(t, "real-asts", "StatefulSet", ns, r)
	watchPodsAgainst(t, ns, r, true)
	reg := watchRegistry(t, r.etcd, "/services/")

	set := newAdvancedStatefulSet(ns, "web", 2, appsv1.ParallelPodManagement)
	set.Spec.Template.Spec.Containers = []corev1.Container{realContainer("app", "v1"), realContainer("sidecar", "v1")}
	onRealNodes(&set.Spec.Template.Spec)
	hooked := &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}
	set.Spec.Lifecycle = &pub.Lifecycle{PreNormal: hooked, InPlaceUpdate: hooked, PreDelete: hooked}
	set.Spec.Template.Labels[registered] = "false"
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{
		PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	create(t, set)
	waitStatefulSetRegistry(t, r, set, 2, "scale-up")
	before := snapshotPods(t, livePods(t, ns, "app=web"))
	inPlaceReady, ready := conditionTrail(t, ns, pub.InPlaceUpdateReady), conditionTrail(t, ns, corev1.PodReady)

	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2")
	})
	waitStatefulSetRegistry(t, r, set, 2, "in-place update")
	pods := livePods(t, ns, "app=web")
	before.check(t, pods, inPlaceReady, ready)
	for _, p := range pods {
		key := "/services/" + ns + "/web/" + p.Name
		if got := reg.history(key); !hasSeq(got, "put", "delete", "put") {
			t.Errorf("%s in the registry: %v, want registered, unregistered, registered again", p.Name, got)
		}
		stopped := firstAt(lifeOf(t, p.Name, "app"), "sigterm", "v1")
		if del := reg.firstDeleteAt(key); del.IsZero() || stopped.IsZero() || !del.Before(stopped) {
			t.Errorf("pod %s: unregistered at %v, its container told to stop at %v", p.Name, del, stopped)
		}
	}
}

// TestRealNodeAdvancedDaemonSetUpdatesInPlace: the same for an Advanced
// DaemonSet, one pod on each real node. (A DaemonSet acts on the preDelete
// hook alone, as OpenKruise's does, so no hook takes its pods out of a
// registry for an in-place update: the test holds it to the containers
// and the readiness.)
func TestRealNodeAdvancedDaemonSetUpdatesInPlace(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	set := newAdvancedDaemonSet(ns, "agent")
	set.Spec.Template.Spec = corev1.PodSpec{Containers: []corev1.Container{realContainer("app", "v1"), realContainer("sidecar", "v1")}}
	onRealNodes(&set.Spec.Template.Spec)
	set.Spec.UpdateStrategy = appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.InplaceRollingUpdateType}}
	create(t, set)
	nodes := int32(len(local.RealNodeNames()))
	waitAdvancedDaemonSet(t, set, "a pod Ready on each real node", dsSettled(nodes))
	before := snapshotPods(t, livePods(t, ns, "app=agent"))
	inPlaceReady, ready := conditionTrail(t, ns, pub.InPlaceUpdateReady), conditionTrail(t, ns, corev1.PodReady)

	updateAdvancedDaemonSet(t, set, func(s *appsv1beta1.DaemonSet) { s.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2") })
	waitAdvancedDaemonSet(t, set, "every pod updated in place", dsSettled(nodes))
	before.check(t, livePods(t, ns, "app=agent"), inPlaceReady, ready)
}

// TestRealNodeNeverReadyImageStopsTheRollout: an image whose readiness
// probe never passes (the kubelet runs it; nothing fakes it) stops an
// in-place rollout at maxUnavailable: one pod is updated and stays
// unready, the others keep the old image, and a PodUnavailableBudget over
// the pods counts it unavailable and allows no other disruption.
func TestRealNodeNeverReadyImageStopsTheRollout(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newRealCloneSet(ns, "stuck", 3, "app")
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "3 pods available", settled(3))

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("broken")
	})
	var broken string
	eventually(t, time.Minute, "one pod running the broken image, unready", func(context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			st := containerStatus(&p, "app")
			if st.Image == cluster.TestAppImage("broken") && st.State.Running != nil && !st.Ready {
				broken = p.Name
				return true, "", nil
			}
		}
		return false, "not yet", nil
	})
	// The probe keeps failing: for several probe periods nothing else
	// moves (sampled, the state must not change).
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		pods := clonePods(t, cs)
		onBroken := 0
		for _, p := range pods {
			if p.Spec.Containers[0].Image == cluster.TestAppImage("broken") {
				onBroken++
				if p.Name != broken {
					t.Fatalf("a second pod, %s, was updated while %s never became ready", p.Name, broken)
				}
			}
		}
		if len(pods) != 3 || onBroken != 1 {
			t.Fatalf("%d pods, %d on the broken image", len(pods), onBroken)
		}
		time.Sleep(time.Second)
	}
	// Only now the budget, so that the rollout's stop above is
	// maxUnavailable's alone: the budget counts the unready pod.
	create(t, newBudget(ns, "stuck", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: cs.Spec.Selector.MatchLabels}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "stuck", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 2, UnavailableAllowed: 0})
	var got appsv1alpha1.CloneSet
	if err := k8s.Get(context.Background(), ctrlclient.ObjectKeyFromObject(cs), &got); err != nil {
		t.Fatal(err)
	}
	if s := got.Status; s.UpdatedReplicas != 1 || s.UpdatedReadyReplicas != 0 || s.AvailableReplicas != 2 {
		t.Errorf("status %+v: want 1 updated, 0 of them ready, 2 available", s)
	}
	// A disruption the budget must refuse now: an eviction of a healthy pod.
	for _, p := range clonePods(t, cs) {
		if p.Name == broken {
			continue
		}
		if err := evictOnce(ns, p.Name); err == nil || !apierrors.IsTooManyRequests(err) {
			t.Errorf("evicting %s with the budget spent: %v, want 429", p.Name, err)
		}
		break
	}
}
