package planner

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

func TestCalculateDiffs(t *testing.T) {
	five := func(rev string, mutate ...func(*corev1.Pod)) []*corev1.Pod {
		var pods []*corev1.Pod
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			pods = append(pods, readyPod(id, rev, mutate...))
		}
		return pods
	}
	for _, tc := range []struct {
		name string
		s    Snapshot
		want Diffs
	}{
		{
			// OpenKruise's "update recreate partition=3 with maxSurge, step 1/7".
			name: "partition 3 of 5 with surge: surge one new pod first",
			s:    snapshot(cloneSet(5, "3", "1", "1"), five(oldRev)...),
			want: Diffs{ScaleUpNum: 1, UseSurge: 1, ScaleUpLimit: 1, UpdateNum: 2, UpdateMaxUnavailable: 1},
		},
		{
			name: "partition 99% of 4 updates exactly one",
			s:    snapshot(cloneSet(4, "99%", "50%", ""), five(oldRev)[:4]...),
			want: Diffs{UpdateNum: 1, UpdateMaxUnavailable: 2},
		},
		{
			name: "scale up from nothing",
			s:    snapshot(cloneSet(3, "", "", "")),
			want: Diffs{ScaleUpNum: 3, ScaleUpLimit: 3},
		},
		{
			name: "increase replicas 3 to 6 with scale maxUnavailable 2",
			s: func() Snapshot {
				cs := cloneSet(6, "", "", "")
				cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
				return snapshot(cs, five(newRev)[:3]...)
			}(),
			want: Diffs{ScaleUpNum: 3, ScaleUpLimit: 2},
		},
		{
			name: "scale maxUnavailable counts pods still starting",
			s: func() Snapshot {
				cs := cloneSet(6, "", "", "")
				cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
				return snapshot(cs, readyPod("a", newRev), readyPod("b", newRev, notReady), readyPod("c", newRev, unscheduled))
			}(),
			want: Diffs{ScaleUpNum: 3},
		},
		{
			name: "scale up under partition keeps old pods",
			s:    snapshot(cloneSet(5, "2", "", ""), readyPod("a", oldRev)),
			want: Diffs{ScaleUpNum: 4, ScaleUpNumOldRevision: 1, ScaleUpLimit: 4},
		},
		{
			name: "scale down takes old pods first down to partition",
			s:    snapshot(cloneSet(2, "1", "", ""), five(oldRev)...),
			// Kruise's formula also asks for one update: after the
			// scale-in, one of the two remaining pods belongs at the new
			// revision. Scaling runs first, so it waits for that.
			want: Diffs{ScaleDownNum: 3, ScaleDownNumOldRevision: 4, DeleteReadyLimit: 4, UpdateNum: 1, UpdateMaxUnavailable: 4},
		},
		{
			name: "specified delete with surge: replacement first, no deletion budget yet",
			s:    snapshot(cloneSet(3, "", "0", "1"), readyPod("a", newRev, specifiedDelete), readyPod("b", newRev), readyPod("c", newRev)),
			want: Diffs{ScaleUpNum: 1, ScaleUpLimit: 1, UseSurge: 1},
		},
		{
			name: "specified delete with surge: replacement ready, deletion allowed",
			s: snapshot(cloneSet(3, "", "0", "1"), readyPod("a", newRev, specifiedDelete), readyPod("b", newRev), readyPod("c", newRev),
				readyPod("d", newRev)),
			want: Diffs{UseSurge: 1, DeleteReadyLimit: 1},
		},
		{
			name: "paused: no surge",
			s: func() Snapshot {
				cs := cloneSet(5, "3", "1", "1")
				cs.Spec.UpdateStrategy.Paused = true
				return snapshot(cs, five(oldRev)...)
			}(),
			want: Diffs{UpdateNum: 2, UpdateMaxUnavailable: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ResolveRolloutLimits(tc.s.CloneSet)
			if err != nil {
				t.Fatal(err)
			}
			got := CalculateDiffs(b, tc.s.Pods, tc.s.UpdateRevision, UpdatingView, nil, 0, false, now)
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestComputeScenarios(t *testing.T) {
	preDelete := func(s Snapshot) Snapshot {
		s.CloneSet.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
		return s
	}
	held := func(p *corev1.Pod) { p.Labels["hold"] = "true" }
	preNormal := func(s Snapshot) Snapshot {
		s.CloneSet.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"online": "true"}}}
		return s
	}
	online := func(p *corev1.Pod) { p.Labels["online"] = "true" }
	for _, tc := range []struct {
		name string
		s    Snapshot
		want []string
	}{
		{"creates get fresh ids", snapshot(cloneSet(2, "", "", "")),
			[]string{"create id001@" + newRev, "create id002@" + newRev}},
		{"free PVC ids come first", func() Snapshot {
			s := snapshot(cloneSet(2, "", "", ""))
			s.PVCs = []*corev1.PersistentVolumeClaim{
				{ObjectMeta: metav1.ObjectMeta{Name: "data-web-zz", Labels: map[string]string{"apps.kruise.io/cloneset-instance-id": "zz"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "logs-web-zz", Labels: map[string]string{"apps.kruise.io/cloneset-instance-id": "zz"}}},
			}
			return s
		}(), []string{"create zz@" + newRev, "create id001@" + newRev}},
		{"taken ids are rerolled", snapshot(cloneSet(2, "", "", ""), readyPod("id001", newRev)),
			[]string{"create id002@" + newRev}},
		{"scale in: unscheduled, then not ready, then cheaper", snapshot(cloneSet(2, "", "100%", ""),
			readyPod("a", newRev), readyPod("b", newRev, withCost("-5")), readyPod("c", newRev, notReady), readyPod("d", newRev, unscheduled), readyPod("e", newRev)),
			[]string{"DeletePod web-d", "DeletePod web-c", "DeletePod web-b"}},
		{"scale in spreads over crowded nodes", snapshot(cloneSet(2, "", "100%", ""),
			readyPod("a", newRev, onNode("n1")), readyPod("b", newRev, onNode("n2")), readyPod("c", newRev, onNode("n2"))),
			[]string{"DeletePod web-b"}},
		{"scale in evens out topology spread", func() Snapshot {
			s := snapshot(cloneSet(2, "", "100%", ""),
				readyPod("a", newRev, onNode("n1")), readyPod("b", newRev, onNode("n2")), readyPod("c", newRev, onNode("n3")))
			s.CloneSet.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{TopologyKey: "zone", MaxSkew: 1}}
			s.NodeLabels = map[string]map[string]string{"n1": {"zone": "a"}, "n2": {"zone": "b"}, "n3": {"zone": "b"}}
			return s
		}(), []string{"DeletePod web-b"}},
		{"surplus pods are deleted whatever maxUnavailable", snapshot(cloneSet(1, "", "1", ""),
			readyPod("a", newRev), readyPod("b", newRev), readyPod("c", newRev)),
			[]string{"DeletePod web-a", "DeletePod web-b"}},
		{"specified deletes of available pods respect maxUnavailable", snapshot(cloneSet(3, "", "1", ""),
			readyPod("a", newRev, specifiedDelete), readyPod("b", newRev, specifiedDelete), readyPod("c", newRev, specifiedDelete)),
			[]string{"DeletePod web-a"}},
		{"specified deletes of unavailable pods are free", snapshot(cloneSet(3, "", "1", ""),
			readyPod("a", newRev, specifiedDelete, notReady), readyPod("b", newRev, specifiedDelete, notReady), readyPod("c", newRev)),
			[]string{"DeletePod web-a", "DeletePod web-b"}},
		{"preDelete holds instead of deleting", preDelete(snapshot(cloneSet(1, "", "100%", ""),
			readyPod("a", newRev, held), readyPod("b", newRev, held))),
			[]string{"state web-a=PreparingDelete"}},
		{"a held pod waits, and so does scale-in", preDelete(snapshot(cloneSet(1, "", "100%", ""),
			readyPod("a", newRev, held), readyPod("b", newRev, held, inState(pub.LifecycleStatePreparingDelete)), readyPod("c", newRev, held))),
			nil},
		{"replicas back up revive a held pod", preDelete(snapshot(cloneSet(2, "", "100%", ""),
			readyPod("a", newRev, held), readyPod("b", newRev, held, inState(pub.LifecycleStatePreparingDelete)))),
			[]string{"state web-b=PreparingNormal"}},
		// A held pod still counts as a replica until it goes (OpenKruise's
		// default)...
		{"a specified-delete pod is not revived", preDelete(snapshot(cloneSet(2, "", "100%", ""),
			readyPod("a", newRev, held), readyPod("b", newRev, held, specifiedDelete, inState(pub.LifecycleStatePreparingDelete)))),
			nil},
		// ...unless PreparingDelete pods are excluded from the count.
		{"excluded from the count, a held pod is replaced", func() Snapshot {
			s := preDelete(snapshot(cloneSet(2, "", "100%", ""),
				readyPod("a", newRev, held), readyPod("b", newRev, held, specifiedDelete, inState(pub.LifecycleStatePreparingDelete))))
			s.ExcludePreparingDelete = true
			return s
		}(), []string{"create id001@" + newRev}},
		{"a released pod is deleted", preDelete(snapshot(cloneSet(1, "", "100%", ""),
			readyPod("a", newRev, held), readyPod("b", newRev, inState(pub.LifecycleStatePreparingDelete)))),
			[]string{"DeletePod web-b"}},
		{"specified delete", snapshot(cloneSet(2, "", "1", ""), readyPod("a", newRev), readyPod("b", newRev, specifiedDelete)),
			[]string{"DeletePod web-b"}},
		{"without a preNormal hook, pods are created PreparingNormal (v1.9)", snapshot(cloneSet(1, "", "", "")),
			[]string{"create id001@" + newRev}},
		{"with the v1.8 flag, pods without a preNormal hook are created Normal", func() Snapshot {
			s := snapshot(cloneSet(1, "", "", ""))
			s.CreateNormal = true
			return s
		}(), []string{"create id001@" + newRev + " Normal"}},
		{"with the v1.8 flag, a preNormal hook still holds new pods", func() Snapshot {
			s := preNormal(snapshot(cloneSet(1, "", "", "")))
			s.CreateNormal = true
			return s
		}(), []string{"create id001@" + newRev}},
		{"with a preNormal hook, pods are created PreparingNormal", preNormal(snapshot(cloneSet(1, "", "", ""))),
			[]string{"create id001@" + newRev}},
		{"an unscheduled pod stays PreparingNormal", snapshot(cloneSet(1, "", "", ""),
			readyPod("a", newRev, inState(pub.LifecycleStatePreparingNormal), unscheduled)),
			nil},
		{"a pod the bind made Normal needs nothing more", snapshot(cloneSet(1, "", "", ""), readyPod("a", newRev)),
			nil},
		{"a preNormal hook holds a scheduled pod until every handler is present", preNormal(snapshot(cloneSet(1, "", "", ""),
			readyPod("a", newRev, inState(pub.LifecycleStatePreparingNormal)))),
			nil},
		{"preNormal releases a pod once every handler is present", preNormal(snapshot(cloneSet(2, "", "", ""),
			readyPod("a", newRev, inState(pub.LifecycleStatePreparingNormal), online), readyPod("b", newRev, inState(pub.LifecycleStatePreparingNormal)))),
			[]string{"state web-a=Normal"}},
		{"pods without a preNormal hook become Normal once scheduled (no binding webhook)", snapshot(cloneSet(2, "", "", ""),
			readyPod("a", newRev, inState(pub.LifecycleStatePreparingNormal)), readyPod("b", newRev, inState(pub.LifecycleStatePreparingNormal), unscheduled)),
			[]string{"state web-a=Normal"}},
		{"recreate update within maxUnavailable", snapshot(cloneSet(4, "", "2", ""),
			readyPod("a", oldRev), readyPod("b", oldRev), readyPod("c", oldRev), readyPod("d", oldRev)),
			[]string{"DeletePod web-a", "DeletePod web-b"}},
		{"recreate update holds hooked pods", preDelete(snapshot(cloneSet(2, "", "1", ""),
			readyPod("a", oldRev, held), readyPod("b", oldRev, held))),
			[]string{"state web-a=PreparingDelete"}},
		{"update waits for budget", snapshot(cloneSet(4, "", "1", ""),
			readyPod("a", oldRev), readyPod("b", oldRev), readyPod("c", oldRev), readyPod("d", newRev, notReady)),
			nil},
		{"paused does not update", func() Snapshot {
			s := snapshot(cloneSet(2, "", "", ""), readyPod("a", oldRev), readyPod("b", oldRev))
			s.CloneSet.Spec.UpdateStrategy.Paused = true
			return s
		}(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compute(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(p.Actions); !slices.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestUnreusedPVCs(t *testing.T) {
	cs := cloneSet(2, "", "", "")
	pvc := func(id string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-" + id, Labels: map[string]string{"apps.kruise.io/cloneset-instance-id": id}}}
	}
	live, gone, orphan := pvc("a"), pvc("b"), pvc("c")
	terminating := readyPod("b", newRev)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	all := []*corev1.Pod{readyPod("a", newRev), terminating}
	if got := unreusedPVCs(cs, []*corev1.PersistentVolumeClaim{live, gone, orphan}, all); got != nil {
		t.Fatalf("with reuse on, PVCs released: %v", got)
	}
	cs.Spec.ScaleStrategy.DisablePVCReuse = true
	got := unreusedPVCs(cs, []*corev1.PersistentVolumeClaim{live, gone, orphan}, all)
	if len(got) != 2 || got[gone] != terminating || got[orphan] != nil {
		t.Fatalf("released %v", got)
	}
	if _, ok := got[live]; ok {
		t.Fatal("the PVC of a live pod was released")
	}
}

func TestMinReadySecondsDelaysAvailability(t *testing.T) {
	justReady := readyPod("a", newRev, func(p *corev1.Pod) {
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-4 * time.Second))
	})
	if !podfacts.IsAvailable(justReady, 0, now) || podfacts.IsAvailable(justReady, 10, now) || !podfacts.IsAvailable(justReady, 4, now) {
		t.Error("availability ignores minReadySeconds")
	}
	if !podfacts.IsReady(justReady, 0, now) {
		t.Error("ready needs no minReadySeconds")
	}
	cs := cloneSet(1, "", "", "")
	cs.Spec.MinReadySeconds = 10
	p, err := Compute(snapshot(cs, justReady))
	if err != nil {
		t.Fatal(err)
	}
	if p.RequeueAfter != 6*time.Second {
		t.Errorf("requeue after %v, want the 6s until the pod is available", p.RequeueAfter)
	}
	for _, s := range []pub.LifecycleStateType{pub.LifecycleStatePreparingNormal, pub.LifecycleStatePreparingDelete, pub.LifecycleStateUpdated} {
		if podfacts.IsAvailable(readyPod("b", newRev, inState(s)), 0, now) {
			t.Errorf("a pod in %s counts as available", s)
		}
	}
}

func TestMarkPodNotReady(t *testing.T) {
	gated := func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	}
	initialised := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue})
	}
	held := func(p *corev1.Pod) { p.Labels["hold"] = "true" }
	cs := cloneSet(1, "", "100%", "")
	if MarksPodNotReady(cs) {
		t.Error("no lifecycle, yet marks pods NotReady")
	}
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	if !MarksPodNotReady(cs) {
		t.Error("preDelete.markPodNotReady not seen")
	}
	// Scale-in holds b (the cheapest) and makes it NotReady; c, new and
	// gated, gets its condition initialised in the same step; a has it.
	cs.Spec.Replicas = ptr.To[int32](2)
	p, err := Compute(snapshot(cs, readyPod("a", newRev, gated, initialised, held),
		readyPod("b", newRev, gated, held, withCost("-5")), readyPod("c", newRev, gated, held)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range p.Actions {
		reason := ""
		if addsNotReady(a, pub.PodReadyKeyPreDeleteHook) {
			reason = pub.PodReadyKeyPreDeleteHook
		}
		got = append(got, a.Kind()+" "+a.Target().Name+" "+reason)
	}
	if want := []string{"SetState web-b preDeleteHook", "InitPodReady web-c "}; !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v; diffs %+v", got, want, p.Diffs)
	}
	// Without markPodNotReady, holding a pod does not touch readiness.
	cs.Spec.Lifecycle.PreDelete.MarkPodNotReady = false
	cs.Spec.Replicas = ptr.To[int32](1)
	p, _ = Compute(snapshot(cs, readyPod("a", newRev, held, gated, initialised), readyPod("b", newRev, held, gated, initialised)))
	if _, touched := condition(p.Actions[0], pub.KruisePodReadyConditionType); len(p.Actions) != 1 || touched {
		t.Errorf("actions %+v", p.Actions)
	}
}

