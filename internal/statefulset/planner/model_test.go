package planner

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/podlife/podlifetest"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// TestRolloutModel runs the planner against a simulated cluster for many
// randomized histories: replicas, partition, reserved ordinals and the
// template change at random while pods start, fail to be Ready, terminate,
// restart on a new image in place, and have their preDelete and
// inPlaceUpdate hooks released (and the latter's handler put back) at
// random; sets update by ReCreate or in place. Every plan must keep the
// set's promises:
//   - OrderedReady acts on one ordinal at a time, and only once every lower
//     ordinal in range is available: never two consecutive ordinals
//     changing at once;
//   - no ordinal gets two pods, and no pod is created outside the range;
//   - an ordered update never touches an ordinal below partition, and new
//     pods below it start at the current revision;
//   - a pod its preDelete hook holds is never deleted, one its
//     inPlaceUpdate hook holds never updated;
//   - a Parallel update keeps unavailable pods, ordinals with no pod
//     included, within maxUnavailable (or no worse than it found them),
//     whatever scaleStrategy.maxUnavailable;
//   - once the spec stops changing, the set converges.
//
// LIFELINE_MODEL_SEED replays one history; LIFELINE_MODEL_RUNS sets how many.
func TestRolloutModel(t *testing.T) {
	runs := 300
	if v, err := strconv.Atoi(os.Getenv("LIFELINE_MODEL_RUNS")); err == nil {
		runs = v
	}
	seed := time.Now().UnixNano() % 1e9
	if v, err := strconv.ParseInt(os.Getenv("LIFELINE_MODEL_SEED"), 10, 64); err == nil {
		seed, runs = v, 1
	}
	for i := 0; i < runs; i++ {
		m := newModel(seed + int64(i))
		if err := m.run(); err != nil {
			t.Fatalf("seed %d (LIFELINE_MODEL_SEED=%d): %v\n%s", seed+int64(i), seed+int64(i), err, m.trace)
		}
	}
}

type model struct {
	r      *rand.Rand
	set    *appsv1beta1.StatefulSet
	pods   map[string]*corev1.Pod
	update string
	hook   bool
	// inPlace updates pods in place (InPlaceIfPossible), under an
	// inPlaceUpdate hook when inPlaceHook.
	inPlace, inPlaceHook bool
	now                  time.Time
	trace                string
}

const inPlaceHandler = "example.com/serving"

func newModel(seed int64) *model {
	r := rand.New(rand.NewSource(seed))
	m := &model{r: r, pods: map[string]*corev1.Pod{}, update: "db-rev0", hook: r.Intn(2) == 0, now: now}
	m.set = set(int32(r.Intn(5)), r.Intn(2) == 0, maxUnavailable([]string{"1", "2", "50%"}[r.Intn(3)]))
	if Monotonic(m.set) {
		m.set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	} else if n := r.Intn(3); n > 0 {
		scaleMax(int32(n))(m.set)
	}
	if m.hook {
		preDeleteHook(m.set)
	}
	if m.inPlace = r.Intn(2) == 0; m.inPlace {
		m.set.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
		m.set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		if m.inPlaceHook = r.Intn(2) == 0; m.inPlaceHook {
			if m.set.Spec.Lifecycle == nil {
				m.set.Spec.Lifecycle = &pub.Lifecycle{}
			}
			m.set.Spec.Lifecycle.InPlaceUpdate = &pub.LifecycleHook{LabelsHandler: map[string]string{inPlaceHandler: "true"}}
		}
	}
	return m
}

// templates are the revisions' templates: they differ in their image.
func templates() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for i := 0; i < 3; i++ {
		rev := fmt.Sprintf("db-rev%d", i)
		out[rev] = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img:" + rev}}}}
	}
	return out
}

func (m *model) run() error {
	current := m.update
	for step := 0; step < 400; step++ {
		changing := step < 200
		if changing && m.r.Intn(6) == 0 {
			m.changeSpec()
		}
		s := Snapshot{Set: m.set, UpdateRevision: m.update, CurrentRevision: current, Templates: templates(), Now: m.now}
		for _, name := range m.names() {
			s.Pods = append(s.Pods, m.pods[name].DeepCopy())
		}
		p, err := Compute(s)
		if err != nil {
			return err
		}
		m.trace += fmt.Sprintf("step %d: replicas %d partition %d reserved %v rev %s pods %s → %v %q\n", step, *m.set.Spec.Replicas,
			*m.set.Spec.UpdateStrategy.RollingUpdate.Partition, m.set.Spec.ReserveOrdinals, m.update, m.describePods(), describe(p.Actions), p.Waiting)
		if err := m.check(s, p); err != nil {
			return fmt.Errorf("step %d: %v", step, err)
		}
		m.apply(p.Actions)
		if st := Status(s, nil, ""); st.CurrentRevision == m.update {
			current = m.update
		}
		m.world()
		if !changing && m.converged() {
			return nil
		}
	}
	return fmt.Errorf("the set did not converge: %s", m.describePods())
}

