package planner

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/podlife/podlifetest"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// TestRolloutModel runs the planner against a simulated cluster for many
// randomized histories: nodes join, leave, are tainted and relabelled;
// the template, partition and node selector change while pods start,
// fail, turn NotReady for a moment, terminate, restart on a new image in
// place, and have their preDelete hook released at random. Sets roll out
// with maxUnavailable, with maxSurge or in place. Every plan must keep
// the set's promises:
//   - a node never gets a second pod, except a new one beside an old one
//     under maxSurge;
//   - an update step never leaves more nodes without an available pod than
//     maxUnavailable (or than it found);
//   - an update step touches a node that is not yet moving only while
//     fewer than desired − partition nodes are, and only one the node
//     selector picks;
//   - a pod its preDelete hook holds is never deleted;
//   - once the spec and the nodes stop changing, the set converges.
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
			t.Fatalf("seed %d (LIFELINE_MODEL_SEED=%d): %v\n%s", seed+int64(i), seed+int64(i), err, m.trace.String())
		}
	}
}

const drainHandler = "example.com/drain"

type model struct {
	r     *rand.Rand
	set   *appsv1beta1.DaemonSet
	nodes map[string]*corev1.Node
	pods  map[string]*corev1.Pod
	hash  string
	hook  bool
	now   time.Time
	seq   int
	trace strings.Builder
}

func modelTemplates() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for i := 0; i < 3; i++ {
		h := fmt.Sprintf("h%d", i)
		t := template("img:" + h)
		t.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		out[h] = t
	}
	return out
}

func newModel(seed int64) *model {
	r := rand.New(rand.NewSource(seed))
	m := &model{r: r, nodes: map[string]*corev1.Node{}, pods: map[string]*corev1.Pod{}, hash: "h0", hook: r.Intn(2) == 0, now: now}
	m.set = newSet(0)
	ru := m.set.Spec.UpdateStrategy.RollingUpdate
	switch r.Intn(3) {
	case 0:
		ru.MaxUnavailable, ru.MaxSurge = ptr.To(intstr.FromInt32(0)), ptr.To([]intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("50%")}[r.Intn(2)])
	case 1:
		ru.Type = appsv1beta1.InplaceRollingUpdateType
		fallthrough
	default:
		ru.MaxUnavailable = ptr.To([]intstr.IntOrString{intstr.FromInt32(1), intstr.FromInt32(2), intstr.FromString("30%")}[r.Intn(3)])
	}
	if r.Intn(2) == 0 {
		m.set.Spec.MinReadySeconds = 3
	}
	if m.hook {
		m.set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{drainHandler: "true"}, MarkPodNotReady: r.Intn(2) == 0}}
	}
	for i := 0; i < 1+r.Intn(6); i++ {
		m.addNode()
	}
	return m
}

func (m *model) run() error {
	for step := 0; step < 500; step++ {
		changing := step < 200
		if changing && m.r.Intn(5) == 0 {
			m.change()
		}
		s := m.snapshot()
		p, err := Compute(s)
		if err != nil {
			return err
		}
		fmt.Fprintf(&m.trace, "step %d: rev %s partition %v selector %v nodes %s → %v %q\n", step, m.hash,
			m.set.Spec.UpdateStrategy.RollingUpdate.Partition, m.set.Spec.UpdateStrategy.RollingUpdate.Selector, m.describe(), summary(p.Actions), p.Waiting)
		if err := m.check(s, p); err != nil {
			return fmt.Errorf("step %d: %v", step, err)
		}
		m.apply(p.Actions)
		m.set.Status = Status(m.snapshot())
		m.world(changing)
		if !changing && len(p.Actions) == 0 && m.converged() {
			return nil
		}
	}
	return fmt.Errorf("the set did not converge: %s", m.describe())
}

func (m *model) snapshot() Snapshot {
	s := Snapshot{Set: m.set.DeepCopy(), UpdateHash: m.hash, Templates: modelTemplates(), Now: m.now}
	s.Set.Spec.Template = *modelTemplates()[m.hash]
	for _, name := range sortedKeys(m.nodes) {
		s.Nodes = append(s.Nodes, m.nodes[name].DeepCopy())
	}
	for _, name := range sortedKeys(m.pods) {
		s.Pods = append(s.Pods, m.pods[name].DeepCopy())
	}
	return s
}

func (m *model) addNode() {
	m.seq++
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", m.seq), Labels: map[string]string{}}}
	if m.r.Intn(2) == 0 {
		node.Labels["canary"] = "true"
	}
	m.nodes[node.Name] = node
}

