package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// MaxMinReadySeconds is the largest rollingUpdate.minReadySeconds an
// Advanced StatefulSet accepts.
const MaxMinReadySeconds = 300

// StatefulSetSpec is the desired state of an Advanced StatefulSet.
type StatefulSetSpec struct {
	// Replicas is the desired number of pods. Defaults to 1.
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of this set. It must match the template's
	// labels and cannot be changed.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the pod each ordinal is created from.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are the claims each ordinal gets, named
	// <template>-<set>-<ordinal>, mounted under the template's name.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// VolumeClaimUpdateStrategy says when a change of the claim templates
	// reaches existing claims: OnPodRollingUpdate or OnDelete.
	VolumeClaimUpdateStrategy VolumeClaimUpdateStrategy `json:"volumeClaimUpdateStrategy,omitempty"`

	// ServiceName is the governing Service: each pod's subdomain.
	ServiceName string `json:"serviceName,omitempty"`

	// PodManagementPolicy is OrderedReady (the default: one ordinal at a
	// time, in order) or Parallel.
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`

	// UpdateStrategy tunes how pods move to a new revision.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many unused revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// ReserveOrdinals are ordinals the set skips: integers, or "a-b"
	// strings for an inclusive range. A pod at a reserved ordinal is
	// deleted, and the set counts its replicas on past it.
	ReserveOrdinals []intstr.IntOrString `json:"reserveOrdinals,omitempty"`

	// Lifecycle declares the hooks that hold pods before they become
	// available, before an in-place update and before deletion.
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`

	// ScaleStrategy tunes scaling.
	ScaleStrategy *StatefulSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// PersistentVolumeClaimRetentionPolicy says whether the claims of
	// deleted or scaled-in pods are kept or deleted.
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// Ordinals sets the first ordinal.
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`
}

// VolumeClaimUpdateStrategy says when claim template changes apply.
type VolumeClaimUpdateStrategy struct {
	Type VolumeClaimUpdateStrategyType `json:"type,omitempty"`
}

// VolumeClaimUpdateStrategyType names a VolumeClaimUpdateStrategy.
type VolumeClaimUpdateStrategyType string

const (
	// OnPodRollingUpdateVolumeClaimUpdateStrategyType resizes a pod's
	// claims as the rollout reaches the pod.
	OnPodRollingUpdateVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnPodRollingUpdate"
	// OnPVCDeleteVolumeClaimUpdateStrategyType leaves existing claims as
	// they are until they are deleted.
	OnPVCDeleteVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnDelete"
)

// StatefulSetUpdateStrategy tunes how pods move to a new revision.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	Type appsv1.StatefulSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate tunes a RollingUpdate.
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy tunes a rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition is how many pods stay at the current revision: ordinals
	// below it in an ordered update, any pods in an unordered one.
	Partition *int32 `json:"partition,omitempty"`
	// MaxUnavailable caps the pods unavailable during an update; above 1
	// only with the Parallel policy. Defaults to 1.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// PodUpdatePolicy is ReCreate (the default), InPlaceIfPossible or
	// InPlaceOnly.
	PodUpdatePolicy PodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`
	// Paused stops updating pods; scaling goes on.
	Paused bool `json:"paused,omitempty"`
	// UnorderedUpdate updates pods by priority rather than by ordinal
	// (Parallel only).
	UnorderedUpdate *UnorderedUpdateStrategy `json:"unorderedUpdate,omitempty"`
	// InPlaceUpdateStrategy tunes in-place updates.
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
	// MinReadySeconds is how long a pod must be Ready before it counts as
	// available, 0 to 300. Defaults to 0.
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
}

// UnorderedUpdateStrategy orders an update by priority.
type UnorderedUpdateStrategy struct {
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
}

// PodUpdateStrategyType is how a pod moves to a new revision.
type PodUpdateStrategyType string

const (
	// RecreatePodUpdateStrategyType deletes the pod and creates it again.
	RecreatePodUpdateStrategyType PodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossiblePodUpdateStrategyType updates in place what can
	// be, and recreates the pod for any other change.
	InPlaceIfPossiblePodUpdateStrategyType PodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyPodUpdateStrategyType updates in place only.
	InPlaceOnlyPodUpdateStrategyType PodUpdateStrategyType = "InPlaceOnly"
)

// PersistentVolumeClaimRetentionPolicyType is Retain or Delete.
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the claims.
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the claims.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// StatefulSetPersistentVolumeClaimRetentionPolicy says what happens to the
// claims of pods the set deletes.
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted applies when the set is deleted.
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	// WhenScaled applies when a pod goes with a scale-in.
	WhenScaled PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// StatefulSetOrdinals sets where ordinals start.
type StatefulSetOrdinals struct {
	// Start is the first ordinal. Defaults to 0.
	// +optional
	Start int32 `json:"start"`
}

// StatefulSetScaleStrategy tunes scaling.
type StatefulSetScaleStrategy struct {
	// MaxUnavailable caps the pods unavailable while scaling (Parallel).
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// StatefulSetStatus is the observed state of an Advanced StatefulSet.
type StatefulSetStatus struct {
	ObservedGeneration       int64                         `json:"observedGeneration,omitempty"`
	Replicas                 int32                         `json:"replicas"`
	ReadyReplicas            int32                         `json:"readyReplicas"`
	AvailableReplicas        int32                         `json:"availableReplicas"`
	CurrentReplicas          int32                         `json:"currentReplicas"`
	UpdatedReplicas          int32                         `json:"updatedReplicas"`
	UpdatedReadyReplicas     int32                         `json:"updatedReadyReplicas,omitempty"`
	UpdatedAvailableReplicas int32                         `json:"updatedAvailableReplicas,omitempty"`
	CurrentRevision          string                        `json:"currentRevision,omitempty"`
	UpdateRevision           string                        `json:"updateRevision,omitempty"`
	CollisionCount           *int32                        `json:"collisionCount,omitempty"`
	Conditions               []appsv1.StatefulSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	LabelSelector            string                        `json:"labelSelector,omitempty"`
	VolumeClaims             []VolumeClaimStatus           `json:"volumeClaims,omitempty"`
}

// VolumeClaimStatus counts the pods whose claims of one template match it.
type VolumeClaimStatus struct {
	VolumeClaimName         string `json:"volumeClaimName"`
	CompatibleReplicas      int32  `json:"compatibleReplicas"`
	CompatibleReadyReplicas int32  `json:"compatibleReadyReplicas"`
}

const (
	// FailedCreatePod says the last pod creation failed.
	FailedCreatePod appsv1.StatefulSetConditionType = "FailedCreatePod"
	// FailedUpdatePod says the last pod update failed.
	FailedUpdatePod appsv1.StatefulSetConditionType = "FailedUpdatePod"
)

// StatefulSet (Advanced StatefulSet) keeps pods with stable ordinals and
// claims, and rolls them to new revisions in order or in parallel, in
// place or by recreating them, holding pods at lifecycle hooks.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=sts;asts
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of currently advanced statefulset."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of currently advanced statefulset."
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StatefulSetSpec   `json:"spec,omitempty"`
	Status StatefulSetStatus `json:"status,omitempty"`
}

// StatefulSetList is a list of Advanced StatefulSets.
//
// +kubebuilder:object:root=true
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatefulSet `json:"items"`
}

func init() {
	register(&StatefulSet{}, &StatefulSetList{})
}
