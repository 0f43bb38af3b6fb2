package planner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

func TestBindingState(t *testing.T) {
	owned := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs-uid", Controller: ptr.To(true)}}
	}
	pending := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		return readyPod("a", newRev, append([]func(*corev1.Pod){owned, unscheduled, inState(pub.LifecycleStatePreparingNormal)}, mutate...)...)
	}
	cs := func(mutate ...func(*appsv1alpha1.CloneSet)) *appsv1alpha1.CloneSet {
		c := cloneSet(1, "", "", "")
		c.UID = "cs-uid"
		for _, m := range mutate {
			m(c)
		}
		return c
	}
	withPreNormal := func(c *appsv1alpha1.CloneSet) {
		c.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"online": "true"}}}
	}
	for _, tc := range []struct {
		name string
		cs   *appsv1alpha1.CloneSet
		pod  *corev1.Pod
		want bool
	}{
		{"a pending PreparingNormal pod without preNormal hook goes Normal", cs(), pending(), true},
		{"a preNormal hook holds it", cs(withPreNormal), pending(), false},
		{"a preDelete hook already holds it", cs(), pending(inState(pub.LifecycleStatePreparingDelete)), false},
		{"an in-place update already started", cs(), pending(inState(pub.LifecycleStateUpdating)), false},
		{"created Normal (v1.8 flag)", cs(), pending(inState(pub.LifecycleStateNormal)), false},
		{"already bound", cs(), pending(onNode("node-1")), false},
		{"being deleted", cs(), pending(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }), false},
		{"another CloneSet's pod", cs(func(c *appsv1alpha1.CloneSet) { c.UID = types.UID("other") }), pending(), false},
		{"an orphan", cs(), pending(func(p *corev1.Pod) { p.OwnerReferences = nil }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, ok := BindingState(tc.cs, tc.pod)
			if ok != tc.want || (ok && state != pub.LifecycleStateNormal) {
				t.Errorf("got %q %v, want %v", state, ok, tc.want)
			}
		})
	}
}

// A new pod of an in-place CloneSet needs its InPlaceUpdateReady condition
// set before it can be Ready. Without the binding webhook, that and the
// move to Normal are one pods/status write once it is scheduled; with it,
// the bind moves the state and the kubelet's first report carries the
// condition (the pod status webhook), so the controller writes nothing;
// only a report without it (no status webhook) takes a write.
func TestNewInPlacePodTakesOneWrite(t *testing.T) {
	cs := cloneSet(1, "", "", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	gated := func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	}
	plan := func(pod *corev1.Pod) []podlife.Action {
		p, err := Compute(snapshot(cs, pod))
		if err != nil {
			t.Fatal(err)
		}
		return p.Actions
	}
	if a := plan(readyPod("a", newRev, gated, unscheduled, inState(pub.LifecycleStatePreparingNormal))); len(a) != 0 {
		t.Errorf("unscheduled: %+v, want nothing until it is scheduled", a)
	}
	a := plan(readyPod("a", newRev, gated, inState(pub.LifecycleStatePreparingNormal)))
	if len(a) != 1 || !is[podlife.SetState](a[0]) || stateOf(a[0]) != pub.LifecycleStateNormal || !slices.Equal(conditionTypes(a[0]), []corev1.PodConditionType{pub.InPlaceUpdateReady}) {
		t.Errorf("scheduled, no webhook: %+v, want one SetState Normal carrying InPlaceUpdateReady", a)
	}
	if a = plan(readyPod("a", newRev, gated, unreported)); len(a) != 0 {
		t.Errorf("made Normal by the bind, not reported yet: %+v, want nothing: the kubelet's report carries the condition", a)
	}
	a = plan(readyPod("a", newRev, gated))
	if len(a) != 1 || !is[podlife.InitPodReady](a[0]) || conditionTypes(a[0])[0] != pub.InPlaceUpdateReady {
		t.Errorf("made Normal by the bind, reported without the condition: %+v, want one InitPodReady", a)
	}

	// A preNormal hook's pods get the condition once they run, whatever
	// their state: the operator registers them once Ready, long before
	// they go Normal.
	cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"online": "true"}}}
	if a = plan(readyPod("a", newRev, gated, unscheduled, inState(pub.LifecycleStatePreparingNormal))); len(a) != 0 {
		t.Errorf("preNormal hook, unscheduled: %+v, want nothing before the kubelet reports", a)
	}
	a = plan(readyPod("a", newRev, gated, inState(pub.LifecycleStatePreparingNormal)))
	if len(a) != 1 || !is[podlife.InitPodReady](a[0]) {
		t.Errorf("preNormal hook, reported: %+v, want InitPodReady", a)
	}
}
