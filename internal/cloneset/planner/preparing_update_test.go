package planner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// OpenKruise's e2e "regard preparing-update pod as update when scaling":
// 2 replicas, partition 99% (one pod may update), an inPlaceUpdate hook. A
// pod waiting in PreparingUpdate already is the one pod partition lets
// update, so pods created meanwhile belong at the current revision.
func TestPreparingUpdateCountsAsUpdatedWhenScaling(t *testing.T) {
	hooked := func(p *corev1.Pod) { p.Labels["hold"] = "true" }
	newCS := func(replicas int32) *appsv1alpha1.CloneSet {
		cs := cloneSet(replicas, "99%", "50%", "")
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
		return cs
	}
	held := func() *corev1.Pod {
		return readyPod("held", oldRev, hooked, inState(pub.LifecycleStatePreparingUpdate))
	}
	withTemplates := func(s Snapshot) Snapshot {
		s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: template("nginx:1"), newRev: template("nginx:2")}
		return s
	}
	for _, tc := range []struct {
		name string
		s    Snapshot
		want []string
	}{
		{
			name: "the other pod deleted: rebuilt at the current revision",
			s:    withTemplates(snapshot(newCS(2), held())),
			want: []string{"create id001@" + oldRev},
		},
		{
			name: "scaled to 3: the new pod at the current revision",
			s:    withTemplates(snapshot(newCS(3), held(), readyPod("b", oldRev, hooked))),
			want: []string{"create id001@" + oldRev},
		},
		{
			name: "hook released: the held pod is the one updated in place",
			s: withTemplates(snapshot(newCS(3), readyPod("held", oldRev, inState(pub.LifecycleStatePreparingUpdate)),
				readyPod("b", oldRev, hooked), readyPod("c", oldRev, hooked))),
			want: []string{"UpdateInPlace web-held"},
		},
		{
			name: "held pod updated: nothing more to do under partition",
			s: withTemplates(snapshot(newCS(3), readyPod("held", newRev, hooked),
				readyPod("b", oldRev, hooked), readyPod("c", oldRev, hooked))),
			want: nil,
		},
		{
			// Updating still counts pods by revision: the held pod is
			// not yet updated, so it is the one the update picks.
			name: "no partition: the held pod stays picked, the others go PreparingUpdate",
			s: func() Snapshot {
				cs := newCS(3)
				cs.Spec.UpdateStrategy.Partition = nil
				cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
				return withTemplates(snapshot(cs, held(), readyPod("b", oldRev, hooked), readyPod("c", oldRev, hooked)))
			}(),
			want: []string{"state web-b=PreparingUpdate", "state web-c=PreparingUpdate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compute(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(p.Actions); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}

	// The counting itself: the scaling view sees the held pod as updated,
	// the updating view does not.
	s := snapshot(newCS(2), held())
	b, err := ResolveRolloutLimits(s.CloneSet)
	if err != nil {
		t.Fatal(err)
	}
	if d := CalculateDiffs(b, s.Pods, newRev, ScalingView, nil, 0, false, now); d.ScaleUpNum != 1 || d.ScaleUpNumOldRevision != 1 {
		t.Errorf("scaling view: %+v, want one pod to create at the current revision", d)
	}
	if d := CalculateDiffs(b, s.Pods, newRev, UpdatingView, nil, 0, false, now); d.ScaleUpNumOldRevision != 0 {
		t.Errorf("updating view: %+v, want the held pod counted as old", d)
	}
}
