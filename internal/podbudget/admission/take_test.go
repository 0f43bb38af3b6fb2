package admission

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

func readyPod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": "a"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

// Disruptions racing from two guards (two replicas) over one API server
// that refuses stale writes: however the batches interleave, exactly the
// allowed number is admitted and recorded.
func TestTakeAdmitsExactlyTheAllowedAcrossReplicas(t *testing.T) {
	pub := budgetObj("b", map[string]string{"app": "a"}, 5)
	var writes atomic.Int64
	c := fakeAPI(t, func(context.Context) error { writes.Add(1); return nil }, pub)
	guard := func() *Guard {
		return &Guard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(1000), Now: time.Now}
	}
	replicas := []*Guard{guard(), guard()}
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := replicas[i%2].Take(context.Background(), Request{Pod: readyPod(i), Op: policyv1alpha1.PubEvictOperation, DryRun: i%10 == 3})
			switch {
			case err != nil:
				t.Error(err)
			case d.Allowed && i%10 != 3:
				admitted.Add(1)
			case !d.Allowed:
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	got := &policyv1alpha1.PodUnavailableBudget{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pub), got); err != nil {
		t.Fatal(err)
	}
	if admitted.Load() != 5 || len(got.Status.DisruptedPods) != 5 || got.Status.UnavailableAllowed != 0 {
		t.Errorf("%d admitted, %d recorded, %d allowed left; want 5, 5, 0", admitted.Load(), len(got.Status.DisruptedPods), got.Status.UnavailableAllowed)
	}
	for name := range got.Status.DisruptedPods {
		var i int
		fmt.Sscanf(name, "p%d", &i)
		if i%10 == 3 {
			t.Errorf("dry run %s recorded", name)
		}
	}
	t.Logf("%d admitted, %d refused, %d status writes", admitted.Load(), refused.Load(), writes.Load())
}

// A batch is judged in order, each admission taking from what the next
// sees; a dry run is judged but takes nothing.
func TestDecide(t *testing.T) {
	pub := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Status: policyv1alpha1.PodUnavailableBudgetStatus{DesiredAvailable: 8, CurrentAvailable: 10, UnavailableAllowed: 2, TotalReplicas: 10}}
	var batch []*ask
	for i := 0; i < 4; i++ {
		batch = append(batch, &ask{pod: readyPod(i), op: policyv1alpha1.PubDeleteOperation, dryRun: i == 0})
	}
	batch = append(batch, &ask{pod: readyPod(1), op: policyv1alpha1.PubDeleteOperation}) // p1 again: already recorded
	status := pub.Status.DeepCopy()
	decisions, claims, recorded := decide(pub, status, batch, time.Now())
	want := []bool{true, true, true, false, true}
	for i, d := range decisions {
		if d.Allowed != want[i] {
			t.Errorf("ask %d: allowed %v (%s), want %v", i, d.Allowed, d.Reason, want[i])
		}
		// p1 again claims the record the batch made (a second later).
		if claims[i] != (i == 4) {
			t.Errorf("ask %d: claim %v", i, claims[i])
		}
	}
	if !recorded || status.UnavailableAllowed != 0 || len(status.DisruptedPods) != 2 {
		t.Fatalf("status %+v, want p1 and p2 recorded and nothing left", status)
	}
	if _, ok := status.DisruptedPods["p0"]; ok {
		t.Error("the dry run was recorded")
	}
	if pub.Status.UnavailableAllowed != 2 {
		t.Error("decide changed the budget it was given")
	}
	if _, _, recorded := decide(pub, pub.Status.DeepCopy(), batch[:1], time.Now()); recorded {
		t.Error("a lone dry run writes")
	}
}

// A budget deleted between finding it and recording in it guards nothing:
// the disruption is let through, not failed.
func TestCommitAfterTheBudgetWent(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = policyv1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	g := &Guard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(10), Now: time.Now}
	a := &ask{pod: readyPod(0), op: policyv1alpha1.PubDeleteOperation, done: make(chan answer, 1)}
	g.commit(context.Background(), types.NamespacedName{Namespace: "ns", Name: "gone"}, &queue{}, []*ask{a}, nil)
	if ans := <-a.done; ans.err != nil || !ans.d.Allowed {
		t.Errorf("after the budget went: %+v", ans)
	}
}

