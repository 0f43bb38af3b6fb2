package v1beta1

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
	// mounted under the template's name.
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
	// before the Progressing condition says ProgressDeadlineExceeded.
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// CloneSetScaleStrategy tunes how pods are created and deleted.
type CloneSetScaleStrategy struct {
	// PodsToDelete names pods to delete first.
	PodsToDelete []string `json:"podsToDelete,omitempty"`

	// MaxUnavailable caps how many pods may be unavailable while scaling up.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// EnablePVCReuse makes a pod rebuilt after an outside deletion reuse its
	// predecessor's PVCs. Unlike v1alpha1's disablePVCReuse, unset means no
	// reuse.
	// +optional
	// +kubebuilder:default=false
	EnablePVCReuse bool `json:"enablePVCReuse,omitempty"`

	// ExcludePreparingDelete leaves PreparingDelete pods out of the replica
	// count, so a scale-up creates new pods instead of reviving them.
	// v1alpha1 says it with the label
	// apps.kruise.io/cloneset-scaling-exclude-preparing-delete=true.
	// +optional
	ExcludePreparingDelete bool `json:"excludePreparingDelete,omitempty"`
}

// CloneSetUpdateStrategy tunes how pods move to a new revision.
type CloneSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	Type CloneSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes a RollingUpdate; OnDelete has no knobs.
	RollingUpdate *RollingUpdateCloneSetStrategy `json:"rollingUpdate,omitempty"`
}

// CloneSetUpdateStrategyType says whether the controller rolls pods.
type CloneSetUpdateStrategyType string

const (
	// RollingUpdateCloneSetUpdateStrategyType rolls pods to the new revision.
	RollingUpdateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteCloneSetUpdateStrategyType leaves pods as they are until
	// something else deletes them.
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// RollingUpdateCloneSetStrategy tunes a rolling update.
type RollingUpdateCloneSetStrategy struct {
	// Partition is how many pods, or what percent of replicas, stay at the
	// current revision. Defaults to 0.
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable caps the pods unavailable during an update. Defaults
	// to 20%.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many pods may exist above replicas during an update.
	// Defaults to 0.
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// PodUpdatePolicy is ReCreate (the default), InPlaceIfPossible or
	// InPlaceOnly: v1alpha1's updateStrategy.type.
	PodUpdatePolicy CloneSetPodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`

	// Paused stops updating pods; scaling goes on.
	Paused bool `json:"paused,omitempty"`

	// PriorityStrategy orders the pods of an update.
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads the pods that carry each label pair over the
	// update.
	ScatterStrategy UpdateScatterStrategy `json:"scatterStrategy,omitempty"`

	// InPlaceUpdateStrategy tunes in-place updates, image pre-download
	// included (v1alpha1 carries that in CloneSet annotations).
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
}

// CloneSetPodUpdateStrategyType is how a pod moves to a new revision.
type CloneSetPodUpdateStrategyType string

const (
	// RecreateCloneSetPodUpdateStrategyType deletes the pod and creates a new one.
	RecreateCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetPodUpdateStrategyType updates in place what
	// can be, and recreates the pod for any other change.
	InPlaceIfPossibleCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetPodUpdateStrategyType updates in place only.
	InPlaceOnlyCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceOnly"
)

// UpdateScatterStrategy is a list of label pairs to scatter over an update.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is one label key and value.
type UpdateScatterTerm struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// CloneSetStatus is the observed state of a CloneSet; its fields mean what
// they mean in v1alpha1.
type CloneSetStatus struct {
	ObservedGeneration       int64               `json:"observedGeneration,omitempty"`
	Replicas                 int32               `json:"replicas"`
	ReadyReplicas            int32               `json:"readyReplicas"`
	AvailableReplicas        int32               `json:"availableReplicas"`
	UpdatedReplicas          int32               `json:"updatedReplicas"`
	UpdatedReadyReplicas     int32               `json:"updatedReadyReplicas"`
	UpdatedAvailableReplicas int32               `json:"updatedAvailableReplicas,omitempty"`
	ExpectedUpdatedReplicas  int32               `json:"expectedUpdatedReplicas,omitempty"`
	UpdateRevision           string              `json:"updateRevision,omitempty"`
	CurrentRevision          string              `json:"currentRevision,omitempty"`
	CollisionCount           *int32              `json:"collisionCount,omitempty"`
	Conditions               []CloneSetCondition `json:"conditions,omitempty"`
	LabelSelector            string              `json:"labelSelector,omitempty"`
}

// CloneSetConditionType names a CloneSet condition.
type CloneSetConditionType string

// CloneSetCondition is one observation of a CloneSet's state.
type CloneSetCondition struct {
	Type               CloneSetConditionType  `json:"type"`
	Status             corev1.ConditionStatus `json:"status"`
	LastUpdateTime     metav1.Time            `json:"lastUpdateTime,omitempty"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime,omitempty"`
	Reason             string                 `json:"reason,omitempty"`
	Message            string                 `json:"message,omitempty"`
}

// CloneSet keeps a number of identical pods running and moves them to new
// revisions with rolling, in-place or partitioned updates, holding pods at
// lifecycle hooks for operators that must act first.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=clone
// +kubebuilder:storageversion
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