// change moves the spec or the nodes on.
func (m *model) change() {
	ru := m.set.Spec.UpdateStrategy.RollingUpdate
	names := sortedKeys(m.nodes)
	node := m.nodes[names[m.r.Intn(len(names))]]
	switch m.r.Intn(8) {
	case 0, 1:
		m.hash = fmt.Sprintf("h%d", m.r.Intn(3))
	case 2:
		ru.Partition = []*intstr.IntOrString{nil, ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(3)), ptr.To(intstr.FromString("50%"))}[m.r.Intn(4)]
	case 3:
		ru.Selector = []*metav1.LabelSelector{nil, {MatchLabels: map[string]string{"canary": "true"}}}[m.r.Intn(2)]
	case 4:
		m.addNode()
	case 5:
		if len(m.nodes) > 1 {
			delete(m.nodes, node.Name)
		}
	case 6:
		node.Spec.Taints = [][]corev1.Taint{nil, {{Key: "k", Effect: corev1.TaintEffectNoSchedule}}, {{Key: "k", Effect: corev1.TaintEffectNoExecute}}}[m.r.Intn(3)]
	case 7:
		if node.Labels["canary"] == "" {
			node.Labels["canary"] = "true"
		} else {
			delete(node.Labels, "canary")
		}
	}
}

func (m *model) surge() bool { return (&view{s: Snapshot{Set: m.set}}).surges() }

// check holds a plan to the set's promises.
func (m *model) check(s Snapshot, p Plan) error {
	v := newView(s)
	bySlot := map[string]*slot{}
	for _, sl := range v.slots {
		bySlot[sl.node.Name] = sl
	}
	touched := map[string]bool{}
	for _, a := range p.Actions {
		switch a := a.(type) {
		case podlife.CreatePod:
			sl := bySlot[a.InstanceID]
			newPods, oldPods := v.split(sl.live)
			if !sl.place.ShouldRun || (len(sl.pods) > 0 && !(m.surge() && len(newPods) == 0 && len(oldPods) == 1)) {
				return fmt.Errorf("a pod created on %s, which has %d pods (surge %v) or should not run one", a.InstanceID, len(sl.pods), m.surge())
			}
			touched[a.InstanceID] = true
		case podlife.DeletePod:
			if podfacts.State(a.Pod) == pub.LifecycleStatePreparingDelete && a.Pod.Labels[drainHandler] != "" && m.hook {
				return fmt.Errorf("pod %s deleted while its preDelete hook holds it", a.Pod.Name)
			}
			touched[NodeOf(a.Pod)] = true
		default:
			if t := a.Target(); t != nil {
				touched[NodeOf(t)] = true
			}
		}
	}
	if p.Phase != PhaseUpdate || len(touched) == 0 {
		return nil
	}
	return m.checkUpdate(v, p, touched)
}

// checkUpdate: the budget, partition and node selector of an update step.
func (m *model) checkUpdate(v *view, p Plan, touched map[string]bool) error {
	ru := m.set.Spec.UpdateStrategy.RollingUpdate
	maxUnavailable := scaled(ru.MaxUnavailable, v.desired, true)
	if maxUnavailable == 0 && scaled(ru.MaxSurge, v.desired, true) == 0 {
		maxUnavailable = 1
	}
	selector, _ := metav1.LabelSelectorAsSelector(ru.Selector)
	before, after, moving, fresh := 0, 0, 0, 0
	for _, sl := range v.slots {
		if !sl.place.ShouldRun {
			continue
		}
		newPods, oldPods := v.split(sl.live)
		up := len(sl.live) == 1 && v.available(sl.live[0])
		if !up {
			before++
		}
		if !up || (touched[sl.node.Name] && !m.surge()) {
			after++
		}
		if len(newPods) > 0 || len(sl.live) != 1 || podfacts.State(oldPods[0]) == pub.LifecycleStatePreparingDelete {
			moving++
		} else if touched[sl.node.Name] {
			fresh++
			if ru.Selector != nil && !selector.Matches(labels.Set(sl.node.Labels)) {
				return fmt.Errorf("node %s updated, though the node selector does not pick it", sl.node.Name)
			}
		}
	}
	if !m.surge() && after > max(maxUnavailable, before) {
		return fmt.Errorf("%d nodes without an available pod after the step (%d before), maxUnavailable %d", after, before, maxUnavailable)
	}
	partition := scaled(ru.Partition, int(m.set.Status.DesiredNumberScheduled), false)
	if fresh > 0 && moving+fresh > v.desired-partition {
		return fmt.Errorf("%d nodes moving and %d more taken, partition %d of %d", moving, fresh, partition, v.desired)
	}
	return nil
}

