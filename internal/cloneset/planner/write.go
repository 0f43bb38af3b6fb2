package planner

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/revision"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// transition is a lifecycle state change as a rule decides it, before
// setState writes it out in full.
type transition struct {
	to pub.LifecycleStateType
	// addNotReady and liftNotReady are KruisePodReady reasons
	// (markPodNotReady) to record and to lift in the same write, so no
	// operator acting on the new state sees the pod still Ready.
	addNotReady, liftNotReady string
	// inPlaceDone sets InPlaceUpdateReady back to True: the pod's in-place
	// update is done.
	inPlaceDone bool
	// readd puts this hook's labels and finalizers back on the pod.
	readd *pub.LifecycleHook
	// specifiedDelete marks the pod apps.kruise.io/specified-delete, so
	// that it is replaced, never revived.
	specifiedDelete bool
	// disrupts is set when the move holds the pod for a disruption, which
	// the disruption check must allow first.
	disrupts disruption.Kind
}

// setState is the action that makes transition t of pod, written out in
// full: the state label and its timestamp, handlers put back, the
// KruisePodReady reasons, and in the same write any readiness-gate
// condition the pod still lacks or was left False by an in-place update
// that never started.
func setState(s Snapshot, pod *corev1.Pod, t transition, reason string) podlife.Action {
	a := podlife.SetState{Pod: pod, From: podfacts.State(pod), To: t.to, Disruption: t.disrupts, Reason: reason}
	var w podlife.PodWrite
	w.SetLabel(pub.LifecycleStateKey, string(t.to))
	w.SetAnnotation(pub.LifecycleTimestampKey, timestamp(s.Now))
	if t.specifiedDelete {
		w.SetLabel(appsv1alpha1.SpecifiedDeleteKey, "true")
	}
	if h := t.readd; h != nil {
		for k, v := range h.LabelsHandler {
			w.SetLabel(k, v)
		}
		for _, f := range h.FinalizersHandler {
			if !slices.Contains(pod.Finalizers, f) {
				w.AddFinalizers = append(w.AddFinalizers, f)
			}
		}
	}
	for _, c := range missingGateConditions(pod) {
		w.SetCondition(trueCondition(c, s.Now))
	}
	if (t.inPlaceDone || strandedNotReady(pod)) && podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		w.SetCondition(trueCondition(pub.InPlaceUpdateReady, s.Now))
	}
	if t.addNotReady != "" && !podfacts.HasReadinessGate(pod, pub.KruisePodReadyConditionType) {
		// Readiness gates are fixed at creation: a pod made before
		// markPodNotReady was set cannot be made NotReady. Say so where
		// the hook holds it, rather than leave it serving silently.
		a.Warnings = append(a.Warnings, podlife.Warning{Reason: "MarkPodNotReadyUnavailable", Message: fmt.Sprintf(
			"pod %s stays Ready in %s: it has no %s readiness gate (created before markPodNotReady was set); recreate it to get one",
			pod.Name, t.to, pub.KruisePodReadyConditionType)})
	}
	if c, changed := kruisePodReady(pod, t.liftNotReady, t.addNotReady, s.Now); changed {
		w.SetCondition(c)
	}
	a.Writes = []podlife.PodWrite{w}
	return a
}

// initPodReady is the action that sets a pod's readiness-gate conditions
// of types True.
func initPodReady(s Snapshot, pod *corev1.Pod, types []corev1.PodConditionType, reason string) podlife.Action {
	var w podlife.PodWrite
	for _, t := range types {
		w.SetCondition(trueCondition(t, s.Now))
	}
	return podlife.InitPodReady{Pod: pod, Conditions: types, Writes: []podlife.PodWrite{w}, Reason: reason}
}

func trueCondition(t corev1.PodConditionType, now time.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
}

// timestamp is how lifecycle and in-place timestamps are written: RFC 3339,
// to the second, as OpenKruise writes them.
func timestamp(t time.Time) string { return t.Format(time.RFC3339) }

// kruisePodReady is the pod's KruisePodReady condition with the NotReady
// reason lift lifted and add added (either may be empty): True when no
// reason is left. A pod without the gate is left alone, as the condition
// would not make it NotReady; changed is false when nothing changes.
func kruisePodReady(pod *corev1.Pod, lift, add string, now time.Time) (cond corev1.PodCondition, changed bool) {
	if (lift == "" && add == "") || !podfacts.HasReadinessGate(pod, pub.KruisePodReadyConditionType) {
		return cond, false
	}
	cond = corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue}
	missing := true
	for _, c := range pod.Status.Conditions {
		if c.Type == pub.KruisePodReadyConditionType {
			cond, missing = c, false
		}
	}
	message, status := cond.Message, cond.Status
	if lift != "" {
		if rest, held, found := lifecycle.RemoveNotReadyReason(message, pub.PodReadyUserAgentLifecycle, lift); found {
			message, status = rest, corev1.ConditionTrue
			if held {
				status = corev1.ConditionFalse
			}
		}
	}
	if add != "" {
		message, status = lifecycle.AddNotReadyReason(message, pub.PodReadyUserAgentLifecycle, add), corev1.ConditionFalse
	}
	if !missing && message == cond.Message && status == cond.Status {
		return cond, false
	}
	cond.Message, cond.Status, cond.LastTransitionTime = message, status, metav1.NewTime(now)
	return cond, true
}