// The planner, not the executor, decides that a pod a markPodNotReady hook
// holds cannot be made NotReady (it predates the gate), and says so.
func TestMarkPodNotReadyWithoutTheGateWarns(t *testing.T) {
	cs := cloneSet(1, "", "100%", "")
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	hold := func(p *corev1.Pod) { p.Labels["hold"] = "true" }
	gated := func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue})
	}
	for _, tc := range []struct {
		name   string
		mutate []func(*corev1.Pod)
		want   int
	}{
		{"without the gate", []func(*corev1.Pod){hold}, 1},
		{"with the gate", []func(*corev1.Pod){hold, gated}, 0},
	} {
		p, err := Compute(snapshot(cs, readyPod("a", newRev, tc.mutate...), readyPod("b", newRev, tc.mutate...)))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStatePreparingDelete {
			t.Fatalf("%s: actions %+v", tc.name, p.Actions)
		}
		w := p.Actions[0].(podlife.SetState).Warnings
		if len(w) != tc.want || (tc.want > 0 && w[0].Reason != "MarkPodNotReadyUnavailable") {
			t.Errorf("%s: warnings %+v, want %d", tc.name, w, tc.want)
		}
	}
}

// A pod a ReCreate update holds in PreparingDelete is marked
// specified-delete in the same write, and so is never revived by the scale
// step: without the mark, the held pod (one replica short) was taken back to
// PreparingNormal, picked again, held again, round after round, its
// registry entry going and coming each time (found by the bridge's e2e).
func TestRecreateHeldPodIsReplacedNotRevived(t *testing.T) {
	cs := cloneSet(2, "", "1", "")
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	hold := func(p *corev1.Pod) { p.Labels["hold"] = "true" }
	p, err := Compute(snapshot(cs, readyPod("a", oldRev, hold), readyPod("b", newRev, hold)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStatePreparingDelete ||
		writesOf(p.Actions[0])[0].Labels[appsv1alpha1.SpecifiedDeleteKey] != "true" {
		t.Fatalf("actions %v, want a held in PreparingDelete and marked specified-delete", names(p.Actions))
	}
	held := readyPod("a", oldRev, hold, inState(pub.LifecycleStatePreparingDelete), specifiedDelete)
	p, err = Compute(snapshot(cs, held, readyPod("b", newRev, hold)))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Actions {
		if a.Target() == held {
			t.Fatalf("acted on the held pod: %v", names(p.Actions))
		}
	}
	// A pod held by a scale-in, unmarked, is still revived when replicas go
	// back up (OpenKruise's regret).
	scaledIn := readyPod("a", newRev, hold, inState(pub.LifecycleStatePreparingDelete))
	p, _ = Compute(snapshot(cs, scaledIn, readyPod("b", newRev, hold)))
	if len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStatePreparingNormal {
		t.Fatalf("a pod held by a scale-in: %v, want it revived", names(p.Actions))
	}
}
