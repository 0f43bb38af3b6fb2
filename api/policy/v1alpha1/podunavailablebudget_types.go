package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// PubProtectOperationAnnotation lists, comma-separated, the operations a
	// PodUnavailableBudget guards: DELETE, UPDATE, EVICT, RESIZE. Unset means
	// DELETE,UPDATE,EVICT.
	PubProtectOperationAnnotation = "kruise.io/pub-protect-operations"
	// PubProtectTotalReplicasAnnotation overrides the expected number of pods,
	// for pods whose workload has no scale subresource.
	PubProtectTotalReplicasAnnotation = "pub.kruise.io/protect-total-replicas"
	// PodPubNoProtectionAnnotation set to "true" on a pod lets it bypass every
	// PodUnavailableBudget.
	PodPubNoProtectionAnnotation = "pub.kruise.io/no-protect"
	// PodRelatedPubAnnotation is the pod annotation naming the
	// PodUnavailableBudget that guards the pod.
	PodRelatedPubAnnotation = "kruise.io/related-pub"
	// PodUnavailableLabelPrefix is a pod label prefix: a pod with any label so
	// prefixed counts as unavailable even when Ready.
	PodUnavailableLabelPrefix = "unavailable-pod.kruise.io/"
)

// PubOperation is an operation a PodUnavailableBudget can guard.
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
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
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

	// Conditions say whether the budget's protection is in force
	// (Protecting False, with the reason, when Lifeline's pod webhooks
	// never see its namespace). Lifeline's addition; OpenKruise's status
	// has none.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionProtecting says whether a budget's protection is in force.
const ConditionProtecting = "Protecting"

// PodUnavailableBudget keeps enough of a set of pods available through any
// voluntary disruption: deletion, eviction and in-place update.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pub
// +kubebuilder:printcolumn:name="Allowed",type="integer",JSONPath=".status.unavailableAllowed",description="UnavailableAllowed is the number of pods that may be disrupted now."
// +kubebuilder:printcolumn:name="Current",type="integer",JSONPath=".status.currentAvailable",description="CurrentAvailable is the number of pods available now."
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desiredAvailable",description="DesiredAvailable is the number of pods that must stay available."
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.totalReplicas",description="TotalReplicas is the expected number of pods."
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
