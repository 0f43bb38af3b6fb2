package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// CloneSetSpec is the desired state of a CloneSet.
type CloneSetSpec struct {
	// Replicas is the desired number of pods. Defaults to 1.
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of this CloneSet. It must match the
	// template's labels and cannot be changed.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the pod each replica is created from.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are the claims created for each pod instance and
	// mounted under the template's name. They are deleted with the pod when
	// the controller deletes it, and reused when something else does.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ScaleStrategy tunes how pods are created and deleted.
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// UpdateStrategy tunes how pods move to a new revision.
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many unused revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// MinReadySeconds is how long a pod must be Ready before it counts as
	// available. Defaults to 0.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// Lifecycle declares the hooks that hold pods before they become
	// available, before an in-place update and before deletion.
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may go without progress
	// before the Progressing condition says ProgressDeadlineExceeded. Unset,
	// or 2147483647, means no deadline and no Progressing condition.
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// CloneSetScaleStrategy tunes how pods are created and deleted.
type CloneSetScaleStrategy struct {
	// PodsToDelete names pods to delete first. Names of pods that no longer
	// exist are pruned from the list.
	PodsToDelete []string `json:"podsToDelete,omitempty"`

	// MaxUnavailable caps how many pods may be unavailable while scaling up;
	// new pods are created only while fewer are. Unset means no cap.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// DisablePVCReuse makes a pod rebuilt after an outside deletion get new
	// PVCs instead of reusing its predecessor's.
	DisablePVCReuse bool `json:"disablePVCReuse,omitempty"`
}

// CloneSetUpdateStrategy tunes how pods move to a new revision.
type CloneSetUpdateStrategy struct {
	// Type is ReCreate (the default), InPlaceIfPossible or InPlaceOnly.
	Type CloneSetUpdateStrategyType `json:"type,omitempty"`

	// Partition is how many pods, or what percent of replicas, stay at the
	// current revision. A percent is rounded up, but one below 100% always
	// leaves at least one pod to update when replicas > 1. Defaults to 0.
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable caps the pods unavailable during an update. A percent
	// is rounded up, or down when maxSurge > 0. Defaults to 20%.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many pods may exist above replicas during an update or
	// a specified delete. A percent is rounded up. Defaults to 0.
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Paused stops updating pods; scaling goes on.
	Paused bool `json:"paused,omitempty"`

	// PriorityStrategy orders the pods of an update.
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads the pods that carry each label pair over the
	// update, so they are not all updated in one batch.
	ScatterStrategy UpdateScatterStrategy `json:"scatterStrategy,omitempty"`

	// InPlaceUpdateStrategy tunes in-place updates.
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
}

// CloneSetUpdateStrategyType is how a pod moves to a new revision.
type CloneSetUpdateStrategyType string

const (
	// RecreateCloneSetUpdateStrategyType deletes the pod and creates a new one.
	RecreateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetUpdateStrategyType updates images, labels and
	// annotations in place, and recreates the pod for any other change.
	InPlaceIfPossibleCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetUpdateStrategyType updates in place and refuses any
	// change that cannot be made in place.
	InPlaceOnlyCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceOnly"
	// OnDeleteCloneSetUpdateStrategyType is declared for completeness; the
	// v1alpha1 validation rejects it, as OpenKruise's does.
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// UpdateScatterStrategy is a list of label pairs to scatter over an update.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is one label key and value.
type UpdateScatterTerm struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// CloneSetStatus is the observed state of a CloneSet.
type CloneSetStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of active pods, PreparingDelete included.
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of active pods that are Ready.
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of active pods Ready for at least
	// minReadySeconds and in the Normal lifecycle state.
	AvailableReplicas int32 `json:"availableReplicas"`

	// UpdatedReplicas is the number of active pods at updateRevision.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// UpdatedReadyReplicas is the number of Ready pods at updateRevision.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`

	// UpdatedAvailableReplicas is the number of available pods at
	// updateRevision.
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`

	// ExpectedUpdatedReplicas is how many pods the partition lets reach
	// updateRevision: replicas minus the computed partition. The rollout is
	// done when updatedReplicas reaches it.
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`

	// UpdateRevision is the name of the newest revision.
	UpdateRevision string `json:"updateRevision,omitempty"`

	// CurrentRevision is the name of the revision all pods were at when the
	// last rollout finished.
	CurrentRevision string `json:"currentRevision,omitempty"`

	// CollisionCount counts revision-name hash collisions; it is hashed into
	// new revision names to step around them.
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Conditions are the latest observations of the CloneSet's state.
	Conditions []CloneSetCondition `json:"conditions,omitempty"`

	// LabelSelector is the selector in string form, for the scale
	// subresource and the HorizontalPodAutoscaler.
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CloneSetConditionType names a CloneSet condition.
type CloneSetConditionType string

const (
	// CloneSetConditionFailedScale: creating or deleting pods or PVCs failed.
	CloneSetConditionFailedScale CloneSetConditionType = "FailedScale"
	// CloneSetConditionFailedUpdate: updating pods failed.
	CloneSetConditionFailedUpdate CloneSetConditionType = "FailedUpdate"
	// CloneSetConditionTypeProgressing: how the rollout is going; present
	// only when spec.progressDeadlineSeconds is set.
	CloneSetConditionTypeProgressing CloneSetConditionType = "Progressing"
)

// Reasons of the Progressing condition.
const (
	CloneSetProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	CloneSetProgressPaused             = "CloneSetPaused"
	CloneSetProgressUpdated            = "CloneSetUpdated"
	CloneSetProgressPartitionAvailable = "ProgressPartitionAvailable"
	CloneSetAvailable                  = "CloneSetAvailable"
)

// CloneSetCondition is one observation of a CloneSet's state.
type CloneSetCondition struct {
	// Type of the condition.
	Type CloneSetConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastUpdateTime is when the condition was last written with a new
	// status or reason.
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when the status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word CamelCase cause.
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable explanation.
	Message string `json:"message,omitempty"`
}

// CloneSet keeps a number of identical pods running and moves them to new
// revisions with rolling, in-place or partitioned updates, holding pods at
// lifecycle hooks for operators that must act first.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=clone
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="UPDATED_READY",type="integer",JSONPath=".status.updatedReadyReplicas",description="The number of pods updated and ready."
// +kubebuilder:printcolumn:name="UPDATED_AVAILABLE",type="integer",JSONPath=".status.updatedAvailableReplicas",description="The number of pods updated and available."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of currently cloneset."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of currently cloneset."
// +kubebuilder:printcolumn:name="SELECTOR",type="string",priority=1,JSONPath=".status.labelSelector",description="The selector of currently cloneset."
type CloneSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CloneSetSpec   `json:"spec,omitempty"`
	Status CloneSetStatus `json:"status,omitempty"`
}

// CloneSetList is a list of CloneSets.
//
// +kubebuilder:object:root=true
type CloneSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloneSet `json:"items"`
}

func init() {
	register(&CloneSet{}, &CloneSetList{})
}
