package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/diagnose"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// readObject reads the workload kind/name alone: what the rollout verbs
// need.
func (s *session) readObject(ctx context.Context, k workload.Kind, name string) (workload.View, client.Object, error) {
	obj := k.New()
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, obj); err != nil {
		return workload.View{}, nil, err
	}
	return k.Read(obj), obj, nil
}

// readWorkload reads the workload kind/name and everything its status
// view needs: its pods, the namespace's budgets, the events about them.
func (s *session) readWorkload(ctx context.Context, k workload.Kind, name string) (diagnose.Snapshot, error) {
	w, _, err := s.readObject(ctx, k, name)
	if err != nil {
		return diagnose.Snapshot{}, err
	}
	snap := diagnose.Snapshot{Now: s.now(), Workload: w}
	pods := &corev1.PodList{}
	if err := s.c.List(ctx, pods, client.InNamespace(s.namespace), client.MatchingLabelsSelector{Selector: w.LabelSelector()}); err != nil {
		return snap, err
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == w.UID {
			snap.Pods = append(snap.Pods, p)
		}
	}
	if snap.Budgets, err = s.budgets(ctx); err != nil {
		return snap, err
	}
	events, err := s.events(ctx)
	if err != nil {
		return snap, err
	}
	refs := map[string]bool{w.Kind.Name + "/" + w.Name: true}
	for _, p := range snap.Pods {
		refs["Pod/"+p.Name] = true
	}
	for _, e := range events {
		if refs[e.Regarding] || refs[e.Related] {
			snap.Events = append(snap.Events, e)
		}
	}
	return snap, nil
}

// budgets lists the namespace's PodUnavailableBudgets; none when the CRD
// is not installed.
func (s *session) budgets(ctx context.Context) ([]policyv1beta1.PodUnavailableBudget, error) {
	l := &policyv1beta1.PodUnavailableBudgetList{}
	if err := s.c.List(ctx, l, client.InNamespace(s.namespace)); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list PodUnavailableBudgets: %w", err)
	}
	return l.Items, nil
}

// states lists the namespace's PersistentPodStates; none when the CRD is
// not installed.
func (s *session) states(ctx context.Context) ([]appsv1beta1.PersistentPodState, error) {
	l := &appsv1beta1.PersistentPodStateList{}
	if err := s.c.List(ctx, l, client.InNamespace(s.namespace)); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list PersistentPodStates: %w", err)
	}
	return l.Items, nil
}

// events lists the namespace's events. The core API serves events written
// through either events API, with the regarding object as involvedObject.
func (s *session) events(ctx context.Context) ([]diagnose.Event, error) {
	l := &corev1.EventList{}
	if err := s.c.List(ctx, l, client.InNamespace(s.namespace)); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]diagnose.Event, 0, len(l.Items))
	for _, e := range l.Items {
		ev := diagnose.Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count,
			Regarding: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, Time: eventTime(&e)}
		if e.Related != nil {
			ev.Related = e.Related.Kind + "/" + e.Related.Name
		}
		if e.Series != nil && e.Series.Count > ev.Count {
			ev.Count = e.Series.Count
		}
		out = append(out, ev)
	}
	return out, nil
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// ownerOf is the workload a pod belongs to: its controller, a Deployment
// for a ReplicaSet's pod (the ReplicaSet's name is the Deployment's and
// the pod-template-hash).
func ownerOf(pod *corev1.Pod) diagnose.OwnerRef {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return diagnose.OwnerRef{}
	}
	if ref.Kind == "ReplicaSet" {
		if h := pod.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(ref.Name, "-"+h) {
			return diagnose.OwnerRef{Kind: "Deployment", Name: strings.TrimSuffix(ref.Name, "-"+h)}
		}
	}
	return diagnose.OwnerRef{Kind: ref.Kind, Name: ref.Name}
}

// ownerKind is the plugin's kind of a pod's controller, if it is one of
// the workloads the plugin knows.
func ownerKind(pod *corev1.Pod) (workload.Kind, string, bool) {
	ref := metav1.GetControllerOf(pod)
	k, ok := workload.ForOwner(ref)
	if !ok {
		return workload.Kind{}, "", false
	}
	return k, ref.Name, true
}