func (m *model) apply(actions []podlife.Action) {
	for _, a := range actions {
		switch a := a.(type) {
		case podlife.CreatePod:
			m.seq++
			t := modelTemplates()[a.Revision]
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("agent-%04d", m.seq), CreationTimestamp: metav1.NewTime(m.now),
					Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: a.Revision, pub.LifecycleStateKey: string(a.State)}},
				Spec:   *t.Spec.DeepCopy(),
				Status: corev1.PodStatus{Phase: corev1.PodPending},
			}
			pod.Spec.NodeName = a.InstanceID
			if m.hook {
				pod.Labels[drainHandler] = "true" // its operator registers it
			}
			m.pods[pod.Name] = pod
		case podlife.DeletePod:
			if p := m.pods[a.Pod.Name]; p != nil {
				p.DeletionTimestamp = &metav1.Time{Time: m.now}
			}
		case podlife.Writer:
			if p := m.pods[a.Target().Name]; p != nil {
				podlifetest.Apply(p, a.PodWrites()...)
				if u, ok := a.(podlife.UpdateInPlace); ok {
					p.Labels[appsv1.ControllerRevisionHashLabelKey] = u.Revision
				}
			}
		}
	}
}

// world moves the cluster on: pods start, turn NotReady for a moment and
// back, fail, terminate, restart on new images; operators release held
// pods; pods of a node that left go.
func (m *model) world(changing bool) {
	m.now = m.now.Add(time.Second)
	for _, name := range sortedKeys(m.pods) {
		p := m.pods[name]
		switch {
		case m.nodes[p.Spec.NodeName] == nil:
			delete(m.pods, name) // the pod garbage collector
		case p.DeletionTimestamp != nil:
			if m.r.Intn(2) == 0 {
				delete(m.pods, name)
			}
		case p.Status.Phase == corev1.PodPending && m.r.Intn(2) == 0:
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(m.now)},
				{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: p.Spec.Containers[0].Image, ImageID: p.Spec.Containers[0].Image + "@id", Ready: true}}}
		case p.Status.Phase == corev1.PodRunning && p.Status.ContainerStatuses[0].Image != p.Spec.Containers[0].Image:
			if m.r.Intn(2) == 0 {
				p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: p.Spec.Containers[0].Image, ImageID: p.Spec.Containers[0].Image + "@id", Ready: true}
			}
		case podfacts.State(p) == pub.LifecycleStatePreparingDelete && p.Labels[drainHandler] != "" && m.r.Intn(3) == 0:
			delete(p.Labels, drainHandler)
		case changing && p.Status.Phase == corev1.PodRunning && m.r.Intn(60) == 0:
			p.Status.Phase = corev1.PodFailed
		case changing && p.Status.Phase == corev1.PodRunning && m.r.Intn(30) == 0:
			p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}
		case p.Status.Phase == corev1.PodRunning && p.Status.Conditions[0].Status == corev1.ConditionFalse && m.r.Intn(2) == 0:
			p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(m.now)}
		}
	}
}

// converged: each node that should run a pod runs one available pod, no
// other node runs one, and nodes are old only where partition or the node
// selector keeps them.
func (m *model) converged() bool {
	v := newView(m.snapshot())
	old := 0
	for _, sl := range v.slots {
		if !sl.place.ShouldRun {
			if len(sl.pods) > 0 && !sl.place.ShouldContinue {
				return false
			}
			continue
		}
		if len(sl.pods) != 1 || !v.available(sl.pods[0]) {
			return false
		}
		if !v.updated(sl.pods[0]) {
			old++
		}
	}
	ru := m.set.Spec.UpdateStrategy.RollingUpdate
	return ru.Selector != nil || old <= scaled(ru.Partition, v.desired, false)
}

func (m *model) describe() string {
	var parts []string
	for _, name := range sortedKeys(m.nodes) {
		node := m.nodes[name]
		flags := name
		if node.Labels["canary"] != "" {
			flags += "(c)"
		}
		if len(node.Spec.Taints) > 0 {
			flags += "(" + string(node.Spec.Taints[0].Effect) + ")"
		}
		var pods []string
		for _, pname := range sortedKeys(m.pods) {
			p := m.pods[pname]
			if p.Spec.NodeName != name {
				continue
			}
			f := revisionHash(p)
			if p.DeletionTimestamp != nil {
				f += ",term"
			}
			if st := podfacts.State(p); st != pub.LifecycleStateNormal {
				f += "," + string(st)
			}
			if !podfacts.IsAvailable(p, m.set.Spec.MinReadySeconds, m.now) {
				f += ",unavailable"
			}
			pods = append(pods, f)
		}
		parts = append(parts, flags+"["+strings.Join(pods, " ")+"]")
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
