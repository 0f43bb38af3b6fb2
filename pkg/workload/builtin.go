package workload

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// The kinds of apps.kruise.io, registered first, read in v1beta1, the
// version OpenKruise v1.9 stores (no conversion on the API server's side).
var (
	CloneSet = mustRegister(Kind{Group: appsv1beta1.GroupVersion.Group, Name: "CloneSet", Resource: "clonesets", Short: "clone",
		Version: "v1beta1", Served: []string{"v1alpha1", "v1beta1"}, Scale: true, OwnsPods: true,
		PausedPath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"},
		New:        func() client.Object { return &appsv1beta1.CloneSet{} }, NewList: func() client.ObjectList { return &appsv1beta1.CloneSetList{} },
		Read: func(o client.Object) View { return fromCloneSet(o.(*appsv1beta1.CloneSet)) }})
	// StatefulSet is the Advanced StatefulSet (not apps/v1's, which has
	// no lifecycle hooks).
	StatefulSet = mustRegister(Kind{Group: appsv1beta1.GroupVersion.Group, Name: "StatefulSet", Resource: "statefulsets", Short: "asts",
		Version: "v1beta1", Served: []string{"v1alpha1", "v1beta1"}, Scale: true, OwnsPods: true,
		PausedPath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"},
		New:        func() client.Object { return &appsv1beta1.StatefulSet{} }, NewList: func() client.ObjectList { return &appsv1beta1.StatefulSetList{} },
		Read: func(o client.Object) View { return fromStatefulSet(o.(*appsv1beta1.StatefulSet)) }})
	// DaemonSet is the Advanced DaemonSet. Its pods have the preDelete hook
	// only, and it has no scale subresource: it wants a pod on each node
	// that should run one.
	DaemonSet = mustRegister(Kind{Group: appsv1beta1.GroupVersion.Group, Name: "DaemonSet", Resource: "daemonsets", Short: "ads",
		Version: "v1beta1", Served: []string{"v1alpha1", "v1beta1"}, OwnsPods: true,
		PausedPath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"},
		New:        func() client.Object { return &appsv1beta1.DaemonSet{} }, NewList: func() client.ObjectList { return &appsv1beta1.DaemonSetList{} },
		Read: func(o client.Object) View { return fromDaemonSet(o.(*appsv1beta1.DaemonSet)) }})
)

func mustRegister(k Kind) Kind {
	k, err := Register(k)
	if err != nil {
		panic(err)
	}
	return k
}

func fromCloneSet(cs *appsv1beta1.CloneSet) View {
	v := newView(cs, cs.Spec.Replicas, cs.Spec.Selector)
	v.Template, v.Lifecycle, v.MinReadySeconds = &cs.Spec.Template, cs.Spec.Lifecycle, cs.Spec.MinReadySeconds
	v.Strategy = string(cs.Spec.UpdateStrategy.Type)
	if v.Strategy == "" {
		v.Strategy = "RollingUpdate"
	}
	u := cs.Spec.UpdateStrategy.RollingUpdate
	if u == nil {
		u = &appsv1beta1.RollingUpdateCloneSetStrategy{}
	}
	v.Paused = u.Paused
	if u.PodUpdatePolicy != "" {
		v.Strategy += "/" + string(u.PodUpdatePolicy)
	}
	v.Partition = scaled(u.Partition, v.Replicas, true, 0)
	v.MaxUnavailable = scaled(u.MaxUnavailable, v.Replicas, false, scaled(ptr.To(intstr.FromString("20%")), v.Replicas, false, 0))
	if v.MaxUnavailable == 0 && scaled(u.MaxSurge, v.Replicas, true, 0) == 0 {
		v.MaxUnavailable = 1
	}
	st := cs.Status
	v.Status = Status{ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, Ready: st.ReadyReplicas,
		Available: st.AvailableReplicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
		UpdatedAvailable: st.UpdatedAvailableReplicas, UpdateRevision: st.UpdateRevision, CurrentRevision: st.CurrentRevision}
	for _, c := range st.Conditions {
		v.Conditions = append(v.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime})
	}
	return v
}

func fromStatefulSet(s *appsv1beta1.StatefulSet) View {
	v := newView(s, s.Spec.Replicas, s.Spec.Selector)
	v.Template, v.Lifecycle = &s.Spec.Template, s.Spec.Lifecycle
	v.Strategy, v.MaxUnavailable = string(s.Spec.UpdateStrategy.Type), 1
	if v.Strategy == "" {
		v.Strategy = "RollingUpdate"
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		v.Partition, v.Paused = ptr.Deref(ru.Partition, 0), ru.Paused
		v.MaxUnavailable = max(scaled(ru.MaxUnavailable, v.Replicas, false, 1), 1)
		v.MinReadySeconds = ptr.Deref(ru.MinReadySeconds, 0)
		if ru.PodUpdatePolicy != "" {
			v.Strategy += "/" + string(ru.PodUpdatePolicy)
		}
	}
	st := s.Status
	v.Status = Status{ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, Ready: st.ReadyReplicas,
		Available: st.AvailableReplicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
		UpdatedAvailable: st.UpdatedAvailableReplicas, UpdateRevision: st.UpdateRevision, CurrentRevision: st.CurrentRevision}
	for _, c := range st.Conditions {
		v.Conditions = append(v.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime})
	}
	return v
}

// fromDaemonSet: its replicas are the nodes that should run a pod.
func fromDaemonSet(d *appsv1beta1.DaemonSet) View {
	v := newView(d, ptr.To(d.Status.DesiredNumberScheduled), d.Spec.Selector)
	v.Template, v.Lifecycle, v.MinReadySeconds = &d.Spec.Template, d.Spec.Lifecycle, d.Spec.MinReadySeconds
	v.Strategy, v.MaxUnavailable = string(d.Spec.UpdateStrategy.Type), 1
	if v.Strategy == "" {
		v.Strategy = "RollingUpdate"
	}
	if ru := d.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		v.Partition = scaled(ru.Partition, v.Replicas, false, 0)
		v.Paused = ptr.Deref(ru.Paused, false)
		v.MaxUnavailable = scaled(ru.MaxUnavailable, v.Replicas, true, 1)
		if ru.Type != "" {
			v.Strategy += "/" + string(ru.Type)
		}
	}
	st := d.Status
	v.Status = Status{ObservedGeneration: st.ObservedGeneration, Replicas: st.CurrentNumberScheduled, Ready: st.NumberReady,
		Available: st.NumberAvailable, Updated: st.UpdatedNumberScheduled, UpdateRevision: st.UpdateRevision}
	for _, c := range st.Conditions {
		v.Conditions = append(v.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime})
	}
	return v
}
