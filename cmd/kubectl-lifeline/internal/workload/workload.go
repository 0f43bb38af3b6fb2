// Package workload reads CloneSets, Advanced StatefulSets and Advanced
// DaemonSets as one kind of thing: a rollout of pods to a revision, with a
// partition, a maxUnavailable and lifecycle hooks. Every view of the plugin
// asks its questions of a Rollout, so the three kinds share them.
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
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// Kind is one of the workloads the plugin knows, with what its verbs need
// that differs by kind.
type Kind struct {
	// Name is the API kind; Short the name in resource arguments and
	// suggested commands (clone/NAME).
	Name, Short string
	// PausedPath is where the rollout's pause flag lives in the spec.
	PausedPath []string
	// New returns an empty object of the kind, to read into.
	New func() client.Object
	// Read makes the Rollout of an object read into New's result.
	Read func(client.Object) Rollout
}

// Kinds are the workloads the plugin knows, by API kind.
var Kinds = map[string]Kind{
	"CloneSet": {Name: "CloneSet", Short: "clone", PausedPath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"},
		New: func() client.Object { return &appsv1beta1.CloneSet{} }, Read: func(o client.Object) Rollout { return FromCloneSet(o.(*appsv1beta1.CloneSet)) }},
	"StatefulSet": {Name: "StatefulSet", Short: "asts", PausedPath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"},
		New: func() client.Object { return &appsv1beta1.StatefulSet{} }, Read: func(o client.Object) Rollout { return FromStatefulSet(o.(*appsv1beta1.StatefulSet)) }},
	"DaemonSet": {Name: "DaemonSet", Short: "ads", PausedPath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"},
		New: func() client.Object { return &appsv1beta1.DaemonSet{} }, Read: func(o client.Object) Rollout { return FromDaemonSet(o.(*appsv1beta1.DaemonSet)) }},
}

// Rollout is what every view reads of a workload.
type Rollout struct {
	Kind, Short, Namespace, Name string
	UID                          types.UID
	Generation                   int64
	// Replicas is how many pods the workload wants (a DaemonSet: the nodes
	// that should run one).
	Replicas int32
	// Partition is how many pods stay at the old revision; MaxUnavailable
	// how many may be unavailable at once during the update.
	Partition, MaxUnavailable int32
	Paused                    bool
	// Strategy is the update type: ReCreate, InPlaceIfPossible, InPlaceOnly,
	// RollingUpdate, OnDelete.
	Strategy        string
	MinReadySeconds int32
	Lifecycle       *pub.Lifecycle
	Selector        labels.Selector
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

// Ref is the rollout as a resource argument: clone/NAME.
func (r Rollout) Ref() string { return r.Short + "/" + r.Name }

// FromCloneSet reads a CloneSet.
func FromCloneSet(cs *appsv1beta1.CloneSet) Rollout {
	r := base(cs, "CloneSet", "clone", cs.Spec.Replicas, cs.Spec.Selector)
	r.Template, r.Lifecycle, r.MinReadySeconds = &cs.Spec.Template, cs.Spec.Lifecycle, cs.Spec.MinReadySeconds
	r.Strategy = string(cs.Spec.UpdateStrategy.Type)
	if r.Strategy == "" {
		r.Strategy = "RollingUpdate"
	}
	u := cs.Spec.UpdateStrategy.RollingUpdate
	if u == nil {
		u = &appsv1beta1.RollingUpdateCloneSetStrategy{}
	}
	r.Paused = u.Paused
	if u.PodUpdatePolicy != "" {
		r.Strategy += "/" + string(u.PodUpdatePolicy)
	}
	r.Partition = scaled(u.Partition, r.Replicas, true, 0)
	r.MaxUnavailable = scaled(u.MaxUnavailable, r.Replicas, false, scaledDefault("20%", r.Replicas))
	if r.MaxUnavailable == 0 && scaled(u.MaxSurge, r.Replicas, true, 0) == 0 {
		r.MaxUnavailable = 1
	}
	st := cs.Status
	r.Status = Status{ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, Ready: st.ReadyReplicas,
		Available: st.AvailableReplicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
		UpdatedAvailable: st.UpdatedAvailableReplicas, UpdateRevision: st.UpdateRevision, CurrentRevision: st.CurrentRevision}
	for _, c := range st.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime})
	}
	return r
}

// FromStatefulSet reads an Advanced StatefulSet.
func FromStatefulSet(s *appsv1beta1.StatefulSet) Rollout {
	r := base(s, "StatefulSet", "asts", s.Spec.Replicas, s.Spec.Selector)
	r.Template, r.Lifecycle = &s.Spec.Template, s.Spec.Lifecycle
	r.Strategy, r.MaxUnavailable = string(s.Spec.UpdateStrategy.Type), 1
	if r.Strategy == "" {
		r.Strategy = "RollingUpdate"
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		r.Partition, r.Paused = ptr.Deref(ru.Partition, 0), ru.Paused
		r.MaxUnavailable = max(scaled(ru.MaxUnavailable, r.Replicas, false, 1), 1)
		r.MinReadySeconds = ptr.Deref(ru.MinReadySeconds, 0)
		if ru.PodUpdatePolicy != "" {
			r.Strategy += "/" + string(ru.PodUpdatePolicy)
		}
	}
	st := s.Status
	r.Status = Status{ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, Ready: st.ReadyReplicas,
		Available: st.AvailableReplicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
		UpdatedAvailable: st.UpdatedAvailableReplicas, UpdateRevision: st.UpdateRevision, CurrentRevision: st.CurrentRevision}
	for _, c := range st.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime})
	}
	return r
}

// FromDaemonSet reads an Advanced DaemonSet; its replicas are the nodes
// that should run a pod.
func FromDaemonSet(d *appsv1beta1.DaemonSet) Rollout {
	r := base(d, "DaemonSet", "ads", ptr.To(d.Status.DesiredNumberScheduled), d.Spec.Selector)
	r.Template, r.Lifecycle, r.MinReadySeconds = &d.Spec.Template, d.Spec.Lifecycle, d.Spec.MinReadySeconds
	r.Strategy, r.MaxUnavailable = string(d.Spec.UpdateStrategy.Type), 1
	if r.Strategy == "" {
		r.Strategy = "RollingUpdate"
	}
	if ru := d.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		r.Partition = scaled(ru.Partition, r.Replicas, false, 0)
		r.Paused = ptr.Deref(ru.Paused, false)
		r.MaxUnavailable = scaled(ru.MaxUnavailable, r.Replicas, true, 1)
		if ru.Type != "" {
			r.Strategy += "/" + string(ru.Type)
		}
	}
	st := d.Status
	r.Status = Status{ObservedGeneration: st.ObservedGeneration, Replicas: st.CurrentNumberScheduled, Ready: st.NumberReady,
		Available: st.NumberAvailable, Updated: st.UpdatedNumberScheduled, UpdateRevision: st.UpdateRevision}
	for _, c := range st.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime})
	}
	return r
}

func base(o client.Object, kind, short string, replicas *int32, sel *metav1.LabelSelector) Rollout {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || sel == nil {
		s = labels.Nothing()
	}
	return Rollout{Kind: kind, Short: short, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(),
		Generation: o.GetGeneration(), Replicas: ptr.Deref(replicas, 1), Selector: s}
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

func scaledDefault(v string, total int32) int32 {
	return scaled(ptr.To(intstr.FromString(v)), total, false, 0)
}
