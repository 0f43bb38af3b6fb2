package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// TestABudgetBesideUncachedPodsCountsThemAll: the manager does not cache
// the pods of a namespace that holds nothing of Lifeline's
// (internal/podcache). A budget created there beside four running pods
// brings them in; read by an independent watch, every status the
// controller writes counts all four (a status from the pods the cache had
// taken in so far would count fewer and could allow more), and the first
// evictions are judged against the whole: one admitted, the next refused.
// Without the controller's wait for the namespace (podcache.Waiting), its
// first status counted no pod.
func TestABudgetBesideUncachedPodsCountsThemAll(t *testing.T) {
	ns := newNamespace(t)
	create(t, newDeployment(ns, "plain", 4))
	eventually(t, time.Minute, "four running pods", func(context.Context) (bool, string, error) {
		n := 0
		for _, p := range livePods(t, ns, "app=plain") {
			if p.Status.Phase == "Running" {
				n++
			}
		}
		return n == 4, fmt.Sprintf("%d running", n), nil
	})
	loaded := map[string]string{"result": "loaded"}
	loadsBefore := counter("lifeline_pod_cache_namespace_loads_total", loaded)

	statuses := watchBudgetStatuses(t, ns, "plain")
	create(t, newBudget(ns, "plain", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "plain"}},
		MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "plain", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 1})

	if got := counter("lifeline_pod_cache_namespace_loads_total", loaded); got <= loadsBefore {
		t.Errorf("no namespace was brought into the pod cache (%v loads before, %v after)", loadsBefore, got)
	}

	pods := livePods(t, ns, "app=plain")
	if err := evictOnce(ns, pods[0].Name); err != nil {
		t.Fatalf("first eviction refused: %v", err)
	}
	if err := evictOnce(ns, pods[1].Name); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: %v, want refused (429) while the first pod is replaced", err)
	}
	for _, s := range statuses() {
		if s.ObservedGeneration > 0 && s.TotalReplicas != 4 {
			t.Errorf("a status counted %d pods of 4: %+v", s.TotalReplicas, s)
		}
	}
}

// watchBudgetStatuses records every status of a budget the API server
// shows, from before it exists.
func watchBudgetStatuses(t *testing.T, ns, name string) func() []policyv1alpha1.PodUnavailableBudgetStatus {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := k8s.Watch(ctx, &policyv1alpha1.PodUnavailableBudgetList{}, ctrlclient.InNamespace(ns), ctrlclient.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []policyv1alpha1.PodUnavailableBudgetStatus
	go func() {
		for e := range w.ResultChan() {
			if b, ok := e.Object.(*policyv1alpha1.PodUnavailableBudget); ok && e.Type != watch.Deleted {
				mu.Lock()
				seen = append(seen, b.Status)
				mu.Unlock()
			}
		}
	}()
	return func() []policyv1alpha1.PodUnavailableBudgetStatus {
		mu.Lock()
		defer mu.Unlock()
		return append([]policyv1alpha1.PodUnavailableBudgetStatus(nil), seen...)
	}
}
