package planner

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/podlife/podlifetest"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// allowedMoves are the lifecycle transitions of OpenKruise's state machine
// (reference §2.3) that the planner may make; "" is a pod being created.
var allowedMoves = map[pub.LifecycleStateType][]pub.LifecycleStateType{
	"":                                {pub.LifecycleStateNormal, pub.LifecycleStatePreparingNormal},
	pub.LifecycleStatePreparingNormal: {pub.LifecycleStateNormal, pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating, pub.LifecycleStatePreparingDelete},
	pub.LifecycleStateNormal:          {pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating, pub.LifecycleStatePreparingDelete},
	pub.LifecycleStatePreparingUpdate: {pub.LifecycleStateUpdating, pub.LifecycleStateUpdated, pub.LifecycleStateNormal, pub.LifecycleStatePreparingDelete},
	pub.LifecycleStateUpdating:        {pub.LifecycleStateUpdated, pub.LifecycleStateNormal, pub.LifecycleStatePreparingDelete},
	pub.LifecycleStateUpdated:         {pub.LifecycleStateNormal, pub.LifecycleStatePreparingUpdate, pub.LifecycleStatePreparingDelete},
	pub.LifecycleStatePreparingDelete: {pub.LifecycleStatePreparingNormal},
}

func allowed(from, to pub.LifecycleStateType) bool {
	for _, s := range allowedMoves[from] {
		if s == to {
			return true
		}
	}
	return false
}

