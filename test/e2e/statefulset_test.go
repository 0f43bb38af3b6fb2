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
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

func newAdvancedStatefulSet(ns, name string, replicas int32, policy appsv1.PodManagementPolicyType) *appsv1beta1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas: ptr.To(replicas), PodManagementPolicy: policy, ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "db:1"}}},
			},
		},
	}
}

// stsSettled: replicas pods, all updated, Ready and available, the current
// revision moved on.
func stsSettled(replicas int32) func(*appsv1beta1.StatefulSet) bool {
	return func(s *appsv1beta1.StatefulSet) bool {
		st := s.Status
		return st.ObservedGeneration == s.Generation && st.Replicas == replicas && st.ReadyReplicas == replicas &&
			st.AvailableReplicas == replicas && st.UpdatedReplicas == replicas && st.CurrentRevision == st.UpdateRevision
	}
}

// TestAdvancedStatefulSetOrderedScaleAndPartitionedUpdate: an OrderedReady
// set makes its pods one ordinal at a time in order, each with its
// identity; a rolling update with partition 1 replaces ordinals 2 then 1,
// one at a time and highest first, and leaves 0; removing the partition
// finishes it; a scale-down removes the highest ordinals first. An
// independent watch, not the controller's status, checks the order.
func TestAdvancedStatefulSetOrderedScaleAndPartitionedUpdate(t *testing.T) {
	ns := newNamespace(t)
	log := logPods(t, ns)
	set := newAdvancedStatefulSet(ns, "db", 3, appsv1.OrderedReadyPodManagement)
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "3 pods Ready", stsSettled(3))
	if got := log.order(isCreate); !slices.Equal(got, []string{"db-0", "db-1", "db-2"}) {
		t.Fatalf("created %v, want db-0, db-1, db-2 in order", got)
	}
	for _, ev := range log.all() {
		if ev.typ == watch.Added && ev.pod.Name != "db-0" {
			prev := fmt.Sprintf("db-%d", int(ev.pod.Name[3]-'0')-1)
			if !readyBefore(log.all(), prev, ev.when) {
				t.Fatalf("%s was created before %s was Ready", ev.pod.Name, prev)
			}
		}
	}
	pod, err := client.CoreV1().Pods(ns).Get(context.Background(), "db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels["statefulset.kubernetes.io/pod-name"] != "db-1" || pod.Labels["apps.kubernetes.io/pod-index"] != "1" ||
		pod.Labels[appsv1.ControllerRevisionHashLabelKey] != set.Status.UpdateRevision || pod.Labels[pub.LifecycleStateKey] != "Normal" ||
		pod.Spec.Hostname != "db-1" || pod.Spec.Subdomain != "db" {
		t.Fatalf("db-1's identity: labels %v, hostname %q, subdomain %q", pod.Labels, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "StatefulSet" {
		t.Fatalf("db-1's owner: %+v", ref)
	}
	firstRevision := set.Status.UpdateRevision

	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "db:2"
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
	})
	waitAdvancedStatefulSet(t, set, "ordinals 1 and 2 updated", func(s *appsv1beta1.StatefulSet) bool {
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdatedReplicas == 2 && s.Status.ReadyReplicas == 3
	})
	if set.Status.CurrentRevision != firstRevision {
		t.Fatalf("current revision %s moved before every pod was updated (was %s)", set.Status.CurrentRevision, firstRevision)
	}
	if got := log.order(isDelete); !slices.Equal(got, []string{"db-2", "db-1"}) {
		t.Fatalf("deleted %v, want db-2 then db-1 (db-0 is below the partition)", got)
	}
	if most := log.mostNotReady([]string{"db-0", "db-1", "db-2"}); most > 1 {
		t.Fatalf("%d pods were not Ready at once; OrderedReady updates one at a time", most)
	}

	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0) })
	waitAdvancedStatefulSet(t, set, "the update finished", stsSettled(3))
	mark := log.mark()
	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	waitAdvancedStatefulSet(t, set, "scaled down to 1", stsSettled(1))
	if got := log.orderSince(mark, isDelete); !slices.Equal(got, []string{"db-2", "db-1"}) {
		t.Fatalf("scale-down deleted %v, want db-2 then db-1", got)
	}
}

