package admission

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/pub/budget"
)

// ask is one disruption waiting for its budget's next status write.
type ask struct {
	pod    *corev1.Pod
	op     policyv1alpha1.PubOperation
	dryRun bool
	done   chan answer
}

type answer struct {
	pub *policyv1alpha1.PodUnavailableBudget
	d   budget.Decision
	err error
}

// queue holds the disruptions of one budget waiting for a write, and the
// budget as this process last wrote it. One goroutine at a time, the
// committer, drains it.
type queue struct {
	asks []*ask
	busy bool
	last *policyv1alpha1.PodUnavailableBudget
}

// Take judges disrupting pod by op against its budget and, unless dryRun,
// records an admitted disruption in the budget's status before it
// returns, by a write conditional on the version read; after a conflict
// it decides again on the fresh status. It returns the budget (nil for
// none) and the decision. The CloneSet controller takes budget this way
// before an in-place update, which no pod admission sees.
func (g *Guard) Take(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (*policyv1alpha1.PodUnavailableBudget, budget.Decision, error) {
	pub, err := g.budgetOf(ctx, pod)
	if err != nil || pub == nil {
		return nil, budget.Decision{Allowed: true}, err
	}
	key := pub.Namespace + "/" + pub.Name
	// A disruption that costs nothing is answered at once, on the cached
	// budget and without copying its records: only the budget's
	// controller removes records, so "already recorded" holds.
	if d, free := budget.Free(pub.Annotations, &pub.Status, pod, op); free {
		admissions.WithLabelValues(key, string(op), "free").Inc()
		return pub, d, nil
	}
	a := &ask{pod: pod, op: op, dryRun: dryRun, done: make(chan answer, 1)}
	g.enqueue(client.ObjectKeyFromObject(pub), a)
	var ans answer
	select {
	case ans = <-a.done:
	case <-ctx.Done():
		return pub, budget.Decision{}, ctx.Err()
	}
	switch {
	case ans.err != nil:
	case !ans.d.Allowed:
		admissions.WithLabelValues(key, string(op), "refused").Inc()
		g.Recorder.Eventf(pod, ans.pub, corev1.EventTypeWarning, "PubPreventPodDeletion", string(op), "%s", ans.d.Reason)
	case ans.d.Status == nil:
		admissions.WithLabelValues(key, string(op), "free").Inc()
	default:
		admissions.WithLabelValues(key, string(op), "admitted").Inc()
	}
	return ans.pub, ans.d, ans.err
}

// enqueue adds a to its budget's queue and starts a committer for the
// queue unless one is running.
func (g *Guard) enqueue(key types.NamespacedName, a *ask) {
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
	q.asks = append(q.asks, a)
	if !q.busy {
		q.busy = true
		go g.commitAll(key, q)
	}
}

// commitAll decides and records the queue's disruptions, a batch per
// write, until the queue is empty. Its context is its own: the request
// that started it may end before the others it answers.
func (g *Guard) commitAll(key types.NamespacedName, q *queue) {
	for {
		g.mu.Lock()
		batch := q.asks
		q.asks = nil
		if len(batch) == 0 {
			q.busy = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		g.commit(ctx, key, q, batch)
		cancel()
	}
}

// commit decides a batch in arrival order against the newest status
// known, each admitted disruption taken from the status the next one sees,
// and writes the result once. A conflict means another replica or the
// controller wrote first: the batch is decided again on a fresh read.
func (g *Guard) commit(ctx context.Context, key types.NamespacedName, q *queue, batch []*ask) {
	pub, err := g.base(ctx, key, q)
	if apierrors.IsNotFound(err) {
		answerAll(batch, nil, nil, nil) // the budget went meanwhile: nothing to guard
		return
	}
	for i := 0; err == nil && i < attempts; i++ {
		decisions, status := decide(pub, batch, g.Now())
		if status == nil {
			answerAll(batch, pub, decisions, nil)
			return
		}
		updated := pub.DeepCopy()
		updated.Status = *status
		start := time.Now()
		err = g.Writer.Status().Update(ctx, updated)
		statusWrites.WithLabelValues(writeResult(err)).Observe(time.Since(start).Seconds())
		batchSize.Observe(float64(len(batch)))
		switch {
		case err == nil:
			q.last = updated
			answerAll(batch, updated, decisions, nil)
			return
		case apierrors.IsNotFound(err):
			answerAll(batch, nil, nil, nil)
			return
		case apierrors.IsConflict(err):
			fresh := &policyv1alpha1.PodUnavailableBudget{}
			if err = g.Live.Get(ctx, key, fresh); apierrors.IsNotFound(err) {
				answerAll(batch, nil, nil, nil)
				return
			} else if err == nil {
				pub, q.last = fresh, fresh
			}
		}
	}
	if err != nil {
		answerAll(batch, pub, nil, err)
		return
	}
	busy := budget.Decision{Reason: fmt.Sprintf("PodUnavailableBudget %s is being updated by too many disruptions at once; try again", key.Name)}
	answerAll(batch, pub, repeat(busy, len(batch)), nil)
}

// writeTimeout bounds one batch's reads and writes.
const writeTimeout = 10 * time.Second

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

// newer reports whether resource version a is later than b. Versions are
// opaque in general; the API server's come from etcd revisions, so when
// both are numbers they order. Otherwise b (the cache's) is taken, and a
// stale guess costs a conflict, never a wrong decision.
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// decide judges a batch in order against pub's status. It returns each
// decision and the status to write, nil when nothing is to be recorded.
// A dry run is judged like the others but leaves nothing for those after.
func decide(pub *policyv1alpha1.PodUnavailableBudget, batch []*ask, now time.Time) ([]budget.Decision, *policyv1alpha1.PodUnavailableBudgetStatus) {
	status := pub.Status.DeepCopy()
	changed := false
	decisions := make([]budget.Decision, len(batch))
	for i, a := range batch {
		var d budget.Decision
		if a.dryRun {
			// Judged like the others, on a copy, and leaving nothing.
			d = budget.Admit(&policyv1alpha1.PodUnavailableBudget{ObjectMeta: pub.ObjectMeta, Status: *status}, a.pod, a.op, now)
			if d.Status != nil {
				d.Reason += " (dry run: nothing recorded)"
				d.Status = nil
			}
		} else if d = budget.AdmitInto(pub, status, a.pod, a.op, now); d.Status != nil {
			changed = true
		}
		decisions[i] = d
	}
	if !changed {
		return decisions, nil
	}
	return decisions, status
}

func answerAll(batch []*ask, pub *policyv1alpha1.PodUnavailableBudget, decisions []budget.Decision, err error) {
	for i, a := range batch {
		ans := answer{pub: pub, err: err}
		switch {
		case decisions != nil:
			ans.d = decisions[i]
		case err == nil:
			ans.d = budget.Decision{Allowed: true} // the budget is gone
		}
		a.done <- ans
	}
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
