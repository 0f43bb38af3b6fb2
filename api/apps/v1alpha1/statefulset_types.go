package v1alpha1

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

// StatefulSetSpec is the desired state of an Advanced StatefulSet in
// v1alpha1. The v1beta1 fields it lacks (reserveOrdinals, lifecycle,
// scaleStrategy, persistentVolumeClaimRetentionPolicy, ordinals,
// volumeClaimUpdateStrategy) survive a v1alpha1 round trip in an
// annotation (see internal/conversion).
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

	// VolumeClaimTemplates are the claims each ordinal gets.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ServiceName is the governing Service: each pod's subdomain.
	ServiceName string `json:"serviceName,omitempty"`

	// PodManagementPolicy is OrderedReady (the default) or Parallel.
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`

	// UpdateStrategy tunes how pods move to a new revision.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many unused revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// StatefulSetUpdateStrategy tunes how pods move to a new revision.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	Type appsv1.StatefulSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate tunes a RollingUpdate.
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy tunes a rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition: ordinals below it stay at the current revision (with
	// unorderedUpdate, the number of pods that stay).
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

// StatefulSetStatus is the observed state of an Advanced StatefulSet in
// v1alpha1.
type StatefulSetStatus struct {
	ObservedGeneration int64                         `json:"observedGeneration,omitempty"`
	Replicas           int32                         `json:"replicas"`
	ReadyReplicas      int32                         `json:"readyReplicas"`
	AvailableReplicas  int32                         `json:"availableReplicas"`
	CurrentReplicas    int32                         `json:"currentReplicas"`
	UpdatedReplicas    int32                         `json:"updatedReplicas"`
	CurrentRevision    string                        `json:"currentRevision,omitempty"`
	UpdateRevision     string                        `json:"updateRevision,omitempty"`
	CollisionCount     *int32                        `json:"collisionCount,omitempty"`
	Conditions         []appsv1.StatefulSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	LabelSelector      string                        `json:"labelSelector,omitempty"`
}

// StatefulSet (Advanced StatefulSet) in v1alpha1; v1beta1 is stored.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=sts;asts
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
