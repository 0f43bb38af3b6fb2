package admission

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
	"github.com/lifeline-k8s/lifeline/internal/podcache"
)

// ErrTooLate is returned by Take when the disruption could not be decided
// before the caller's context ended. Nothing is left recorded for it: a
// record the decision wrote is withdrawn.
var ErrTooLate = errors.New("the budget could not be decided in time")

// An ask's state: the committer answers it, or its caller gives up on it,
// whichever comes first.
const (
	pending int32 = iota
	answered
	abandoned
)

// ask is one disruption waiting for its budget's next status write.
type ask struct {
	pod      *corev1.Pod
	op       policyv1alpha1.PubOperation
	dryRun   bool
	deadline time.Time // the caller's; zero for none
	state    atomic.Int32
	done     chan answer
}

type answer struct {
	pub *policyv1alpha1.PodUnavailableBudget
	d   budget.Decision
	// at is when a recorded disruption was recorded (to withdraw it).
	at  time.Time
	err error
	// claim: the write claimed a record made before (budget.Claim), which
	// took no unit and is never withdrawn.
	claim bool
}

// deliver answers a unless its caller gave up first; it reports whether
// the caller will read the answer.
func (a *ask) deliver(ans answer) bool {
	if !a.state.CompareAndSwap(pending, answered) {
		return false
	}
	a.done <- ans
	return true
}

// withdrawal takes back a disruption recorded for a request that is no
// longer waiting for it (it timed out, or another budget refused it): the
// record of pod made at the second at, and the unit of unavailableAllowed
// it took.
type withdrawal struct {
	pod   string
	at    time.Time
	tries int
}

// queue holds the disruptions and withdrawals of one budget waiting for
// a write, and the budget as this process last wrote it. One goroutine
// at a time, the committer, drains it.
type queue struct {
	asks        []*ask
	withdrawals []withdrawal
	busy        bool
	last        *policyv1alpha1.PodUnavailableBudget
}

// takeOne judges the disruption against one budget and, unless dryRun,
// records it by a write conditional on the version read. It returns when
// the write is done or ctx ends (ErrTooLate); in the second case a record
// the write makes anyway is withdrawn by the committer.
func (g *Guard) takeOne(ctx context.Context, key types.NamespacedName, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) answer {
	a := &ask{pod: pod, op: op, dryRun: dryRun, done: make(chan answer, 1)}
	a.deadline, _ = ctx.Deadline()
	g.enqueue(key, func(q *queue) { q.asks = append(q.asks, a) })
	select {
	case ans := <-a.done:
		return ans
	case <-ctx.Done():
		if a.state.CompareAndSwap(pending, abandoned) {
			return answer{err: ErrTooLate}
		}
		return <-a.done // answered just now
	}
}

// withdraw queues taking back pod's disruption recorded at at in the
// budget key.
func (g *Guard) withdraw(key types.NamespacedName, pod string, at time.Time) {
	withdrawals.Inc()
	g.unconfirm(key, pod)
	g.mark(key, pod)
	g.enqueue(key, func(q *queue) { q.withdrawals = append(q.withdrawals, withdrawal{pod: pod, at: at}) })
}

// enqueue adds work to key's queue and starts a committer for the queue
// unless one is running.
func (g *Guard) enqueue(key types.NamespacedName, add func(*queue)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.queues == nil {
		g.queues = map[types.NamespacedName]*queue{}
	}
	q := g.queues[key]
	if q == nil {
		q = &queue{}
		g.queues[key] = q
	}
	add(q)
	if !q.busy {
		q.busy = true
		go g.commitAll(key, q)
	}
}

