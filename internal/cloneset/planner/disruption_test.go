package planner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// denyPods refuses every disruption of the named pods.
type denyPods map[string]bool

func (d denyPods) Allow(pod *corev1.Pod, kind disruption.Kind) (bool, string) {
	if d[pod.Name] {
		return false, "budget web-pub allows 0 more unavailable pods (" + string(kind) + ")"
	}
	return true, ""
}

// The planner asks the disruption check before each delete and in-place
// update, holds back what it refuses and says so, and goes on with the rest.
// It does not pick other pods instead: one budget usually covers them all.
func TestDisruptionCheckHoldsPods(t *testing.T) {
	preDelete := &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	held := func(p *corev1.Pod) { p.Labels["hold"] = "true" }
	inPlace := func(cs *appsv1alpha1.CloneSet) *appsv1alpha1.CloneSet {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		return cs
	}
	for _, tc := range []struct {
		name     string
		s        Snapshot
		deny     denyPods
		want     []string
		wantHeld []string
	}{
		{"scale-in deletes what the budget allows", snapshot(cloneSet(1, "", "100%", ""), readyPod("a", newRev), readyPod("b", newRev), readyPod("c", newRev)),
			denyPods{"web-b": true}, []string{"DeletePod web-a"}, []string{"web-b"}},
		{"a hold for deletion is a disruption too", func() Snapshot {
			s := snapshot(cloneSet(1, "", "100%", ""), readyPod("a", newRev, held), readyPod("b", newRev, held))
			s.CloneSet.Spec.Lifecycle = preDelete
			return s
		}(), denyPods{"web-a": true}, nil, []string{"web-a"}},
		{"recreate update", snapshot(cloneSet(2, "", "100%", ""), readyPod("a", oldRev), readyPod("b", oldRev)),
			denyPods{"web-a": true, "web-b": true}, nil, []string{"web-a", "web-b"}},
		{"in-place update", func() Snapshot {
			s := snapshot(inPlace(cloneSet(2, "", "100%", "")), readyPod("a", oldRev), readyPod("b", oldRev))
			s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: template("nginx:1"), newRev: template("nginx:2")}
			return s
		}(), denyPods{"web-a": true}, []string{"UpdateInPlace web-b"}, []string{"web-a"}},
		{"allowed: nothing held", snapshot(cloneSet(1, "", "100%", ""), readyPod("a", newRev), readyPod("b", newRev)),
			denyPods{}, []string{"DeletePod web-a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Disruptions = tc.deny
			p, err := Compute(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			var held []string
			for _, h := range p.Held {
				held = append(held, h.Pod.Name)
				if h.Reason == "" {
					t.Errorf("pod %s held without a reason", h.Pod.Name)
				}
			}
			if got := names(p.Actions); !slices.Equal(got, tc.want) || !slices.Equal(held, tc.wantHeld) {
				t.Errorf("actions %q held %q, want %q held %q", got, held, tc.want, tc.wantHeld)
			}
			if len(held) > 0 && (p.RequeueAfter == 0 || p.RequeueAfter > podlife.HeldRetry) {
				t.Errorf("held pods, but the next look is in %v", p.RequeueAfter)
			}
		})
	}
}
