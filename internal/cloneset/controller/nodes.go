package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// nodeLabels reads the labels of the pods' nodes, which scale-in needs only
// when the template spreads pods over topology keys.
func (r *Reconciler) nodeLabels(ctx context.Context, cs *appsv1alpha1.CloneSet, pods []*corev1.Pod) (map[string]map[string]string, error) {
	if len(cs.Spec.Template.Spec.TopologySpreadConstraints) == 0 {
		return nil, nil
	}
	labels := map[string]map[string]string{}
	for _, pod := range pods {
		name := pod.Spec.NodeName
		if _, done := labels[name]; done || name == "" {
			continue
		}
		node := &corev1.Node{}
		if err := r.Get(ctx, client.ObjectKey{Name: name}, node); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		labels[name] = node.Labels
	}
	return labels, nil
}
