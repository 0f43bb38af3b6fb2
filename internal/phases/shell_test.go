package phases

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lifeline-k8s/lifeline/internal/podexec"
)

// The shell is every kind's; a native Deployment stands in for a
// workload of any kind.
var testMetrics = podexec.NewMetrics(podexec.MetricNames{Kind: "phasestest", Title: "test workload", Counts: "replicas", CountsHelp: "test"})

type podsOf map[string][]*corev1.Pod

func (p podsOf) OwnedPods(_ context.Context, _, uid string) ([]*corev1.Pod, error) {
	return p[uid], nil
}

func newShell(t *testing.T, pods podsOf, objs ...client.Object) *Shell {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = appsv1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	c := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&appsv1.Deployment{}).Build()
	s := &Shell{Client: c, APIReader: c, Clock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0)), Pods: pods}
	s.Init(Kind{Name: "test", For: &appsv1.Deployment{}, Metrics: testMetrics}, &Options{})
	return s
}

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"}}
}

var key = types.NamespacedName{Namespace: "ns", Name: "web"}

// Read returns the workload, its pods and the time it read them.
func TestReadReadsTheWorkloadAndItsPods(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}}
	s := newShell(t, podsOf{"uid-web": {pod}}, deployment())
	d := &appsv1.Deployment{}
	read, wait, err := s.Read(context.Background(), ctrl.Request{NamespacedName: key}, d, nil)
	if err != nil || read == nil || wait != (ctrl.Result{}) {
		t.Fatalf("Read = %v, %v, %v; want a read", read, wait, err)
	}
	if d.UID != "uid-web" || len(read.Pods) != 1 || read.Pods[0] != pod || !read.Now.Equal(s.Clock.Now()) {
		t.Errorf("read %s with %d pods at %v", d.UID, len(read.Pods), read.Now)
	}
}

// A workload that is gone leaves nothing behind: its expectations, its
// own-write record, its gauges, and what the kind keeps (forget).
func TestReadForgetsAWorkloadThatIsGone(t *testing.T) {
	s := newShell(t, podsOf{})
	s.Counted(deployment(), map[string]int32{"ready": 3})
	s.Expectations.ExpectDeleted(key, "web-0", s.Clock.Now())
	s.OwnWrites.Wrote(key, "999")
	var forgotten []types.NamespacedName
	read, wait, err := s.Read(context.Background(), ctrl.Request{NamespacedName: key}, &appsv1.Deployment{},
		func(k types.NamespacedName) { forgotten = append(forgotten, k) })
	if read != nil || err != nil || wait != (ctrl.Result{}) {
		t.Fatalf("Read = %v, %v, %v; want nothing", read, wait, err)
	}
	if len(forgotten) != 1 || forgotten[0] != key {
		t.Errorf("forget called with %v", forgotten)
	}
	if n := testutil.CollectAndCount(testMetrics.Counts); n != 0 {
		t.Errorf("%d gauge series left", n)
	}
	if !s.OwnWrites.Seen(key, "1") {
		t.Error("own write still recorded")
	}
	if ok, _, _, _ := s.Expectations.Satisfied(key, nil, nil, s.Clock.Now()); !ok {
		t.Error("expectations still kept")
	}
}

// Read waits while the cache does not show the shell's own status write,
// then while it does not show a pod write, and reads once it shows both.
func TestReadWaitsForOwnWrites(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "uid-pod"}}
	pods := podsOf{"uid-web": {pod}}
	s := newShell(t, pods, deployment())
	req := ctrl.Request{NamespacedName: key}

	w := &appsv1.Deployment{}
	if err := s.Get(context.Background(), key, w); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteStatus(context.Background(), s, &w, appsv1.DeploymentStatus{Replicas: 1}, statusOf, true); err != nil {
		t.Fatal(err)
	}
	if w.Status.Replicas != 1 {
		t.Fatalf("WriteStatus kept %v", w.Status)
	}
	// The cache lags: it shows the version before the write.
	s.OwnWrites.Wrote(key, w.ResourceVersion+"0")
	read, wait, err := s.Read(context.Background(), req, &appsv1.Deployment{}, nil)
	if read != nil || err != nil || wait.RequeueAfter != StaleRetry {
		t.Fatalf("Read before the cache shows the status write = %v, %v, %v; want a wait of %v", read, wait, err, StaleRetry)
	}
	s.OwnWrites.Forget(key)

	s.Expectations.ExpectDeleted(key, "web-0", s.Clock.Now())
	read, wait, err = s.Read(context.Background(), req, &appsv1.Deployment{}, nil)
	if read != nil || err != nil || wait.RequeueAfter <= 0 {
		t.Fatalf("Read before the cache shows a pod's delete = %v, %v, %v; want a wait", read, wait, err)
	}
	delete(pods, "uid-web")
	if read, _, err := s.Read(context.Background(), req, &appsv1.Deployment{}, nil); read == nil || err != nil {
		t.Fatalf("Read once the cache shows every write = %v, %v", read, err)
	}
}

