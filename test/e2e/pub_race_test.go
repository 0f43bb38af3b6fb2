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
					time.Sleep(200 * time.Millisecond) // a retry's pace, as kubectl drain's
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
	crowd := func(t *testing.T) []corev1.Pod {
		ns = newNamespace(t)
		b := newBudget(ns, "crowd", policyv1alpha1.PodUnavailableBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "crowd"}}, MaxUnavailable: ptr.To(intstr.FromInt32(5))})
		b.Annotations = map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: "200"}
		create(t, b)
		var wg sync.WaitGroup
		for w := 0; w < 20; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < 200; i += 20 {
					if _, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("crowd-%03d", i),
						Labels: map[string]string{"app": "crowd"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}},
						metav1.CreateOptions{}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		waitBudgetWithin(t, 2*time.Minute, ns, "crowd", settledBudget)
		return livePods(t, ns, "app=crowd")
	}
	check := func(t *testing.T, pods []corev1.Pod, admitted, refused int) {
		t.Helper()
		if admitted != 5 || refused != 195 {
			t.Errorf("%d evictions admitted and %d refused with 429; want 5 and 195", admitted, refused)
		}
		if gone := disrupted(t, ns, pods); gone != 5 {
			t.Errorf("%d pods gone or going, want 5", gone)
		}
	}

	t.Run("one manager", func(t *testing.T) {
		pods := crowd(t)
		admitted, refused := storm(t, ns, pods, new(atomic.Int64))
		check(t, pods, admitted, refused)
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
		check(t, pods, admitted+a2, refused+r2)
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
		admitted, refused := storm(t, ns, pods, new(atomic.Int64))
		check(t, pods, admitted, refused)
		t.Logf("admission requests per replica: %d and %d", replicas.Served[0].Load(), replicas.Served[1].Load())
		for i, url := range []string{lifeline.MetricsURL, replicas.Second.MetricsURL} {
			judged := metricAt(url, "lifeline_pub_admissions_total", map[string]string{"budget": ns + "/crowd", "operation": "EVICT", "result": "refused"})
			if judged == 0 || replicas.Served[i].Load() == 0 {
				t.Errorf("replica %d judged %v evictions (%d requests sent to it): both must take part", i+1, judged, replicas.Served[i].Load())
			}
		}
	})
}
