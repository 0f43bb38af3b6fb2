package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
)

func budgetObj(name string, selector map[string]string, allowed int32) *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector},
			MaxUnavailable: ptr.To(intstr.FromInt32(allowed))},
		Status: policyv1alpha1.PodUnavailableBudgetStatus{DesiredAvailable: 100 - allowed, CurrentAvailable: 100, UnavailableAllowed: allowed, TotalReplicas: 100}}
}

// fakeAPI is an API server that refuses stale writes, whose status writes
// go through slow first.
func fakeAPI(t *testing.T, slow func(ctx context.Context) error, objs ...client.Object) client.Client {
	t.Helper()
	return fakeAPIWith(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if err := slow(ctx); err != nil {
			return err
		}
		return c.SubResource(sub).Update(context.Background(), obj, opts...)
	}}, objs...)
}

// fakeAPIWith is an API server holding objs whose calls go through funcs.
func fakeAPIWith(funcs interceptor.Funcs, objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = policyv1alpha1.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).
		WithInterceptorFuncs(funcs).Build()
}

// waitStatus polls the budget until ok holds, failing after a deadline.
func waitStatus(t *testing.T, c client.Client, name string, ok func(policyv1alpha1.PodUnavailableBudgetStatus) bool) policyv1alpha1.PodUnavailableBudgetStatus {
	t.Helper()
	got := &policyv1alpha1.PodUnavailableBudget{}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, got); err != nil {
			t.Fatal(err)
		}
		if ok(got.Status) {
			return got.Status
		}
		if time.Now().After(end) {
			t.Fatalf("budget %s: status %+v never settled", name, got.Status)
		}
	}
}

// A request whose deadline passes while its status write is in flight is
// answered ErrTooLate, and nothing stays spent on it: whether the slow
// write lands after the caller left (the API server finished it anyway) or
// is cut off, the budget ends with no record of the pod and its unit back,
// long before a record would expire (20 s).
func TestARefusedRequestSpendsNothing(t *testing.T) {
	for _, landsLate := range []bool{true, false} {
		t.Run(fmt.Sprintf("write lands late: %v", landsLate), func(t *testing.T) {
			var writes atomic.Int64
			c := fakeAPI(t, func(ctx context.Context) error {
				if writes.Add(1) > 1 {
					return nil // the withdrawal goes through at once
				}
				<-ctx.Done()
				if landsLate {
					time.Sleep(50 * time.Millisecond)
					return nil
				}
				return ctx.Err()
			}, budgetObj("b", map[string]string{"app": "a"}, 1))
			g := &Guard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(100), Now: time.Now}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := g.Take(ctx, Request{Pod: readyPod(0), Op: policyv1alpha1.PubEvictOperation})
			if !errors.Is(err, ErrTooLate) {
				t.Fatalf("Take = %v, want ErrTooLate", err)
			}
			waitStatus(t, c, "b", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
				return len(s.DisruptedPods) == 0 && s.UnavailableAllowed == 1 && !g.isUnsettled(client.ObjectKey{Namespace: "ns", Name: "b"}, "p0")
			})
			// The budget is whole again: the next pod is admitted.
			v, err := g.Take(context.Background(), Request{Pod: readyPod(1), Op: policyv1alpha1.PubEvictOperation})
			if err != nil || !v.Allowed {
				t.Errorf("the next disruption: %+v, %v", v, err)
			}
		})
	}
}

// Disruptions racing from two guards (two replicas) over pods covered by
// two overlapping budgets: "all" over every pod allowing 4, and "even" over
// the even pods allowing 2. First 30 even pods race: "even" binds, exactly
// 2 are admitted (charging only the first budget by name, as OpenKruise
// does, admits 4). Then 30 odd pods race for what "all" has left: exactly
// 2. Once the withdrawals of the refused settle, each budget records
// exactly the pods admitted under it.
func TestOverlappingBudgetsAreEachCharged(t *testing.T) {
	all := budgetObj("all", map[string]string{"app": "a"}, 4)
	even := budgetObj("even", map[string]string{"tier": "even"}, 2)
	c := fakeAPI(t, func(context.Context) error { return nil }, all, even)
	guard := func() *Guard {
		return &Guard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(1000), Now: time.Now}
	}
	replicas := []*Guard{guard(), guard()}
	admitted := map[string]bool{}
	race := func(parity int) (n int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := parity; i < 60; i += 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pod := readyPod(i)
				if parity == 0 {
					pod.Labels["tier"] = "even"
				}
				v, err := replicas[i/2%2].Take(context.Background(), Request{Pod: pod, Op: policyv1alpha1.PubEvictOperation})
				if err != nil {
					t.Error(err)
				}
				if v.Allowed {
					mu.Lock()
					admitted[pod.Name] = true
					n++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return n
	}
	if n := race(0); n != 2 {
		t.Errorf("%d even pods admitted; the even budget allows 2", n)
	}
	if n := race(1); n != 2 {
		t.Errorf("%d odd pods admitted; the all budget has 2 left", n)
	}
	recorded := func(want int) func(policyv1alpha1.PodUnavailableBudgetStatus) bool {
		return func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
			for name := range s.DisruptedPods {
				if !admitted[name] {
					return false
				}
			}
			return len(s.DisruptedPods) == want
		}
	}
	if s := waitStatus(t, c, "all", recorded(4)); s.UnavailableAllowed != 0 {
		t.Errorf("all: %d allowed left, want 0", s.UnavailableAllowed)
	}
	if s := waitStatus(t, c, "even", recorded(2)); s.UnavailableAllowed != 0 {
		t.Errorf("even: %d allowed left, want 0", s.UnavailableAllowed)
	}
}

