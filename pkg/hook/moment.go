package hook

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Moment is a point in a workload pod's life at which a hook operator acts.
type Moment string

const (
	// BeforeNormal: the pod is Ready and waits in PreparingNormal for the
	// preNormal hook's handlers (seed 002). The handler registers it; the
	// SDK then puts the handlers on, and the pod becomes Normal, available.
	BeforeNormal Moment = "BeforeNormal"
	// Registered: the pod is Normal and Ready and was never registered (a
	// new pod of a CloneSet without a preNormal hook, seed 001's
	// newly-created pod), or was taken out of service before and is back
	// without an AfterUpdate (a rollback, a pod kept after all).
	Registered Moment = "Registered"
	// BeforeUpdate: the pod waits in PreparingUpdate for the inPlaceUpdate
	// hook. The handler unregisters it; the SDK then takes the handlers
	// off and the update goes ahead.
	BeforeUpdate Moment = "BeforeUpdate"
	// AfterUpdate: the pod is Updated and Ready. The handler registers it
	// again; the SDK then puts the inPlaceUpdate handlers back and the pod
	// becomes Normal.
	AfterUpdate Moment = "AfterUpdate"
	// BeforeDelete: the pod waits in PreparingDelete for the preDelete
	// hook. The handler unregisters it; the SDK then takes the handlers
	// off and the pod is deleted.
	BeforeDelete Moment = "BeforeDelete"
)

// Moments are all moments, in the order of a pod's life.
var Moments = []Moment{BeforeNormal, Registered, BeforeUpdate, AfterUpdate, BeforeDelete}

// InService reports whether a pod is in service once moment m is done:
// registered (BeforeNormal, Registered, AfterUpdate), not taken out
// (BeforeUpdate, BeforeDelete).
func (m Moment) InService() bool {
	return m == BeforeNormal || m == Registered || m == AfterUpdate
}

// Handler does what an operator does at a moment (register a pod, drain
// it, ...). Returning nil completes the moment: the SDK releases the hook.
// An error leaves the hook held; the SDK calls again, with backoff.
//
// A handler may be called more than once for one pod and moment: when the
// process stops after the handler returned and before the SDK recorded it,
// the next process calls again. Event.Key is the same on every such call,
// so the outside system can tell it is a repeat.
type Handler func(ctx context.Context, e Event) error

// Handlers are an operator's handlers, one per moment. A nil handler does
// nothing, and the SDK still releases the hook at its moment, so an
// operator that only drains before deletion still lets pods become Normal
// and finish their updates.
type Handlers struct {
	BeforeNormal, Registered, BeforeUpdate, AfterUpdate, BeforeDelete Handler
}

func (h Handlers) of(m Moment) Handler {
	switch m {
	case BeforeNormal:
		return h.BeforeNormal
	case Registered:
		return h.Registered
	case BeforeUpdate:
		return h.BeforeUpdate
	case AfterUpdate:
		return h.AfterUpdate
	case BeforeDelete:
		return h.BeforeDelete
	}
	return nil
}

// Event is one call of a handler.
type Event struct {
	Moment Moment
	Pod    *corev1.Pod
	// Workload is the workload controlling the pod, whatever its kind.
	Workload Workload
	// CloneSet is the pod's CloneSet when the workload is one, else nil.
	CloneSet *appsv1beta1.CloneSet
	// Revision is the pod's revision (its controller-revision-hash): the
	// one it leaves at BeforeUpdate, the one it runs at AfterUpdate.
	Revision string
	// Key names this pod, moment and revision, the same on every call for
	// them: an idempotency key for the outside system.
	Key string
}

// step is what the operator does for a pod now: call the handler of
// moment, then write the release, with the record of the moment.
type step struct {
	moment   Moment
	revision string
	// since is when the moment became due, for the timeout.
	since time.Time
	// setLabels, removeLabels, addFinalizers and removeFinalizers release
	// the hook (or put its handlers back, whichever lets the pod go on).
	setLabels                       map[string]string
	removeLabels                    []string
	addFinalizers, removeFinalizers []string
}

// due decides which moment, if any, is due for pod now, given the hooks
// this operator handles and what it recorded on the pod last. It is pure:
// the whole hook protocol of the seeds is here.
func due(pod *corev1.Pod, hooks *pub.Lifecycle, last *record, now time.Time) (step, bool) {
	if pod.DeletionTimestamp != nil {
		return step{}, false
	}
	if hooks == nil {
		hooks = &pub.Lifecycle{}
	}
	rev := podRevision(pod)
	ready := podfacts.IsReady(pod, 0, now)
	since := podfacts.StateSince(pod)
	var s step
	switch podfacts.State(pod) {
	case pub.LifecycleStatePreparingNormal:
		if hooks.PreNormal == nil || !ready || lifecycle.IsAllHooked(hooks.PreNormal, pod) {
			return step{}, false
		}
		s = putBack(hooks.PreNormal, pod)
		s.moment = BeforeNormal
	case pub.LifecycleStatePreparingUpdate:
		if !lifecycle.IsHooked(hooks.InPlaceUpdate, pod) {
			return step{}, false
		}
		s = takeOff(hooks.InPlaceUpdate, pod)
		s.moment = BeforeUpdate
	case pub.LifecycleStateUpdated:
		if hooks.InPlaceUpdate == nil || !ready || lifecycle.IsAllHooked(hooks.InPlaceUpdate, pod) {
			return step{}, false
		}
		s = putBack(hooks.InPlaceUpdate, pod)
		s.moment = AfterUpdate
	case pub.LifecycleStatePreparingDelete:
		if !lifecycle.IsHooked(hooks.PreDelete, pod) {
			return step{}, false
		}
		s = takeOff(hooks.PreDelete, pod)
		s.moment = BeforeDelete
	case "", pub.LifecycleStateNormal:
		if !ready || (last != nil && last.Moment.InService()) {
			return step{}, false
		}
		s.moment = Registered
		if r := podfacts.ReadySince(pod); r.After(since) {
			since = r
		}
	default:
		return step{}, false
	}
	s.revision, s.since = rev, since
	return s, true
}

// takeOff releases a hook that holds a pod while any handler is on it:
// every handler finalizer goes, and every handler label the pod carries
// with the hook's value goes too, or turns "false" where the value is
// "true", as OpenKruise's own samples flip them.
func takeOff(hook *pub.LifecycleHook, pod *corev1.Pod) step {
	var s step
	for _, k := range slices.Sorted(maps.Keys(hook.LabelsHandler)) {
		v := hook.LabelsHandler[k]
		if got, ok := pod.Labels[k]; !ok || got != v {
			continue
		}
		if v == "true" {
			if s.setLabels == nil {
				s.setLabels = map[string]string{}
			}
			s.setLabels[k] = "false"
		} else {
			s.removeLabels = append(s.removeLabels, k)
		}
	}
	for _, f := range hook.FinalizersHandler {
		if slices.Contains(pod.Finalizers, f) {
			s.removeFinalizers = append(s.removeFinalizers, f)
		}
	}
	return s
}

// putBack releases a hook that holds a pod until every handler is on it:
// every handler label and finalizer goes on.
func putBack(hook *pub.LifecycleHook, pod *corev1.Pod) step {
	var s step
	for k, v := range hook.LabelsHandler {
		if pod.Labels[k] != v {
			if s.setLabels == nil {
				s.setLabels = map[string]string{}
			}
			s.setLabels[k] = v
		}
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			s.addFinalizers = append(s.addFinalizers, f)
		}
	}
	return s
}

func podRevision(pod *corev1.Pod) string {
	return pod.Labels["controller-revision-hash"]
}
