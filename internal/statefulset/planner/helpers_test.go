package planner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

const (
	oldRev = "db-oldhash1"
	newRev = "db-newhash2"
)

// set is a defaulted set of replicas pods; parallel picks the policy.
func set(replicas int32, parallel bool, mutate ...func(*appsv1beta1.StatefulSet)) *appsv1beta1.StatefulSet {
	s := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", Generation: 1}}
	s.Spec.Replicas = ptr.To(replicas)
	s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	if parallel {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	}
	s.Spec.UpdateStrategy = appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			PodUpdatePolicy: appsv1beta1.RecreatePodUpdateStrategyType, MinReadySeconds: ptr.To[int32](0)}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func maxUnavailable(v string) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.Parse(v))
	}
}
func partition(n int32) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(n) }
}
func reserve(r ...intstr.IntOrString) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) { s.Spec.ReserveOrdinals = r }
}
func preDeleteHook(s *appsv1beta1.StatefulSet) {
	s.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/drain": "true"}}}
}

// pod is the set's pod at ord: scheduled, running, Ready for an hour,
// Normal, at rev, carrying the preDelete handler label (harmless when the
// set has no hook).
func pod(ord int, rev string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: PodName("db", ord), Namespace: "default",
			Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev, pub.LifecycleStateKey: string(pub.LifecycleStateNormal),
				"example.com/drain": "true", PodNameLabel: PodName("db", ord), PodIndexLabel: fmt.Sprint(ord)},
		},
		Spec: corev1.PodSpec{NodeName: "node-0"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = &metav1.Time{Time: now}
}
func released(p *corev1.Pod)        { delete(p.Labels, "example.com/drain") }
func failed(p *corev1.Pod)          { p.Status.Phase = corev1.PodFailed }
func specifiedDelete(p *corev1.Pod) { p.Labels[appsv1alpha1.SpecifiedDeleteKey] = "true" }
func inState(s pub.LifecycleStateType) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[pub.LifecycleStateKey] = string(s) }
}

func snapshot(s *appsv1beta1.StatefulSet, pods ...*corev1.Pod) Snapshot {
	return Snapshot{Set: s, Pods: pods, UpdateRevision: newRev, CurrentRevision: oldRev, Now: now}
}

// describe lists a plan's actions in a stable, readable form:
// "create 3@new", "delete db-4", "state db-4 PreparingDelete".
func describe(actions []podlife.Action) []string {
	var out []string
	for _, a := range actions {
		switch a := a.(type) {
		case podlife.CreatePod:
			rev := "new"
			if a.Revision == oldRev {
				rev = "old"
			}
			out = append(out, fmt.Sprintf("create %s@%s", a.InstanceID, rev))
		case podlife.DeletePod:
			out = append(out, "delete "+a.Pod.Name)
		case podlife.SetState:
			out = append(out, fmt.Sprintf("state %s %s", a.Pod.Name, a.To))
		default:
			out = append(out, strings.ToLower(a.Kind())+" "+a.Target().Name)
		}
	}
	sort.Strings(out)
	return out
}
