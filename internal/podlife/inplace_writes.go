package podlife

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// inPlaceWrites are the two writes of an in-place update of pod to
// revision rev. The first makes the pod NotReady through its
// InPlaceUpdateReady condition, so traffic leaves before any container
// restarts (left out when the pod has no such gate). The second changes
// the images (or, with a grace period, holds them in the grace annotation),
// the template's labels and annotations, the revision labels, the state
// Updating and the in-place update record against which completion is
// judged.
func (l Life) inPlaceWrites(pod *corev1.Pod, rev string, change *InPlaceChange) ([]PodWrite, error) {
	var writes []PodWrite
	if podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		writes = append(writes, PodWrite{Conditions: []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse,
			Reason: "StartInPlaceUpdate", LastTransitionTime: metav1.NewTime(l.Now)}}})
	}
	batch := batchOf(pod, change.Images)
	record := pub.InPlaceUpdateState{
		Revision: rev, UpdateTimestamp: metav1.NewTime(l.Now), UpdateImages: len(change.Images)+len(change.NextImages) > 0,
		UpdateEnvFromMetadata:  readsChangedMetadata(pod, change),
		LastContainerStatuses:  lastImageIDs(pod, batch, nil),
		NextContainerImages:    change.NextImages,
		ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(l.Now), Containers: batch}},
	}
	if len(record.NextContainerImages) > 0 {
		record.PreCheckBeforeNext = &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: batch}
	}
	state, err := json.Marshal(record)
	if err != nil {
		return nil, err
	}
	w := PodWrite{RemoveLabels: change.RemovedLabels}
	for k, v := range change.Labels {
		w.SetLabel(k, v)
	}
	w.SetLabel(appsv1.ControllerRevisionHashLabelKey, rev)
	w.SetLabel(appsv1.DefaultDeploymentUniqueLabelKey, podfacts.ShortHash(rev))
	w.SetLabel(pub.LifecycleStateKey, string(pub.LifecycleStateUpdating))
	for k, v := range change.Annotations {
		w.SetAnnotation(k, v)
	}
	w.RemoveAnnotations = slices.Clone(change.RemovedAnnotations)
	if _, ok := pod.Annotations[pub.InPlaceUpdateStateKeyLegacy]; ok {
		w.RemoveAnnotations = append(w.RemoveAnnotations, pub.InPlaceUpdateStateKeyLegacy)
	}
	w.SetAnnotation(pub.LifecycleTimestampKey, Timestamp(l.Now))
	w.SetAnnotation(pub.InPlaceUpdateStateKey, string(state))
	if change.GraceSeconds > 0 {
		// NotReady now, new images once the grace period is over.
		grace, err := json.Marshal(podfacts.GraceSpec{Revision: rev, ContainerImages: change.Images, GraceSeconds: change.GraceSeconds})
		if err != nil {
			return nil, err
		}
		w.SetAnnotation(pub.InPlaceUpdateGraceKey, string(grace))
	} else {
		w.Images = change.Images
		w.ExpectContainerIDs = containerIDs(record.LastContainerStatuses, batch)
	}
	return append(writes, w), nil
}

// nextBatchWrite applies the next container batch of an in-place update
// and records it in the update state; it rests on that state being what
// it rewrites.
func (l Life) nextBatchWrite(pod *corev1.Pod, st *pub.InPlaceUpdateState, change *InPlaceChange) (PodWrite, error) {
	old := pod.Annotations[pub.InPlaceUpdateStateKey]
	st = st.DeepCopy()
	batch := batchOf(pod, change.Images)
	st.LastContainerStatuses = lastImageIDs(pod, batch, st.LastContainerStatuses)
	st.NextContainerImages, st.PreCheckBeforeNext = change.NextImages, nil
	if len(st.NextContainerImages) > 0 {
		st.PreCheckBeforeNext = &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: batch}
	}
	st.ContainerBatchesRecord = append(st.ContainerBatchesRecord, pub.InPlaceUpdateContainerBatch{Timestamp: metav1.NewTime(l.Now), Containers: batch})
	data, err := json.Marshal(st)
	if err != nil {
		return PodWrite{}, err
	}
	return PodWrite{
		Images:             change.Images,
		Annotations:        map[string]string{pub.InPlaceUpdateStateKey: string(data)},
		ExpectAnnotations:  map[string]string{pub.InPlaceUpdateStateKey: old},
		ExpectContainerIDs: containerIDs(st.LastContainerStatuses, batch),
	}, nil
}

