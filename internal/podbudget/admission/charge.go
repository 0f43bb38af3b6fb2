package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/workload"
)

var (
	// refusedByOwner is OpenKruise's pod_unavailable_budget counter, with
	// its labels and values, so dashboards built on it keep working.
	refusedByOwner = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pod_unavailable_budget",
		Help: "Disruptions refused by a PodUnavailableBudget, as OpenKruise counts them: by the pod's controller (<kind>_<namespace>_<name>, kind unknown and the pod's name for a pod without one) and the requesting user.",
	}, []string{"kind_namespace_name", "username"})
	withdrawals = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lifeline_pub_withdrawals_total",
		Help: "Disruptions recorded in a budget and taken back because nobody was admitted by them: their request timed out, or another budget covering the pod refused it.",
	})
)

func init() { metrics.Registry.MustRegister(refusedByOwner, withdrawals) }

// Request is one disruption to judge.
type Request struct {
	Pod *corev1.Pod
	Op  policyv1alpha1.PubOperation
	// User is who asks (for events and the refusal counter).
	User   string
	DryRun bool
	// Exit, when set, is the budgets a metadata-only update takes the pod
	// out of: it is judged by those alone.
	Exit Exit
}

// Verdict is the answer to a disruption under every budget covering its pod.
type Verdict struct {
	Allowed bool
	// Reason says why it is refused, or why it was let through.
	Reason string
	// Refused is the budget that refused it; nil when admitted.
	Refused *policyv1alpha1.PodUnavailableBudget
}

// taken is a disruption recorded in one budget, to withdraw if another
// budget refuses it.
type taken struct {
	key types.NamespacedName
	at  time.Time
}

// Take judges r against every budget covering the pod, the strictest
// first, and, unless it is a dry run, records an admitted disruption in each before it
// returns, by writes conditional on the version read (see commit). It is
// admitted only when every budget admits it; when one refuses, or ctx ends
// first (ErrTooLate), what the others recorded is withdrawn, so a refused
// disruption holds no budget. While a withdrawal is pending the others
// count the pod as disrupted, which errs on the safe side. The CloneSet
// controller takes budget this way before an in-place update, which no pod
// admission sees.
func (g *Guard) Take(ctx context.Context, r Request) (Verdict, error) {
	budgets, err := g.budgetsOf(ctx, r.Pod)
	if r.Exit.Budgets != nil {
		budgets, err = r.Exit.Budgets, nil
	}
	if g.Unchecked[r.Op] {
		// Counted, so that a user weighing the gate sees what it lets
		// through unjudged.
		for _, pub := range budgets {
			admissions.WithLabelValues(pub.Namespace+"/"+pub.Name, string(r.Op), "unchecked").Inc()
		}
		return Verdict{Allowed: true, Reason: fmt.Sprintf("budgets are not checked for %s (its gate is off)", r.Op)}, nil
	}
	if err != nil || len(budgets) == 0 {
		return Verdict{Allowed: true}, err
	}
	if v, gone := g.workloadGone(ctx, r, budgets, g.Cache); gone {
		return v, nil
	}
	v := Verdict{Allowed: true}
	var charge []charged
	for _, pub := range budgets {
		key := client.ObjectKeyFromObject(pub)
		// A disruption that costs nothing is answered at once, on the
		// cached budget and without copying its records: only the
		// budget's controller removes records, so "already recorded"
		// holds (unless the record may be an orphan, see markRecorded).
		d, free := budget.Free(pub.Annotations, &pub.Status, r.Pod, r.Op)
		if free && !g.isUnsettled(key, r.Pod.Name) && (d.RecordedAt.IsZero() || g.isConfirmed(key, r.Pod.Name, d.RecordedAt)) {
			admissions.WithLabelValues(key.String(), string(r.Op), "free").Inc()
			v.Reason = d.Reason
			continue
		}
		// A record another process made (or this one before a restart)
		// is claimed by a write before anyone is admitted by it: see
		// isConfirmed.
		claim := free && !d.RecordedAt.IsZero()
		charge = append(charge, charged{pub: pub, key: key, allowed: g.allowed(key, pub), claim: claim})
	}
	// The strictest budget first, and a spent one refuses before any
	// other is charged: a disruption one budget refuses should hold no
	// other, not even until its withdrawal is written. A claim takes no
	// unit, so a spent budget does not refuse it.
	sort.SliceStable(charge, func(i, j int) bool {
		return !charge[i].claim && (charge[j].claim || charge[i].allowed < charge[j].allowed)
	})
	if len(charge) > 0 && !charge[0].claim {
		if d, spent := charge[0].spent(); spent {
			return g.refuse(ctx, r, budgets, charge[0].pub, nil, d.Reason), nil
		}
	}
	var held []taken
	for _, c := range charge {
		ans := g.takeOne(ctx, c.key, r.Pod, r.Op, r.DryRun)
		switch {
		case ans.err != nil:
			g.release(held, r.Pod.Name)
			g.undecided(c.pub, r, ans.err)
			return Verdict{}, ans.err
		case !ans.d.Allowed:
			return g.refuse(ctx, r, budgets, c.pub, held, ans.d.Reason), nil
		case ans.d.Status != nil && !ans.claim:
			held = append(held, taken{key: c.key, at: ans.at})
			admissions.WithLabelValues(c.key.String(), string(r.Op), "admitted").Inc()
		case ans.d.Status != nil:
			admissions.WithLabelValues(c.key.String(), string(r.Op), "claimed").Inc()
		default:
			admissions.WithLabelValues(c.key.String(), string(r.Op), "free").Inc()
		}
		v.Reason = ans.d.Reason
	}
	return v, nil
}

