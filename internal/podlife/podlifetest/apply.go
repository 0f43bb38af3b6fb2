// Package podlifetest helps the workloads' planner models: it does to a
// model pod what the API server does with the executor's rendering of a
// plan's writes.
package podlifetest

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// Apply makes writes on p as the API server would: labels and
// annotations set and removed, finalizers added, images changed, and
// conditions set whole.
func Apply(p *corev1.Pod, writes ...podlife.PodWrite) {
	for _, w := range writes {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for k, v := range w.Labels {
			p.Labels[k] = v
		}
		for _, k := range w.RemoveLabels {
			delete(p.Labels, k)
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for k, v := range w.Annotations {
			p.Annotations[k] = v
		}
		for _, k := range w.RemoveAnnotations {
			delete(p.Annotations, k)
		}
		for _, f := range w.AddFinalizers {
			if !slices.Contains(p.Finalizers, f) {
				p.Finalizers = append(p.Finalizers, f)
			}
		}
		for i, c := range p.Spec.Containers {
			if image, ok := w.Images[c.Name]; ok {
				p.Spec.Containers[i].Image = image
			}
		}
		for _, c := range w.Conditions {
			i := slices.IndexFunc(p.Status.Conditions, func(old corev1.PodCondition) bool { return old.Type == c.Type })
			if i < 0 {
				p.Status.Conditions = append(p.Status.Conditions, c)
			} else {
				p.Status.Conditions[i] = c
			}
		}
	}
}