func (m *model) changeSpec() {
	switch m.r.Intn(4) {
	case 0:
		m.set.Spec.Replicas = ptr.To(int32(m.r.Intn(6)))
	case 1:
		m.set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(int32(m.r.Intn(4)))
	case 2:
		var r []intstr.IntOrString
		for ord := 0; ord < 6; ord++ {
			if m.r.Intn(5) == 0 {
				r = append(r, intstr.FromInt32(int32(ord)))
			}
		}
		m.set.Spec.ReserveOrdinals = r
	case 3:
		m.update = fmt.Sprintf("db-rev%d", m.r.Intn(3))
	}
}

// check holds the plan to the set's promises.
func (m *model) check(s Snapshot, p Plan) error {
	v := newView(s)
	partition := int(*m.set.Spec.UpdateStrategy.RollingUpdate.Partition)
	rank := map[int]int{}
	for i, ord := range v.ords.Each() {
		rank[ord] = i
	}
	acted := 0
	for _, a := range p.Actions {
		switch a := a.(type) {
		case podlife.CreatePod:
			ord, _ := strconv.Atoi(a.InstanceID)
			if !v.ords.InRange(ord) || v.slots[ord] != nil {
				return fmt.Errorf("created ordinal %d: in range %v, taken %v", ord, v.ords.InRange(ord), v.slots[ord] != nil)
			}
			if ord-v.ords.Start < partition && a.Revision != s.CurrentRevision {
				return fmt.Errorf("created ordinal %d below partition %d at %s", ord, partition, a.Revision)
			}
			if Monotonic(m.set) {
				for _, lower := range v.ords.Each() {
					if lower < ord && (v.slots[lower] == nil || !v.available(v.slots[lower])) {
						return fmt.Errorf("OrderedReady created ordinal %d while %d is not available", ord, lower)
					}
				}
			}
			acted++
		case podlife.DeletePod:
			if m.hook && a.Pod.Labels["example.com/drain"] != "" {
				return fmt.Errorf("deleted %s while its preDelete hook holds it", a.Pod.Name)
			}
			if err := m.checkUpdateTarget(v, a.Pod, rank, partition); err != nil {
				return err
			}
			acted++
		case podlife.UpdateInPlace:
			if m.inPlaceHook && a.Pod.Labels[inPlaceHandler] != "" {
				return fmt.Errorf("updated %s in place while its inPlaceUpdate hook holds it", a.Pod.Name)
			}
			if err := m.checkUpdateTarget(v, a.Pod, rank, partition); err != nil {
				return err
			}
			acted++
		case podlife.SetState:
			if a.To == pub.LifecycleStatePreparingUpdate {
				acted++
			}
			if a.To == pub.LifecycleStatePreparingDelete {
				if err := m.checkUpdateTarget(v, a.Pod, rank, partition); err != nil {
					return err
				}
				acted++
			}
		}
	}
	if Monotonic(m.set) && acted > 1 {
		return fmt.Errorf("OrderedReady acted on %d ordinals at once: %v", acted, describe(p.Actions))
	}
	if p.Phase == PhaseUpdate && !Monotonic(m.set) {
		budget := scaled(m.set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, int(*m.set.Spec.Replicas))
		// An ordinal with no pod is down as much as an unready pod.
		before := len(v.ords.Each()) - len(v.slots)
		for _, pod := range v.slots {
			if !v.available(pod) {
				before++
			}
		}
		after := before
		for _, a := range p.Actions {
			if pod := a.Target(); pod != nil && v.available(pod) {
				after++
			}
		}
		if after > max(budget, before) {
			return fmt.Errorf("update leaves %d pods unavailable, maxUnavailable %d (%d before)", after, budget, before)
		}
	}
	return nil
}

// checkUpdateTarget: a pod in range taken down for an update is at or
// above partition (ordered update), unless someone asked to delete it.
func (m *model) checkUpdateTarget(v *view, pod *corev1.Pod, rank map[int]int, partition int) error {
	ord, _ := Ordinal(m.set.Name, pod.Name)
	if !v.ords.InRange(ord) || finished(pod) || podfacts.AtRevision(pod, m.update) {
		return nil
	}
	if _, specified := pod.Labels["apps.kruise.io/specified-delete"]; specified {
		return nil
	}
	if ord-v.ords.Start < partition {
		return fmt.Errorf("updated ordinal %d below partition %d", ord, partition)
	}
	return nil
}

