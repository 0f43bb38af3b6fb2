// Package recorder posts Events the way kube-controller-manager's
// controllers do: through client-go's record broadcaster, whose correlator
// combines similar Events of an object (after ten alike in ten minutes,
// one Event counts them) and rate-limits each object's Events (a burst of
// 25, then one every five minutes). A rollout of a thousand pods then
// posts a few dozen Events, as a Deployment's does, not one per pod.
//
// Warnings are the exception: what needs a person (a hook held past its
// warning time, a budget refusing, a failed create) goes through a
// broadcaster of its own that combines alike Warnings but never drops
// one.
//
// Every reporting controller is named under Lifeline's domain
// (lifeline.dev/<controller>), so a user tells Lifeline's Events from the
// native controllers' of the same name.
package recorder

import (
	"context"
	"fmt"
	"math"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Domain prefixes every reporting controller's name.
const Domain = "lifeline.dev"

// recorded counts the Events controllers record, before the correlator
// combines or drops them: the rate of Warnings by reason is what a user
// graphs, whatever the API server was sent.
var recorded = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_events_recorded_total",
	Help: "Events recorded by controller, type and reason, before similar ones are combined and routine ones rate-limited (25 per object, then one every five minutes; Warnings are never dropped).",
}, []string{"controller", "type", "reason"})

func init() { metrics.Registry.MustRegister(recorded) }

// Broadcaster sends the Events of a process's recorders. Start it with
// the manager (it is a Runnable that runs without leadership, as
// webhooks post Events too) or call Shutdown when done.
type Broadcaster struct {
	scheme            *runtime.Scheme
	routine, warnings record.EventBroadcaster
}

// New returns a Broadcaster posting to the API server of cfg (through
// httpClient when set) with the object references of scheme.
func New(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme) (*Broadcaster, error) {
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, err
		}
	}
	cs, err := typedcorev1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("an events client: %w", err)
	}
	return NewForSink(&typedcorev1.EventSinkImpl{Interface: cs.Events("")}, scheme), nil
}

// NewForSink is New for a given sink (tests).
func NewForSink(sink record.EventSink, scheme *runtime.Scheme) *Broadcaster {
	b := &Broadcaster{
		scheme:  scheme,
		routine: record.NewBroadcaster(),
		// Combined like any other, never dropped: a burst no object
		// reaches, refilled faster than any controller posts.
		warnings: record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: math.MaxInt32, QPS: math.MaxFloat32})),
	}
	b.routine.StartRecordingToSink(sink)
	b.warnings.StartRecordingToSink(sink)
	return b
}

// For is the recorder of one controller, reporting as
// lifeline.dev/<controller>. routine are the reasons of Warnings that say
// what the user asked for is happening (OpenKruise's ScaleUpLimited: a
// Warning for compatibility, posted at every step of a limited scale-up),
// which are rate-limited like Normal Events.
func (b *Broadcaster) For(controller string, routine ...string) events.EventRecorder {
	source := corev1.EventSource{Component: Domain + "/" + controller}
	r := &recorder{controller: controller, routine: b.routine.NewRecorder(b.scheme, source), warnings: b.warnings.NewRecorder(b.scheme, source),
		routineReasons: map[string]bool{}}
	for _, reason := range routine {
		r.routineReasons[reason] = true
	}
	return r
}

// Start waits for ctx and shuts the broadcaster down.
func (b *Broadcaster) Start(ctx context.Context) error {
	<-ctx.Done()
	b.Shutdown()
	return nil
}

// NeedLeaderElection is false: a standby's webhooks post Events too.
func (b *Broadcaster) NeedLeaderElection() bool { return false }

// Shutdown stops posting.
func (b *Broadcaster) Shutdown() {
	b.routine.Shutdown()
	b.warnings.Shutdown()
}

// recorder is the events.EventRecorder the controllers call. The core
// Events it posts have no related object nor action (kube-controller-
// manager's have neither): a message names the pod it is about.
type recorder struct {
	controller        string
	routine, warnings record.EventRecorder
	routineReasons    map[string]bool
}

func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...interface{}) {
	recorded.WithLabelValues(r.controller, eventtype, reason).Inc()
	to := r.routine
	if eventtype == corev1.EventTypeWarning && !r.routineReasons[reason] {
		to = r.warnings
	}
	to.Eventf(regarding, eventtype, reason, note, args...)
}
