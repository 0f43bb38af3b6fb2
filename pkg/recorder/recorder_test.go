package recorder

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// sink keeps what the broadcasters send: each call is one write to the
// API server (a create, or a patch of a combined Event's count).
type sink struct {
	mu    sync.Mutex
	calls map[string]int // by type
	seen  []*corev1.Event
}

func (s *sink) record(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[e.Type]++
	s.seen = append(s.seen, e.DeepCopy())
	return e, nil
}
func (s *sink) Create(e *corev1.Event) (*corev1.Event, error)          { return s.record(e) }
func (s *sink) Update(e *corev1.Event) (*corev1.Event, error)          { return s.record(e) }
func (s *sink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return s.record(e) }

func (s *sink) count(t string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[t]
}

// TestRoutineLimitedWarningsAlways: a burst of routine Events about one
// object is cut at the correlator's 25; the same number of Warnings is
// posted in full; each names its controller under lifeline.dev.
func TestRoutineLimitedWarningsAlways(t *testing.T) {
	s := &sink{calls: map[string]int{}}
	b := NewForSink(s, clientgoscheme.Scheme)
	defer b.Shutdown()
	r := b.For("cloneset-controller", "ScaleUpLimited")
	set := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "a", UID: "u1"}}
	const n = 60
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + string(rune('a'+i%26)), Namespace: "a"}}
		r.Eventf(set, pod, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "succeed to create pod %s", pod.Name)
		r.Eventf(set, pod, corev1.EventTypeWarning, "FailedDelete", "Delete", "failed to delete pod %s", pod.Name)
		r.Eventf(set, nil, corev1.EventTypeWarning, "ScaleUpLimited", "Scale", "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: %d", i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.count(corev1.EventTypeWarning) < n+25 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// Every FailedDelete, and the routine ScaleUpLimited Warnings' own
	// burst of 25 (the correlator keeps a bucket per object and type).
	if got := s.count(corev1.EventTypeWarning); got != n+25 {
		t.Fatalf("Warnings posted: %d, want every one of %d FailedDelete and 25 ScaleUpLimited", got, n)
	}
	if got := s.count(corev1.EventTypeNormal); got != 25 {
		t.Fatalf("routine Events posted: %d, want the correlator's burst of 25", got)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	combined := 0
	for _, e := range s.seen {
		if e.Source.Component != "lifeline.dev/cloneset-controller" {
			t.Fatalf("reported by %q, want lifeline.dev/cloneset-controller", e.Source.Component)
		}
		// The correlator's combined Event keeps the source alone.
		if strings.HasPrefix(e.Message, "(combined from similar events)") {
			combined++
		} else if e.ReportingController != e.Source.Component {
			t.Fatalf("reporting controller %q, want %q", e.ReportingController, e.Source.Component)
		}
	}
	if combined == 0 {
		t.Fatalf("no Event combined from similar ones among %d", len(s.seen))
	}
	// The metric counts what was recorded, dropped or not.
	if got := testutil.ToFloat64(recorded.WithLabelValues("cloneset-controller", corev1.EventTypeNormal, "SuccessfulCreate")); got != n {
		t.Fatalf("lifeline_events_recorded_total for SuccessfulCreate: %v, want %d", got, n)
	}
}
