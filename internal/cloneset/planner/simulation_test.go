package planner

import (
	"fmt"
	"math/rand"
	"sort"
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
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// world is a model cluster for one CloneSet: the planner's plans are applied
// to it, and pods get scheduled, become ready or vanish at random, while the
// spec changes under the rollout.
type world struct {
	t        *testing.T
	rng      *rand.Rand
	cs       *appsv1alpha1.CloneSet
	pods     map[string]*corev1.Pod
	status   appsv1alpha1.CloneSetStatus
	revision int
	now      time.Time
	ids      int
}

func (w *world) updateRevision() string { return fmt.Sprintf("web-rev%d", w.revision) }

func (w *world) snapshot() Snapshot {
	var pods []*corev1.Pod
	for _, p := range w.pods {
		pods = append(pods, p.DeepCopy())
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	current := w.status.CurrentRevision
	if current == "" {
		current = w.updateRevision()
	}
	return Snapshot{
		CloneSet: w.cs.DeepCopy(), Pods: pods, UpdateRevision: w.updateRevision(), CurrentRevision: current, Now: w.now,
		NewInstanceID: func() string { w.ids++; return fmt.Sprintf("i%d", w.rng.Intn(w.ids+3)) }, // collides on purpose
	}
}

// available counts pods the way the budget does.
func (w *world) available() int {
	n := 0
	for _, p := range w.pods {
		if podfacts.IsAvailable(p, w.cs.Spec.MinReadySeconds, w.now) {
			n++
		}
	}
	return n
}

// step runs the planner once and applies its plan, checking the invariants
// every plan must keep.
func (w *world) step() Plan {
	w.t.Helper()
	s := w.snapshot()
	b, err := ResolveRolloutLimits(w.cs)
	if err != nil {
		w.t.Fatal(err)
	}
	deficitBefore := b.Replicas - w.available()
	plan, err := Compute(s)
	if err != nil {
		w.t.Fatalf("plan: %v", err)
	}
	for _, a := range plan.Actions {
		switch c := a.(type) {
		case podlife.CreatePod:
			for _, p := range w.pods {
				if p.Labels[appsv1alpha1.CloneSetInstanceID] == c.InstanceID {
					w.t.Fatalf("instance id %s created twice", c.InstanceID)
				}
			}
			w.pods["web-"+c.InstanceID] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Name: "web-" + c.InstanceID, CreationTimestamp: metav1.NewTime(w.now),
				Labels: map[string]string{
					appsv1alpha1.CloneSetInstanceID:       c.InstanceID,
					appsv1.ControllerRevisionHashLabelKey: revisionIn(a),
					pub.LifecycleStateKey:                 string(stateOf(a)),
				},
			}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
		case podlife.DeletePod:
			delete(w.pods, a.Target().Name)
		case podlife.SetState:
			w.pods[a.Target().Name].Labels[pub.LifecycleStateKey] = string(stateOf(a))
		}
	}
	// The controller never takes more pods out of service than
	// maxUnavailable allows; if they were already out (lost, starting),
	// it does not make it worse.
	if deficit := b.Replicas - w.available(); deficit > max(deficitBefore, b.MaxUnavailable) {
		for _, p := range s.Pods {
			w.t.Logf("before: %s rev=%s ready=%v state=%s labels=%v", p.Name, p.Labels[appsv1.ControllerRevisionHashLabelKey], podfacts.IsReady(p, 0, w.now), podfacts.State(p), p.Labels)
		}
		w.t.Logf("budgets %+v diffs %+v", b, plan.Diffs)
		w.t.Fatalf("plan %v left %d of %d replicas unavailable (before %d, maxUnavailable %d)", names(plan.Actions), deficit, b.Replicas, deficitBefore, b.MaxUnavailable)
	}
	st, _ := Status(w.snapshot(), w.status, 0, "app=web")
	w.checkStatus(st)
	w.status = st
	w.now = w.now.Add(time.Second)
	return plan
}

// checkStatus recounts the pods independently of Status.
func (w *world) checkStatus(st appsv1alpha1.CloneSetStatus) {
	w.t.Helper()
	var replicas, updated, ready int32
	for _, p := range w.pods {
		replicas++
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == w.updateRevision() {
			updated++
		}
		if p.Status.Phase == corev1.PodRunning && len(p.Status.Conditions) > 0 && p.Status.Conditions[0].Status == corev1.ConditionTrue {
			ready++
		}
	}
	if st.Replicas != replicas || st.UpdatedReplicas != updated || st.ReadyReplicas != ready || st.UpdatedReadyReplicas > st.ReadyReplicas ||
		st.AvailableReplicas > st.ReadyReplicas || st.UpdatedAvailableReplicas > st.AvailableReplicas {
		w.t.Fatalf("status %+v disagrees with pods: replicas %d, updated %d, ready %d", st, replicas, updated, ready)
	}
}

// progress makes pods move on: scheduled pods start and become ready;
// with chaos, some do not, and some vanish.
func (w *world) progress(chaos bool) {
	for _, p := range w.sorted() {
		if chaos && w.rng.Intn(4) == 0 {
			continue
		}
		switch {
		case p.Spec.NodeName == "":
			p.Spec.NodeName = fmt.Sprintf("node-%d", w.rng.Intn(3))
		case p.Status.Phase == corev1.PodPending:
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(w.now)}}
		}
	}
	if pods := w.sorted(); chaos && len(pods) > 0 && w.rng.Intn(10) == 0 {
		delete(w.pods, pods[w.rng.Intn(len(pods))].Name) // lost: evicted, node gone
	}
}

