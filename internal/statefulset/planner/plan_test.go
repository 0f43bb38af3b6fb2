package planner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

func TestCompute(t *testing.T) {
	cases := []struct {
		name    string
		s       Snapshot
		phase   Phase
		want    []string
		waiting string
	}{
		{"OrderedReady creates the lowest missing ordinal only",
			snapshot(set(3, false), pod(0, newRev)), PhaseScale, []string{"create 1@new"}, ""},
		{"OrderedReady waits for an unavailable pod before the next",
			snapshot(set(3, false), pod(0, newRev, notReady)), PhaseUpdate, nil, "pod db-0 is not available (not Ready)"},
		{"Parallel creates every missing ordinal",
			snapshot(set(4, true), pod(1, newRev)), PhaseScale, []string{"create 0@new", "create 2@new", "create 3@new"}, ""},
		{"Parallel within scaleStrategy.maxUnavailable: the unavailable pod counts",
			snapshot(set(5, true, func(s *appsv1beta1.StatefulSet) {
				s.Spec.ScaleStrategy = &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}
			}), pod(0, newRev, notReady)), PhaseScale, []string{"create 1@new"}, ""},
		{"reserved ordinals are skipped and their pods deleted",
			snapshot(set(3, true, reserve(intstr.FromInt32(1))), pod(0, newRev), pod(1, newRev), pod(2, newRev)),
			PhaseScale, []string{"create 3@new", "delete db-1"}, ""},
		{"a range of reserved ordinals",
			snapshot(set(2, true, reserve(intstr.FromString("0-2"))), pod(3, newRev)), PhaseScale, []string{"create 4@new"}, ""},
		{"partition keeps the lowest ordinals' new pods at the current revision",
			snapshot(set(4, true, partition(2))), PhaseScale, []string{"create 0@old", "create 1@old", "create 2@new", "create 3@new"}, ""},
		{"OrderedReady scale-down deletes the highest first, one at a time",
			snapshot(set(1, false), pod(0, newRev), pod(1, newRev), pod(2, newRev)), PhaseScale, []string{"delete db-2"}, ""},
		{"OrderedReady scale-down waits for a terminating pod",
			snapshot(set(1, false), pod(0, newRev), pod(1, newRev), pod(2, newRev, terminating)), PhaseUpdate, nil, "pod db-2 is terminating"},
		{"Parallel scale-down deletes all at once",
			snapshot(set(1, true), pod(0, newRev), pod(1, newRev), pod(2, newRev)), PhaseScale, []string{"delete db-1", "delete db-2"}, ""},
		{"a preDelete hook holds the pod in PreparingDelete",
			snapshot(set(1, false, preDeleteHook), pod(0, newRev), pod(1, newRev)), PhaseScale, []string{"state db-1 PreparingDelete"}, ""},
		{"a held pod waits for its hook",
			snapshot(set(1, false, preDeleteHook), pod(0, newRev), pod(1, newRev, inState(pub.LifecycleStatePreparingDelete))),
			PhaseUpdate, nil, "pod db-1 waits in PreparingDelete for its preDelete hook"},
		// OpenKruise deadlocks here (reference §11): db-2 is held and
		// released, db-1 held; its rule waited on db-2 for db-1's health.
		{"OrderedReady scale-down by two under a preDelete hook goes on once the higher pod is released",
			snapshot(set(1, false, preDeleteHook), pod(0, newRev), pod(1, newRev, inState(pub.LifecycleStatePreparingDelete)),
				pod(2, newRev, inState(pub.LifecycleStatePreparingDelete), released)),
			PhaseScale, []string{"delete db-2"}, ""},
		{"Parallel: a condemned pod held by its hook does not hold the update back",
			snapshot(set(2, true, preDeleteHook), pod(0, oldRev), pod(1, oldRev), pod(2, newRev, inState(pub.LifecycleStatePreparingDelete))),
			PhaseUpdate, []string{"state db-1 PreparingDelete"}, "pod db-2 waits in PreparingDelete for its preDelete hook"},
		{"OrderedReady: a pod the update holds in PreparingUpdate is updated once released, whatever its availability",
			withTemplates(snapshot(set(2, false, func(s *appsv1beta1.StatefulSet) {
				s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
				s.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/serving": "true"}}}
			}), pod(0, oldRev), pod(1, oldRev, inState(pub.LifecycleStatePreparingUpdate)))),
			PhaseUpdate, []string{"updateinplace db-1"}, "pod db-1 is not available (in PreparingUpdate)"},
		{"a failed pod is replaced",
			snapshot(set(2, true), pod(0, newRev), pod(1, newRev, failed)), PhaseScale, []string{"delete db-1"}, ""},
		{"a pod held for deletion whose ordinal is back in range is revived",
			snapshot(set(2, true, preDeleteHook), pod(0, newRev), pod(1, newRev, inState(pub.LifecycleStatePreparingDelete))),
			PhaseScale, []string{"state db-1 Normal"}, ""},
		{"ordered update: highest ordinal first, maxUnavailable 1",
			snapshot(set(3, false), pod(0, oldRev), pod(1, oldRev), pod(2, oldRev)), PhaseUpdate, []string{"delete db-2"}, ""},
		{"ordered update honours partition by ordinal",
			snapshot(set(3, true, partition(2), maxUnavailable("3")), pod(0, oldRev), pod(1, oldRev), pod(2, oldRev)),
			PhaseUpdate, []string{"delete db-2"}, ""},
		// Reference §10.3: replicas 3, reserve {1}, partition 2 → slots
		// [0, nil, 2, 3]: only db-3 is updated.
		{"partition counts reserved slots, as OpenKruise",
			snapshot(set(3, true, partition(2), maxUnavailable("3"), reserve(intstr.FromInt32(1))), pod(0, oldRev), pod(2, oldRev), pod(3, oldRev)),
			PhaseUpdate, []string{"delete db-3"}, ""},
		{"Parallel update within maxUnavailable 50%",
			snapshot(set(4, true, maxUnavailable("50%")), pod(0, oldRev), pod(1, oldRev), pod(2, oldRev), pod(3, oldRev)),
			PhaseUpdate, []string{"delete db-2", "delete db-3"}, ""},
		{"an unavailable pod uses the update budget",
			snapshot(set(4, true, maxUnavailable("50%")), pod(0, oldRev, notReady), pod(1, oldRev), pod(2, oldRev), pod(3, oldRev)),
			PhaseUpdate, []string{"delete db-3"}, ""},
		{"a rollout with its budget used up waits",
			snapshot(set(4, true, maxUnavailable("50%")), pod(0, oldRev, notReady), pod(1, oldRev), pod(2, oldRev), pod(3, newRev, notReady)),
			PhaseUpdate, nil, "2 of maxUnavailable 2 pods are unavailable"},
		{"paused: no update", snapshot(set(2, true, func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Paused = true }),
			pod(0, oldRev), pod(1, oldRev)), PhaseUpdate, nil, "the rollout is paused"},
		{"OnDelete: no update", snapshot(set(2, true, func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1beta1.StatefulSetUpdateStrategy{Type: "OnDelete"}
		}), pod(0, oldRev), pod(1, oldRev)), PhaseUpdate, nil, ""},
		{"a specified-delete pod is recreated whatever the partition",
			snapshot(set(2, true, partition(2)), pod(0, newRev, specifiedDelete), pod(1, newRev)), PhaseUpdate, []string{"delete db-0"}, ""},
		{"unordered update by priority leaves partition pods whatever their ordinal",
			snapshot(set(3, true, maxUnavailable("3"), partition(1), func(s *appsv1beta1.StatefulSet) {
				s.Spec.UpdateStrategy.RollingUpdate.UnorderedUpdate = &appsv1beta1.UnorderedUpdateStrategy{PriorityStrategy: &pub.UpdatePriorityStrategy{
					OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "rank"}}}}
			}), pod(0, oldRev, label("rank", "9")), pod(1, oldRev, label("rank", "1")), pod(2, oldRev, label("rank", "5"))),
			PhaseUpdate, []string{"delete db-0", "delete db-2"}, ""},
		// OpenKruise tries to add the volume to the running pods and
		// reports FailedUpdatePod for good (#1389, #2343).
		{"a claim template added: pods without its volume are replaced, highest first, within maxUnavailable",
			snapshot(set(3, true, withClaim("data"), partition(3)), pod(0, newRev), pod(1, newRev), pod(2, newRev)),
			PhaseUpdate, []string{"delete db-2"}, ""},
		{"a claim template added: a pod with its volume is left alone",
			snapshot(set(2, true, withClaim("data")), pod(0, newRev, withVolume("data", "data-db-0")), pod(1, newRev)),
			PhaseUpdate, []string{"delete db-1"}, ""},
		{"a claim template added: a volume of that name bound elsewhere does not match",
			snapshot(set(1, true, withClaim("data")), pod(0, newRev, withVolume("data", "other"))), PhaseUpdate, []string{"delete db-0"}, ""},
		{"a claim template added: the pod goes through its preDelete hook",
			snapshot(set(1, true, withClaim("data"), preDeleteHook), pod(0, newRev)), PhaseUpdate, []string{"state db-0 PreparingDelete"}, ""},
		{"a claim template added: not under OnDelete", snapshot(set(1, true, withClaim("data"), func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1beta1.StatefulSetUpdateStrategy{Type: "OnDelete"}
		}), pod(0, newRev)), PhaseUpdate, nil, ""},
		// OpenKruise makes them one at a time while its update keeps
		// taking more: availability stays at its floor (#2285).
		{"a rollout's replacements are made within its own maxUnavailable, not a smaller scale budget",
			snapshot(set(4, true, maxUnavailable("50%"), scaleMax(1)), pod(0, oldRev), pod(1, oldRev)), PhaseScale, []string{"create 2@new", "create 3@new"}, ""},
		{"outside a rollout the scale budget holds",
			snapshot(set(4, true, maxUnavailable("50%"), scaleMax(1)), pod(0, newRev), pod(1, newRev)).withCurrent(newRev),
			PhaseScale, []string{"create 2@new"}, ""},
		{"an ordinal with no pod counts against maxUnavailable",
			snapshot(set(3, true, maxUnavailable("2"), scaleMax(1)), pod(0, newRev, notReady), pod(1, newRev, specifiedDelete)).withCurrent(newRev),
			PhaseUpdate, nil, ""},
		{"a ReCreate update under a preDelete hook holds the pod, marked specified-delete",
			snapshot(set(1, false, preDeleteHook), pod(0, oldRev)), PhaseUpdate, []string{"state db-0 PreparingDelete"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Compute(c.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(p.Actions); p.Phase != c.phase || !slices.Equal(got, c.want) {
				t.Errorf("phase %s, actions %q; want %s, %q", p.Phase, got, c.phase, c.want)
			}
			if p.Waiting != c.waiting {
				t.Errorf("waiting %q, want %q", p.Waiting, c.waiting)
			}
		})
	}
}