// TestLifecycleModel runs the planner against a model cluster with preDelete
// and inPlaceUpdate hooks, an operator that releases and re-adds handlers at
// random, image changes, rollbacks, scaling and pod losses. The planner is
// stateless, so every step is also what a restarted controller would do.
// Across it, no pod is deleted or updated while its hook holds it, and no
// lifecycle state is skipped. The controller also stops, at random, between
// the two writes of an in-place update (InPlaceUpdateReady False, then the
// images): no pod is left NotReady by that for more than one plan beyond the
// one that could repair it. After every step each pod's KruisePodReady
// reasons match its state.
func TestLifecycleModel(t *testing.T) {
	const hold, drain = "example.com/hold-update", "example.com/hold-delete"
	for seed := int64(1); seed <= 200; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			cs := cloneSet(int32(rng.Intn(4)+1), "", "1", "")
			cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
			cs.Spec.Lifecycle = &pub.Lifecycle{
				InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{hold: "true"}, MarkPodNotReady: rng.Intn(2) == 0},
				PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{drain: "true"}, MarkPodNotReady: rng.Intn(2) == 0},
			}
			images := []string{"nginx:1"}
			templates := map[string]*corev1.PodTemplateSpec{"web-rev0": template("nginx:1")}
			current, update := "web-rev0", "web-rev0"
			pods := map[string]*corev1.Pod{}
			clock := now
			ids := 0

			for step := 0; step < 150; step++ {
				// The world moves: users change the spec, the operator
				// acts on hooks, kubelets finish updates, pods get lost.
				switch r := rng.Intn(10); {
				case r == 0 && step < 120:
					next := fmt.Sprintf("nginx:%d", len(images)+1)
					if rng.Intn(3) == 0 && len(images) > 1 {
						next = images[rng.Intn(len(images))] // a rollback
					}
					images = append(images, next)
					update = ""
					for name, tm := range templates {
						if tm.Spec.Containers[0].Image == next {
							update = name
						}
					}
					if update == "" {
						update = fmt.Sprintf("web-rev%d", len(templates))
						templates[update] = template(next)
					}
				case r == 1 && step < 120:
					cs.Spec.Replicas = ptr.To(int32(rng.Intn(5)))
				case r == 2 && step < 120 && len(pods) > 0:
					delete(pods, sortedNames(pods)[rng.Intn(len(pods))]) // lost
				}
				for _, name := range sortedNames(pods) {
					p := pods[name]
					// The operator: releases held pods, puts handlers back
					// on updated ones, at random.
					if rng.Intn(3) == 0 {
						switch podfacts.State(p) {
						case pub.LifecycleStatePreparingUpdate:
							p.Labels[hold] = "false"
						case pub.LifecycleStatePreparingDelete:
							p.Labels[drain] = "false"
						case pub.LifecycleStateUpdating, pub.LifecycleStateUpdated, pub.LifecycleStateNormal:
							p.Labels[hold] = "true"
						}
					}
					// The kubelet: runs the new image.
					if p.Status.ContainerStatuses[0].Image != p.Spec.Containers[0].Image && rng.Intn(2) == 0 {
						p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: p.Spec.Containers[0].Image, ImageID: "id-" + p.Spec.Containers[0].Image}
					}
				}

				var list []*corev1.Pod
				for _, name := range sortedNames(pods) {
					list = append(list, pods[name].DeepCopy())
				}
				s := Snapshot{CloneSet: cs.DeepCopy(), Pods: list, UpdateRevision: update, CurrentRevision: current, Templates: templates, Now: clock,
					NewInstanceID: func() string { ids++; return fmt.Sprintf("i%d", ids) }}
				plan, err := Compute(s)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				// The controller hands the planner the cache's own pods,
				// uncopied: neither planning nor rendering may change them.
				for _, a := range plan.Actions {
					if w, ok := a.(podlife.Writer); ok {
						for _, write := range w.PodWrites() {
							write.Render(w.Target())
						}
					}
				}
				for i, name := range sortedNames(pods) {
					if !equality.Semantic.DeepEqual(list[i], pods[name]) {
						t.Fatalf("step %d: planning changed pod %s: %s", step, name, cmp.Diff(pods[name], list[i]))
					}
				}
				for _, a := range plan.Actions {
					switch c := a.(type) {
					case podlife.CreatePod:
						if !allowed("", stateOf(a)) {
							t.Fatalf("step %d: created in %s", step, stateOf(a))
						}
						tm := templates[c.Revision]
						gates := []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
						if MarksPodNotReady(cs) {
							gates = append(gates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
						}
						name := "web-" + c.InstanceID
						pods[name] = &corev1.Pod{
							ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
								appsv1.ControllerRevisionHashLabelKey: c.Revision, pub.LifecycleStateKey: string(stateOf(a)), hold: "true", drain: "true"}},
							Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "main", Image: tm.Spec.Containers[0].Image}},
								ReadinessGates: gates},
							Status: corev1.PodStatus{Phase: corev1.PodRunning,
								Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
								ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: tm.Spec.Containers[0].Image, ImageID: "id-" + tm.Spec.Containers[0].Image}}},
						}
					case podlife.DeletePod:
						p := pods[a.Target().Name]
						if lifecycle.IsHooked(cs.Spec.Lifecycle.PreDelete, p) {
							t.Fatalf("step %d: deleted %s while its preDelete hook holds it", step, p.Name)
						}
						delete(pods, a.Target().Name)
					case podlife.SetState:
						p := pods[a.Target().Name]
						if !allowed(podfacts.State(p), stateOf(a)) {
							t.Fatalf("step %d: %s moved %s → %s", step, p.Name, podfacts.State(p), stateOf(a))
						}
						podlifetest.Apply(p, writesOf(a)...)
					case podlife.UpdateInPlace:
						p := pods[a.Target().Name]
						if lifecycle.IsHooked(cs.Spec.Lifecycle.InPlaceUpdate, p) {
							t.Fatalf("step %d: updated %s in place while its inPlaceUpdate hook holds it", step, p.Name)
						}
						if !allowed(podfacts.State(p), pub.LifecycleStateUpdating) {
							t.Fatalf("step %d: %s updated from %s", step, p.Name, podfacts.State(p))
						}
						if len(writesOf(a)) == 2 && rng.Intn(5) == 0 {
							podlifetest.Apply(p, writesOf(a)[:1]...)
							continue // the controller stopped before the second write
						}
						podlifetest.Apply(p, writesOf(a)...)
					default:
						podlifetest.Apply(pods[a.Target().Name], writesOf(a)...)
					}
				}
				for _, name := range sortedNames(pods) {
					if err := notReadyReasonsHold(cs.Spec.Lifecycle, pods[name]); err != nil {
						t.Fatalf("step %d: %s in %s: %v", step, name, podfacts.State(pods[name]), err)
					}
				}
				// A pod left NotReady by an interrupted update is repaired,
				// or its update tried again, by the very next plan.
				for _, pod := range s.Pods {
					p, ok := pods[pod.Name]
					notUpdating := func(p *corev1.Pod) bool {
						for _, c := range p.Status.Conditions {
							if c.Type == pub.InPlaceUpdateReady {
								return c.Status == corev1.ConditionFalse && podfacts.State(p) != pub.LifecycleStateUpdating
							}
						}
						return false
					}
					if !ok || !notUpdating(pod) || !notUpdating(p) {
						continue
					}
					retried := false
					for _, a := range plan.Actions {
						retried = retried || (is[podlife.UpdateInPlace](a) && a.Target().Name == p.Name)
					}
					if !retried {
						t.Fatalf("step %d: %s left NotReady through InPlaceUpdateReady in state %s", step, p.Name, podfacts.State(p))
					}
				}
				if st, _ := Status(s, appsv1alpha1.CloneSetStatus{}, 0, ""); st.CurrentRevision == update {
					current = update
				}
				clock = clock.Add(time.Second)
			}
		})
	}
}