// A CloneSet plan's check charges every budget covering a pod: with "all"
// allowing 3 and "even" allowing 1, of four even pods one is allowed, and
// then two odd ones before "all" is spent.
func TestCheckChargesEveryCoveringBudget(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}
	check := NewCheck([]policyv1alpha1.PodUnavailableBudget{
		*budgetObj("all", map[string]string{"app": "a"}, 3), *budgetObj("even", map[string]string{"tier": "even"}, 1)}, owner, time.Now())
	var got []bool
	for i := 0; i < 7; i++ {
		pod := readyPod(i)
		if i < 4 {
			pod.Labels["tier"] = "even"
		}
		ok, _ := check.Allow(pod, disruption.Delete)
		got = append(got, ok)
	}
	want := []bool{true, false, false, false, true, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pod %d: allowed %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

// Two replicas: A's status write recording p0 lands after A's caller gave
// up, so A withdraws the record; before the withdrawal lands the caller's
// retry reaches B, which finds p0 recorded and admits it. The withdrawal
// must then not give the unit back: p0 is being evicted on it. B claims
// the record with a write of its own (a later record time, which the
// withdrawal no longer matches). Without the claim the budget ended with
// p0's unit back and p1 admitted too: one disruption over the budget (the
// e2e eviction storm with two replicas saw 7 admitted of 5).
func TestAWithdrawalNeverTakesBackARecordAnotherReplicaAdmittedBy(t *testing.T) {
	var writes atomic.Int64
	release := make(chan struct{})
	c := fakeAPIWith(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if writes.Add(1) == 1 { // A's record of p0 lands after A's caller left
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond)
		} else if _, recorded := obj.(*policyv1alpha1.PodUnavailableBudget).Status.DisruptedPods["p0"]; !recorded {
			<-release // A's withdrawal waits until B has answered
		}
		return c.SubResource(sub).Update(context.Background(), obj, opts...)
	}}, budgetObj("b", map[string]string{"app": "a"}, 1))
	replica := func() *Guard {
		return &Guard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(100), Now: time.Now}
	}
	a, b := replica(), replica()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := a.Take(ctx, Request{Pod: readyPod(0), Op: policyv1alpha1.PubEvictOperation}); !errors.Is(err, ErrTooLate) {
		t.Fatalf("A: Take = %v, want ErrTooLate", err)
	}
	waitStatus(t, c, "b", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool { _, ok := s.DisruptedPods["p0"]; return ok })
	claimed := admissions.WithLabelValues("ns/b", string(policyv1alpha1.PubEvictOperation), "claimed")
	claimedBefore := testutil.ToFloat64(claimed)
	if v, err := b.Take(context.Background(), Request{Pod: readyPod(0), Op: policyv1alpha1.PubEvictOperation}); err != nil || !v.Allowed {
		t.Fatalf("B: the retry of p0 = %+v, %v; want admitted (p0 is recorded)", v, err)
	}
	if n := testutil.ToFloat64(claimed) - claimedBefore; n != 1 {
		t.Errorf("B's admission counted %v times as claimed, want 1 (the claim costs a write a user should see)", n)
	}
	close(release)
	key := client.ObjectKey{Namespace: "ns", Name: "b"}
	for end := time.Now().Add(5 * time.Second); a.isUnsettled(key, "p0"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("A's withdrawal never settled")
		}
	}
	s := waitStatus(t, c, "b", func(policyv1alpha1.PodUnavailableBudgetStatus) bool { return true })
	if _, ok := s.DisruptedPods["p0"]; !ok || s.UnavailableAllowed != 0 {
		t.Errorf("after A's withdrawal: records %v, %d allowed; want p0 recorded and none allowed (p0 was admitted)", s.DisruptedPods, s.UnavailableAllowed)
	}
	if v, err := a.Take(context.Background(), Request{Pod: readyPod(1), Op: policyv1alpha1.PubEvictOperation}); err != nil || v.Allowed {
		t.Errorf("p1 = %+v, %v; want refused: the budget allows 1 and p0 took it", v, err)
	}
}