func (m *model) apply(actions []podlife.Action) {
	for _, a := range actions {
		switch a := a.(type) {
		case podlife.CreatePod:
			ord, _ := strconv.Atoi(a.InstanceID)
			p := pod(ord, a.Revision)
			p.Labels[pub.LifecycleStateKey] = string(a.State)
			if m.inPlaceHook {
				p.Labels[inPlaceHandler] = "true"
			}
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			p.Spec.NodeName = ""
			p.Spec.Containers = []corev1.Container{{Name: "main", Image: "img:" + a.Revision}}
			p.Spec.ReadinessGates = m.set.Spec.Template.Spec.ReadinessGates
			m.pods[p.Name] = p
		case podlife.DeletePod:
			if p := m.pods[a.Pod.Name]; p != nil {
				p.DeletionTimestamp = &metav1.Time{Time: m.now}
			}
		case podlife.Writer:
			p := m.pods[a.Target().Name]
			podlifetest.Apply(p, a.PodWrites()...)
		}
	}
}

// names are the pods' names in order, so a seed replays its history.
func (m *model) names() []string {
	out := make([]string, 0, len(m.pods))
	for name := range m.pods {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// world moves the cluster on: pods start and become Ready, terminating
// pods go, operators release held pods, Ready pods sometimes fail.
func (m *model) world() {
	m.now = m.now.Add(time.Second)
	for _, name := range m.names() {
		p := m.pods[name]
		switch {
		case p.DeletionTimestamp != nil:
			if m.r.Intn(2) == 0 {
				delete(m.pods, name)
			}
		case p.Status.Phase == corev1.PodPending && m.r.Intn(2) == 0:
			p.Spec.NodeName = "node-0"
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady,
				Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(m.now)}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: p.Spec.Containers[0].Image, ImageID: p.Spec.Containers[0].Image + "@id", Ready: true}}}
			if len(p.Spec.ReadinessGates) > 0 {
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue})
			}
		case p.Status.Phase == corev1.PodRunning && p.Status.ContainerStatuses[0].Image != p.Spec.Containers[0].Image:
			if m.r.Intn(2) == 0 { // the kubelet restarts the container on its new image
				p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: p.Spec.Containers[0].Image, ImageID: p.Spec.Containers[0].Image + "@id", Ready: true}
			}
		case podfacts.State(p) == pub.LifecycleStatePreparingUpdate && p.Labels[inPlaceHandler] != "" && m.r.Intn(3) == 0:
			delete(p.Labels, inPlaceHandler)
		case podfacts.State(p) == pub.LifecycleStateUpdated && p.Labels[inPlaceHandler] == "" && m.inPlaceHook && m.r.Intn(3) == 0:
			p.Labels[inPlaceHandler] = "true"
		case podfacts.State(p) == pub.LifecycleStatePreparingDelete && m.r.Intn(3) == 0:
			released(p)
		case p.Status.Phase == corev1.PodRunning && m.r.Intn(40) == 0:
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		case p.Status.Phase == corev1.PodRunning && p.Status.Conditions[0].Status == corev1.ConditionFalse && m.r.Intn(2) == 0:
			p.Status.Conditions[0].Status = corev1.ConditionTrue
		}
	}
}

func (m *model) converged() bool {
	o := OrdinalsOf(m.set, false)
	if len(m.pods) != len(o.Each()) {
		return false
	}
	partition := int(*m.set.Spec.UpdateStrategy.RollingUpdate.Partition)
	for i, ord := range o.Each() {
		p := m.pods[PodName("db", ord)]
		if p == nil || !Healthy(p) {
			return false
		}
		if i >= partition && !podfacts.AtRevision(p, m.update) {
			return false
		}
	}
	return true
}

func (m *model) describePods() string {
	out := ""
	for ord := 0; ord < 12; ord++ {
		p := m.pods[PodName("db", ord)]
		if p == nil {
			continue
		}
		flags := podfacts.ShortHash(p.Labels[appsv1.ControllerRevisionHashLabelKey])
		if p.DeletionTimestamp != nil {
			flags += ",term"
		}
		if !Healthy(p) {
			flags += ",unhealthy"
		}
		if st := podfacts.State(p); st != pub.LifecycleStateNormal {
			flags += "," + string(st)
		}
		out += fmt.Sprintf(" %d[%s]", ord, flags)
	}
	return out
}