// TestRecreateHoldMarksSpecifiedDelete: a pod held for a ReCreate update
// is never revived by its ordinal being in range (it always is).
func TestRecreateHoldMarksSpecifiedDelete(t *testing.T) {
	p, err := Compute(snapshot(set(1, false, preDeleteHook), pod(0, oldRev)))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Actions[0].(podlife.SetState)
	if a.Writes[0].Labels[appsv1alpha1.SpecifiedDeleteKey] != "true" {
		t.Fatalf("the hold does not mark specified-delete: %+v", a.Writes[0])
	}
	held := pod(0, oldRev, inState(pub.LifecycleStatePreparingDelete), specifiedDelete)
	if p, _ := Compute(snapshot(set(1, false, preDeleteHook), held)); len(p.Actions) != 0 {
		t.Fatalf("a pod held for its update was acted on: %v", describe(p.Actions))
	}
}

func TestOrdinals(t *testing.T) {
	s := set(4, true, reserve(intstr.FromInt32(1), intstr.FromInt32(3)), func(s *appsv1beta1.StatefulSet) {
		s.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 2}
	})
	// Reference §7: replicas 4, reserve {1,3}, start 2 → [2,7), 3 skipped.
	if o := OrdinalsOf(s, true); o.Start != 2 || o.End != 7 || !slices.Equal(o.Each(), []int{2, 4, 5, 6}) {
		t.Errorf("with start: %+v %v", o, o.Each())
	}
	if o := OrdinalsOf(s, false); !slices.Equal(o.Each(), []int{0, 2, 4, 5}) {
		t.Errorf("without start: %v", o.Each())
	}
	if r := ReservedOrdinals([]intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("5-3")}); r.Len() != 0 {
		t.Errorf("a bad range reserves %v, want nothing (OpenKruise)", r)
	}
	for name, want := range map[string]int{"db-0": 0, "db-12": 12, "db-x": -1, "dbx-1": -1, "db-": -1, "db-1-2": -1} {
		got, ok := Ordinal("db", name)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("Ordinal(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestStatus(t *testing.T) {
	s := snapshot(set(3, true), pod(0, newRev), pod(1, oldRev), pod(2, newRev, notReady), pod(3, newRev, terminating))
	st := Status(s, ptr.To[int32](0), "app=db")
	if st.Replicas != 4 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.CurrentReplicas != 1 || st.UpdatedReplicas != 2 ||
		st.UpdatedReadyReplicas != 1 || st.CurrentRevision != oldRev {
		t.Errorf("%+v", st)
	}
	s = snapshot(set(2, true), pod(0, newRev), pod(1, newRev))
	if st := Status(s, nil, ""); st.CurrentRevision != newRev || st.CurrentReplicas != 2 {
		t.Errorf("all updated and ready: current %s %d", st.CurrentRevision, st.CurrentReplicas)
	}
	s = snapshot(set(2, true), pod(0, newRev), pod(1, newRev, notReady))
	if st := Status(s, nil, ""); st.CurrentRevision != oldRev {
		t.Errorf("updated but not all ready: current moved to %s", st.CurrentRevision)
	}
	// The pods a step made count in the status written after it.
	s = snapshot(set(3, false), pod(0, newRev))
	p, _ := Compute(s)
	if st := Status(s.WithCreated(p.Actions), nil, ""); st.Replicas != 2 || st.UpdatedReplicas != 2 || st.ReadyReplicas != 1 || len(s.Pods) != 1 {
		t.Errorf("after creating db-1: %+v (snapshot pods %d)", st, len(s.Pods))
	}
}

func scaleMax(n int32) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) {
		s.Spec.ScaleStrategy = &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(n))}
	}
}

// withCurrent is s with its current revision at rev.
func (s Snapshot) withCurrent(rev string) Snapshot { s.CurrentRevision = rev; return s }

func withClaim(name string) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) {
		s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
}

func withVolume(name, claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

func label(k, v string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels[k] = v } }

// withTemplates gives the snapshot the templates of both revisions, which
// differ in their image only.
func withTemplates(s Snapshot) Snapshot {
	tmpl := func(image string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	}
	s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: tmpl("db:1"), newRev: tmpl("db:2")}
	for _, p := range s.Pods {
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "db:1"}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "db:1", ImageID: "db@sha256:1", Ready: true}}
	}
	return s
}