// charged is a budget a disruption is to be recorded in.
type charged struct {
	pub     *policyv1alpha1.PodUnavailableBudget
	key     types.NamespacedName
	allowed int32
	// claim: the pod is recorded already, by a record this process did
	// not see land.
	claim bool
}

// spent reports whether the budget allows no more disruptions as this
// process last knew it, with the refusal.
func (c charged) spent() (budget.Decision, bool) {
	st := c.pub.Status
	st.DisruptedPods, st.UnavailablePods, st.Conditions = nil, nil, nil // not read; not copied
	st.UnavailableAllowed = c.allowed
	return budget.Spent(c.pub.Name, &st)
}

// allowed is how many disruptions budget key allows as this process last
// knew it: as it last wrote it, when the cache has not caught up yet.
func (g *Guard) allowed(key types.NamespacedName, cached *policyv1alpha1.PodUnavailableBudget) int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if q := g.queues[key]; q != nil && q.last != nil && q.last.UID == cached.UID && newer(q.last.ResourceVersion, cached.ResourceVersion) {
		return q.last.Status.UnavailableAllowed
	}
	return cached.Status.UnavailableAllowed
}

// refuse answers a refusal by pub, withdrawing what other budgets recorded
// (held) — unless, for a DELETE, the pod's workload turns out to be gone
// read live: the garbage collector deletes pods right after their
// workload, before the cache may have seen it. Evictions, which come in
// storms from drains, are judged on the cache alone, sparing the API
// server a read per refusal.
func (g *Guard) refuse(ctx context.Context, r Request, budgets []*policyv1alpha1.PodUnavailableBudget, pub *policyv1alpha1.PodUnavailableBudget, held []taken, reason string) Verdict {
	g.release(held, r.Pod.Name)
	if r.Op == policyv1alpha1.PubDeleteOperation {
		if v, gone := g.workloadGone(ctx, r, budgets, g.Live); gone {
			return v
		}
	}
	g.refused(pub, r, reason)
	return Verdict{Reason: reason, Refused: pub}
}

// workloadGone lets the disruption through when the pod's workload is gone
// or being deleted (workload.Gone), read through reader then live.
func (g *Guard) workloadGone(ctx context.Context, r Request, budgets []*policyv1alpha1.PodUnavailableBudget, reader client.Reader) (Verdict, bool) {
	ref := metav1.GetControllerOf(r.Pod)
	if ref == nil || !workload.Gone(ctx, reader, g.Live, r.Pod.Namespace, *ref) {
		return Verdict{}, false
	}
	for _, pub := range budgets {
		admissions.WithLabelValues(pub.Namespace+"/"+pub.Name, string(r.Op), "free").Inc()
	}
	return Verdict{Allowed: true, Reason: fmt.Sprintf("its %s %s is gone or being deleted", ref.Kind, ref.Name)}, true
}

// release withdraws a refused disruption from the budgets that recorded it.
func (g *Guard) release(held []taken, pod string) {
	for _, t := range held {
		g.withdraw(t.key, pod, t.at)
	}
}

// refused tells of a refusal: a Warning on the budget naming the pod, the
// operation and the user; OpenKruise's Warning on the pod; the counters.
func (g *Guard) refused(pub *policyv1alpha1.PodUnavailableBudget, r Request, reason string) {
	admissions.WithLabelValues(pub.Namespace+"/"+pub.Name, string(r.Op), "refused").Inc()
	refusedByOwner.WithLabelValues(ownerLabel(r.Pod), users.label(r.User)).Inc()
	g.Recorder.Eventf(pub, r.Pod, corev1.EventTypeWarning, "DisruptionRefused", string(r.Op),
		"%s of pod %s by %s refused: %s", r.Op, r.Pod.Name, r.User, reason)
	g.Recorder.Eventf(r.Pod, pub, corev1.EventTypeWarning, "PubPreventPodDeletion", string(r.Op), "%s", reason)
}

// undecided tells of a disruption answered "retry later": the budget could
// not be decided in time, or its reads or writes failed.
func (g *Guard) undecided(pub *policyv1alpha1.PodUnavailableBudget, r Request, err error) {
	result := "error"
	if errors.Is(err, ErrTooLate) {
		result = "timeout"
	}
	admissions.WithLabelValues(pub.Namespace+"/"+pub.Name, string(r.Op), result).Inc()
	refusedByOwner.WithLabelValues(ownerLabel(r.Pod), users.label(r.User)).Inc()
	g.Recorder.Eventf(pub, r.Pod, corev1.EventTypeWarning, "DisruptionNotDecided", string(r.Op),
		"%s of pod %s by %s answered with retry: %v", r.Op, r.Pod.Name, r.User, err)
}

// ownerLabel is OpenKruise's kind_namespace_name value for pod, but for a
// pod without a controller "unknown_<namespace>_" without its name:
// OpenKruise's pod name makes a series per pod, without bound.
func ownerLabel(pod *corev1.Pod) string {
	ns := pod.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.Kind + "_" + ns + "_" + ref.Name
	}
	return "unknown_" + ns + "_"
}

// maxUsers bounds the refusal counter's username values: the users past
// the first maxUsers (a cluster whose users come from an identity
// provider) are counted as "other".
const maxUsers = 100

var users = &userLabels{seen: map[string]bool{}}

type userLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (u *userLabels) label(user string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.seen[user] && len(u.seen) >= maxUsers {
		return "other"
	}
	u.seen[user] = true
	return user
}
