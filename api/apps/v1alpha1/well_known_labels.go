package v1alpha1

const (
	// CloneSetInstanceID is the label that ties a pod to its PVCs: both carry
	// the same instance id, which is also the suffix of the pod's name.
	CloneSetInstanceID = "apps.kruise.io/cloneset-instance-id"

	// SpecifiedDeleteKey is the pod label that asks the owning workload to
	// delete the pod (through preDelete, within maxUnavailable). Only its
	// presence counts.
	SpecifiedDeleteKey = "apps.kruise.io/specified-delete"

	// GuardHooksAnnotation is the CloneSet annotation (Lifeline's own)
	// that, set to "true", closes the path around its preDelete hook: a
	// direct delete or eviction of one of its pods is refused and the pod
	// is marked SpecifiedDeleteKey instead, so the CloneSet deletes it
	// through PreparingDelete and the hook, and replaces it.
	GuardHooksAnnotation = "lifeline.dev/guard-hooks"

	// CloneSetScalingExcludePreparingDeleteKey is the CloneSet label that,
	// set to "true", leaves PreparingDelete pods out of the replica count, so
	// a scale-up creates new pods instead of reviving them.
	CloneSetScalingExcludePreparingDeleteKey = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"

	// DefaultCloneSetMaxUnavailable is updateStrategy.maxUnavailable's default.
	DefaultCloneSetMaxUnavailable = "20%"
	// DefaultCloneSetRevisionHistoryLimit is revisionHistoryLimit's default,
	// which the controller also applies to a CloneSet stored without it.
	DefaultCloneSetRevisionHistoryLimit = 10

	// VolumeClaimTemplatesHashAnnotation is the ControllerRevision annotation
	// that records the hash of the volumeClaimTemplates of that revision.
	VolumeClaimTemplatesHashAnnotation = "kruise.io/cloneset-volumeclaimtemplate-hash"

	// Image pre-download settings, carried as CloneSet annotations in v1alpha1.
	ImagePreDownloadParallelismKey      = "apps.kruise.io/image-predownload-parallelism"
	ImagePreDownloadTimeoutSecondsKey   = "apps.kruise.io/image-predownload-timeout-seconds"
	ImagePreDownloadMinUpdatedReadyPods = "apps.kruise.io/image-predownload-min-updated-ready-pods"
)
