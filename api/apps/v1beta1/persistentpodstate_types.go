package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PersistentPodStateSpec is the desired state of a PersistentPodState. It is
// v1alpha1's, but for NodeTopologyTerm's keys.
type PersistentPodStateSpec struct {
	// TargetReference is the workload whose pods are recorded.
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

	// PersistentPodStateRetentionPolicy is WhenScaled (the default) or
	// WhenDeleted.
	// +optional
	PersistentPodStateRetentionPolicy PersistentPodStateRetentionPolicyType `json:"persistentPodStateRetentionPolicy,omitempty"`
}

// TargetReference points at a workload in the same namespace.
type TargetReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// PersistentPodAnnotation names a pod annotation to record.
type PersistentPodAnnotation struct {
	Key string `json:"key"`
}

// NodeTopologyTerm is a list of node label keys.
type NodeTopologyTerm struct {
	// Keys are node label keys, e.g. topology.kubernetes.io/zone
	// (v1alpha1's nodeTopologyKeys).
	Keys []string `json:"keys"`
}

// PreferredTopologyTerm is a weighted NodeTopologyTerm.
type PreferredTopologyTerm struct {
	// +kubebuilder:validation:Minimum=0
	Weight     int32            `json:"weight"`
	Preference NodeTopologyTerm `json:"preference"`
}

// PersistentPodStateRetentionPolicyType says when recorded state is dropped.
// +kubebuilder:validation:Enum=WhenScaled;WhenDeleted
type PersistentPodStateRetentionPolicyType string

const (
	PersistentPodStateRetentionPolicyWhenScaled  PersistentPodStateRetentionPolicyType = "WhenScaled"
	PersistentPodStateRetentionPolicyWhenDeleted PersistentPodStateRetentionPolicyType = "WhenDeleted"
)

// PersistentPodStateStatus is the recorded state of the target's pods.
type PersistentPodStateStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration"`

	// PodStates is where each pod, by name, last ran.
	PodStates map[string]PodState `json:"podStates,omitempty"`

	// Conditions: Lifeline's addition, as in v1alpha1.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodState is where one pod last ran.
type PodState struct {
	NodeName           string            `json:"nodeName,omitempty"`
	NodeTopologyLabels map[string]string `json:"nodeTopologyLabels,omitempty"`
	Annotations        map[string]string `json:"annotations,omitempty"`
}

// PersistentPodState records where the pods of a StatefulSet ran, and steers
// each rebuilt pod back to the same node or topology.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pps
// +kubebuilder:storageversion
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
