package planner

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
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
			StartTime:  &metav1.Time{Time: now.Add(-time.Hour)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

// unreported: its kubelet has not written its status yet.
func unreported(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} }
func unscheduled(p *corev1.Pod) {
	unreported(p)
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

func names(actions []podlife.Action) []string {
	var out []string
	for _, a := range actions {
		switch c := a.(type) {
		case podlife.CreatePod:
			out = append(out, fmt.Sprintf("create %s@%s", c.InstanceID, c.Revision))
			// PreparingNormal, where every pod starts (v1.9), goes unsaid.
			if stateOf(a) != pub.LifecycleStatePreparingNormal {
				out[len(out)-1] += " " + string(stateOf(a))
			}
		case podlife.SetState:
			out = append(out, fmt.Sprintf("state %s=%s", a.Target().Name, stateOf(a)))
		default:
			out = append(out, fmt.Sprintf("%s %s", a.Kind(), a.Target().Name))
		}
	}
	return out
}

// withGate gives a pod the readiness gate t and its condition, in status.
func withGate(t corev1.PodConditionType, status corev1.ConditionStatus) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: status})
	}
}

// condition is the condition of type t the action's writes set, if any.
func condition(a podlife.Action, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	var out corev1.PodCondition
	found := false
	for _, w := range writesOf(a) {
		if c, ok := w.Condition(t); ok {
			out, found = c, true
		}
	}
	return out, found
}

// conditionTypes are the types of the conditions the action's writes set.
func conditionTypes(a podlife.Action) []corev1.PodConditionType {
	var out []corev1.PodConditionType
	for _, w := range writesOf(a) {
		for _, c := range w.Conditions {
			out = append(out, c.Type)
		}
	}
	return out
}

// addsNotReady reports whether the action makes its pod NotReady through
// KruisePodReady with the reason key.
func addsNotReady(a podlife.Action, key string) bool {
	c, ok := condition(a, pub.KruisePodReadyConditionType)
	return ok && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, `"key":"`+key+`"`)
}

// liftsNotReady reports whether the action leaves its pod's KruisePodReady
// condition without the reason key.
func liftsNotReady(a podlife.Action, key string) bool {
	c, ok := condition(a, pub.KruisePodReadyConditionType)
	return ok && !strings.Contains(c.Message, `"key":"`+key+`"`)
}

// images are the container images the action's writes set, or hold back
// for a grace period.
func images(a podlife.Action) map[string]string {
	out := map[string]string{}
	for _, w := range writesOf(a) {
		for k, v := range w.Images {
			out[k] = v
		}
	}
	return out
}

// inPlaceState is the in-place update record the action writes.
func inPlaceState(t *testing.T, a podlife.Action) *pub.InPlaceUpdateState {
	t.Helper()
	for _, w := range writesOf(a) {
		if v, ok := w.Annotations[pub.InPlaceUpdateStateKey]; ok {
			st := &pub.InPlaceUpdateState{}
			if err := json.Unmarshal([]byte(v), st); err != nil {
				t.Fatal(err)
			}
			return st
		}
	}
	t.Fatalf("%s of %s writes no in-place update state", a.Kind(), a.Target().Name)
	return nil
}

// is reports whether a is an action of type T.
func is[T podlife.Action](a podlife.Action) bool {
	_, ok := a.(T)
	return ok
}

// stateOf is the lifecycle state an action leaves its pod in: the one a
// created pod starts in, a state change's, Updating for an in-place
// update; "" for the others.
func stateOf(a podlife.Action) pub.LifecycleStateType {
	switch a := a.(type) {
	case podlife.CreatePod:
		return a.State
	case podlife.SetState:
		return a.To
	case podlife.UpdateInPlace:
		return pub.LifecycleStateUpdating
	}
	return ""
}

// revisionIn is the revision an action moves its pod to: a created pod's,
// an in-place update's; "" for the others.
func revisionIn(a podlife.Action) string {
	switch a := a.(type) {
	case podlife.CreatePod:
		return a.Revision
	case podlife.UpdateInPlace:
		return a.Revision
	}
	return ""
}

// writesOf are the writes an action sends to its pod.
func writesOf(a podlife.Action) []podlife.PodWrite {
	if w, ok := a.(podlife.Writer); ok {
		return w.PodWrites()
	}
	return nil
}