// TestAdvancedStatefulSetScaleDownUnderPreDeleteHook: an OrderedReady
// scale-down of two pods under a preDelete hook goes on pod by pod as the
// operator (this test) releases each one; OpenKruise deadlocks here
// (openkruise/kruise#1662). No pod goes while its hook label is on it.
func TestAdvancedStatefulSetScaleDownUnderPreDeleteHook(t *testing.T) {
	ns := newNamespace(t)
	log := logPods(t, ns)
	const hook = "example.com/registered"
	set := newAdvancedStatefulSet(ns, "db", 3, appsv1.OrderedReadyPodManagement)
	set.Spec.Template.Labels[hook] = "true"
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "3 pods Ready", stsSettled(3))
	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	for _, name := range []string{"db-2", "db-1"} {
		eventually(t, time.Minute, name+" held in PreparingDelete", func(ctx context.Context) (bool, string, error) {
			pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return pod.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete), fmt.Sprint(pod.Labels), nil
		})
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, hook))
		if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAdvancedStatefulSet(t, set, "scaled down to 1", stsSettled(1))
	for _, ev := range log.all() {
		if isDelete(ev) && ev.pod.Labels[hook] == "true" {
			t.Fatalf("%s was deleted while its preDelete hook held it", ev.pod.Name)
		}
	}
	if got := log.order(isDelete); !slices.Equal(got, []string{"db-2", "db-1"}) {
		t.Fatalf("deleted %v, want db-2 then db-1", got)
	}
}

// TestAdvancedStatefulSetV1alpha1EditKeepsReservedOrdinals is
// openkruise/kruise#2102: an editor that reads and writes the set through
// v1alpha1 must not erase reserveOrdinals (nor any v1beta1-only field), or
// the set deletes the wrong pods. Here the edit lowers replicas: the
// highest ordinal goes, the reserved one stays empty.
func TestAdvancedStatefulSetV1alpha1EditKeepsReservedOrdinals(t *testing.T) {
	ns := newNamespace(t)
	set := newAdvancedStatefulSet(ns, "db", 3, appsv1.ParallelPodManagement)
	set.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
	set.Spec.ScaleStrategy = &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "3 pods Ready", stsSettled(3))
	if names := stsPodNames(t, ns); !slices.Equal(names, []string{"db-0", "db-2", "db-3"}) {
		t.Fatalf("pods %v, want db-0, db-2, db-3 (1 is reserved)", names)
	}
	eventually(t, 30*time.Second, "edit through v1alpha1", func(ctx context.Context) (bool, string, error) {
		old := &appsv1alpha1.StatefulSet{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(set), old); err != nil {
			return false, err.Error(), nil
		}
		old.Spec.Replicas = ptr.To[int32](2)
		err := k8s.Update(ctx, old)
		return err == nil, fmt.Sprint(err), nil
	})
	waitAdvancedStatefulSet(t, set, "scaled down to 2", stsSettled(2))
	if len(set.Spec.ReserveOrdinals) != 1 || set.Spec.ScaleStrategy == nil || set.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		t.Fatalf("the v1alpha1 edit erased v1beta1 fields: %+v", set.Spec)
	}
	if _, ok := set.Annotations["conversion.lifeline.dev/v1beta1"]; ok {
		t.Fatal("the stored set carries the conversion annotation")
	}
	if names := stsPodNames(t, ns); !slices.Equal(names, []string{"db-0", "db-2"}) {
		t.Fatalf("pods %v, want db-0 and db-2", names)
	}
}

// TestAdvancedStatefulSetUpdatesInPlace: with InPlaceIfPossible (and the
// InPlaceUpdateReady gate the template must declare), an image change
// keeps every pod: same UID, new image, Ready again, one at a time from
// the highest ordinal under an inPlaceUpdate hook the test releases.
func TestAdvancedStatefulSetUpdatesInPlace(t *testing.T) {
	ns := newNamespace(t)
	const hook = "example.com/serving"
	set := newAdvancedStatefulSet(ns, "db", 2, appsv1.OrderedReadyPodManagement)
	set.Spec.Template.Labels[hook] = "true"
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType}
	set.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "2 pods Ready", stsSettled(2))
	uids := map[string]string{}
	for _, name := range []string{"db-0", "db-1"} {
		pod, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = string(pod.UID)
	}
	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "db:2" })
	for _, name := range []string{"db-1", "db-0"} {
		eventually(t, time.Minute, name+" held in PreparingUpdate", func(ctx context.Context) (bool, string, error) {
			pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return pod.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate), fmt.Sprint(pod.Labels), nil
		})
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, hook))
		if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, name+" updated and waiting in Updated for its handler", func(ctx context.Context) (bool, string, error) {
			pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return pod.Spec.Containers[0].Image == "db:2" && pod.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateUpdated),
				fmt.Sprint(pod.Labels, pod.Spec.Containers[0].Image), nil
		})
		patch = []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, hook))
		if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAdvancedStatefulSet(t, set, "the in-place update finished", stsSettled(2))
	for name, uid := range uids {
		pod, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(pod.UID) != uid || pod.Spec.Containers[0].Image != "db:2" || pod.Labels[pub.LifecycleStateKey] != "Normal" {
			t.Errorf("%s: uid %s (was %s), image %s, state %s", name, pod.UID, uid, pod.Spec.Containers[0].Image, pod.Labels[pub.LifecycleStateKey])
		}
	}
}