// A status that did not change is not written.
func TestWriteStatusSkipsAnUnchangedStatus(t *testing.T) {
	s := newShell(t, podsOf{}, deployment())
	w := &appsv1.Deployment{}
	if err := s.Get(context.Background(), key, w); err != nil {
		t.Fatal(err)
	}
	before := w
	if _, err := WriteStatus(context.Background(), s, &w, w.Status, statusOf, true); err != nil {
		t.Fatal(err)
	}
	if w != before || !s.OwnWrites.Seen(key, "0") {
		t.Error("an unchanged status was written")
	}
}

func statusOf(d *appsv1.Deployment) *appsv1.DeploymentStatus { return &d.Status }

// A kind with a status pace writes a routine change of counts alone at
// most once per StatusEvery, saying how long the next waits; a change
// of anything else, and a write that is not routine, go at once; without
// a pace every change goes at once.
func TestWriteStatusPacesRoutineCounts(t *testing.T) {
	ctx := context.Background()
	for _, every := range []time.Duration{0, time.Second} {
		s := newShell(t, podsOf{}, deployment())
		s.pace = statusPace{every: every}
		clk := s.Clock.(*clocktesting.FakeClock)
		w := &appsv1.Deployment{}
		if err := s.Get(ctx, key, w); err != nil {
			t.Fatal(err)
		}
		write := func(st appsv1.DeploymentStatus, routine bool) (time.Duration, bool) {
			t.Helper()
			before := w.ResourceVersion
			wait, err := WriteStatus(ctx, s, &w, st, statusOf, routine)
			if err != nil {
				t.Fatal(err)
			}
			return wait, w.ResourceVersion != before
		}
		if _, wrote := write(appsv1.DeploymentStatus{Replicas: 1}, true); !wrote {
			t.Fatalf("every %v: the first write waited", every)
		}
		clk.Step(300 * time.Millisecond)
		wait, wrote := write(appsv1.DeploymentStatus{Replicas: 2}, true)
		if want := max(0, every-300*time.Millisecond); wait != want || wrote == (every > 0) {
			t.Errorf("every %v: counts alone 300ms after a write: wait %v, written %v; want wait %v", every, wait, wrote, want)
		}
		if _, wrote := write(appsv1.DeploymentStatus{Replicas: 3, ObservedGeneration: 2}, true); !wrote {
			t.Errorf("every %v: a new observedGeneration waited", every)
		}
		if _, wrote := write(appsv1.DeploymentStatus{Replicas: 4, ObservedGeneration: 2}, false); !wrote {
			t.Errorf("every %v: a write that is not routine waited", every)
		}
		clk.Step(every)
		if _, wrote := write(appsv1.DeploymentStatus{Replicas: 5, ObservedGeneration: 2}, true); !wrote {
			t.Errorf("every %v: counts alone a pace after the last write waited", every)
		}
	}
}

// CountsOnly: the top-level int32 fields alone.
func TestCountsOnly(t *testing.T) {
	base := appsv1.DaemonSetStatus{NumberReady: 3, ObservedGeneration: 1}
	for _, c := range []struct {
		name string
		next func(*appsv1.DaemonSetStatus)
		want bool
	}{
		{"nothing", func(*appsv1.DaemonSetStatus) {}, true},
		{"counts", func(s *appsv1.DaemonSetStatus) { s.NumberReady, s.UpdatedNumberScheduled = 4, 2 }, true},
		{"observedGeneration", func(s *appsv1.DaemonSetStatus) { s.ObservedGeneration = 2 }, false},
		{"collisionCount", func(s *appsv1.DaemonSetStatus) { s.CollisionCount = new(int32) }, false},
		{"a condition", func(s *appsv1.DaemonSetStatus) {
			s.NumberReady = 4
			s.Conditions = []appsv1.DaemonSetCondition{{Type: "Progressing", Status: corev1.ConditionTrue, Reason: "Complete"}}
		}, false},
	} {
		next := base
		c.next(&next)
		if got := CountsOnly(base, next); got != c.want {
			t.Errorf("%s: CountsOnly = %v, want %v", c.name, got, c.want)
		}
	}
	// A count named at once is no routine count.
	next := base
	next.DesiredNumberScheduled, next.NumberReady = 5, 4
	if CountsOnly(base, next, "DesiredNumberScheduled") {
		t.Error("a new desiredNumberScheduled, named at once, counted as counts only")
	}
	if !CountsOnly(base, next, "NumberMisscheduled") {
		t.Error("counts named at once that did not change made counts no routine change")
	}
}

// After a step: its own wish, soon when a pod changed under a write,
// nothing on a failure (the error is retried with back-off).
func TestExecuted(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		err   error
		stale bool
		want  time.Duration
	}{{nil, false, 7 * time.Second}, {nil, true, StaleRetry}, {boom, true, 0}} {
		got, err := Executed(7*time.Second, c.err, c.stale)
		if got != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("Executed(7s, %v, %v) = %v, %v; want %v", c.err, c.stale, got, err, c.want)
		}
	}
}