// With an operation's gate off (--pub-delete-gate=false or
// --pub-update-gate=false, OpenKruise's two feature gates), a spent budget
// refuses the other operations and lets that one through, recording
// nothing.
func TestUncheckedOperationsPassASpentBudget(t *testing.T) {
	pub := budgetObj("b", map[string]string{"app": "a"}, 0)
	c := fakeAPI(t, func(context.Context) error { return nil }, pub)
	g := &Guard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(100), Now: time.Now,
		Unchecked: map[policyv1alpha1.PubOperation]bool{policyv1alpha1.PubUpdateOperation: true, policyv1alpha1.PubResizeOperation: true}}
	for op, allowed := range map[policyv1alpha1.PubOperation]bool{
		policyv1alpha1.PubDeleteOperation: false, policyv1alpha1.PubEvictOperation: false,
		policyv1alpha1.PubUpdateOperation: true, policyv1alpha1.PubResizeOperation: true,
	} {
		v, err := g.Take(context.Background(), Request{Pod: readyPod(1), Op: op})
		if err != nil || v.Allowed != allowed {
			t.Errorf("%s: allowed %v (%v), want %v", op, v.Allowed, err, allowed)
		}
	}
	got := &policyv1alpha1.PodUnavailableBudget{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pub), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.DisruptedPods)+len(got.Status.UnavailablePods) != 0 {
		t.Errorf("records %v %v, want none", got.Status.DisruptedPods, got.Status.UnavailablePods)
	}
	key := pub.Namespace + "/" + pub.Name
	for _, op := range []policyv1alpha1.PubOperation{policyv1alpha1.PubUpdateOperation, policyv1alpha1.PubResizeOperation} {
		if n := testutil.ToFloat64(admissions.WithLabelValues(key, string(op), "unchecked")); n != 1 {
			t.Errorf("%s let through unchecked counted %v times, want 1", op, n)
		}
	}
}

// A status write drops the records of disruptions that happened (their
// pods terminating or gone), with the counts left as they are; a decision
// that records nothing writes nothing just to drop them.
func TestWritesDropSettledRecords(t *testing.T) {
	pub := budgetObj("b", map[string]string{"app": "a"}, 5)
	now := time.Now()
	pub.Status.DisruptedPods = map[string]metav1.Time{
		"p1": metav1.NewTime(now.Add(-2 * time.Second)), // terminating
		"p2": metav1.NewTime(now.Add(-2 * time.Second)), // still running
		"p3": metav1.NewTime(now.Add(-time.Minute)),     // gone
	}
	pub.Status.UnavailableAllowed = 2
	terminating := readyPod(1)
	terminating.DeletionTimestamp, terminating.Finalizers = ptrTime(now), []string{"example.com/hold"}
	var writes atomic.Int64
	c := fakeAPI(t, func(context.Context) error { writes.Add(1); return nil }, pub, terminating, readyPod(2))
	g := &Guard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(100), Now: time.Now}
	droppedBefore := testutil.ToFloat64(settledDropped)

	// p1 again: terminating, so free, and nothing is written.
	if v, err := g.Take(context.Background(), Request{Pod: terminating, Op: policyv1alpha1.PubEvictOperation}); err != nil || !v.Allowed {
		t.Fatalf("the terminating pod: %+v, %v", v, err)
	}
	if writes.Load() != 0 {
		t.Fatalf("%d writes for a decision that records nothing", writes.Load())
	}
	if v, err := g.Take(context.Background(), Request{Pod: readyPod(4), Op: policyv1alpha1.PubEvictOperation}); err != nil || !v.Allowed {
		t.Fatalf("p4: %+v, %v", v, err)
	}
	got := &policyv1alpha1.PodUnavailableBudget{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pub), got); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for name := range got.Status.DisruptedPods {
		kept = append(kept, name)
	}
	slices.Sort(kept)
	if !slices.Equal(kept, []string{"p2", "p4"}) || got.Status.UnavailableAllowed != 1 {
		t.Errorf("records %v, %d allowed left; want [p2 p4], 1", kept, got.Status.UnavailableAllowed)
	}
	if n := testutil.ToFloat64(settledDropped) - droppedBefore; n != 2 {
		t.Errorf("lifeline_pub_settled_records_dropped_total grew by %v, want 2 (p1, p3)", n)
	}
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