// finishGraceWrite applies the images held back for an in-place update's
// grace period. A container the kubelet restarted during the grace period
// still runs the old spec, so the record is brought up to the containers
// running now, and the write rests on them and on the record it rewrites.
func finishGraceWrite(pod *corev1.Pod) (PodWrite, error) {
	grace := podfacts.Grace(pod)
	w := PodWrite{Images: grace.ContainerImages, RemoveAnnotations: []string{pub.InPlaceUpdateGraceKey}}
	st := podfacts.InPlaceUpdateState(pod)
	if st == nil {
		return w, nil
	}
	batch := batchOf(pod, grace.ContainerImages)
	last := lastImageIDs(pod, batch, st.LastContainerStatuses)
	if apiequality.Semantic.DeepEqual(last, st.LastContainerStatuses) {
		w.ExpectContainerIDs = containerIDs(last, batch)
		return w, nil
	}
	st.LastContainerStatuses = last
	data, err := json.Marshal(st)
	if err != nil {
		return PodWrite{}, err
	}
	w.Annotations = map[string]string{pub.InPlaceUpdateStateKey: string(data)}
	w.ExpectAnnotations = map[string]string{pub.InPlaceUpdateStateKey: pod.Annotations[pub.InPlaceUpdateStateKey]}
	w.ExpectContainerIDs = containerIDs(st.LastContainerStatuses, batch)
	return w, nil
}

// containerIDs are the recorded containers of batch that have an ID.
func containerIDs(last map[string]pub.InPlaceUpdateContainerStatus, batch []string) map[string]string {
	out := map[string]string{}
	for _, name := range batch {
		if id := last[name].ContainerID; id != "" {
			out[name] = id
		}
	}
	return out
}

// batchOf names the pod's containers whose images change, in the pod's
// container order.
func batchOf(pod *corev1.Pod, images map[string]string) []string {
	var batch []string
	for _, c := range pod.Spec.Containers {
		if _, ok := images[c.Name]; ok {
			batch = append(batch, c.Name)
		}
	}
	return batch
}

// lastImageIDs records, over known, the image and container IDs of the
// batch's containers now, against which the kubelet's restart with the new
// image is recognised. The write that applies the images rests on those
// container IDs (ExpectContainerIDs), so they are the containers the
// kubelet had reported when the new spec was written.
func lastImageIDs(pod *corev1.Pod, batch []string, known map[string]pub.InPlaceUpdateContainerStatus) map[string]pub.InPlaceUpdateContainerStatus {
	out := map[string]pub.InPlaceUpdateContainerStatus{}
	for k, v := range known {
		out[k] = v
	}
	for _, st := range pod.Status.ContainerStatuses {
		if slices.Contains(batch, st.Name) {
			out[st.Name] = pub.InPlaceUpdateContainerStatus{ImageID: st.ImageID, ContainerID: st.ContainerID}
		}
	}
	return out
}

// readsChangedMetadata reports whether a container's env reads a label or
// annotation the update changes: a node agent then restarts it
// (podfacts.EnvFromMetadataUpdated).
func readsChangedMetadata(pod *corev1.Pod, change *InPlaceChange) bool {
	labels := append(slices.Collect(maps.Keys(change.Labels)), change.RemovedLabels...)
	annotations := append(slices.Collect(maps.Keys(change.Annotations)), change.RemovedAnnotations...)
	return slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool {
		return podfacts.ReadsMetadataKeys(c, labels, annotations)
	})
}

// envNotRestarted is the Warning for an in-place update done on a node no
// agent reports on (podfacts.EnvFromMetadataUpdated does not wait there)
// whose containers read labels or annotations it changed: they keep the
// values they started with, which a person must know.
func envNotRestarted(pod *corev1.Pod) []Warning {
	st := podfacts.InPlaceUpdateState(pod)
	if st == nil || !st.UpdateEnvFromMetadata || podfacts.RuntimeContainerMeta(pod) != nil {
		return nil
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		if len(podfacts.MetadataEnv(c)) > 0 {
			names = append(names, c.Name)
		}
	}
	return []Warning{{Reason: "EnvFromMetadataNotRestarted", Message: fmt.Sprintf(
		"pod %s was updated in place, and its containers %s read labels or annotations the update changed: they keep the values they started with, as no node agent runs on node %s (the chart's nodeAgent.enabled restarts them)",
		pod.Name, strings.Join(names, ", "), pod.Spec.NodeName)}}
}
