package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// TestAdvancedStatefulSetClaimTemplateAdded: a claim template added to a
// running set replaces each pod, one at a time (maxUnavailable 1), with a
// pod that mounts its new claim, which the local cluster provisions and
// binds. OpenKruise tries to add the volume to the running pods, which the
// API server forbids, and the set stays on FailedUpdatePod for good
// (openkruise/kruise#1389, #2343).
func TestAdvancedStatefulSetClaimTemplateAdded(t *testing.T) {
	ns := newNamespace(t)
	log := logPods(t, ns)
	set := newAdvancedStatefulSet(ns, "db", 2, appsv1.ParallelPodManagement)
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "2 pods Ready", stsSettled(2))
	before := map[string]string{}
	for _, p := range stsPods(t, ns) {
		before[p.Name] = string(p.UID)
	}
	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) {
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data", "1Gi")}
	})
	eventually(t, 3*time.Minute, "every pod replaced, mounting its bound claim", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(set), set); err != nil {
			return false, err.Error(), nil
		}
		for _, c := range set.Status.Conditions {
			if c.Type == "FailedUpdatePod" && c.Status == corev1.ConditionTrue {
				return false, "", fmt.Errorf("FailedUpdatePod: %s", c.Message)
			}
		}
		pods := stsPods(t, ns)
		if len(pods) != 2 {
			return false, fmt.Sprintf("%d pods", len(pods)), nil
		}
		for _, p := range pods {
			if before[p.Name] == string(p.UID) || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
				return false, p.Name + " not replaced and Ready yet", nil
			}
			if !mountsClaim(&p, "data", "data-"+p.Name) {
				return false, fmt.Sprintf("%s volumes %+v", p.Name, p.Spec.Volumes), nil
			}
			claim, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+p.Name, metav1.GetOptions{})
			if err != nil || claim.Status.Phase != corev1.ClaimBound {
				return false, fmt.Sprintf("claim data-%s: %v %v", p.Name, claim.Status.Phase, err), nil
			}
		}
		return true, "", nil
	})
	waitAdvancedStatefulSet(t, set, "settled", stsSettled(2))
	if n := log.mostNotReady([]string{"db-0", "db-1"}); n > 1 {
		t.Errorf("%d pods were down at once; maxUnavailable is 1", n)
	}
}

func mountsClaim(p *corev1.Pod, volume, claim string) bool {
	for _, v := range p.Spec.Volumes {
		if v.Name == volume {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
		}
	}
	return false
}