// sorted lists the pods by name, so that a seed always plays the same way.
func (w *world) sorted() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, p := range w.pods {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// mutate changes the spec the way users do mid-rollout.
func (w *world) mutate() {
	us := &w.cs.Spec.UpdateStrategy
	switch w.rng.Intn(7) {
	case 0:
		w.revision++
	case 1:
		w.cs.Spec.Replicas = ptr.To(int32(w.rng.Intn(8)))
	case 2:
		us.Partition = randomIntOrPercent(w.rng, 8)
	case 3, 4:
		us.MaxUnavailable, us.MaxSurge = randomIntOrPercent(w.rng, 4), randomIntOrPercent(w.rng, 3)
		if v, _ := ScaledValue(us.MaxUnavailable, int(*w.cs.Spec.Replicas), true); v < 1 {
			if s, _ := ScaledValue(us.MaxSurge, int(*w.cs.Spec.Replicas), true); s < 1 {
				us.MaxUnavailable = ptr.To(intstr.FromInt32(1)) // validation forbids both below 1
			}
		}
	case 5:
		us.Paused = !us.Paused
	case 6:
		if pods := w.sorted(); len(pods) > 0 { // someone asks for a pod's deletion
			pods[w.rng.Intn(len(pods))].Labels[appsv1alpha1.SpecifiedDeleteKey] = "true"
		}
	}
	w.cs.Generation++
}

func randomIntOrPercent(rng *rand.Rand, n int) *intstr.IntOrString {
	if rng.Intn(2) == 0 {
		return ptr.To(intstr.FromInt32(int32(rng.Intn(n + 1))))
	}
	return ptr.To(intstr.FromString(fmt.Sprintf("%d%%", rng.Intn(101))))
}

func TestRandomizedRollouts(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			w := &world{t: t, rng: rng, pods: map[string]*corev1.Pod{}, now: now, revision: 1}
			w.cs = cloneSet(int32(rng.Intn(6)+1), "", "1", "")
			for i := 0; i < 60; i++ {
				if rng.Intn(5) == 0 {
					w.mutate()
				}
				w.step()
				w.progress(true)
			}
			// Calm: one last template change, the spec holds still, and
			// every pod starts. The rollout must finish where partition
			// says.
			w.revision++
			w.cs.Spec.UpdateStrategy.Paused = false
			w.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
			quiet := 0
			for i := 0; i < 400 && quiet < 3; i++ {
				if len(w.step().Actions) == 0 {
					quiet++
				} else {
					quiet = 0
				}
				w.progress(false)
			}
			b, _ := ResolveRolloutLimits(w.cs)
			st := w.status
			if int(st.Replicas) != b.Replicas || int(st.UpdatedReplicas) != b.Replicas-b.Partition || int(st.AvailableReplicas) != b.Replicas {
				t.Fatalf("did not converge: replicas %d partition %d, status %+v", b.Replicas, b.Partition, st)
			}
			for _, p := range w.pods {
				if _, marked := p.Labels[appsv1alpha1.SpecifiedDeleteKey]; marked || podfacts.State(p) != pub.LifecycleStateNormal {
					t.Fatalf("pod %s left %v", p.Name, p.Labels)
				}
			}
		})
	}
}
