package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// DaemonSetUpdateStrategyType is RollingUpdate or OnDelete.
type DaemonSetUpdateStrategyType string

// RollingUpdateType is how a rolling update replaces a node's pod.
type RollingUpdateType string

const (
	// RollingUpdateDaemonSetStrategyType replaces pods node by node within
	// maxUnavailable or maxSurge.
	RollingUpdateDaemonSetStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteDaemonSetStrategyType replaces a pod only once someone
	// deletes it.
	OnDeleteDaemonSetStrategyType DaemonSetUpdateStrategyType = "OnDelete"

	// StandardRollingUpdateType deletes an old pod and creates a new one
	// (or the reverse, with maxSurge).
	StandardRollingUpdateType RollingUpdateType = "Standard"
	// InplaceRollingUpdateType updates a pod in place where only its
	// images changed, and recreates it otherwise.
	InplaceRollingUpdateType RollingUpdateType = "InPlaceIfPossible"
	// DeprecatedSurgingRollingUpdateType is Standard with maxSurge 1 and
	// maxUnavailable 0 by default; it becomes Standard when stored.
	DeprecatedSurgingRollingUpdateType RollingUpdateType = "Surging"

	// ProgressiveCreatePodAnnotation is v1alpha1's form of
	// scaleStrategy.partitionedScaling.
	ProgressiveCreatePodAnnotation = "daemonset.kruise.io/progressive-create-pod"
)

// DaemonSetUpdateStrategy says how pods move to a new revision.
type DaemonSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	// +optional
	Type DaemonSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes a RollingUpdate.
	// +optional
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet tunes a rolling update.
type RollingUpdateDaemonSet struct {
	// Type is Standard (the default), InPlaceIfPossible or the deprecated
	// Surging.
	// +optional
	Type RollingUpdateType `json:"rollingUpdateType,omitempty"`

	// MaxUnavailable is how many nodes may be without an available pod
	// during the update: a number or a percentage of the nodes that should
	// run one, rounded up. Defaults to 1 when maxSurge is not set either.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many nodes may run an old and a new pod at once: the
	// new pod starts before the old one is deleted. Standard only.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Selector picks the nodes to update: nodes it does not match keep
	// their old pods.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is how many nodes keep their old pods: a number or a
	// percentage of the nodes that should run one, rounded down.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// Paused stops the update; new nodes still get pods.
	// +optional
	Paused *bool `json:"paused,omitempty"`
}

// DaemonSetSpec is the desired state of an Advanced DaemonSet.
type DaemonSetSpec struct {
	// Selector selects the pods of this set. It must match the template's
	// labels and cannot be changed.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the pod each node runs. It is stored as submitted: no
	// defaults are applied to it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// UpdateStrategy says how pods move to a new revision.
	// +optional
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// MinReadySeconds is how long a new pod must be Ready to count as
	// available.
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// BurstReplicas caps the pod creations, deletions and in-place updates
	// of one step: a number or a percentage of the nodes that should run a
	// pod. Defaults to 250.
	// +optional
	BurstReplicas *intstr.IntOrString `json:"burstReplicas,omitempty"`

	// RevisionHistoryLimit is how many unused revisions are kept. Defaults to 10.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Lifecycle declares the hooks that hold pods; a DaemonSet acts on
	// preDelete.
	// +optional
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`
}

// DaemonSetStatus is the observed state of an Advanced DaemonSet.
type DaemonSetStatus struct {
	CurrentNumberScheduled int32                       `json:"currentNumberScheduled"`
	NumberMisscheduled     int32                       `json:"numberMisscheduled"`
	DesiredNumberScheduled int32                       `json:"desiredNumberScheduled"`
	NumberReady            int32                       `json:"numberReady"`
	ObservedGeneration     int64                       `json:"observedGeneration,omitempty"`
	UpdatedNumberScheduled int32                       `json:"updatedNumberScheduled"`
	NumberAvailable        int32                       `json:"numberAvailable,omitempty"`
	NumberUnavailable      int32                       `json:"numberUnavailable,omitempty"`
	CollisionCount         *int32                      `json:"collisionCount,omitempty"`
	Conditions             []appsv1.DaemonSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// DaemonSetHash is the short hash of the update revision, the value
	// of its pods' controller-revision-hash label.
	DaemonSetHash string `json:"daemonSetHash,omitempty"`
}

// DaemonSet (Advanced DaemonSet) in v1alpha1; v1beta1 is stored.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=daemon;ads
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desiredNumberScheduled",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.currentNumberScheduled",description="The current number of pods."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.numberReady",description="The ready number of pods."
// +kubebuilder:printcolumn:name="UP-TO-DATE",type="integer",JSONPath=".status.updatedNumberScheduled",description="The updated number of pods."
// +kubebuilder:printcolumn:name="AVAILABLE",type="integer",JSONPath=".status.numberAvailable",description="The updated number of pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of currently  daemonset."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of currently advanced daemonset."
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DaemonSetSpec   `json:"spec,omitempty"`
	Status DaemonSetStatus `json:"status,omitempty"`
}

// DaemonSetList is a list of Advanced DaemonSets.
//
// +kubebuilder:object:root=true
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DaemonSet `json:"items"`
}

func init() {
	register(&DaemonSet{}, &DaemonSetList{})
}
