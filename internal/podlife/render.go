package podlife

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/pkg/podpatch"
)

// Render turns a planned write into the JSON patch that makes it, guarded
// by the labels and finalizers the plan saw (and by any annotation the
// write says it rests on). It decides nothing: everything it writes is in
// w. Map entries go in key order, so the same write renders the same
// patch.
func (w PodWrite) Render(pod *corev1.Pod) *podpatch.Patch {
	p := podpatch.New(pod, true)
	for _, k := range slices.Sorted(maps.Keys(w.ExpectAnnotations)) {
		p.Test(podpatch.Pointer("metadata", "annotations", k), w.ExpectAnnotations[k])
	}
	for i, cs := range pod.Status.ContainerStatuses {
		if id, ok := w.ExpectContainerIDs[cs.Name]; ok {
			p.Test(podpatch.Pointer("status", "containerStatuses", strconv.Itoa(i), "containerID"), id)
		}
	}
	if len(w.Labels) > 0 || len(w.RemoveLabels) > 0 {
		p.SetLabels(w.Labels, w.RemoveLabels...)
	}
	for _, k := range slices.Sorted(maps.Keys(w.Annotations)) {
		p.SetAnnotation(k, w.Annotations[k])
	}
	for _, k := range w.RemoveAnnotations {
		p.RemoveAnnotation(k)
	}
	if len(w.AddFinalizers) > 0 {
		p.AddFinalizers(w.AddFinalizers)
	}
	for i, c := range pod.Spec.Containers {
		if image, ok := w.Images[c.Name]; ok {
			p.SetImage(i, c.Name, image)
		}
	}
	for _, c := range w.Conditions {
		p.SetCondition(c)
	}
	return p
}
