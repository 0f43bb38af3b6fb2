package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatefulSet annotations that make Lifeline create and own a
// PersistentPodState for the StatefulSet.
const (
	// AnnotationAutoGeneratePersistentPodState set to "true" turns generation on.
	AnnotationAutoGeneratePersistentPodState = "kruise.io/auto-generate-persistent-pod-state"
	// AnnotationRequiredPersistentTopology lists, comma-separated, the node
	// labels a rebuilt pod must match.
	AnnotationRequiredPersistentTopology = "kruise.io/required-persistent-topology"
	// AnnotationPreferredPersistentTopology lists, comma-separated, the node
	// labels a rebuilt pod prefers to match.
	AnnotationPreferredPersistentTopology = "kruise.io/preferred-persistent-topology"
	// AnnotationPersistentPodAnnotations lists, comma-separated, the pod
	// annotations to carry over to a rebuilt pod.
	AnnotationPersistentPodAnnotations = "kruise.io/persistent-pod-annotations"
	// InjectedPersistentPodStateKey is the pod annotation naming the
	// PersistentPodState whose state was injected into the pod.
	InjectedPersistentPodStateKey = "kruise.io/injected-persistent-pod-state"
)

// PersistentPodStateSpec is the desired state of a PersistentPodState.
type PersistentPodStateSpec struct {
	// TargetReference is the workload whose pods are recorded: a StatefulSet
	// (apps or apps.kruise.io) or a whitelisted StatefulSet-like kind.
	TargetReference TargetReference `json:"targetRef"`

	// PersistentPodAnnotations are the pod annotations recorded and put back
	// on a rebuilt pod.
	PersistentPodAnnotations []PersistentPodAnnotation `json:"persistentPodAnnotations,omitempty"`

	// RequiredPersistentTopology names the node labels a rebuilt pod must
	// share with the node its predecessor ran on.
	RequiredPersistentTopology *NodeTopologyTerm `json:"requiredPersistentTopology,omitempty"`

	// PreferredPersistentTopology names node labels a rebuilt pod prefers to
	// share with the node its predecessor ran on, with weights.
	PreferredPersistentTopology []PreferredTopologyTerm `json:"preferredPersistentTopology,omitempty"`

	// PersistentPodStateRetentionPolicy says when a pod's recorded state is
	// dropped: WhenScaled (the default) drops it when the workload scales
	// below the pod's ordinal; WhenDeleted only when the workload is deleted.
	PersistentPodStateRetentionPolicy PersistentPodStateRetentionPolicyType `json:"persistentPodStateRetentionPolicy,omitempty"`
}

// TargetReference points at a workload in the same namespace.
type TargetReference struct {
	// APIVersion of the workload, e.g. apps/v1.
	APIVersion string `json:"apiVersion"`
	// Kind of the workload, e.g. StatefulSet.
	Kind string `json:"kind"`
	// Name of the workload.
	Name string `json:"name"`
}

// PersistentPodAnnotation names a pod annotation to record.
type PersistentPodAnnotation struct {
	Key string `json:"key"`
}

// NodeTopologyTerm is a list of node label keys.
type NodeTopologyTerm struct {
	// NodeTopologyKeys are node label keys, e.g. topology.kubernetes.io/zone.
	NodeTopologyKeys []string `json:"nodeTopologyKeys"`
}

// PreferredTopologyTerm is a weighted NodeTopologyTerm.
type PreferredTopologyTerm struct {
	// Weight is in the range 1 to 100.
	Weight     int32            `json:"weight"`
	Preference NodeTopologyTerm `json:"preference"`
}

// PersistentPodStateRetentionPolicyType says when recorded state is dropped.
type PersistentPodStateRetentionPolicyType string

const (
	// PersistentPodStateRetentionPolicyWhenScaled drops a pod's state when the
	// workload is scaled below it.
	PersistentPodStateRetentionPolicyWhenScaled PersistentPodStateRetentionPolicyType = "WhenScaled"
	// PersistentPodStateRetentionPolicyWhenDeleted keeps a pod's state until
	// the workload is deleted.
	PersistentPodStateRetentionPolicyWhenDeleted PersistentPodStateRetentionPolicyType = "WhenDeleted"
)

// PersistentPodStateStatus is the recorded state of the target's pods.
type PersistentPodStateStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration"`

	// PodStates is where each pod, by name, last ran.
	PodStates map[string]PodState `json:"podStates,omitempty"`

	// Conditions say why nothing is recorded when the target cannot be
	// followed (TargetReady False: NotFound). Lifeline's
	// addition; OpenKruise's status has none.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodState is where one pod last ran.
type PodState struct {
	// NodeName is the node the pod ran on.
	NodeName string `json:"nodeName,omitempty"`
	// NodeTopologyLabels are that node's values for the topology keys.
	NodeTopologyLabels map[string]string `json:"nodeTopologyLabels,omitempty"`
	// Annotations are the pod's values for the persistent annotations.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PersistentPodState records where the pods of a StatefulSet ran, and steers
// each rebuilt pod back to the same node or topology.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pps
type PersistentPodState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PersistentPodStateSpec   `json:"spec,omitempty"`
	Status PersistentPodStateStatus `json:"status,omitempty"`
}

// PersistentPodStateList is a list of PersistentPodStates.
//
// +kubebuilder:object:root=true
type PersistentPodStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PersistentPodState `json:"items"`
}

func init() {
	register(&PersistentPodState{}, &PersistentPodStateList{})
}
