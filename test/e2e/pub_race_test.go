package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// storm evicts every pod of pods at once, one goroutine each, each
// retrying what is neither admitted nor refused (a webhook that cannot be
// reached while the manager restarts) until a deadline. It returns how
// many were admitted and how many refused with 429; any other outcome
// fails the test. failures counts the attempts retried.
func storm(t *testing.T, ns string, pods []corev1.Pod, failures *atomic.Int64) (admitted, refused int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	deadline := time.Now().Add(2 * time.Minute)
	for _, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := client.CoreV1().Pods(ns).EvictV1(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name}})
				mu.Lock()
				switch {
				case err == nil:
					admitted++
				case apierrors.IsTooManyRequests(err):
					refused++
				case time.Now().After(deadline):
					t.Errorf("evicting %s: %v", pod.Name, err)
				default:
					failures.Add(1)
					mu.Unlock()
					// A retry's pace: kubectl drain waits 5 s after a 429
					// and gives up on other errors. Every 200 ms, the 197
					// evictions sent during the manager's outage made about
					// 1,000 requests a second, each calling the webhook
					// that could not be reached, for as long as the
					// manager took to start again on the busy machine.
					time.Sleep(time.Second)
					continue
				}
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
	return admitted, refused
}

// disrupted counts the pods of pods that are gone or being deleted, read
// back from the API server.
func disrupted(t *testing.T, ns string, pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if pod := readPod(t, ns, p.Name); pod == nil || pod.DeletionTimestamp != nil {
			n++
		}
	}
	return n
}

// stormUntilSpent storms pods and, while fewer than want were admitted,
// storms the pods left again once every named budget records only pods
// that went, as kubectl drain retries a 429. A record whose write landed
// after its caller gave up holds its unit, on the safe side, until the
// withdrawal lands (the API server finishing budget writes seconds after
// the webhook's deadline, seen under make test's load on 11-29: 1 of the
// "even" budget's 2 admitted, every other eviction already refused); a
// storm that gave up at its first 429 counted that unit lost. A unit lost
// for good still fails: the last round is refused too. It returns the
// admissions, the first round's refusals and the rounds it took.
func stormUntilSpent(t *testing.T, ns string, pods []corev1.Pod, want int, budgets ...string) (admitted, refused, rounds int) {
	t.Helper()
	admitted, refused = storm(t, ns, pods, new(atomic.Int64))
	admitted, rounds = stormAgain(t, ns, pods, want, admitted, budgets...)
	return admitted, refused, rounds
}

// stormAgain is stormUntilSpent's further rounds after a first that
// admitted admitted.
func stormAgain(t *testing.T, ns string, pods []corev1.Pod, want, admitted int, budgets ...string) (int, int) {
	t.Helper()
	rounds := 1
	for ; admitted < want && rounds < 3; rounds++ {
		waitRecordsSettled(t, ns, budgets...)
		var left []corev1.Pod
		for _, p := range pods {
			if pod := readPod(t, ns, p.Name); pod != nil && pod.DeletionTimestamp == nil {
				left = append(left, p)
			}
		}
		more, _ := storm(t, ns, left, new(atomic.Int64))
		admitted += more
	}
	return admitted, rounds
}

// waitRecordsSettled waits until each named budget of ns records only pods
// that went: every withdrawal has landed.
func waitRecordsSettled(t *testing.T, ns string, budgets ...string) {
	t.Helper()
	for _, name := range budgets {
		eventually(t, 30*time.Second, "budget "+name+" recording only pods that went", func(ctx context.Context) (bool, string, error) {
			b := &policyv1alpha1.PodUnavailableBudget{}
			if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
				return false, err.Error(), nil
			}
			for pod := range b.Status.DisruptedPods {
				if p := readPod(t, ns, pod); p != nil && p.DeletionTimestamp == nil {
					return false, pod + " is recorded and still running", nil
				}
			}
			return true, "", nil
		})
	}
}

