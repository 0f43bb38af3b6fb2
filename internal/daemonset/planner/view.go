package planner

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// TemplateGenerationAnnotation and TemplateGenerationLabel are the native
// DaemonSet's older way of telling a pod's revision: a pod whose label
// equals the set's annotation is up to date whatever its hash says.
const (
	TemplateGenerationAnnotation = "deprecated.daemonset.template.generation"
	TemplateGenerationLabel      = "pod-template-generation"
)

// slot is one node and the set's pods on it.
type slot struct {
	node  *corev1.Node
	place Placement
	// pods are the set's pods on the node, terminating ones included,
	// oldest first; live are those neither terminating nor finished.
	pods, live []*corev1.Pod
}

// view is the snapshot by node.
type view struct {
	s    Snapshot
	life podlife.Life
	// slots are every node, by name.
	slots []*slot
	// stray are pods meant for a node that does not exist.
	stray []*corev1.Pod
	// active are the pods neither terminating nor finished.
	active   []*corev1.Pod
	desired  int
	minReady int32
	// requeue is when the next Ready pod passes minReadySeconds.
	requeue time.Duration
}

func newView(s Snapshot) *view {
	v := &view{s: s, life: lifeOf(s.Set, s.Now), minReady: s.Set.Spec.MinReadySeconds}
	byName := map[string]*slot{}
	spec := CandidateSpec(s.Set)
	for _, node := range s.Nodes {
		sl := &slot{node: node, place: placementOn(spec, node)}
		byName[node.Name] = sl
		v.slots = append(v.slots, sl)
		if sl.place.ShouldRun {
			v.desired++
		}
	}
	sort.Slice(v.slots, func(i, j int) bool { return v.slots[i].node.Name < v.slots[j].node.Name })
	for _, pod := range s.Pods {
		if podfacts.IsActive(pod) {
			v.active = append(v.active, pod)
			if w := podfacts.UntilAvailable(pod, v.minReady, s.Now); w > 0 && (v.requeue == 0 || w < v.requeue) {
				v.requeue = w
			}
		}
		sl := byName[NodeOf(pod)]
		if sl == nil {
			v.stray = append(v.stray, pod)
			continue
		}
		sl.pods = append(sl.pods, pod)
	}
	for _, sl := range v.slots {
		byAge(sl.pods)
		for _, pod := range sl.pods {
			if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded {
				sl.live = append(sl.live, pod)
			}
		}
	}
	return v
}

// updated reports whether the pod is at the update revision: its hash
// label, or the native DaemonSet's older template-generation label.
func (v *view) updated(pod *corev1.Pod) bool {
	if podfacts.AtRevision(pod, v.s.UpdateHash) {
		return true
	}
	gen, ok := v.s.Set.Annotations[TemplateGenerationAnnotation]
	return ok && gen != "" && pod.Labels[TemplateGenerationLabel] == gen
}

// available is the native DaemonSet's availability: Ready for
// minReadySeconds, with any in-place update done, in the Normal state
// (a pod held by its hook is not serving).
func (v *view) available(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && podfacts.IsAvailable(pod, v.minReady, v.s.Now)
}

// scaled is an int-or-percent of the desired pods as OpenKruise scales it
// (percentages of status.desiredNumberScheduled for partition and burst,
// of the nodes that should run a pod for the budgets).
func scaled(value *intstr.IntOrString, total int, roundUp bool) int {
	if value == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(value, total, roundUp)
	if err != nil {
		return 0
	}
	return max(n, 0)
}

// burst is how many creations, deletions or in-place updates one step
// makes: burstReplicas of status.desiredNumberScheduled, at least one (a
// percentage of a set with no status yet would otherwise make nothing).
func (v *view) burst() int {
	b := v.s.Set.Spec.BurstReplicas
	if b == nil {
		return 250
	}
	return max(scaled(b, int(v.s.Set.Status.DesiredNumberScheduled), false), 1)
}

// revisionHash is a pod's revision by short hash.
func revisionHash(pod *corev1.Pod) string {
	return podfacts.ShortHash(pod.Labels[appsv1.ControllerRevisionHashLabelKey])
}

// nodeReason names a node in an action's reason.
func nodeReason(sl *slot, what string) string { return "node " + sl.node.Name + " " + what }
