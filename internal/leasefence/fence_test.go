package leasefence

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock stores the record; fail makes its next write fail.
type fakeLock struct {
	resourcelock.Interface
	fail bool
}

func (l *fakeLock) Identity() string { return "me" }
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.err()
}
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.err()
}
func (l *fakeLock) err() error {
	if l.fail {
		l.fail = false
		return errors.New("conflict")
	}
	return nil
}

func TestFenceAllowsWritesOnlyWithinTheRenewDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	f := New(10 * time.Second)
	f.now = func() time.Time { return now }
	inner := &fakeLock{}
	l := f.Lock(inner)
	ctx := context.Background()
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}

	steps := []struct {
		what    string
		do      func()
		refused bool
	}{
		{"a standby, never leading, writes (its webhooks do)", func() { now = now.Add(time.Hour) }, false},
		{"acquired", func() { _ = l.Create(ctx, mine) }, false},
		{"9s after the acquisition", func() { now = now.Add(9 * time.Second) }, false},
		{"renewed", func() { _ = l.Update(ctx, mine) }, false},
		{"9.5s after the renewal", func() { now = now.Add(9500 * time.Millisecond) }, false},
		{"10s after the renewal: nothing left to send within", func() { now = now.Add(500 * time.Millisecond) }, true},
		{"paused 20s past its renewal (SIGSTOP)", func() { now = now.Add(10 * time.Second) }, true},
		{"a failed renewal changes nothing", func() { inner.fail = true; _ = l.Update(ctx, mine) }, true},
		{"renewed again (no one took over)", func() { _ = l.Update(ctx, mine) }, false},
		{"released: it never writes again (its shutdown could land after a successor's)", func() {
			now = now.Add(time.Minute)
			_ = l.Update(ctx, resourcelock.LeaderElectionRecord{})
		}, true},
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer server.Close()
	rt := f.Wrap(http.DefaultTransport)
	for _, s := range steps {
		s.do()
		for _, req := range []struct {
			method, path string
			write        bool
		}{
			{http.MethodPatch, "/api/v1/namespaces/a/pods/p", true},
			{http.MethodDelete, "/api/v1/namespaces/a/pods/p", true},
			{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/a/events", true},
			{http.MethodGet, "/api/v1/pods", false},
			{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		} {
			r, _ := http.NewRequest(req.method, server.URL+req.path, nil)
			resp, err := rt.RoundTrip(r)
			if resp != nil {
				resp.Body.Close()
			}
			var stale *StaleError
			if got, want := errors.As(err, &stale), s.refused && req.write; got != want {
				t.Errorf("%s: %s %s refused = %v, want %v (err %v)", s.what, req.method, req.path, got, want, err)
			}
		}
	}
}

// A write that goes out is bounded by what remains of the renew deadline:
// the API server is told so (timeout), and a leader that reads another
// holder in the lease stops writing at once.
func TestFenceBoundsWritesAndClosesOnAnotherHolder(t *testing.T) {
	now := time.Unix(1000, 0)
	f := New(10 * time.Second)
	f.now = func() time.Time { return now }
	inner := &getLock{holder: "me"}
	l := f.Lock(inner)
	ctx := context.Background()
	_ = l.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	now = now.Add(3500 * time.Millisecond)
	var got string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.URL.Query().Get("timeout") }))
	defer server.Close()
	rt := f.Wrap(http.DefaultTransport)
	send := func() error {
		r, _ := http.NewRequest(http.MethodPatch, server.URL+"/api/v1/namespaces/a/pods/p", nil)
		resp, err := rt.RoundTrip(r)
		if resp != nil {
			resp.Body.Close()
		}
		return err
	}
	if err := send(); err != nil || got != "6s" {
		t.Fatalf("a write 3.5s after the renewal: %v, timeout %q; want sent with timeout 6s", err, got)
	}
	if _, _, err := l.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := send(); err != nil {
		t.Fatalf("after reading itself as the holder: %v", err)
	}
	inner.holder = "another"
	_, _, _ = l.Get(ctx)
	var stale *StaleError
	if err := send(); !errors.As(err, &stale) || !stale.Ended {
		t.Fatalf("after reading another holder: %v, want refused", err)
	}
}

type getLock struct {
	fakeLock
	holder string
}

func (l *getLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: l.holder}, nil, nil
}
