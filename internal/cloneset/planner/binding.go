package planner

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// BindingState decides whether the write that binds pod to a node should
// also move it from PreparingNormal to Normal, and to which state.
//
// A pod without a preNormal hook waits in PreparingNormal only until it is
// scheduled (OpenKruise v1.9). Since Kubernetes 1.35 the API server copies
// a pods/binding request's labels onto the pod in the bind itself, so the
// pod binding webhook adds the state label there and the transition costs
// no write. It applies only to a pod its CloneSet controls, still unbound,
// not being deleted, and in PreparingNormal; anything else (a pod the
// controller has since moved to PreparingDelete or Updating) is left to the
// controller, and the webhook makes the bind conditional on the pod's
// resourceVersion so a move it has not seen yet fails the bind instead of
// being overwritten.
func BindingState(cs *appsv1alpha1.CloneSet, pod *corev1.Pod) (pub.LifecycleStateType, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.UID != cs.UID || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return "", false
	}
	if podfacts.State(pod) != pub.LifecycleStatePreparingNormal {
		return "", false
	}
	if (podlife.Life{Lifecycle: cs.Spec.Lifecycle}).Hook(podlife.PreNormalHook) != nil {
		return "", false // the hook's handlers release it, scheduled or not
	}
	return pub.LifecycleStateNormal, true
}
