package main

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

type workload struct{ kind, ns string }

// gateDeclared marks the CloneSet kinds whose template declares the
// InPlaceUpdateReady readiness gate itself.
const gateDeclared = "gate declared"

func (w workload) create(ctx context.Context, k8s ctrlclient.Client, replicas int32) error {
	labels := map[string]string{"app": "bench"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
	twenty := intstr.FromString("20%")
	zero := intstr.FromInt32(0)
	if w.kind == "Deployment" {
		return k8s.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &twenty, MaxSurge: &zero}}},
		})
	}
	strategy := appsv1alpha1.CloneSetUpdateStrategy{MaxUnavailable: &twenty, MaxSurge: &zero}
	if strings.Contains(w.kind, "in-place") {
		strategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	}
	if strings.Contains(w.kind, gateDeclared) {
		// As OpenKruise's in-place documentation has users write it.
		tmpl.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	}
	return k8s.Create(ctx, &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"},
		Spec:       appsv1alpha1.CloneSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl, UpdateStrategy: strategy},
	})
}

func (w workload) object() ctrlclient.Object {
	if w.kind == "Deployment" {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"}}
	}
	return &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"}}
}

func (w workload) patch(ctx context.Context, k8s ctrlclient.Client, patch string) error {
	return k8s.Patch(ctx, w.object(), ctrlclient.RawPatch("application/merge-patch+json", []byte(patch)))
}

func (w workload) setImage(ctx context.Context, k8s ctrlclient.Client, image string) error {
	return w.patch(ctx, k8s, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q}]}}}}`, image))
}

func (w workload) scale(ctx context.Context, k8s ctrlclient.Client, replicas int32) error {
	return w.patch(ctx, k8s, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
}

// settled: the status says every pod is updated and available, and no
// other pod is left in the namespace.
func (w workload) settled(ctx context.Context, k8s ctrlclient.Client, b *bench, replicas int32) (bool, error) {
	obj := w.object()
	if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
		return false, nil
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		s := o.Status
		if s.ObservedGeneration != o.Generation || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas {
			return false, nil
		}
	case *appsv1alpha1.CloneSet:
		s := o.Status
		if s.ObservedGeneration != o.Generation || s.UpdatedAvailableReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas {
			return false, nil
		}
	}
	list := &corev1.PodList{}
	if err := k8s.List(ctx, list, ctrlclient.InNamespace(w.ns)); err != nil {
		return false, nil
	}
	return len(list.Items) == int(replicas), nil
}
