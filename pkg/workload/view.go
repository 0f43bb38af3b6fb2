package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// View is what every part of Lifeline reads of a workload, whatever its
// kind: a rollout of pods to a revision, with a partition, a
// maxUnavailable and lifecycle hooks.
type View struct {
	Kind Kind
	// Object is the workload as read, of Kind.New's type.
	Object                    client.Object
	Namespace, Name           string
	UID                       types.UID
	Generation                int64
	Deleting                  bool
	Annotations, ObjectLabels map[string]string
	// Replicas is how many pods the workload wants (a DaemonSet: the nodes
	// that should run one).
	Replicas int32
	// Partition is how many pods stay at the old revision; MaxUnavailable
	// how many may be unavailable at once during the update.
	Partition, MaxUnavailable int32
	Paused                    bool
	// Strategy is the update type: ReCreate, InPlaceIfPossible, InPlaceOnly,
	// RollingUpdate, OnDelete (with the pod update policy: RollingUpdate/InPlaceIfPossible).
	Strategy        string
	MinReadySeconds int32
	Lifecycle       *pub.Lifecycle
	Selector        *metav1.LabelSelector
	Template        *corev1.PodTemplateSpec
	Status          Status
	Conditions      []Condition
}

// Status is the workload's own report, as its controller last wrote it.
type Status struct {
	ObservedGeneration                                                  int64
	Replicas, Ready, Available, Updated, UpdatedReady, UpdatedAvailable int32
	UpdateRevision, CurrentRevision                                     string
}

// Condition is a workload condition, whatever its kind's condition type.
type Condition struct {
	Type, Status, Reason, Message string
	LastTransition                metav1.Time
}

// Ref is the workload as the plugin's resource argument: clone/NAME.
func (v View) Ref() string { return v.Kind.Short + "/" + v.Name }

// LabelSelector is the selector parsed; Nothing when absent or malformed.
func (v View) LabelSelector() labels.Selector {
	if v.Selector == nil {
		return labels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(v.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// Controls reports whether pod is one of the workload's: its controller
// reference names the workload's UID.
func (v View) Controls(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == v.UID
}

func newView(o client.Object, replicas *int32, sel *metav1.LabelSelector) View {
	return View{Object: o, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), Generation: o.GetGeneration(),
		Deleting: o.GetDeletionTimestamp() != nil, Annotations: o.GetAnnotations(), ObjectLabels: o.GetLabels(),
		Replicas: ptr.Deref(replicas, 1), Selector: sel}
}

// scaled resolves an int-or-percent against total, or def when unset or
// malformed (the webhooks refuse malformed values; a view need not fail).
func scaled(v *intstr.IntOrString, total int32, roundUp bool, def int32) int32 {
	if v == nil {
		return def
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(total), roundUp)
	if err != nil {
		return def
	}
	return int32(n)
}
