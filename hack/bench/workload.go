package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// workload is a suite's object in its namespace: the same template,
// rollout budget (maxUnavailable 20%, no surge; 1 for an OrderedReady
// StatefulSet, which an Advanced StatefulSet requires) and image change
// whatever the kind.
type workload struct {
	suite
	ns string
	// name is the object's, and its pods' app label; "bench" when empty.
	name string
}

func (w workload) meta() metav1.ObjectMeta {
	if w.name == "" {
		w.name = "bench"
	}
	return metav1.ObjectMeta{Namespace: w.ns, Name: w.name}
}

func (w workload) labels() map[string]string { return map[string]string{"app": w.meta().Name} }

func (w workload) maxUnavailable() intstr.IntOrString {
	switch {
	case w.ordered:
		return intstr.FromInt32(1)
	case w.narrow:
		return intstr.FromInt32(narrowWindow)
	}
	return intstr.FromString("20%")
}

func (w workload) policy() appsv1.PodManagementPolicyType {
	if w.ordered {
		return appsv1.OrderedReadyPodManagement
	}
	return appsv1.ParallelPodManagement
}

func (w workload) create(ctx context.Context, k8s ctrlclient.Client, replicas int32) error {
	labels := w.labels()
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: w.labels()},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
	twenty := w.maxUnavailable()
	zero := intstr.FromInt32(0)
	meta := w.meta()
	selector := &metav1.LabelSelector{MatchLabels: labels}
	switch w.workload {
	case "Deployment":
		return k8s.Create(ctx, &appsv1.Deployment{ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: selector, Template: tmpl,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &twenty, MaxSurge: &zero}}}})
	case "StatefulSet":
		return k8s.Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: selector, Template: tmpl, ServiceName: "bench",
				PodManagementPolicy: w.policy(),
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &twenty}}}})
	}
	if w.gate {
		// As OpenKruise's in-place documentation has users write it.
		tmpl.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	}
	if w.workload == "AdvancedStatefulSet" {
		policy := appsv1beta1.RecreatePodUpdateStrategyType
		if w.inPlace {
			policy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
		}
		return k8s.Create(ctx, &appsv1beta1.StatefulSet{ObjectMeta: meta,
			Spec: appsv1beta1.StatefulSetSpec{Replicas: &replicas, Selector: selector, Template: tmpl, ServiceName: "bench", PodManagementPolicy: w.policy(),
				UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &twenty, PodUpdatePolicy: policy}}}})
	}
	strategy := appsv1alpha1.CloneSetUpdateStrategy{MaxUnavailable: &twenty, MaxSurge: &zero}
	if w.inPlace {
		strategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	}
	return k8s.Create(ctx, &appsv1alpha1.CloneSet{ObjectMeta: meta,
		Spec: appsv1alpha1.CloneSetSpec{Replicas: &replicas, Selector: selector, Template: tmpl, UpdateStrategy: strategy}})
}

func (w workload) object() ctrlclient.Object {
	meta := w.meta()
	switch w.workload {
	case "Deployment":
		return &appsv1.Deployment{ObjectMeta: meta}
	case "StatefulSet":
		return &appsv1.StatefulSet{ObjectMeta: meta}
	case "AdvancedStatefulSet":
		return &appsv1beta1.StatefulSet{ObjectMeta: meta}
	case "DaemonSet":
		return &appsv1.DaemonSet{ObjectMeta: meta}
	case "AdvancedDaemonSet":
		return &appsv1beta1.DaemonSet{ObjectMeta: meta}
	}
	return &appsv1alpha1.CloneSet{ObjectMeta: meta}
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
// other pod of the workload's is left in the namespace.
func (w workload) settled(ctx context.Context, k8s ctrlclient.Client, replicas int32) (bool, error) {
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
	case *appsv1.StatefulSet:
		s := o.Status
		if s.ObservedGeneration != o.Generation || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas ||
			s.CurrentRevision != s.UpdateRevision {
			return false, nil
		}
	case *appsv1beta1.StatefulSet:
		s := o.Status
		if s.ObservedGeneration != o.Generation || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas ||
			s.CurrentRevision != s.UpdateRevision {
			return false, nil
		}
	case *appsv1alpha1.CloneSet:
		s := o.Status
		if s.ObservedGeneration != o.Generation || s.UpdatedAvailableReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas {
			return false, nil
		}
	}
	list := &corev1.PodList{}
	if err := k8s.List(ctx, list, ctrlclient.InNamespace(w.ns), ctrlclient.MatchingLabels(w.labels())); err != nil {
		return false, nil
	}
	return len(list.Items) == int(replicas), nil
}

// budgets puts each of ws under a budget of maxUnavailable 20% before the
// scale-up: a PodDisruptionBudget for a native kind, a PodUnavailableBudget
// for Lifeline's.
func (b *bench) budgets(ctx context.Context, ws []workload) error {
	twenty := intstr.FromString("20%")
	for _, w := range ws {
		selector := &metav1.LabelSelector{MatchLabels: w.labels()}
		var obj ctrlclient.Object = &policyv1alpha1.PodUnavailableBudget{ObjectMeta: w.meta(),
			Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: selector, MaxUnavailable: &twenty}}
		if w.implementation == "Kubernetes" {
			obj = &policyv1.PodDisruptionBudget{ObjectMeta: w.meta(), Spec: policyv1.PodDisruptionBudgetSpec{Selector: selector, MaxUnavailable: &twenty}}
		}
		if err := b.k8s.Create(ctx, obj); err != nil {
			return fmt.Errorf("budget of %s: %w", w.meta().Name, err)
		}
	}
	return nil
}
