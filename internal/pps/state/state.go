// Package state holds what a PersistentPodState decides, pure: which pods'
// placement to record and what to record, which records to drop, where a
// rebuilt pod must or would like to go, and the PersistentPodState a
// StatefulSet's annotations ask for (OpenKruise v1.9's rules, reference
// Part B). The controller and the pod admission only read and write.
package state

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lifeline-k8s/lifeline/pkg/podfacts"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// TopologyKeys are the node label keys a spec records: the required ones
// and every preferred term's, each once, in order.
func TopologyKeys(spec appsv1alpha1.PersistentPodStateSpec) []string {
	var keys []string
	if spec.RequiredPersistentTopology != nil {
		keys = append(keys, spec.RequiredPersistentTopology.NodeTopologyKeys...)
	}
	for _, t := range spec.PreferredPersistentTopology {
		keys = append(keys, t.Preference.NodeTopologyKeys...)
	}
	var out []string
	for _, k := range keys {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Snapshot is what a PersistentPodState's status is computed from.
type Snapshot struct {
	Spec   appsv1alpha1.PersistentPodStateSpec
	Status appsv1alpha1.PersistentPodStateStatus
	// Generation is the PersistentPodState's.
	Generation int64
	// WorkloadGone is true when the target does not exist or is being
	// deleted: every record goes.
	WorkloadGone bool
	// Replicas is the target's spec.replicas; Start its first ordinal;
	// Reserved its reserved ordinals (none for a native StatefulSet).
	Replicas int32
	Start    int
	Reserved map[int]bool
	// Pods are the target's active pods, by name.
	Pods map[string]*corev1.Pod
	// Nodes are the nodes the ready pods run on, by name (a missing one
	// defers that pod's record).
	Nodes map[string]*corev1.Node
}

// Change is one record written or dropped, for an event.
type Change struct {
	Pod string
	// Recorded is the new record; nil when the record was dropped.
	Recorded *appsv1alpha1.PodState
}

// Status computes the new status: a record for every Ready pod with a
// node, refreshed when its node or the keys asked for changed; records
// of pods whose ordinal the workload no longer has dropped (unless the
// retention policy is WhenDeleted); everything dropped once the workload
// is gone. It returns the changes made.
func Status(s Snapshot) (appsv1alpha1.PersistentPodStateStatus, []Change) {
	out := appsv1alpha1.PersistentPodStateStatus{ObservedGeneration: s.Generation}
	var changes []Change
	if s.WorkloadGone {
		for _, name := range slices.Sorted(maps.Keys(s.Status.PodStates)) {
			changes = append(changes, Change{Pod: name})
		}
		return out, changes
	}
	states := maps.Clone(s.Status.PodStates)
	if states == nil {
		states = map[string]appsv1alpha1.PodState{}
	}
	keys := TopologyKeys(s.Spec)
	for _, name := range slices.Sorted(maps.Keys(s.Pods)) {
		pod := s.Pods[name]
		if !podfacts.HasReadyCondition(pod) || pod.Spec.NodeName == "" {
			continue
		}
		node, ok := s.Nodes[pod.Spec.NodeName]
		if !ok {
			continue
		}
		want := record(s.Spec, keys, pod, node)
		if old, ok := states[name]; ok && equality.Semantic.DeepEqual(old, want) {
			continue
		}
		states[name] = want
		changes = append(changes, Change{Pod: name, Recorded: &want})
	}
	if s.Spec.PersistentPodStateRetentionPolicy != appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted {
		for _, name := range slices.Sorted(maps.Keys(states)) {
			if _, live := s.Pods[name]; live {
				continue
			}
			if ordinal, ok := Ordinal(name); ok && !s.valid(ordinal) {
				delete(states, name)
				changes = append(changes, Change{Pod: name})
			}
		}
	}
	if len(states) > 0 {
		out.PodStates = states
	}
	return out, changes
}

// record is what is kept of pod on node: its node, the node's values for
// keys (those the node has), and the pod's values of the persistent
// annotations (those it has). Values are compared, not only keys, so an
// unchanged record is never rewritten and a changed one always is
// (OpenKruise compares annotation values with keys and rewrites the
// status every time).
func record(spec appsv1alpha1.PersistentPodStateSpec, keys []string, pod *corev1.Pod, node *corev1.Node) appsv1alpha1.PodState {
	st := appsv1alpha1.PodState{NodeName: pod.Spec.NodeName}
	for _, k := range keys {
		if v, ok := node.Labels[k]; ok {
			if st.NodeTopologyLabels == nil {
				st.NodeTopologyLabels = map[string]string{}
			}
			st.NodeTopologyLabels[k] = v
		}
	}
	for _, a := range spec.PersistentPodAnnotations {
		if v, ok := pod.Annotations[a.Key]; ok {
			if st.Annotations == nil {
				st.Annotations = map[string]string{}
			}
			st.Annotations[a.Key] = v
		}
	}
	return st
}

// valid reports whether the workload still has ordinal: the first
// Replicas ordinals from Start, skipping reserved ones. OpenKruise counts
// from 0 whatever spec.ordinals.start, so with a start the highest pods
// look scaled down and their records go whenever they are rebuilt.
func (s Snapshot) valid(ordinal int) bool {
	n := 0
	for i := s.Start; n < int(s.Replicas); i++ {
		if s.Reserved[i] {
			continue
		}
		if i == ordinal {
			return true
		}
		n++
	}
	return false
}

// Ordinal is the number after a pod name's last "-".
func Ordinal(name string) (int, bool) {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	return n, err == nil && n >= 0
}

// Placement is where a rebuilt pod is steered: node selector entries for
// the required keys recorded, and one preferred node affinity term per
// preferred term, with its weight, for the keys recorded.
type Placement struct {
	NodeSelector map[string]string
	Preferred    []corev1.PreferredSchedulingTerm
}

// PlacementFor returns the placement of a pod whose recorded state is st,
// and false when there is nothing to inject (no record of its topology).
func PlacementFor(spec appsv1alpha1.PersistentPodStateSpec, st appsv1alpha1.PodState) (Placement, bool) {
	var p Placement
	if len(st.NodeTopologyLabels) == 0 {
		return p, false
	}
	if r := spec.RequiredPersistentTopology; r != nil {
		for _, k := range r.NodeTopologyKeys {
			if v, ok := st.NodeTopologyLabels[k]; ok {
				if p.NodeSelector == nil {
					p.NodeSelector = map[string]string{}
				}
				p.NodeSelector[k] = v
			}
		}
	}
	for _, t := range spec.PreferredPersistentTopology {
		var match []corev1.NodeSelectorRequirement
		for _, k := range t.Preference.NodeTopologyKeys {
			if v, ok := st.NodeTopologyLabels[k]; ok {
				match = append(match, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
			}
		}
		// A term none of whose keys was recorded would prefer every node
		// (OpenKruise appends it anyway); it is left out.
		if len(match) > 0 {
			p.Preferred = append(p.Preferred, corev1.PreferredSchedulingTerm{Weight: t.Weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: match}})
		}
	}
	return p, len(p.NodeSelector) > 0 || len(p.Preferred) > 0
}

// Apply puts the placement on pod: node selector entries merged over the
// pod's, preferred terms after the pod's own.
func (p Placement) Apply(pod *corev1.Pod) {
	for k, v := range p.NodeSelector {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[k] = v
	}
	if len(p.Preferred) == 0 {
		return
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, p.Preferred...)
}

// Generated is the spec a workload's annotations ask for: wanted is false
// when kruise.io/auto-generate-persistent-pod-state is not "true" (any
// generated PersistentPodState goes); complete is false when neither
// topology annotation is set (nothing is created, changed or deleted).
func Generated(annotations map[string]string, target appsv1alpha1.TargetReference) (spec appsv1alpha1.PersistentPodStateSpec, wanted, complete bool) {
	if annotations[appsv1alpha1.AnnotationAutoGeneratePersistentPodState] != "true" {
		return spec, false, true
	}
	required := annotations[appsv1alpha1.AnnotationRequiredPersistentTopology]
	preferred := annotations[appsv1alpha1.AnnotationPreferredPersistentTopology]
	if required == "" && preferred == "" {
		return spec, true, false
	}
	spec.TargetReference = target
	if required != "" {
		spec.RequiredPersistentTopology = &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: strings.Split(required, ",")}
	}
	if preferred != "" {
		spec.PreferredPersistentTopology = []appsv1alpha1.PreferredTopologyTerm{{Weight: 100,
			Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: strings.Split(preferred, ",")}}}
	}
	if a := annotations[appsv1alpha1.AnnotationPersistentPodAnnotations]; a != "" {
		for _, k := range strings.Split(a, ",") {
			spec.PersistentPodAnnotations = append(spec.PersistentPodAnnotations, appsv1alpha1.PersistentPodAnnotation{Key: k})
		}
	}
	return spec, true, true
}
