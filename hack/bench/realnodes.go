package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// realNodeRow is one rollout of real containers: a workload's pods all
// moved to a new image, from the change to the last pod available.
type realNodeRow struct {
	Workload string  `json:"workload"`
	Update   string  `json:"update"` // in place, ReCreate, rolling (Deployment)
	Pods     int     `json:"pods"`
	Seconds  float64 `json:"seconds"`
}

// realNodesBench rolls the same pods out on the real nodes, where a
// recreated pod pays a sandbox, a network namespace and a container start
// and an in-place update pays one container's restart: a CloneSet in
// place, the same CloneSet by ReCreate, and a Deployment, each image change
// with maxUnavailable 20% and every pod's exec readiness probe passing.
func (b *bench) realNodesBench(ctx context.Context) error {
	n := b.o.realPods
	ns, err := b.namespace(ctx, "bench-real")
	if err != nil {
		return err
	}
	defer b.dropNamespace(ctx, ns)
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "real"}, Spec: appsv1alpha1.CloneSetSpec{
		Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "real"}},
		Template: realTemplate("real", "v1"),
		UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
			MaxUnavailable: ptr.To(intstr.FromString("20%"))}}}
	if err := b.k8s.Create(ctx, cs); err != nil {
		return err
	}
	if _, err := b.waitCloneSet(ctx, cs, n); err != nil {
		return fmt.Errorf("scaling the CloneSet up on real nodes: %w", err)
	}
	steps := []struct {
		update string
		change func(*appsv1alpha1.CloneSet)
	}{
		{"in place", func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2") }},
		{"ReCreate", func(c *appsv1alpha1.CloneSet) {
			c.Spec.UpdateStrategy.Type = appsv1alpha1.RecreateCloneSetUpdateStrategyType
			c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v3")
		}},
		{"in place", func(c *appsv1alpha1.CloneSet) {
			c.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
			c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v1")
		}},
		{"ReCreate", func(c *appsv1alpha1.CloneSet) {
			c.Spec.UpdateStrategy.Type = appsv1alpha1.RecreateCloneSetUpdateStrategyType
			c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2")
		}},
	}
	for _, s := range steps {
		if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), cs); err != nil {
			return err
		}
		s.change(cs)
		if err := b.k8s.Update(ctx, cs); err != nil {
			return err
		}
		took, err := b.waitCloneSet(ctx, cs, n)
		if err != nil {
			return fmt.Errorf("CloneSet %s: %w", s.update, err)
		}
		b.addRealNode("CloneSet", s.update, n, took)
	}
	return b.realDeployment(ctx, ns, n)
}

func (b *bench) addRealNode(workload, update string, pods int, took time.Duration) {
	fmt.Printf("real nodes: %s %s of %d pods: %.1f s\n", workload, update, pods, took.Seconds())
	b.report.RealNodes = append(b.report.RealNodes, realNodeRow{workload, update, pods, took.Seconds()})
}

// realDeployment is the native baseline: a Deployment's rolling update of
// the same pods (every pod recreated).
func (b *bench) realDeployment(ctx context.Context, ns string, n int) error {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "real-deploy"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "real-deploy"}},
		Template: realTemplate("real-deploy", "v1"),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromString("20%")), MaxSurge: ptr.To(intstr.FromInt32(0))}}}}
	if err := b.k8s.Create(ctx, d); err != nil {
		return err
	}
	if _, err := b.waitDeployment(ctx, d, n, time.Now()); err != nil {
		return err
	}
	for _, v := range []string{"v2", "v3"} {
		if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage(v)
		start := time.Now()
		if err := b.k8s.Update(ctx, d); err != nil {
			return err
		}
		took, err := b.waitDeployment(ctx, d, n, start)
		if err != nil {
			return fmt.Errorf("Deployment rolling update: %w", err)
		}
		b.addRealNode("Deployment", "rolling", n, took)
	}
	// The Deployment's pods go with the namespace.
	return nil
}

// realTemplate is a pod of testapp version v on the real nodes, Ready once
// its exec probe (every second) passes.
func realTemplate(app, v string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{
		NodeSelector:                  map[string]string{cluster.RealNodeLabel: "true"},
		Tolerations:                   []corev1.Toleration{cluster.RealNodeToleration()},
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		Containers: []corev1.Container{{Name: "app", Image: cluster.TestAppImage(v), ImagePullPolicy: corev1.PullNever,
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/testapp", "probe"}}}, PeriodSeconds: 1}}},
	}}
}

// waitCloneSet waits until every pod of cs is updated and available and
// its status is current; it returns how long that took from the call.
func (b *bench) waitCloneSet(ctx context.Context, cs *appsv1alpha1.CloneSet, n int) (time.Duration, error) {
	start := time.Now()
	var got appsv1alpha1.CloneSet
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), &got); err != nil {
			return false, nil
		}
		s := got.Status
		return s.ObservedGeneration == got.Generation && s.Replicas == int32(n) && s.UpdatedAvailableReplicas == int32(n) &&
			s.AvailableReplicas == int32(n), nil
	})
	return time.Since(start), err
}

func (b *bench) waitDeployment(ctx context.Context, d *appsv1.Deployment, n int, start time.Time) (time.Duration, error) {
	var got appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(d), &got); err != nil {
			return false, nil
		}
		s := got.Status
		return s.ObservedGeneration == got.Generation && s.Replicas == int32(n) && s.UpdatedReplicas == int32(n) && s.AvailableReplicas == int32(n), nil
	})
	return time.Since(start), err
}

// printRealNodes prints the real-node rollouts and the ratio the retired
// "in place at least 2× faster" target asked about.
func printRealNodes(r *report) {
	if len(r.RealNodes) == 0 {
		return
	}
	fmt.Println("\nRollouts of real containers (real nodes: kubelet and containerd), maxUnavailable 20%:")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "workload\tupdate\tpods\tseconds")
	sums := map[string][]float64{}
	for _, row := range r.RealNodes {
		fmt.Fprintf(w, "%s\t%s\t%d\t%.1f\n", row.Workload, row.Update, row.Pods, row.Seconds)
		sums[row.Workload+" "+row.Update] = append(sums[row.Workload+" "+row.Update], row.Seconds)
	}
	w.Flush()
	mean := func(k string) float64 {
		var t float64
		for _, v := range sums[k] {
			t += v
		}
		return t / float64(max(1, len(sums[k])))
	}
	if inPlace := mean("CloneSet in place"); inPlace > 0 {
		fmt.Printf("in place is %.2f× faster than ReCreate (means %.1f s and %.1f s) and %.2f× faster than the Deployment (%.1f s)\n",
			mean("CloneSet ReCreate")/inPlace, inPlace, mean("CloneSet ReCreate"), mean("Deployment rolling")/inPlace, mean("Deployment rolling"))
	}
}
