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
		{"10s after the renewal", func() { now = now.Add(10 * time.Second) }, false},
		{"paused 20s past its renewal (SIGSTOP)", func() { now = now.Add(10 * time.Second) }, true},
		{"a failed renewal changes nothing", func() { inner.fail = true; _ = l.Update(ctx, mine) }, true},
		{"renewed again (no one took over)", func() { _ = l.Update(ctx, mine) }, false},
		{"released: a standby again", func() { now = now.Add(time.Minute); _ = l.Update(ctx, resourcelock.LeaderElectionRecord{}) }, false},
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