// commitAll decides and records the queue's work, a batch per write,
// until the queue is empty.
func (g *Guard) commitAll(key types.NamespacedName, q *queue) {
	for {
		g.mu.Lock()
		asks, back := live(q.asks), q.withdrawals
		q.asks, q.withdrawals = nil, nil
		if len(asks) == 0 && len(back) == 0 {
			q.busy = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		ctx, cancel := context.WithDeadline(context.Background(), writeDeadline(asks, time.Now()))
		g.commit(ctx, key, q, asks, back)
		cancel()
	}
}

// live drops the asks whose callers have already given up: nothing is
// decided, let alone recorded, for a request that is gone.
func live(asks []*ask) []*ask {
	out := asks[:0]
	for _, a := range asks {
		if a.state.Load() == pending {
			out = append(out, a)
		}
	}
	return out
}

// writeTimeout bounds one batch's reads and writes when no caller waits
// with a deadline (withdrawals, the CloneSet controller's in-place updates).
const writeTimeout = 10 * time.Second

// writeDeadline is when a batch's write is given up: when the last of its
// callers stops waiting, since past that nobody can use its answer.
func writeDeadline(asks []*ask, now time.Time) time.Time {
	latest := time.Time{}
	for _, a := range asks {
		if a.deadline.IsZero() {
			return now.Add(writeTimeout)
		}
		if a.deadline.After(latest) {
			latest = a.deadline
		}
	}
	if latest.IsZero() {
		return now.Add(writeTimeout)
	}
	return latest
}

// commit applies the withdrawals, decides the asks in arrival order
// against the newest status known, each admitted disruption taken from the
// status the next one sees, and writes the result once. A conflict means
// another replica or the controller wrote first: the batch is decided
// again on a fresh read. Whatever the write's outcome, every record made
// for an ask whose caller is not told of it is withdrawn.
func (g *Guard) commit(ctx context.Context, key types.NamespacedName, q *queue, asks []*ask, back []withdrawal) {
	now := g.Now()
	pub, err := g.base(ctx, key, q)
	if apierrors.IsNotFound(err) {
		answerAll(asks, nil, nil, nil, nil, now) // the budget went meanwhile: nothing to guard
		g.drop(key, back)
		return
	}
	for i := 0; err == nil && i < attempts; i++ {
		status := pub.Status.DeepCopy()
		withdrawn := applyWithdrawals(status, back)
		// Rides along with a write that is made anyway, never one alone;
		// and only on a namespace the cache holds whole, where a pod it
		// does not show is gone.
		dropped := 0
		if !podcache.Waiting(g.Synced, key.Namespace) {
			dropped = budget.DropSettled(status, g.lookup(key.Namespace), now)
		}
		decisions, claims, recorded := decide(pub, status, asks, now)
		if !recorded && !withdrawn {
			answerAll(asks, pub, decisions, claims, nil, now)
			g.drop(key, back)
			return
		}
		updated := pub.DeepCopy()
		updated.Status = *status
		pending := g.markRecorded(key, asks, decisions)
		err = g.writeStatus(ctx, updated, len(asks))
		switch {
		case err == nil:
			settledDropped.Add(float64(dropped))
			g.setLast(q, updated)
			g.confirm(key, updated, asks, decisions)
			g.settle(key, asks, answerAll(asks, updated, decisions, claims, nil, now), decisions, claims, now)
			g.drop(key, back)
		case apierrors.IsNotFound(err):
			answerAll(asks, nil, nil, nil, nil, now)
			g.drop(key, back)
		case !isAPIError(err):
			// Timed out or cut off: the write may have landed. Take back
			// what it recorded (if it did) and retry its withdrawals.
			if errors.Is(err, context.DeadlineExceeded) {
				err = ErrTooLate
			}
			answerAll(asks, pub, nil, nil, err, now)
			g.settle(key, asks, make([]bool, len(asks)), decisions, claims, now)
			g.requeue(key, back)
		}
		g.unmark(key, pending)
		if err == nil || apierrors.IsNotFound(err) || !isAPIError(err) {
			return
		}
		if apierrors.IsConflict(err) {
			fresh := &policyv1alpha1.PodUnavailableBudget{}
			if err = g.Live.Get(ctx, key, fresh); apierrors.IsNotFound(err) {
				answerAll(asks, nil, nil, nil, nil, now)
				g.drop(key, back)
				return
			} else if err == nil {
				pub = fresh
				g.setLast(q, fresh)
			}
		}
	}
	if err != nil {
		answerAll(asks, pub, nil, nil, err, now)
		g.requeue(key, back)
		return
	}
	busy := budget.Decision{Reason: fmt.Sprintf("PodUnavailableBudget %s is being updated by too many disruptions at once; try again", key.Name)}
	answerAll(asks, pub, repeat(busy, len(asks)), nil, nil, now)
	g.requeue(key, back)
}

// writeStatus writes pub's status, conditional on its resource version.
func (g *Guard) writeStatus(ctx context.Context, pub *policyv1alpha1.PodUnavailableBudget, batch int) error {
	start := time.Now()
	err := g.Writer.Status().Update(ctx, pub)
	statusWrites.WithLabelValues(writeResult(err)).Observe(time.Since(start).Seconds())
	batchSize.Observe(float64(batch))
	return err
}

// settle withdraws the disruptions recorded for asks whose callers were
// not told (told[i] false): they gave up, so nothing may stay spent on
// them. A claim is never withdrawn: it took no unit, and whoever the
// record was made for may have been admitted by it.
func (g *Guard) settle(key types.NamespacedName, asks []*ask, told []bool, decisions []budget.Decision, claims []bool, at time.Time) {
	for i, a := range asks {
		if !told[i] && !a.dryRun && decisions[i].Status != nil && !claims[i] {
			g.withdraw(key, a.pod.Name, at)
		}
	}
}

// Unsettled records: while a write that records a pod's disruption is in
// flight, or a withdrawal of one is pending, the record in the cache may
// be one nobody was admitted by. The quick "already recorded, so free"
// answer is not given for such a pod: its disruption goes through the
// queue, where withdrawals are applied before anything is decided.

// markRecorded marks the pods the decisions record; it returns them.
func (g *Guard) markRecorded(key types.NamespacedName, asks []*ask, decisions []budget.Decision) []string {
	var pods []string
	for i, a := range asks {
		if decisions[i].Status != nil {
			pods = append(pods, a.pod.Name)
		}
	}
	g.mark(key, pods...)
	return pods
}

func (g *Guard) mark(key types.NamespacedName, pods ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unsettled == nil {
		g.unsettled = map[types.NamespacedName]map[string]int{}
	}
	if g.unsettled[key] == nil {
		g.unsettled[key] = map[string]int{}
	}
	for _, p := range pods {
		g.unsettled[key][p]++
	}
}

func (g *Guard) unmark(key types.NamespacedName, pods []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range pods {
		if g.unsettled[key][p]--; g.unsettled[key][p] <= 0 {
			delete(g.unsettled[key], p)
		}
	}
	if len(g.unsettled[key]) == 0 {
		delete(g.unsettled, key)
	}
}

// isUnsettled reports whether pod's record in budget key may be one nobody
// was admitted by.
func (g *Guard) isUnsettled(key types.NamespacedName, pod string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unsettled[key][pod] > 0
}

// drop ends withdrawals that are done (applied, or moot).
func (g *Guard) drop(key types.NamespacedName, back []withdrawal) {
	pods := make([]string, len(back))
	for i, w := range back {
		pods[i] = w.pod
	}
	g.unmark(key, pods)
}

// maxWithdrawTries bounds how often one withdrawal is retried; past that
// the record is left to expire as any unconfirmed record does.
const maxWithdrawTries = 5

// requeue puts back withdrawals a write did not carry out; one tried too
// often is left to expire as any unconfirmed record does.
func (g *Guard) requeue(key types.NamespacedName, back []withdrawal) {
	var again, given []withdrawal
	for _, w := range back {
		if w.tries++; w.tries < maxWithdrawTries {
			again = append(again, w)
		} else {
			given = append(given, w)
		}
	}
	g.drop(key, given)
	if len(again) > 0 {
		g.enqueue(key, func(q *queue) { q.withdrawals = append(q.withdrawals, again...) })
	}
}

// applyWithdrawals removes from status each withdrawn record that is
// still the one made (same second: the API stores seconds) and gives back
// the unit it took. It reports whether anything changed.
func applyWithdrawals(status *policyv1alpha1.PodUnavailableBudgetStatus, back []withdrawal) bool {
	changed := false
	for _, w := range back {
		for _, records := range []map[string]metav1.Time{status.DisruptedPods, status.UnavailablePods} {
			if at, ok := records[w.pod]; ok && at.Unix() == w.at.Unix() {
				delete(records, w.pod)
				status.UnavailableAllowed++
				changed = true
			}
		}
	}
	return changed
}

// isAPIError reports whether err is the API server's refusal of the
// write (a 4xx other than a timeout: nothing was stored) rather than a
// transport failure, a timeout or a server error, after which the write
// may have landed.
func isAPIError(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500 && code != 408
}

// setLast records the budget as this process last wrote or read it live;
// under the lock, since requests read it too (newest). The object is
// never changed afterwards: writes start from copies.
func (g *Guard) setLast(q *queue, pub *policyv1alpha1.PodUnavailableBudget) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q.last = pub
}