// inPlaceWrites are the two writes of an in-place update of pod to
// revision rev. The first makes the pod NotReady through its
// InPlaceUpdateReady condition, so traffic leaves before any container
// restarts (left out when the pod has no such gate). The second changes
// the images (or, with a grace period, holds them in the grace annotation),
// the template's labels and annotations, the revision labels, the state
// Updating and the in-place update record against which completion is
// judged.
func inPlaceWrites(s Snapshot, pod *corev1.Pod, rev string, change *InPlaceChange) ([]podlife.PodWrite, error) {
	var writes []podlife.PodWrite
	if podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		writes = append(writes, podlife.PodWrite{Conditions: []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse,
			Reason: "StartInPlaceUpdate", LastTransitionTime: metav1.NewTime(s.Now)}}})
	}
	batch := batchOf(pod, change.Images)
	record := pub.InPlaceUpdateState{
		Revision: rev, UpdateTimestamp: metav1.NewTime(s.Now), UpdateImages: len(change.Images)+len(change.NextImages) > 0,
		LastContainerStatuses:  lastImageIDs(pod, batch, nil),
		NextContainerImages:    change.NextImages,
		ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(s.Now), Containers: batch}},
	}
	if len(record.NextContainerImages) > 0 {
		record.PreCheckBeforeNext = &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: batch}
	}
	state, err := json.Marshal(record)
	if err != nil {
		return nil, err
	}
	w := podlife.PodWrite{RemoveLabels: change.RemovedLabels}
	for k, v := range change.Labels {
		w.SetLabel(k, v)
	}
	w.SetLabel(appsv1.ControllerRevisionHashLabelKey, rev)
	w.SetLabel(appsv1.DefaultDeploymentUniqueLabelKey, revision.ShortHash(rev))
	w.SetLabel(pub.LifecycleStateKey, string(pub.LifecycleStateUpdating))
	for k, v := range change.Annotations {
		w.SetAnnotation(k, v)
	}
	w.RemoveAnnotations = slices.Clone(change.RemovedAnnotations)
	if _, ok := pod.Annotations[pub.InPlaceUpdateStateKeyLegacy]; ok {
		w.RemoveAnnotations = append(w.RemoveAnnotations, pub.InPlaceUpdateStateKeyLegacy)
	}
	w.SetAnnotation(pub.LifecycleTimestampKey, timestamp(s.Now))
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
	}
	return append(writes, w), nil
}

// nextBatchWrite applies the next container batch of an in-place update
// and records it in the update state; it rests on that state being what
// it rewrites.
func nextBatchWrite(s Snapshot, pod *corev1.Pod, st *pub.InPlaceUpdateState, change *InPlaceChange) (podlife.PodWrite, error) {
	old := pod.Annotations[pub.InPlaceUpdateStateKey]
	st = st.DeepCopy()
	batch := batchOf(pod, change.Images)
	st.LastContainerStatuses = lastImageIDs(pod, batch, st.LastContainerStatuses)
	st.NextContainerImages, st.PreCheckBeforeNext = change.NextImages, nil
	if len(st.NextContainerImages) > 0 {
		st.PreCheckBeforeNext = &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: batch}
	}
	st.ContainerBatchesRecord = append(st.ContainerBatchesRecord, pub.InPlaceUpdateContainerBatch{Timestamp: metav1.NewTime(s.Now), Containers: batch})
	data, err := json.Marshal(st)
	if err != nil {
		return podlife.PodWrite{}, err
	}
	return podlife.PodWrite{
		Images:            change.Images,
		Annotations:       map[string]string{pub.InPlaceUpdateStateKey: string(data)},
		ExpectAnnotations: map[string]string{pub.InPlaceUpdateStateKey: old},
	}, nil
}

// finishGraceWrite applies the images held back for an in-place update's
// grace period.
func finishGraceWrite(pod *corev1.Pod) podlife.PodWrite {
	return podlife.PodWrite{Images: podfacts.Grace(pod).ContainerImages, RemoveAnnotations: []string{pub.InPlaceUpdateGraceKey}}
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

// lastImageIDs records, over known, the image IDs the batch's containers
// run now, against which the kubelet's restart with the new image is
// recognised.
func lastImageIDs(pod *corev1.Pod, batch []string, known map[string]pub.InPlaceUpdateContainerStatus) map[string]pub.InPlaceUpdateContainerStatus {
	out := map[string]pub.InPlaceUpdateContainerStatus{}
	for k, v := range known {
		out[k] = v
	}
	for _, st := range pod.Status.ContainerStatuses {
		if slices.Contains(batch, st.Name) {
			out[st.Name] = pub.InPlaceUpdateContainerStatus{ImageID: st.ImageID}
		}
	}
	return out
}
