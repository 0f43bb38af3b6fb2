package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodRelatedPubAnnotation is the pod annotation naming the
// PodUnavailableBudget that guards the pod, as v1beta1 spells it; the
// v1alpha1 spelling (v1alpha1.PodRelatedPubAnnotation) is written too.
const PodRelatedPubAnnotation = "pub.kruise.io/related-pub"

// PubOperation is an operation a PodUnavailableBudget can guard.
// +kubebuilder:validation:Enum=DELETE;UPDATE;EVICT;RESIZE
type PubOperation string

const (
	PubUpdateOperation PubOperation = "UPDATE"
	PubDeleteOperation PubOperation = "DELETE"
	PubEvictOperation  PubOperation = "EVICT"
	PubResizeOperation PubOperation = "RESIZE"
)

// PodUnavailableBudgetSpec is the desired state of a PodUnavailableBudget.
// Exactly one of selector and targetRef, and one of maxUnavailable and
// minAvailable, must be set.
type PodUnavailableBudgetSpec struct {
	// Selector selects the guarded pods in the budget's namespace.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// TargetReference selects the guarded pods through their workload, which
	// must have a scale subresource.
	TargetReference *TargetReference `json:"targetRef,omitempty"`

	// MaxUnavailable is how many guarded pods, or what percent, may be
	// unavailable at once.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MinAvailable is how many guarded pods, or what percent, must stay
	// available.
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// ProtectOperations are the operations the budget guards. Empty means
	// DELETE, UPDATE and EVICT. v1alpha1 carries it in the
	// kruise.io/pub-protect-operations annotation.
	// +optional
	ProtectOperations []PubOperation `json:"protectOperations,omitempty"`

	// ProtectTotalReplicas overrides the expected number of pods, for pods
	// whose workload has no scale subresource. v1alpha1 carries it in the
	// pub.kruise.io/protect-total-replicas annotation.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ProtectTotalReplicas *int32 `json:"protectTotalReplicas,omitempty"`

	// IgnoredPodSelector selects pods that the budget never guards.
	// +optional
	IgnoredPodSelector *metav1.LabelSelector `json:"ignoredPodSelector,omitempty"`
}

// TargetReference points at a workload in the budget's namespace.
type TargetReference struct {
	// APIVersion of the workload, e.g. apps/v1.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the workload, e.g. Deployment.
	Kind string `json:"kind,omitempty"`
	// Name of the workload.
	Name string `json:"name,omitempty"`
}

// PodUnavailableBudgetStatus is the observed state of a PodUnavailableBudget.
type PodUnavailableBudgetStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DisruptedPods are pods admitted for deletion or eviction, with the
	// time of admission, that the controller has not yet seen go.
	DisruptedPods map[string]metav1.Time `json:"disruptedPods,omitempty"`
	// UnavailablePods are pods admitted for an update, with the time of
	// admission, that the controller has not yet seen available again.
	UnavailablePods map[string]metav1.Time `json:"unavailablePods,omitempty"`
	// UnavailableAllowed is how many more pods may become unavailable now.
	UnavailableAllowed int32 `json:"unavailableAllowed"`
	// CurrentAvailable is the number of guarded pods available now.
	CurrentAvailable int32 `json:"currentAvailable"`
	// DesiredAvailable is the number of guarded pods that must stay available.
	DesiredAvailable int32 `json:"desiredAvailable"`
	// TotalReplicas is the expected number of guarded pods.
	TotalReplicas int32 `json:"totalReplicas"`

	// Conditions say whether the budget's protection is in force.
	// Lifeline's addition, as in v1alpha1.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodUnavailableBudget keeps enough of a set of pods available through any
// voluntary disruption: deletion, eviction and in-place update.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pub
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Allowed",type="integer",JSONPath=".status.unavailableAllowed",description="UnavailableAllowed number of pod unavailable that are currently allowed"
// +kubebuilder:printcolumn:name="Current",type="integer",JSONPath=".status.currentAvailable",description="CurrentAvailable current number of available pods"
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desiredAvailable",description="DesiredAvailable minimum desired number of available pods"
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.totalReplicas",description="TotalReplicas total number of pods counted by this budget"
type PodUnavailableBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodUnavailableBudgetSpec   `json:"spec,omitempty"`
	Status PodUnavailableBudgetStatus `json:"status,omitempty"`
}

// PodUnavailableBudgetList is a list of PodUnavailableBudgets.
//
// +kubebuilder:object:root=true
type PodUnavailableBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodUnavailableBudget `json:"items"`
}

func init() {
	register(&PodUnavailableBudget{}, &PodUnavailableBudgetList{})
}