// notReadyReasonsHold checks a pod's KruisePodReady condition against its
// state (reference §2.4): a hook with markPodNotReady holds the pod NotReady
// under its key while it holds the pod, the key goes once the pod is past
// the hook, and the condition is False exactly while some reason is left.
func notReadyReasonsHold(l *pub.Lifecycle, p *corev1.Pod) error {
	if !podfacts.HasReadinessGate(p, pub.KruisePodReadyConditionType) {
		return nil
	}
	var cond *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == pub.KruisePodReadyConditionType {
			cond = &p.Status.Conditions[i]
		}
	}
	reasons := map[string]bool{}
	if cond != nil && cond.Message != "" {
		var entries []pub.PodReadyMessageEntry
		if err := json.Unmarshal([]byte(cond.Message), &entries); err != nil {
			return fmt.Errorf("unreadable KruisePodReady message %q: %v", cond.Message, err)
		}
		for _, e := range entries {
			reasons[e.Key] = true
		}
	}
	if cond != nil && (cond.Status == corev1.ConditionFalse) != (len(reasons) > 0) {
		return fmt.Errorf("KruisePodReady is %s with reasons %q", cond.Status, cond.Message)
	}
	state := podfacts.State(p)
	switch {
	case state == pub.LifecycleStatePreparingUpdate && l.InPlaceUpdate.MarkPodNotReady && !reasons[pub.PodReadyKeyPreUpdateHook]:
		return fmt.Errorf("held for update but not NotReady for it")
	case (state == pub.LifecycleStateNormal || state == pub.LifecycleStateUpdated) && reasons[pub.PodReadyKeyPreUpdateHook]:
		return fmt.Errorf("past its update but still NotReady for it")
	case state == pub.LifecycleStatePreparingDelete && l.PreDelete.MarkPodNotReady && !reasons[pub.PodReadyKeyPreDeleteHook]:
		return fmt.Errorf("held for deletion but not NotReady for it")
	case state != pub.LifecycleStatePreparingDelete && reasons[pub.PodReadyKeyPreDeleteHook]:
		return fmt.Errorf("not held for deletion but NotReady for it")
	}
	return nil
}

func sortedNames(pods map[string]*corev1.Pod) []string {
	var names []string
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
