package planner

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

const (
	oldRev = "web-oldhash1"
	newRev = "web-newhash2"
)

func cloneSet(replicas int32, partition, maxUnavailable, maxSurge string) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1}}
	cs.Spec.Replicas = ptr.To(replicas)
	parse := func(s string) *intstr.IntOrString {
		if s == "" {
			return nil
		}
		v := intstr.Parse(s)
		return &v
	}
	cs.Spec.UpdateStrategy.Partition = parse(partition)
	cs.Spec.UpdateStrategy.MaxUnavailable = parse(maxUnavailable)
	cs.Spec.UpdateStrategy.MaxSurge = parse(maxSurge)
	return cs
}

// readyPod is a scheduled, running pod, Ready for an hour, in state Normal.
func readyPod(id, rev string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-" + id, Namespace: "default",
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
			Labels: map[string]string{
				appsv1alpha1.CloneSetInstanceID:       id,
				appsv1.ControllerRevisionHashLabelKey: rev,
				pub.LifecycleStateKey:                 string(pub.LifecycleStateNormal),
			},
		},
		Spec: corev1.PodSpec{NodeName: "node-0"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func unscheduled(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
}
func specifiedDelete(p *corev1.Pod) { p.Labels[appsv1alpha1.SpecifiedDeleteKey] = "true" }
func inState(s pub.LifecycleStateType) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[pub.LifecycleStateKey] = string(s) }
}
func onNode(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func withCost(c string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{podDeletionCost: c} }
}

func snapshot(cs *appsv1alpha1.CloneSet, pods ...*corev1.Pod) Snapshot {
	n := 0
	return Snapshot{
		CloneSet: cs, Pods: pods, UpdateRevision: newRev, CurrentRevision: oldRev, Now: now,
		NewInstanceID: func() string { n++; return fmt.Sprintf("id%03d", n) },
	}
}

func names(actions []Action) []string {
	var out []string
	for _, a := range actions {
		switch a.Type {
		case CreatePod:
			out = append(out, fmt.Sprintf("create %s@%s", a.InstanceID, a.Revision))
			// PreparingNormal, where every pod starts (v1.9), goes unsaid.
			if a.State != pub.LifecycleStatePreparingNormal {
				out[len(out)-1] += " " + string(a.State)
			}
		case SetState:
			out = append(out, fmt.Sprintf("state %s=%s", a.Pod.Name, a.State))
		default:
			out = append(out, fmt.Sprintf("%s %s", a.Type, a.Pod.Name))
		}
	}
	return out
}
