package migration

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
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// The Advanced StatefulSet of the swap: seed 001's hooks on ordered pods,
// updated in place.
const orderedSet = "ordered"

// orderedScene is what the swap must carry over of it: its revisions and
// the pod OpenKruise holds in PreparingUpdate.
type orderedScene struct {
	revisions      []string
	updateRevision string
	held           string
}

// createOrderedUnderOpenKruise makes the Advanced StatefulSet with the
// operator running, once its pods are registered; holdOrderedUpdate (with
// the operator stopped) starts an in-place update of its highest pod,
// which OpenKruise holds in PreparingUpdate.
func createOrderedUnderOpenKruise(t *testing.T, ns string) {
	labels := map[string]string{"app": orderedSet, inPlaceHook: "true", deleteHook: "true", "example.com/newly-create": "true"}
	set := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: orderedSet}, Spec: appsv1beta1.StatefulSetSpec{
		Replicas: ptr.To[int32](2), ServiceName: orderedSet, PodManagementPolicy: appsv1.ParallelPodManagement,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": orderedSet}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
			Containers:     []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}},
		UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType,
				MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		Lifecycle: &pub.Lifecycle{
			InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{inPlaceHook: "true"}},
			PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{deleteHook: "true"}},
		},
	}}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "app="+orderedSet, "2 ordered pods Normal and registered", func(pods []corev1.Pod) bool {
		return len(pods) == 2 && all(pods, func(p corev1.Pod) bool {
			return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal) && p.Labels["example.com/newly-create"] == "false"
		})
	})
}

func holdOrderedUpdate(t *testing.T, ns string) orderedScene {
	patchOrdered(t, ns, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":1}},"template":{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}}}`)
	held := orderedSet + "-1"
	waitPods(t, ns, "app="+orderedSet, held+" held in PreparingUpdate", func(pods []corev1.Pod) bool {
		return stateOf(pods, held) == string(pub.LifecycleStatePreparingUpdate) && stateOf(pods, orderedSet+"-0") == string(pub.LifecycleStateNormal)
	})
	// OpenKruise's status may still name the old revision as the update
	// revision when the pod is already held: wait for it to catch up.
	eventually(t, time.Minute, "OpenKruise's status names the new update revision", func(ctx context.Context) (bool, string, error) {
		set := &appsv1beta1.StatefulSet{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: orderedSet}, set); err != nil {
			return false, err.Error(), nil
		}
		st := set.Status
		return st.ObservedGeneration == set.Generation && st.UpdateRevision != "" && st.UpdateRevision != st.CurrentRevision, fmt.Sprintf("%+v", st), nil
	})
	revisions, update := orderedRevisions(t, ns)
	return orderedScene{revisions: revisions, updateRevision: update, held: held}
}

// checkOrderedAfterSwap: with the operator back, Lifeline finishes the
// held pod's in-place update and then, partition lifted, the other's, at
// the revision names OpenKruise gave, with no pod recreated.
func checkOrderedAfterSwap(t *testing.T, ns string, scene orderedScene, before map[string]podFacts) {
	// inPlace says which of names is not yet updated in place, and how.
	inPlace := func(names ...string) (bool, string, error) {
		pods := listPods(t, ns, "app="+orderedSet)
		for _, name := range names {
			i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name == name })
			if i < 0 {
				return false, name + " missing", nil
			}
			p := pods[i]
			if p.UID != before[p.Name].uid || p.Spec.Containers[0].Image != "nginx:1.28" || p.Labels["controller-revision-hash"] != scene.updateRevision ||
				p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || p.Labels[inPlaceHook] != "true" {
				return false, fmt.Sprintf("%s: uid %s (was %s), image %s, revision %s (want %s), state %s, %s=%q", name, p.UID, before[p.Name].uid,
					p.Spec.Containers[0].Image, p.Labels["controller-revision-hash"], scene.updateRevision, p.Labels[pub.LifecycleStateKey], inPlaceHook, p.Labels[inPlaceHook]), nil
			}
		}
		return len(pods) == 2, fmt.Sprintf("%d pods", len(pods)), nil
	}
	eventually(t, 2*time.Minute, "the held ordered pod updated in place", func(context.Context) (bool, string, error) { return inPlace(scene.held) })
	patchOrdered(t, ns, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	eventually(t, 2*time.Minute, "both ordered pods updated in place", func(context.Context) (bool, string, error) {
		return inPlace(orderedSet+"-0", orderedSet+"-1")
	})
	revisions, update := orderedRevisions(t, ns)
	if update != scene.updateRevision || !slices.Equal(revisions, scene.revisions) {
		t.Errorf("Advanced StatefulSet revisions after the swap %v (update %s), OpenKruise's %v (update %s)", revisions, update, scene.revisions, scene.updateRevision)
	}
}

func patchOrdered(t *testing.T, ns, patch string) {
	t.Helper()
	set := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: orderedSet}}
	if err := k8s.Patch(context.Background(), set, ctrlclient.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("patching the Advanced StatefulSet with %s: %v", patch, err)
	}
}

// orderedRevisions lists the set's ControllerRevisions, sorted, and its
// update revision.
func orderedRevisions(t *testing.T, ns string) ([]string, string) {
	t.Helper()
	ctx := context.Background()
	set := &appsv1beta1.StatefulSet{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: orderedSet}, set); err != nil {
		t.Fatal(err)
	}
	if set.Status.UpdateRevision == "" {
		t.Fatalf("the Advanced StatefulSet has no update revision: %+v", set.Status)
	}
	return ownedRevisions(t, ns, set.UID), set.Status.UpdateRevision
}
