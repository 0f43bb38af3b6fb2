// Package leasefence keeps a leader that lost its lease without knowing it
// from writing. A leader paused past its lease (SIGSTOP, a frozen VM, a
// long GC pause, a partition) resumes with its workers mid-reconcile: they
// send the writes they had decided on before its elector notices that the
// lease is gone and the process exits, while another replica already
// leads. Leases have no fencing token the API server checks, so the
// writer checks itself: every write waits for the elector's last
// successful renewal to be recent enough that no other replica can have
// taken over.
package leasefence

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var refused = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "lifeline_leader_fence_refused_total",
	Help: "Writes this replica refused to send because it led and its lease was not renewed within the renew deadline: it may no longer lead.",
})

func init() { metrics.Registry.MustRegister(refused) }

// Identity is a replica's leader election identity, as controller-runtime
// makes it: the host name and a UUID, unique per process.
func Identity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// Fence says whether this replica may write.
type Fence struct {
	// within is how long after the start of its last successful renewal
	// a leader may still write. It is the renew deadline: past it the
	// elector gives up leading by itself, and it is shorter than the lease
	// duration the other replicas wait out (from the moment they saw the
	// renewal, which is after it started) before they take over.
	within time.Duration
	now    func() time.Time

	mu      sync.Mutex
	leading bool
	renewed time.Time
	// ended: the replica led and then released its lease or saw another
	// holder. It never writes again: its process is on its way out, and
	// what its shutdown would still write could land after a successor's.
	ended bool
}

// New returns a fence for a replica whose elector renews within the
// renew deadline within.
func New(within time.Duration) *Fence {
	return &Fence{within: within, now: time.Now}
}

// StaleError is the answer to a write of a replica that led and has not
// renewed its lease in time.
type StaleError struct {
	Age, Within time.Duration
	// Ended: the replica gave up its lease or saw another holder.
	Ended bool
}

func (e *StaleError) Error() string {
	if e.Ended {
		return "leasefence: not sent: this replica led and no longer does (it released its lease or saw another holder)"
	}
	return fmt.Sprintf("leasefence: not sent: this replica led, and its lease was last renewed %s ago (renew deadline %s), so another replica may lead now",
		e.Age.Round(time.Millisecond), e.Within)
}

// Check is nil when writes may go out: the replica does not lead (a
// standby's webhooks write too) or renewed its lease within the deadline.
func (f *Fence) Check() error {
	_, err := f.Left()
	return err
}

// Left is how long a write that may go out now has before the fence
// closes: what remains of the renew deadline of the last renewal (zero
// for a replica that does not lead, whose writes are not bounded).
func (f *Fence) Left() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.ended:
		return 0, &StaleError{Age: f.now().Sub(f.renewed), Within: f.within, Ended: true}
	case !f.leading:
		return 0, nil
	}
	age := f.now().Sub(f.renewed)
	if age >= f.within {
		return 0, &StaleError{Age: age, Within: f.within}
	}
	return f.within - age, nil
}

// wrote records a successful write of the lease record, started at
// start: the replica holds the lease from then (holder) or gave it up.
func (f *Fence) wrote(start time.Time, holder bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leading && !holder {
		f.ended = true
	}
	f.leading, f.renewed = holder, start
}

// read records a read of the lease record: another holder while this
// replica leads means it no longer does, whatever its elector believes.
func (f *Fence) read(holder, self string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leading && holder != self {
		f.ended = true
	}
}

// Lock wraps the elector's lock so that the fence learns of each renewal.
func (f *Fence) Lock(l resourcelock.Interface) resourcelock.Interface {
	return &lock{Interface: l, f: f}
}

type lock struct {
	resourcelock.Interface
	f *Fence
}

func (l *lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	ler, raw, err := l.Interface.Get(ctx)
	if err == nil && ler != nil {
		l.f.read(ler.HolderIdentity, l.Identity())
	}
	return ler, raw, err
}

func (l *lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ler, func() error { return l.Interface.Create(ctx, ler) })
}

func (l *lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ler, func() error { return l.Interface.Update(ctx, ler) })
}

func (l *lock) write(ler resourcelock.LeaderElectionRecord, send func() error) error {
	start := l.f.now()
	if err := send(); err != nil {
		return err
	}
	l.f.wrote(start, ler.HolderIdentity == l.Identity())
	return nil
}

// Wrap fences a client's transport (rest.Config.Wrap): requests that
// write are refused, unsent, while Check fails. Reviews (token and access
// reviews, WhoAmI) ask rather than write and always go.
func (f *Fence) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{f: f, next: rt}
}

type transport struct {
	f    *Fence
	next http.RoundTripper
}

// RoundTrip sends a write only while the fence is open, and bounds it by
// the moment the fence closes: its context ends then, and the API server
// is told the same deadline (the timeout parameter), so a write queued by
// API Priority and Fairness, or held by a pause after the check, is
// abandoned rather than landing once another replica may lead. The renew
// deadline is shorter than the lease duration the others wait out, so
// what lands before it lands before any successor.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !writes(req) {
		return t.next.RoundTrip(req)
	}
	left, err := t.f.Left()
	if err != nil {
		refused.Inc()
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if left == 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), left)
	bounded := req.Clone(ctx)
	q := bounded.URL.Query()
	// The API server's own deadline, in whole seconds, rounded down.
	if secs := left.Truncate(time.Second); secs >= time.Second && q.Get("timeout") == "" {
		q.Set("timeout", secs.String())
		bounded.URL.RawQuery = q.Encode()
	}
	resp, err := t.next.RoundTrip(bounded)
	if err != nil || resp.Body == nil {
		cancel()
		return resp, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a bounded request's context once its answer is
// read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func writes(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	p := req.URL.Path
	return !strings.HasPrefix(p, "/apis/authentication.k8s.io/") && !strings.HasPrefix(p, "/apis/authorization.k8s.io/")
}
