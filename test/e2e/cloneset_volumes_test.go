package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

func claimTemplate(name, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity(size)}},
		},
	}
}

// claims are the live PVCs of ns.
func claims(t *testing.T, ns string) []corev1.PersistentVolumeClaim {
	t.Helper()
	list := &corev1.PersistentVolumeClaimList{}
	if err := k8s.List(context.Background(), list, ctrlclient.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var live []corev1.PersistentVolumeClaim
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			live = append(live, c)
		}
	}
	return live
}

func claimNames(cs []corev1.PersistentVolumeClaim) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// allBound: every pod is Running with each of its claims Bound by the
// default StorageClass, and every claim belongs to a live pod's instance.
func allBound(t *testing.T, cs *appsv1alpha1.CloneSet, perPod int) (bool, string) {
	pods, pvcs := clonePods(t, cs), claims(t, cs.Namespace)
	if len(pvcs) != len(pods)*perPod {
		return false, fmt.Sprintf("%d pods, %d claims", len(pods), len(pvcs))
	}
	ids := map[string]bool{}
	for _, p := range pods {
		ids[p.Labels[appsv1alpha1.CloneSetInstanceID]] = true
	}
	for _, c := range pvcs {
		if c.Status.Phase != corev1.ClaimBound || ptr.Deref(c.Spec.StorageClassName, "") != cluster.DefaultStorageClass {
			return false, fmt.Sprintf("claim %s %s class %v", c.Name, c.Status.Phase, c.Spec.StorageClassName)
		}
		if !ids[c.Labels[appsv1alpha1.CloneSetInstanceID]] || !metav1.IsControlledBy(&c, cs) {
			return false, fmt.Sprintf("claim %s of instance %s, owners %v", c.Name, c.Labels[appsv1alpha1.CloneSetInstanceID], c.OwnerReferences)
		}
	}
	return true, ""
}

func waitBound(t *testing.T, cs *appsv1alpha1.CloneSet, replicas int32, perPod int, what string) {
	t.Helper()
	waitCloneSet(t, cs, what, func(c *appsv1alpha1.CloneSet) bool {
		ok, _ := allBound(t, c, perPod)
		return settled(replicas)(c) && ok
	})
}

func deleteAllPods(t *testing.T, cs *appsv1alpha1.CloneSet) {
	t.Helper()
	for _, p := range clonePods(t, cs) {
		if err := k8s.Delete(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
}

// OpenKruise's "CloneSet Update with DisablePVCReuse=true", with claims
// the local cluster really provisions and binds.
func TestCloneSetDisablePVCReuse(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newCloneSet(ns, "reuse", 4)
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data", "1Gi"), claimTemplate("logs", "1Gi")}
	createCloneSet(t, cs)
	waitBound(t, cs, 4, 2, "4 pods with 8 bound claims")
	first := claimNames(claims(t, ns))

	// Pods deleted by someone else come back on the same claims.
	deleteAllPods(t, cs)
	eventually(t, 2*time.Minute, "the same 8 claims reused", func(ctx context.Context) (bool, string, error) {
		ok, why := allBound(t, cs, 2)
		got := claimNames(claims(t, ns))
		return ok && slices.Equal(got, first) && len(clonePods(t, cs)) == 4, fmt.Sprintf("%s; claims %v", why, got), nil
	})
	waitBound(t, cs, 4, 2, "settled on the old claims")

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.ScaleStrategy.DisablePVCReuse = true })
	waitCloneSet(t, cs, "the change seen", func(c *appsv1alpha1.CloneSet) bool { return c.Status.ObservedGeneration == c.Generation })
	deleteAllPods(t, cs)
	eventually(t, 2*time.Minute, "8 new claims", func(ctx context.Context) (bool, string, error) {
		ok, why := allBound(t, cs, 2)
		got := claimNames(claims(t, ns))
		fresh := len(got) == 8
		for _, name := range got {
			fresh = fresh && !slices.Contains(first, name)
		}
		return ok && fresh && len(clonePods(t, cs)) == 4, fmt.Sprintf("%s; claims %v", why, got), nil
	})
}

// OpenKruise's "CloneSet Update with VolumeClaimTemplate changes" (reference
// §3.9): a template change that comes with new claim templates recreates
// pods on new claims under InPlaceIfPossible; a claim-template change alone
// changes nothing; InPlaceOnly updates in place on the old claims.
func TestCloneSetVolumeClaimTemplateChanges(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newCloneSet(ns, "vct", 2)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data", "1Gi")}
	createCloneSet(t, cs)
	waitBound(t, cs, 2, 1, "2 pods on 1Gi claims")

	uids := func() []string {
		var out []string
		for _, p := range clonePods(t, cs) {
			out = append(out, string(p.UID))
		}
		sort.Strings(out)
		return out
	}
	sizes := func() []string {
		var out []string
		for _, c := range claims(t, ns) {
			q := c.Spec.Resources.Requests[corev1.ResourceStorage]
			out = append(out, q.String())
		}
		sort.Strings(out)
		return out
	}
	step := func(what string, change func(*appsv1alpha1.CloneSet), recreated bool, wantSizes ...string) {
		t.Helper()
		beforeUIDs, beforeClaims := uids(), claimNames(claims(t, ns))
		revision := cs.Status.UpdateRevision
		updateCloneSet(t, cs, change)
		waitCloneSet(t, cs, what, func(c *appsv1alpha1.CloneSet) bool {
			ok, _ := allBound(t, c, 1)
			return settled(2)(c) && ok && (c.Status.UpdateRevision != revision || !recreated)
		})
		if got := uids(); slices.Equal(got, beforeUIDs) == recreated {
			t.Errorf("%s: pods %v before, %v after; want recreated=%v", what, beforeUIDs, got, recreated)
		}
		if got := claimNames(claims(t, ns)); slices.Equal(got, beforeClaims) == recreated {
			t.Errorf("%s: claims %v before, %v after; want new claims=%v", what, beforeClaims, got, recreated)
		}
		if got := sizes(); !slices.Equal(got, wantSizes) {
			t.Errorf("%s: claim sizes %v, want %v", what, got, wantSizes)
		}
	}

	step("image and claim size: recreated on new claims", func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		c.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = mustQuantity("2Gi")
	}, true, "2Gi", "2Gi")

	revision := cs.Status.UpdateRevision
	step("claim size only: nothing changes", func(c *appsv1alpha1.CloneSet) {
		c.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = mustQuantity("3Gi")
	}, false, "2Gi", "2Gi")
	if cs.Status.UpdateRevision != revision {
		t.Errorf("a claim-template change alone made revision %s (was %s)", cs.Status.UpdateRevision, revision)
	}

	step("image only after a claim change: recreated on claims of the new size", func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = "nginx:1.29"
	}, true, "3Gi", "3Gi")

	step("InPlaceOnly, image: in place", func(c *appsv1alpha1.CloneSet) {
		c.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		c.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	}, false, "3Gi", "3Gi")

	step("InPlaceOnly, image and claim size: in place on the old claims", func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		c.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = mustQuantity("4Gi")
	}, false, "3Gi", "3Gi")
}
