package pub

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// InPlaceUpdateStateKey is the pod annotation that holds the JSON
	// InPlaceUpdateState of the pod's latest in-place update.
	InPlaceUpdateStateKey = "apps.kruise.io/inplace-update-state"
	// InPlaceUpdateStateKeyLegacy is the key older releases wrote; it is read,
	// and removed when a new state is written.
	InPlaceUpdateStateKeyLegacy = "inplace-update-state"
	// InPlaceUpdateGraceKey is the pod annotation that holds the pending
	// update while inPlaceUpdateStrategy.gracePeriodSeconds runs.
	InPlaceUpdateGraceKey = "apps.kruise.io/inplace-update-grace"
	// InPlaceUpdateGraceKeyLegacy is the key older releases wrote.
	InPlaceUpdateGraceKeyLegacy = "inplace-update-grace"
	// RuntimeContainerMetaKey is the pod annotation a node agent writes with
	// the runtime's view of each container.
	RuntimeContainerMetaKey = "apps.kruise.io/runtime-containers-meta"
	// ContainerLaunchPriorityEnvName is the container env that orders
	// containers into batches during an in-place update; higher goes first.
	ContainerLaunchPriorityEnvName = "KRUISE_CONTAINER_PRIORITY"
)

// InPlaceUpdateState records a pod's latest in-place update.
type InPlaceUpdateState struct {
	// Revision is the name of the revision the pod is updated to.
	Revision string `json:"revision"`
	// UpdateTimestamp is when the update began.
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// LastContainerStatuses are the container statuses before the update,
	// keyed by container name; completion is judged against them.
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses"`
	// UpdateEnvFromMetadata is true when containers restart because env
	// values taken from labels or annotations changed.
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata,omitempty"`
	// UpdateResources is true when the update changes container resources.
	UpdateResources bool `json:"updateResources,omitempty"`
	// UpdateImages is true when the update changes container images.
	UpdateImages bool `json:"updateImages,omitempty"`
	// NextContainerImages are images of lower-priority containers waiting
	// for the next batch.
	NextContainerImages map[string]string `json:"nextContainerImages,omitempty"`
	// NextContainerRefMetadata are labels and annotations, referenced by
	// lower-priority containers' env, waiting for the next batch.
	NextContainerRefMetadata map[string]metav1.ObjectMeta `json:"nextContainerRefMetadata,omitempty"`
	// NextContainerResources are resources of lower-priority containers
	// waiting for the next batch.
	NextContainerResources map[string]corev1.ResourceRequirements `json:"nextContainerResources,omitempty"`
	// PreCheckBeforeNext must pass before the next batch is applied.
	PreCheckBeforeNext *InPlaceUpdatePreCheckBeforeNext `json:"preCheckBeforeNext,omitempty"`
	// ContainerBatchesRecord lists the batches applied so far.
	ContainerBatchesRecord []InPlaceUpdateContainerBatch `json:"containerBatchesRecord,omitempty"`
}

// InPlaceUpdatePreCheckBeforeNext names the containers that must be Ready
// before the next batch of an in-place update starts.
type InPlaceUpdatePreCheckBeforeNext struct {
	ContainersRequiredReady []string `json:"containersRequiredReady,omitempty"`
}

// InPlaceUpdateContainerBatch is one batch of containers updated together.
type InPlaceUpdateContainerBatch struct {
	Timestamp  metav1.Time `json:"timestamp"`
	Containers []string    `json:"containers"`
}

// InPlaceUpdateContainerStatus is what was known of a container before it was
// updated in place.
type InPlaceUpdateContainerStatus struct {
	ImageID string `json:"imageID,omitempty"`
	// ContainerID is the container that ran when the update was written,
	// Lifeline's addition (OpenKruise ignores it): a running container
	// with another ID was started from the new spec, which tells a
	// finished update whose new tag names the same image (same imageID)
	// from one the kubelet has not applied yet.
	ContainerID string                      `json:"containerID,omitempty"`
	Resources   corev1.ResourceRequirements `json:"resources,omitempty"`
}

// InPlaceUpdateStrategy tunes in-place updates.
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is how long a pod stays NotReady before its
	// containers are changed.
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`
	// ImagePreDownloadParallelism is how many nodes pull a new image at once
	// ahead of an in-place update.
	ImagePreDownloadParallelism *intstr.IntOrString `json:"imagePreDownloadParallelism,omitempty"`
	// ImagePreDownloadTimeoutSeconds bounds each image pre-download.
	ImagePreDownloadTimeoutSeconds *int32 `json:"imagePreDownloadTimeoutSeconds,omitempty"`
	// ImagePreDownloadMinUpdatedReadyPods is how many updated pods must be
	// Ready before images are pre-downloaded.
	ImagePreDownloadMinUpdatedReadyPods *int32 `json:"imagePreDownloadMinUpdatedReadyPods,omitempty"`
}

// RuntimeContainerMetaSet is what a node agent reports, in the
// RuntimeContainerMetaKey annotation, of the containers that run a pod.
type RuntimeContainerMetaSet struct {
	Containers []RuntimeContainerMeta `json:"containers"`
}

// RuntimeContainerMeta is a node agent's report of one running container.
type RuntimeContainerMeta struct {
	Name         string                 `json:"name"`
	ContainerID  string                 `json:"containerID"`
	RestartCount int32                  `json:"restartCount"`
	Hashes       RuntimeContainerHashes `json:"hashes"`
}

// RuntimeContainerHashes are hashes of what a container runs with.
type RuntimeContainerHashes struct {
	// PlainHash is the kubelet's hash of the container's spec (OpenKruise's
	// node daemon reports it; Lifeline's node agent leaves it 0).
	PlainHash uint64 `json:"plainHash"`
	// ExtractedEnvFromMetadataHash is the hash of the values the container
	// runs with of its env taken from the pod's labels and annotations.
	// Lifeline's node agent reads them from the runtime; its hash is not
	// OpenKruise's (docs/compatibility.md).
	ExtractedEnvFromMetadataHash uint64 `json:"extractedEnvFromMetadataHash,omitempty"`
}
