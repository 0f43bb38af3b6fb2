package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestLeaderFailoverMidRollout: two manager replicas serve the webhooks
// behind a balancer that follows their readiness, as a Service does. The
// leader is SIGKILLed in the middle of a 200-pod in-place rollout under a
// budget (20 pods) tighter than the CloneSet's maxUnavailable (30). The
// other replica takes the lease once it expires and finishes the rollout:
// judged by the test's own watch of every pod, never more than the budget
// out of service at once, every pod updated in place through Updating,
// and no admission request left unanswered during the failover.
func TestLeaderFailoverMidRollout(t *testing.T) {
	ctx := context.Background()
	replicas, err := local.StartReplica(ctx, lifeline)
	if err != nil {
		t.Fatal(err)
	}
	managers := []*cluster.Lifeline{lifeline, replicas.Second}
	var killed *cluster.Lifeline
	defer func() {
		if killed == lifeline {
			if err := local.StartLifelineAgain(context.Background(), lifeline); err != nil {
				t.Errorf("restarting the first manager: %v", err)
			}
		}
		if err := replicas.Stop(context.Background(), local); err != nil && killed != replicas.Second {
			t.Error(err)
		}
	}()

	const replicasN, budgetN = 200, 20
	ns, cs := newInPlaceCloneSet(t, "failover", replicasN, 30)
	budget := intstr.FromInt32(budgetN)
	create(t, newBudget(ns, "failover", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "failover"}}, MaxUnavailable: &budget}))
	waitAvailable(t, ns, "failover", replicasN)
	updatedInPlace := trackInPlace(t, ns, cs)
	outOfService := watchOutOfService(t, ns)

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	eventually(t, 2*time.Minute, "60 pods on the new image", func(context.Context) (bool, string, error) {
		n := podsOnImage(t, cs, "nginx:1.28")
		return n >= 60, fmt.Sprintf("%d updated", n), nil
	})
	leader := -1
	eventually(t, 30*time.Second, "one leader among the replicas", func(context.Context) (bool, string, error) {
		leader = -1
		for i, m := range managers {
			if metricAt(m.MetricsURL, "leader_election_master_status", map[string]string{"name": "lifeline-manager.lifeline.dev"}) == 1 {
				leader = i
			}
		}
		return leader >= 0, "", nil
	})
	failedBefore := replicas.Failed.Load()
	killed = managers[leader]
	survivor := managers[1-leader]
	killedAt := time.Now()
	if err := local.StopProcess(killed.Name, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The kill is over once the process has exited and the balancer has
	// seen its connections to it close: a request sent before is lost
	// with the replica, as behind a Service. One sent after must reach
	// the survivor.
	eventually(t, 10*time.Second, "the balancer's connections to the killed replica closed", func(context.Context) (bool, string, error) {
		n := replicas.Connections(leader)
		return n == 0, fmt.Sprintf("%d open", n), nil
	})
	goneAt := time.Now()
	var failover time.Duration
	eventually(t, time.Minute, "the other replica leading", func(context.Context) (bool, string, error) {
		failover = time.Since(killedAt)
		return metricAt(survivor.MetricsURL, "leader_election_master_status", map[string]string{"name": "lifeline-manager.lifeline.dev"}) == 1, "", nil
	})
	updatedAtTakeover := podsOnImage(t, cs, "nginx:1.28")
	waitCloneSet(t, cs, "every pod updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(replicasN)(c) && c.Status.UpdatedAvailableReplicas == replicasN
	})
	lost, refused := replicas.Failed.Load()-failedBefore, replicas.FailedSince(goneAt)
	t.Logf("leader SIGKILLed with %d of %d pods on the new image, gone to the balancer %s later; the other replica led after %s (%d updated by then); "+
		"admission requests unanswered: %d sent before it was gone, %d after (served: %d and %d); at most %d pods out of service (budget %d, maxUnavailable 30); rollout done %s after the kill",
		updatedAtTakeover, replicasN, goneAt.Sub(killedAt).Round(time.Millisecond), failover.Round(100*time.Millisecond), updatedAtTakeover, int(lost)-len(refused), len(refused),
		replicas.Served[0].Load(), replicas.Served[1].Load(), outOfService(), budgetN, time.Since(killedAt).Round(time.Second))
	if len(refused) != 0 {
		t.Errorf("%d admission requests sent after the killed replica was gone went unanswered, want 0 with a replica serving: %v", len(refused), refused)
	}
	if most := outOfService(); most > budgetN {
		t.Errorf("%d pods out of service at once, budget %d", most, budgetN)
	}
	updatedInPlace(t)
}