// TestPodUnavailableBudgetEvictionStorm: 200 concurrent evictions against
// a budget that allows 5 of 200 pods. Exactly 5 are admitted and 195
// refused with 429, and exactly 5 pods are gone, read back from the API
// server: with one manager; with the manager killed after 3 admissions and
// the other 197 evictions sent while it is down (they meet a webhook that
// cannot be reached, which fails closed, and retry), so the 2 left are
// raced for by a new process; and with two replicas serving the webhook
// behind a balancer that alternates them. The pods have no workload
// (protect-total-replicas counts them): a replacement coming up during the
// storm would rightly give the budget room again, and "exactly 5" would no
// longer be the promise.
func TestPodUnavailableBudgetEvictionStorm(t *testing.T) {
	ctx := context.Background()
	settledBudget := policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 200, DesiredAvailable: 195, CurrentAvailable: 200, UnavailableAllowed: 5}
	var ns string
	// crowd makes the 200 pods and their budget; with evens, the even pods
	// are also covered by a second budget, "even", allowing 2 of 100.
	crowd := func(t *testing.T, evens ...bool) []corev1.Pod {
		ns = newNamespace(t)
		budget := func(name string, labels map[string]string, total string, allowed int32) {
			b := newBudget(ns, name, policyv1alpha1.PodUnavailableBudgetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels}, MaxUnavailable: ptr.To(intstr.FromInt32(allowed))})
			b.Annotations = map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: total}
			create(t, b)
		}
		budget("crowd", map[string]string{"app": "crowd"}, "200", 5)
		overlap := len(evens) > 0 && evens[0]
		if overlap {
			budget("even", map[string]string{"tier": "even"}, "100", 2)
		}
		var wg sync.WaitGroup
		for w := 0; w < 20; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < 200; i += 20 {
					labels := map[string]string{"app": "crowd"}
					if overlap && i%2 == 0 {
						labels["tier"] = "even"
					}
					if _, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("crowd-%03d", i),
						Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}},
						metav1.CreateOptions{}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		waitBudgetWithin(t, 2*time.Minute, ns, "crowd", settledBudget)
		if overlap {
			waitBudget(t, ns, "even", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 100, DesiredAvailable: 98, CurrentAvailable: 100, UnavailableAllowed: 2})
		}
		return livePods(t, ns, "app=crowd")
	}
	// check judges a storm of the 200 pods that took rounds (stormUntilSpent):
	// in one, exactly 195 refused.
	check := func(t *testing.T, pods []corev1.Pod, admitted, refused, rounds int) {
		t.Helper()
		if admitted != 5 || (rounds == 1 && refused != 195) {
			t.Errorf("%d evictions admitted (%d refused with 429 in the first of %d rounds); want 5 and 195", admitted, refused, rounds)
		}
		if gone := disrupted(t, ns, pods); gone != 5 {
			t.Errorf("%d pods gone or going, want 5", gone)
		}
		if rounds > 1 {
			t.Logf("%d rounds: a unit was held by a record being withdrawn while the first round was refused", rounds)
		}
	}

	t.Run("one manager", func(t *testing.T) {
		pods := crowd(t)
		admitted, refused, rounds := stormUntilSpent(t, ns, pods, 5, "crowd")
		check(t, pods, admitted, refused, rounds)
	})

	t.Run("manager killed in the middle", func(t *testing.T) {
		pods := crowd(t)
		admitted, refused := storm(t, ns, pods[:3], new(atomic.Int64))
		if err := local.StopProcess(lifeline.Name, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var a2, r2 int
		var failures atomic.Int64
		done := make(chan struct{})
		go func() { defer close(done); a2, r2 = storm(t, ns, pods[3:], &failures) }()
		// Every eviction of the storm meets the outage before the
		// manager is back.
		eventually(t, time.Minute, "every eviction refused by the outage", func(context.Context) (bool, string, error) {
			n := failures.Load()
			return n >= int64(len(pods)-3), fmt.Sprint(n, " failed attempts"), nil
		})
		if err := local.StartLifelineAgain(ctx, lifeline); err != nil {
			t.Fatal(err)
		}
		<-done
		all, rounds := stormAgain(t, ns, pods, 5, admitted+a2, "crowd")
		check(t, pods, all, refused+r2, rounds)
	})

	// Both budgets hold, each exactly. First the 100 even pods storm:
	// "even" (2 of 100) binds, so exactly 2 are admitted (charging only
	// the first budget by name, "crowd", as OpenKruise does, admits 5).
	// Then the 100 odd pods storm for what "crowd" (5 of 200) has left:
	// exactly 3. Read back from the API server; once withdrawals settle,
	// each budget records only pods that went. Every refusal is told on
	// its budget.
	t.Run("two overlapping budgets, two replicas", func(t *testing.T) {
		pods := crowd(t, true)
		replicas, err := local.StartReplica(ctx, lifeline)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := replicas.Stop(ctx, local); err != nil {
				t.Error(err)
			}
		}()
		var evens, odds []corev1.Pod
		for _, p := range pods {
			if p.Labels["tier"] == "even" {
				evens = append(evens, p)
			} else {
				odds = append(odds, p)
			}
		}
		for _, wave := range []struct {
			name      string
			pods      []corev1.Pod
			admitting int
		}{{"even", evens, 2}, {"odd", odds, 3}} {
			admitted, refused, rounds := stormUntilSpent(t, ns, wave.pods, wave.admitting, "crowd", "even")
			gone := disrupted(t, ns, wave.pods)
			t.Logf("%s pods: %d admitted, %d refused in the first of %d rounds, %d gone", wave.name, admitted, refused, rounds, gone)
			if admitted != wave.admitting || gone != wave.admitting || (rounds == 1 && refused != len(wave.pods)-wave.admitting) {
				t.Errorf("%s pods: %d admitted, %d refused with 429 in the first of %d rounds, %d gone; want %d admitted and gone", wave.name, admitted, refused, rounds, gone, wave.admitting)
			}
		}
		waitRecordsSettled(t, ns, "crowd", "even")
		events, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		told := 0
		for _, e := range events.Items {
			if e.Reason == "DisruptionRefused" && e.Regarding.Kind == "PodUnavailableBudget" {
				told++
			}
		}
		if told == 0 {
			t.Error("no DisruptionRefused event on a budget")
		}
		if n := metricAt(lifeline.MetricsURL, "pod_unavailable_budget", nil) + metricAt(replicas.Second.MetricsURL, "pod_unavailable_budget", nil); n <= 0 {
			t.Errorf("OpenKruise's pod_unavailable_budget counter shows no refusal (%v)", n)
		}
	})

	t.Run("two replicas", func(t *testing.T) {
		pods := crowd(t)
		replicas, err := local.StartReplica(ctx, lifeline)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := replicas.Stop(ctx, local); err != nil {
				t.Error(err)
			}
		}()
		admitted, refused, rounds := stormUntilSpent(t, ns, pods, 5, "crowd")
		check(t, pods, admitted, refused, rounds)
		t.Logf("admission requests per replica: %d and %d", replicas.Served[0].Load(), replicas.Served[1].Load())
		for i, url := range []string{lifeline.MetricsURL, replicas.Second.MetricsURL} {
			judged := metricAt(url, "lifeline_pub_admissions_total", map[string]string{"budget": ns + "/crowd", "operation": "EVICT", "result": "refused"})
			if judged == 0 || replicas.Served[i].Load() == 0 {
				t.Errorf("replica %d judged %v evictions (%d requests sent to it): both must take part", i+1, judged, replicas.Served[i].Load())
			}
		}
	})
}