// base is the newest copy of the budget this process knows: the cache's,
// or the one it last wrote when the cache has not caught up with it.
func (g *Guard) base(ctx context.Context, key types.NamespacedName, q *queue) (*policyv1alpha1.PodUnavailableBudget, error) {
	cached := &policyv1alpha1.PodUnavailableBudget{}
	if err := g.Cache.Get(ctx, key, cached); err != nil {
		return nil, err
	}
	if q.last != nil && q.last.UID == cached.UID && newer(q.last.ResourceVersion, cached.ResourceVersion) {
		return q.last, nil
	}
	return cached, nil
}

// newer reports whether resource version a is later than b. Resource
// versions compare since Kubernetes 1.35 (KEP-5504, apimachinery's
// resourceversion, as the CloneSet's expectations compare them); where they
// do not, b (the cache's) is taken, and a stale guess costs a conflict,
// never a wrong decision.
func newer(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// decide judges a batch in order against status, recording into it. It
// returns each decision, which of them claim a record made before (see
// isConfirmed), and whether anything was recorded. A dry run is judged
// like the others but leaves nothing for those after.
func decide(pub *policyv1alpha1.PodUnavailableBudget, status *policyv1alpha1.PodUnavailableBudgetStatus, batch []*ask, now time.Time) ([]budget.Decision, []bool, bool) {
	recorded := false
	decisions, claims := make([]budget.Decision, len(batch)), make([]bool, len(batch))
	for i, a := range batch {
		var d budget.Decision
		if a.dryRun {
			d = budget.Admit(&policyv1alpha1.PodUnavailableBudget{ObjectMeta: pub.ObjectMeta, Status: *status}, a.pod, a.op, now)
			if d.Status != nil {
				d.Reason += " (dry run: nothing recorded)"
				d.Status = nil
			}
		} else if d = budget.AdmitInto(pub, status, a.pod, a.op, now); d.Status != nil {
			recorded = true
		} else if d.Allowed && !d.RecordedAt.IsZero() {
			budget.Claim(status, a.pod.Name, d, now)
			d.Status, claims[i], recorded = status, true, true
		}
		decisions[i] = d
	}
	return decisions, claims, recorded
}

// answerAll answers every ask and reports which callers were told.
func answerAll(batch []*ask, pub *policyv1alpha1.PodUnavailableBudget, decisions []budget.Decision, claims []bool, err error, at time.Time) []bool {
	told := make([]bool, len(batch))
	for i, a := range batch {
		ans := answer{pub: pub, err: err, at: at, claim: claims != nil && claims[i]}
		switch {
		case decisions != nil:
			ans.d = decisions[i]
		case err == nil:
			ans.d = budget.Decision{Allowed: true} // the budget is gone
		}
		told[i] = a.deliver(ans)
	}
	return told
}

func repeat(d budget.Decision, n int) []budget.Decision {
	out := make([]budget.Decision, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func writeResult(err error) string {
	switch {
	case err == nil:
		return "written"
	case apierrors.IsConflict(err):
		return "conflict"
	}
	return "error"
}
